"""Column helpers shared by the table definitions in ``council.ledger.tables``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, ForeignKey, MetaData, Table, Text, func, text
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP, UUID
from sqlalchemy.sql.schema import SchemaItem
from sqlalchemy.types import UserDefinedType

metadata = MetaData()

TS = TIMESTAMP(timezone=True)


class XID8(UserDefinedType[str]):
    """Postgres's 64-bit transaction id (``events.tx``); read as text, never bound by the ORM."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "xid8"


def id_column() -> Column[object]:
    return Column("id", UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()"))


def fk(name: str, target: str, nullable: bool = False, **kw: object) -> Column[object]:
    return Column(name, UUID(as_uuid=True), ForeignKey(target), nullable=nullable, **kw)  # type: ignore[arg-type]


def created(clock: bool = False) -> Column[object]:
    default = func.clock_timestamp() if clock else func.now()
    return Column("created_at", TS, nullable=False, server_default=default)


def transitions_table(name: str, parent_fk: str, target: str, details: bool = False) -> Table:
    cols: list[SchemaItem] = [
        id_column(),
        fk(parent_fk, target),
        Column("from_status", Text, nullable=False),
        Column("to_status", Text, nullable=False),
        Column("reason", Text, nullable=False),
        Column("actor", Text, nullable=False),
    ]
    if details:
        cols.append(Column("details", JSONB, nullable=False, server_default=text("'{}'::jsonb")))
    cols.append(created(clock=True))
    return Table(name, metadata, *cols)
