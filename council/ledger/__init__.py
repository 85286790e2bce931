"""Postgres: table metadata, unit of work, and the ledger's read/write services."""
