"""The whole ledger data model (docs/architecture.md §2) and its seed rule records.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

from council.ledger.migrate import run_sql_beside

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies: a shipped rule record is never edited; a change is a new id.
RULE_SETS = {
    "council-default-v1": {
        "description": "Default consolidation rules (DESIGN §4).",
        "body": {
            "min_support_groups": 2,
            "min_support_providers": 2,
            "dispute_confidence_bar": 0.6,
            "block_on_open_objective_fork": True,
            "block_on_unsound_support_evidence": True,
            "block_on_unmet_pending_actions": True,
            "require_mainline_or_merged": True,
            "retraction_min_endorse_groups": 2,
        },
    },
}
GROUPING_ALGORITHMS = {
    "indep-v1": {
        "description": "Connected components over parent, exposure, input and evidence links.",
        "params": {
            "link_parent": True,
            "link_exposure": True,
            "input_jaccard": 0.8,
            "evidence_jaccard": 0.5,
            "evidence_min_shared": 2,
        },
    },
}


def _canonical_sha256(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upgrade() -> None:
    run_sql_beside(__file__)
    for rule_id, spec in RULE_SETS.items():
        op.execute(
            sa.text(
                "INSERT INTO rule_sets (id, body, body_sha256, description) "
                "VALUES (:id, CAST(:body AS jsonb), :sha, :description)"
            ).bindparams(
                id=rule_id,
                body=json.dumps(spec["body"]),
                sha=_canonical_sha256({"id": rule_id, "body": spec["body"]}),
                description=spec["description"],
            )
        )
    for algo_id, spec in GROUPING_ALGORITHMS.items():
        op.execute(
            sa.text(
                "INSERT INTO grouping_algorithms (id, params, params_sha256, description) "
                "VALUES (:id, CAST(:params AS jsonb), :sha, :description)"
            ).bindparams(
                id=algo_id,
                params=json.dumps(spec["params"]),
                sha=_canonical_sha256({"id": algo_id, "params": spec["params"]}),
                description=spec["description"],
            )
        )


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
