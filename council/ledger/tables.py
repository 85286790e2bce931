"""SQLAlchemy Core metadata of the ledger.

The DDL of record is the migration SQL (``migrations/versions/*.sql``), which
also holds the CHECK constraints and triggers; this metadata mirrors its tables,
keys and indexes for queries, and a test fails on any drift between the two
(``tests/migrations``).
"""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Numeric,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

from council.ledger.table_helpers import TS, XID8, created, fk, id_column, metadata, transitions_table
from council.ledger.tables_budgets import budget_reservations as budget_reservations
from council.ledger.tables_budgets import thread_budgets as thread_budgets
from council.ledger.tables_cascade import cascade_continuations as cascade_continuations
from council.ledger.tables_evaluations import consolidation_evaluations as consolidation_evaluations
from council.ledger.tables_evaluations import decision_reasons as decision_reasons
from council.ledger.tables_observation import debate_imports as debate_imports
from council.ledger.tables_observation import imported_propositions as imported_propositions
from council.ledger.tables_observation import imported_threads as imported_threads
from council.ledger.tables_observation import imported_turns as imported_turns
from council.ledger.tables_observation import resolutions as resolutions
from council.ledger.tables_review import retraction_proposal_transitions as retraction_proposal_transitions
from council.ledger.tables_review import retraction_proposals as retraction_proposals
from council.ledger.tables_review import retraction_votes as retraction_votes
from council.ledger.tables_review import thread_review_settings as thread_review_settings
from council.ledger.tables_rule_sets import rule_set_pins as rule_set_pins
from council.ledger.tables_rule_sets import rule_set_provenance as rule_set_provenance
from council.ledger.tables_runs import answer_texts as answer_texts
from council.ledger.tables_runs import run_answers as run_answers
from council.ledger.tables_runs import run_attempts as run_attempts
from council.ledger.tables_runs import run_opened_evidence as run_opened_evidence
from council.ledger.tables_runs import run_traces as run_traces

rule_sets = Table(
    "rule_sets",
    metadata,
    Column("id", Text, primary_key=True),
    Column("body", JSONB, nullable=False),
    Column("body_sha256", Text, nullable=False, unique=True),
    Column("description", Text, nullable=False, server_default=text("''")),
    created(),
)

grouping_algorithms = Table(
    "grouping_algorithms",
    metadata,
    Column("id", Text, primary_key=True),
    Column("params", JSONB, nullable=False),
    Column("params_sha256", Text, nullable=False, unique=True),
    Column("description", Text, nullable=False, server_default=text("''")),
    created(),
)

threads = Table(
    "threads",
    metadata,
    id_column(),
    Column("title", Text, nullable=False),
    Column("objective", Text, nullable=False),
    Column("rule_set_id", Text, ForeignKey("rule_sets.id"), nullable=False),
    Column("grouping_algorithm_id", Text, ForeignKey("grouping_algorithms.id"), nullable=False),
    created(),
)

dispatches = Table(
    "dispatches",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    Column("mode", Text, nullable=False),
    Column("agents", ARRAY(Text), nullable=False),
    Column("rounds", Integer, nullable=False),
    # Added by ALTER TABLE in the migration: retraction_proposals is created later.
    Column("proposal_id", UUID(as_uuid=True), ForeignKey("retraction_proposals.id", use_alter=True)),
    created(),
    Column("idempotency_key", Text),  # 0027
    Column("request_sha256", Text),
    Index(
        "dispatches_idempotency_key",
        "idempotency_key",
        unique=True,
        postgresql_where=text("idempotency_key IS NOT NULL"),
    ),
)

