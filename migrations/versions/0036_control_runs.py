"""Control runs (issue 34 part 2): a deliberative dispatch with controls also runs, for each
run shown the previous round's stances, the same profile on the blind briefing, marked by
``agent_runs.control_of`` (the run it controls; never counted as support); the dispatch
records that it asked for them (``dispatches.controls``). The view
``council_v_stance_changes`` is replaced: control runs are not its subjects, and a change
their control made the same way is ``self_revision``.

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-04
"""

from __future__ import annotations

from council.ledger.migrate import run_sql_beside

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_beside(__file__)


def downgrade() -> None:
    raise NotImplementedError("the ledger is append-only; restore from a backup instead")
