"""The next round of a deliberative dispatch, after the round before it is decided.

A deliberative round is shown the previous round's stances, and a run shown a stance is
connected to its author (docs/guide/independence-and-consolidation.md): the round's claims
join the earlier, independent supporters into one group. So before the next round is
created, the versions the closing round claimed on are decided by the committer (the same
idempotent, locked consolidation the commit queue runs), and what the council concluded
blind — or in any round — is recorded before deliberation can merge it away. A failure to
decide here leaves the decision to the commit queue, as before; the round is created anyway.
"""

from __future__ import annotations

import logging
from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.errors import CouncilError
from council.services.consolidation import consolidate_many
from council.services.ports import UnitOfWork

log = logging.getLogger(__name__)


def open_next_round(
    uow: UnitOfWork, scheduler: Scheduler, dispatch_id: UUID, round_no: int, *, actor: str
) -> list[UUID]:
    """Decide what round ``round_no - 1`` claimed on (once it has ended), then create round
    ``round_no`` (idempotent) and enqueue its runs; the new runs' ids (none: not due, or
    created already)."""
    with uow() as tx:
        versions = tx.runs.closed_round_versions(dispatch_id, round_no - 1)
        if not versions:  # nothing to decide first (or the round is still open): one transaction
            created = tx.runs.next_round(dispatch_id, round_no)
            tx.runs.mark_queued(created)
    if versions:
        try:
            consolidate_many(uow, versions, actor=actor)
        except CouncilError as exc:  # the commit queue decides them later (their evaluations are enqueued)
            log.warning(
                "round %s of dispatch %s: deciding before the next round failed: %s",
                round_no - 1,
                dispatch_id,
                exc,
            )
        with uow() as tx:
            created = tx.runs.next_round(dispatch_id, round_no)
            tx.runs.mark_queued(created)
    if created:
        scheduler.enqueue_runs(created)
    return created
