"""Core metadata of the rule-set records of migration 0012: why a rule set was
stored (the counterfactual report that motivated it) and which rule set new
threads are pinned to. Re-exported by ``council.ledger.tables``, which would
otherwise pass 500 lines."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Identity, Integer, Table, Text
from sqlalchemy.dialects.postgresql import JSONB

from council.ledger.table_helpers import TS, created, fk, metadata

rule_set_provenance = Table(
    "rule_set_provenance",
    metadata,
    Column("rule_set_id", Text, ForeignKey("rule_sets.id"), primary_key=True),
    Column("report_sha256", Text, nullable=False),
    fk("thread_id", "threads.id", nullable=True),
    Column("since", TS),
    Column("compared", Integer, nullable=False),
    Column("changed", JSONB, nullable=False),
    Column("actor", Text, nullable=False),
    created(clock=True),
    comment="The counterfactual report (council replay --rule-set) that motivated storing a rule set",
)

rule_set_pins = Table(
    "rule_set_pins",
    metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("rule_set_id", Text, ForeignKey("rule_sets.id"), nullable=False),
    Column("actor", Text, nullable=False),
    created(clock=True),
    comment="The rule set new threads are pinned to: the latest row (none: council-default-v1)",
)