agent_runs = Table(
    "agent_runs",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("dispatch_id", "dispatches.id", nullable=True),
    Column("agent", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("provider", Text, nullable=False),
    Column("simulated", Boolean, nullable=False, server_default=text("false")),
    fk("parent_run_id", "agent_runs.id", nullable=True),
    Column("round", Integer, nullable=False, server_default=text("1")),
    Column("mode", Text, nullable=False),
    # Added by ALTER TABLE in the migration: retraction_proposals is created later.
    Column("proposal_id", UUID(as_uuid=True), ForeignKey("retraction_proposals.id", use_alter=True)),
    Column("status", Text, nullable=False),
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    Column("lease_owner", Text),
    Column("lease_expires_at", TS),
    Column("request_sha256", Text),
    Column("request", JSONB),
    Column("input_fingerprint", JSONB),
    Column("usage", JSONB),
    Column("cost_usd", Numeric(12, 6)),
    Column("error", Text),
    Column("lint_findings", JSONB),
    created(),
    Column("started_at", TS),
    Column("finished_at", TS),
    Column("executor", JSONB),  # the pinned profile, written once at insert (migration 0006)
    Index("agent_runs_thread_idx", "thread_id", "created_at"),
    Index("agent_runs_parent_idx", "parent_run_id", postgresql_where=text("parent_run_id IS NOT NULL")),
    Index(
        "agent_runs_dispatch_idx", "dispatch_id", "round", postgresql_where=text("dispatch_id IS NOT NULL")
    ),
    Index(
        "agent_runs_dispatch_round_agent",
        "dispatch_id",
        "round",
        "agent",
        unique=True,
        postgresql_where=text("dispatch_id IS NOT NULL"),
    ),
    Index(
        "agent_runs_pending_idx",
        "status",
        "created_at",
        postgresql_where=text("status = ANY (ARRAY['created'::text, 'queued'::text, 'running'::text])"),
    ),
)

branches = Table(
    "branches",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    Column("kind", Text, nullable=False),
    fk("parent_branch_id", "branches.id", nullable=True),
    Column("fork_version_id", UUID(as_uuid=True), ForeignKey("node_versions.id", use_alter=True)),
    Column("divergence_type", Text),
    Column("objective", Text),
    Column("label", Text, nullable=False),
    fk("created_by_run_id", "agent_runs.id", nullable=True),
    Column("status", Text, nullable=False, server_default=text("'active'::text")),
    Column("status_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
    Index(
        "branches_one_main_per_thread", "thread_id", unique=True, postgresql_where=text("kind = 'main'::text")
    ),
    Index("branches_thread_idx", "thread_id"),
)

branch_transitions = transitions_table("branch_transitions", "branch_id", "branches.id")
Index("branch_transitions_branch_idx", branch_transitions.c.branch_id, branch_transitions.c.created_at)

logical_nodes = Table(
    "logical_nodes",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("branch_id", "branches.id"),
    Column("head_version_id", UUID(as_uuid=True), ForeignKey("node_versions.id", use_alter=True)),
    Column("head_version_no", Integer),
    created(),
    Index("logical_nodes_thread_idx", "thread_id"),
)

node_versions = Table(
    "node_versions",
    metadata,
    id_column(),
    fk("logical_node_id", "logical_nodes.id"),
    fk("thread_id", "threads.id"),
    fk("branch_id", "branches.id"),
    Column("version_no", Integer, nullable=False),
    fk("parent_version_id", "node_versions.id", nullable=True),
    Column("content", Text, nullable=False),
    Column("content_sha256", Text, nullable=False),
    Column("initial_status", Text, nullable=False),
    fk("created_by_run_id", "agent_runs.id", nullable=True),
    created(),
    UniqueConstraint("logical_node_id", "version_no"),
    Index("node_versions_thread_idx", "thread_id", "branch_id"),
)

node_version_states = Table(
    "node_version_states",
    metadata,
    Column("id", UUID(as_uuid=True), ForeignKey("node_versions.id"), primary_key=True),
    Column("status", Text, nullable=False),
    Column("status_changed_at", TS, nullable=False),
    Index("node_version_states_status_idx", "status"),
)

node_status_transitions = Table(
    "node_status_transitions",
    metadata,
    id_column(),
    fk("node_version_id", "node_versions.id"),
    Column("from_status", Text, nullable=False),
    Column("to_status", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("actor", Text, nullable=False),
    Column("consolidation_id", UUID(as_uuid=True), ForeignKey("consolidations.id", use_alter=True)),
    created(clock=True),
    Index("node_status_transitions_version_idx", "node_version_id", "created_at"),
)

edges = Table(
    "edges",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("branch_id", "branches.id"),
    Column("kind", Text, nullable=False),
    fk("from_version_id", "node_versions.id"),
    fk("to_version_id", "node_versions.id"),
    fk("created_by_run_id", "agent_runs.id", nullable=True),
    created(),
    UniqueConstraint("from_version_id", "to_version_id", "kind"),
    Index("edges_to_idx", "to_version_id", "kind"),
)

merges = Table(
    "merges",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("source_branch_id", "branches.id", unique=True),
    fk("target_branch_id", "branches.id"),
    fk("preferred_version_id", "node_versions.id", nullable=True),
    Column("rationale", Text, nullable=False),
    fk("created_by_run_id", "agent_runs.id", nullable=True),
    Column("actor", Text, nullable=False),
    created(),
)

evidence = Table(
    "evidence",
    metadata,
    id_column(),
    Column("content_sha256", Text, nullable=False, unique=True),
    Column("content", Text),
    Column("source_kind", Text, nullable=False),
    Column("source_uri", Text),
    Column("media_type", Text, nullable=False, server_default=text("'text/plain'::text")),
    Column("byte_size", BigInteger, nullable=False),
    Column("fetched_at", TS),
    Column("title", Text, nullable=False),
    Column("validity", Text, nullable=False, server_default=text("'valid'::text")),
    Column("validity_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
)

thread_evidence = Table(
    "thread_evidence",
    metadata,
    fk("thread_id", "threads.id"),
    fk("evidence_id", "evidence.id"),
    Column("title", Text, nullable=False),
    Column("added_by", Text, nullable=False),
    created(),
    PrimaryKeyConstraint("thread_id", "evidence_id"),
    Index("thread_evidence_evidence_idx", "evidence_id"),
)

evidence_transitions = transitions_table("evidence_transitions", "evidence_id", "evidence.id")
Index(
    "evidence_transitions_evidence_idx", evidence_transitions.c.evidence_id, evidence_transitions.c.created_at
)

run_exposures = Table(
    "run_exposures",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    Column("kind", Text, nullable=False),
    Column("channel", Text, nullable=False),
    fk("exposed_to_run_id", "agent_runs.id", nullable=True),
    Column("claim_id", UUID(as_uuid=True), ForeignKey("claims.id", use_alter=True)),
    fk("node_version_id", "node_versions.id", nullable=True),
    created(),
    Index("run_exposures_run_idx", "run_id"),
    Index(
        "run_exposures_source_idx",
        "exposed_to_run_id",
        postgresql_where=text("exposed_to_run_id IS NOT NULL"),
    ),
)

claims = Table(
    "claims",
    metadata,
    id_column(),
    fk("run_id", "agent_runs.id"),
    fk("node_version_id", "node_versions.id"),
    Column("claim_type", Text, nullable=False),
    Column("confidence", Numeric(4, 3), nullable=False, server_default=text("0.5")),
    Column("rationale", Text, nullable=False, server_default=text("''::text")),
    created(),
    UniqueConstraint("run_id", "node_version_id"),
    Index("claims_node_version_idx", "node_version_id", "claim_type"),
)

citations = Table(
    "citations",
    metadata,
    id_column(),
    fk("node_version_id", "node_versions.id"),
    fk("evidence_id", "evidence.id"),
    fk("branch_id", "branches.id"),
    fk("claim_id", "claims.id", nullable=True),
    fk("run_id", "agent_runs.id", nullable=True),
    Column("role", Text, nullable=False),
    Column("interpretation", Text, nullable=False, server_default=text("''::text")),
    created(),
    Index("citations_node_version_idx", "node_version_id"),
    Index("citations_evidence_idx", "evidence_id"),
    Index("citations_claim_idx", "claim_id", postgresql_where=text("claim_id IS NOT NULL")),
    Index("citations_run_idx", "run_id", postgresql_where=text("run_id IS NOT NULL")),
)

pending_actions = Table(
    "pending_actions",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("branch_id", "branches.id"),
    fk("node_version_id", "node_versions.id", nullable=True),
    Column("description", Text, nullable=False),
    Column("acceptance_condition", Text, nullable=False),
    fk("created_by_run_id", "agent_runs.id", nullable=True),
    Column("status", Text, nullable=False, server_default=text("'open'::text")),
    Column("status_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
    Index("pending_actions_thread_idx", "thread_id", "status"),
    Index(
        "pending_actions_node_idx", "node_version_id", postgresql_where=text("node_version_id IS NOT NULL")
    ),
)

pending_action_transitions = transitions_table(
    "pending_action_transitions", "pending_action_id", "pending_actions.id"
)
Index(
    "pending_action_transitions_action_idx",
    pending_action_transitions.c.pending_action_id,
    pending_action_transitions.c.created_at,
)

consolidations = Table(
    "consolidations",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("logical_node_id", "logical_nodes.id"),
    fk("node_version_id", "node_versions.id"),
    Column("rule_set_id", Text, ForeignKey("rule_sets.id"), nullable=False),
    Column("grouping_algorithm_id", Text, ForeignKey("grouping_algorithms.id"), nullable=False),
    Column("snapshot", JSONB, nullable=False),
    Column("snapshot_sha256", Text, nullable=False),
    Column("decision", JSONB, nullable=False),
    Column("status", Text, nullable=False, server_default=text("'live'::text")),
    Column("status_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
    UniqueConstraint("node_version_id", "snapshot_sha256"),
    Index(
        "consolidations_one_live_per_node",
        "logical_node_id",
        unique=True,
        postgresql_where=text("status = 'live'::text"),
    ),
    Index("consolidations_thread_idx", "thread_id"),
)

consolidation_transitions = transitions_table(
    "consolidation_transitions", "consolidation_id", "consolidations.id"
)
Index(
    "consolidation_transitions_idx",
    consolidation_transitions.c.consolidation_id,
    consolidation_transitions.c.created_at,
)

consolidation_evidence = Table(
    "consolidation_evidence",
    metadata,
    fk("evidence_id", "evidence.id"),
    fk("consolidation_id", "consolidations.id"),
    PrimaryKeyConstraint("evidence_id", "consolidation_id"),
)

memory_items = Table(
    "memory_items",
    metadata,
    id_column(),
    fk("thread_id", "threads.id"),
    fk("consolidation_id", "consolidations.id", unique=True),
    fk("logical_node_id", "logical_nodes.id"),
    fk("node_version_id", "node_versions.id"),
    Column("content", Text, nullable=False),
    Column("status", Text, nullable=False, server_default=text("'stable'::text")),
    Column("status_changed_at", TS, nullable=False, server_default=func.now()),
    created(),
    Index("memory_items_status_idx", "status", "thread_id"),
)
Index(
    "memory_items_thread_current_idx",
    memory_items.c.thread_id,
    memory_items.c.status_changed_at.desc(),
    memory_items.c.id,
    postgresql_where=text("status IN ('stable', 'provisional', 'contested')"),
)

memory_transitions = transitions_table(
    "memory_transitions", "memory_item_id", "memory_items.id", details=True
)
Index("memory_transitions_item_idx", memory_transitions.c.memory_item_id, memory_transitions.c.created_at)

events = Table(
    "events",
    metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    fk("thread_id", "threads.id", nullable=True),
    Column("kind", Text, nullable=False),
    Column("subject_id", Text),
    Column("actor", Text, nullable=False),
    Column("payload", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    created(clock=True),
    # The inserting transaction (revision 0015; NULL before it): live readers tail by (tx, id).
    Column("tx", XID8, server_default=func.pg_current_xact_id()),
    Index("events_thread_idx", "thread_id", "id"),
    Index("events_tx_idx", "tx", postgresql_where=text("tx IS NOT NULL")),
)
# A proposal left without reviewers, found by the re-verification sweep (revision 0021).
Index(
    "events_review_unstaffed_idx",
    events.c.subject_id,
    postgresql_where=text("kind = 'retraction.review_unstaffed'::text"),
)
# Each claim's claim.added event, probed by the check that no claim lacks it (revision 0030).
Index(
    "events_claim_added_idx",
    events.c.subject_id,
    postgresql_where=text("kind = 'claim.added'::text"),
)
Index(
    "events_thread_tail_idx",
    events.c.thread_id,
    func.coalesce(events.c.tx, text("'0'::xid8")),
    events.c.id,
)
