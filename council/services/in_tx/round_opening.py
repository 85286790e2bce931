"""Opening a dispatch's next round inside a caller's transaction (docs/architecture.md §7):
the run whose end closed a round with nothing to decide first opens the next one in its own
writing transaction (:func:`open_at_close`), and :mod:`council.services.rounds` opens it in a
transaction of its own once the closed round's versions are decided (:func:`opened_round`).
The round's shared briefing is compiled and stored where its runs are created."""

from __future__ import annotations

from uuid import UUID

from council.domain.protocol import decides_at_close
from council.ledger.run_rows import ClaimedRun, RoundEnd
from council.services.in_tx.briefing import open_round
from council.services.ports import Tx


def _follows(run: ClaimedRun) -> bool:
    """Whether a round of ``run``'s dispatch follows the run's round."""
    return run.dispatch_id is not None and (run.dispatch_rounds is None or run.round < run.dispatch_rounds)


def open_at_close(tx: Tx, run: ClaimedRun, ended: RoundEnd | None) -> RoundEnd | None:
    """In the writing transaction of ``run``, whose end found its round ``ended``: when that
    end closed the round, a round follows and nothing is to be decided first, the next round
    created and opened here (``opened``: its runs, enqueued once this commits); else ``ended``
    as it was, for the follow-up."""
    if ended is None or not ended.closed or not _follows(run):
        return ended
    if ended.versions and decides_at_close(run.mode, ended.round):
        return ended
    created = opened_round(tx, ended.dispatch_id, ended.round + 1)
    return RoundEnd(ended.dispatch_id, ended.round, ended.closed, ended.versions, opened=tuple(created))


def opened_round(tx: Tx, dispatch_id: UUID, round_no: int) -> list[UUID]:
    """Round ``round_no``'s runs, created and opened in the caller's transaction (none when
    another transaction created them: it opened the round)."""
    created = tx.runs.next_round(dispatch_id, round_no)
    if created:
        open_round(tx, dispatch_id, round_no)
        tx.runs.mark_queued(created)
    return created
