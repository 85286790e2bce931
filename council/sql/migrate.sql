-- The migration runner's reads (council/ledger/migrate.py).

-- alembic_table --
-- Whether the database has Alembic's version table (false: never migrated).
SELECT to_regclass('alembic_version') IS NOT NULL AS present

-- alembic_revision --
-- The revision the database is migrated to.
SELECT version_num FROM alembic_version
