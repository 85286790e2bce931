"""council-default-v2: the rules of council-default-v1 with effective independence
(min_effective_support over an error-correlation table shrunk toward a prior) and an
honest quorum (min_council_answered). Stored as data beside v1, which never changes;
new threads stay pinned to v1 until `council rule-set pin council-default-v2`
(docs/guide/independence-and-consolidation.md says why these values).

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-04
"""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa
from alembic import op

from council.ledger.migrate import run_sql_beside

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

# A frozen copy: a shipped rule record is never edited; a change is a new id.
RULE_SET_ID = "council-default-v2"
DESCRIPTION = (
    "council-default-v1 plus effective independence (n_eff >= 1.5 of Kish's formula over "
    "the supporters' error correlations, prior 0.6 within a provider family and 0.3 across, "
    "measured after 30 shared resolved records) and an honest quorum (3 in 4 of the "
    "council's agents answered) (DESIGN §4)."
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
