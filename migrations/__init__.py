"""Alembic migrations for the Council ledger. A wheel ships them as council/migrations
(setup.py); council.ledger.migrate finds them either way."""
