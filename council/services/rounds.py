"""The next round of a deliberative dispatch, after the round before it is decided.

A deliberative round is shown the previous round's stances, and a run shown a stance is
connected to its author (docs/guide/independence-and-consolidation.md): the round's claims
join the earlier, independent supporters into one group. So before the next round is
created, the versions the closing round claimed on are decided by the committer (the same
idempotent, locked consolidation the commit queue runs), and what the council concluded
blind — or in any round — is recorded before deliberation can merge it away. A failure to
decide here sends the versions to the commit queue; the round is created anyway. The versions
of a dispatch's last round go to the commit queue once it closes (:func:`evaluate_closed_round`):
a dispatch's runs are evaluated once a round (``council.services.run_followups``).
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
        if versions is None:  # still open: the run that closes it creates the next (one statement)
            return []
        if not versions:  # nothing to decide first: one transaction
            created = tx.runs.next_round(dispatch_id, round_no)
            tx.runs.mark_queued(created)
    if versions:
        try:
            consolidate_many(uow, versions, actor=actor)
        except CouncilError as exc:  # the commit queue decides them later
            scheduler.enqueue_evaluations(versions)
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


def evaluate_closed_round(
    uow: UnitOfWork, scheduler: Scheduler, dispatch_id: UUID, round_no: int
) -> list[UUID]:
    """After a dispatch's last round: once every run of round ``round_no`` has ended, send
    the versions it claimed on or made to the commit queue (none while it is open). Runs
    ending together may both see it closed: the marks coalesce, the committer is idempotent."""
    with uow() as tx:
        versions = tx.runs.closed_round_versions(dispatch_id, round_no)
    if versions:
        scheduler.enqueue_evaluations(versions)
    return versions or []
