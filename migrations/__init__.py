"""Alembic migrations for the Council ledger (shipped with the package)."""
