"""Exclusive alternatives: option sets (the options of a multiple-choice question), the
alternative set of a logical node (contradicts edges and option sets, derived when read),
the thread's alternatives lock key, and council-default-v3 — council-default-v2's rules plus
exclusive_alternatives and min_rival_margin, seeded as data beside v1 and v2, which never
change (docs/guide/independence-and-consolidation.md says why these values).

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-07
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

from council.ledger.migrate import run_sql_beside

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None

# A frozen copy: a shipped rule record is never edited; a change is a new id.
RULE_SET_ID = "council-default-v3"
DESCRIPTION = (
    "council-default-v2 plus exclusive alternatives: an endorsement of one alternative counts as a "
    "dispute of each rival, and a node consolidates only when its n_eff beats every rival's by 0.5 "
    "and no rival is live (DESIGN §4 Alternatives)."
)
BODY = {
    "min_support_groups": 2,
    "min_support_providers": 2,
    "dispute_confidence_bar": 0.6,
    "block_on_open_objective_fork": True,
    "block_on_unsound_support_evidence": True,
    "block_on_unmet_pending_actions": True,
    "require_mainline_or_merged": True,
    "retraction_min_endorse_groups": 2,
    "min_effective_support": 1.5,
    "error_correlation_prior": {"same_family": 0.6, "other": 0.3},
    "correlation_min_resolved": 30,
    "min_council_answered": 0.75,
    "exclusive_alternatives": True,
    "min_rival_margin": 0.5,
}


def _canonical_sha256(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def upgrade() -> None:
    run_sql_beside(__file__)
    op.execute(
        sa.text(
            "INSERT INTO rule_sets (id, body, body_sha256, description) "
            "VALUES (:id, CAST(:body AS jsonb), :sha, :description)"
        ).bindparams(
            id=RULE_SET_ID,
            body=json.dumps(BODY),
            sha=_canonical_sha256({"id": RULE_SET_ID, "body": BODY}),
            description=DESCRIPTION,
        )
    )


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
