"""Core metadata of retraction review: the proposals, their transitions and votes, and
``thread_review_settings`` (migration 0011): how a thread's opened retraction proposals
are reviewed, one appended row per change (council.ledger.review). Re-exported by
``council.ledger.tables``."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, Numeric, Table, Text, UniqueConstraint, func, text
from sqlalchemy.dialects.postgresql import ARRAY

from council.ledger.table_helpers import TS, created, fk, id_column, metadata, transitions_table

retraction_proposals = Table(
    "retraction_proposals",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("consolidation_id", "consolidations.id"),
    Column("reason", Text, nullable=False),
    Column("rule_set_id", Text, ForeignKey("rule_sets.id"), nullable=False),
    Column("grouping_algorithm_id", Text, ForeignKey("grouping_algorithms.id"), nullable=False),
    Column("opened_by", Text, nullable=False),
    Column("status", Text, nullable=False, server_default=text("'open'::text")),
    Column("status_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
    Index(
        "retraction_proposals_one_open",
        "consolidation_id",
        unique=True,
        postgresql_where=text("status = 'open'::text"),
    ),
)

retraction_proposal_transitions = transitions_table(
    "retraction_proposal_transitions", "proposal_id", "retraction_proposals.id", details=True
)
Index(
    "retraction_proposal_transitions_idx",
    retraction_proposal_transitions.c.proposal_id,
    retraction_proposal_transitions.c.created_at,
)

retraction_votes = Table(
    "retraction_votes",
    metadata,
    id_column(),
    fk("proposal_id", "retraction_proposals.id"),
    fk("run_id", "agent_runs.id"),
    Column("vote", Text, nullable=False),
    Column("confidence", Numeric(4, 3), nullable=False, server_default=text("0.5")),
    Column("rationale", Text, nullable=False, server_default=text("''::text")),
    created(),
    UniqueConstraint("proposal_id", "run_id"),
)

thread_review_settings = Table(
    "thread_review_settings",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    Column("review", Text, nullable=False),
    Column("delay_s", Integer, nullable=False, server_default=text("0")),
    Column("reason", Text, nullable=False, server_default=text("''::text")),
    Column("actor", Text, nullable=False),
    created(clock=True),
    Column(
        "agents",
        ARRAY(Text),
        comment="The agent profiles that review the thread's proposals; "
        "NULL: the profiles that worked the thread",
    ),
    Index("thread_review_settings_thread_idx", "thread_id", "created_at"),
    comment="How a thread's opened retraction proposals are reviewed (auto, delayed, manual); "
    "the latest row is in force",
)
