"""Core metadata of the recorded not-ready evaluations (migrations 0001, 0005, 0008, 0013, 0014):
``consolidation_evaluations``, chained per version (council.domain.manifests), and
``decision_reasons``, their reasons stored once per content. Re-exported by
``council.ledger.tables``, which would otherwise pass 500 lines."""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from council.ledger.table_helpers import created, fk, id_column, metadata

decision_reasons = Table(
    "decision_reasons",
    metadata,
    Column("id", Integer, Identity(always=True), primary_key=True),
    # Before 0014: the SHA-256 of the canonical JSON, unique. Since: NULL, the content keyed by
    # decision_reasons_content_key (an MD5 of the reason as a uuid).
    Column("sha256", Text),
    Column("reason", JSONB, nullable=False),
    Index(
        "decision_reasons_content_key",
        text("(CAST(md5(CAST(reason AS text)) AS uuid))"),
        unique=True,
    ),
    comment="Each reason of recorded evaluations once, by content (decision_reasons_content_key)",
)

consolidation_evaluations = Table(
    "consolidation_evaluations",
    metadata,
    id_column(),
    # NULL in a compact link (0014): its version's, its root's, encode(digest, 'hex'), 'not_ready'.
    fk("thread_id", "threads.id", nullable=True),
    fk("logical_node_id", "logical_nodes.id", nullable=True),
    fk("node_version_id", "node_versions.id"),
    Column("rule_set_id", Text, ForeignKey("rule_sets.id")),
    Column("grouping_algorithm_id", Text, ForeignKey("grouping_algorithms.id")),
    Column("snapshot_sha256", Text),
    Column("outcome", Text),
    # Inline before revision 0013 and in a chain's roots; a link lists its reasons' ids (reason_ids).
    Column("reasons", JSONB),
    # Written before revision 0005 only; since then the manifest and section hashes.
    Column("snapshot", JSONB),
    created(),
    # A chain's root (0013: seq 0, and every ROOT_EVERY links) or a row written before 0013.
    Column("manifest", JSONB),
    Column("section_sha256", JSONB),
    # Claims the evaluation saw (0008; written by the committer since 0013): the sweep compares it
    # with the version's claims.
    Column("claims_seen", Integer),
    # Its place in its version's chain, and for a link what changed since seq - 1 (0013).
    Column("seq", Integer),
    Column("delta", JSONB),
    Column("reason_ids", ARRAY(Integer)),
    # The compact layout (0014, council.domain.chain_codec): the binary manifest change, the
    # snapshot hash as 32 bytes, the reasons' ids 4 bytes each; id = council_evaluation_id_v1.
    Column("link", LargeBinary),
    Column("digest", LargeBinary),
    Column("reason_refs", LargeBinary),
    # A 0013 chained row's key is its place in the chain; the hash is unique among older rows.
    Index(
        "consolidation_evaluations_chain_idx",
        "node_version_id",
        "seq",
        unique=True,
        postgresql_include=["claims_seen"],
        postgresql_where=text("link IS NULL AND seq IS NOT NULL"),
    ),
    Index(
        "consolidation_evaluations_compact_roots_idx",
        "node_version_id",
        "seq",
        postgresql_include=["rule_set_id", "grouping_algorithm_id"],
        postgresql_where=text("link IS NOT NULL AND rule_set_id IS NOT NULL"),
    ),
    Index(
        "consolidation_evaluations_checkpoints_idx",
        "node_version_id",
        "seq",
        postgresql_where=text("link IS NOT NULL AND seq % 64 = 0"),
    ),
    Index(
        "consolidation_evaluations_legacy_sha256_key",
        "node_version_id",
        "snapshot_sha256",
        unique=True,
        postgresql_where=text("seq IS NULL"),
    ),
    Index(
        "consolidation_evaluations_roots_idx",
        "node_version_id",
        "seq",
        postgresql_where=text("manifest IS NOT NULL"),
    ),
)
