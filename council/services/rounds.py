"""The next round of a dispatch, after the round before it is decided.

A deliberative round is shown the previous round's stances, and a run shown a stance is
connected to its author (docs/guide/independence-and-consolidation.md): the round's claims
join the earlier, independent supporters into one group. So before the next round is
created, the versions the closing round claimed on are decided by the committer (the same
idempotent, locked consolidation the commit queue runs), and what the council concluded
blind — or in any round — is recorded before deliberation can merge it away. A council's
proposing round decides nothing at its close: each of its propositions is judged in the
cross-review, whose close decides them (``council.domain.protocol.decides_at_close``). A
failure to decide here sends the versions to the commit queue; the round is created anyway.
The round is opened in the transaction that creates its runs: its shared briefing — the
thread as it stands once the round before is decided — is compiled and stored there
(:func:`council.services.in_tx.briefing.open_round`), and every run of the round is
compiled from it. Whether a round closed is asked by each run's end, in its writing
transaction, under the dispatch's lock (``council_round_state_v1``, revision 0043): the run
that closes a round with nothing to decide first opens the next one in that same
transaction (``council.services.in_tx.round_opening.open_at_close``); one that closes it
with versions to decide hands them to :func:`open_next_round`, which decides them and then
opens it. The versions of a dispatch's last round go to the commit queue once it closes
(:func:`evaluate_closed_round`): a dispatch's runs are evaluated once a round
(``council.services.run_followups``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from uuid import UUID

from council.adapters.scheduler import Scheduler
from council.domain.protocol import decides_at_close
from council.errors import CouncilError
from council.services.consolidation import consolidate_many
from council.services.in_tx.round_opening import opened_round
from council.services.ports import UnitOfWork

log = logging.getLogger(__name__)


def open_next_round(
    uow: UnitOfWork,
    scheduler: Scheduler,
    dispatch_id: UUID,
    round_no: int,
    *,
    mode: str,
    actor: str,
    closed: Sequence[UUID] | None = None,
) -> list[UUID]:
    """Decide what round ``round_no - 1`` claimed on (once it has ended; a council's proposing
    round decides nothing), then create round ``round_no`` (idempotent), open it and enqueue
    its runs; the new runs' ids (none: not due, or created already). ``mode``: the dispatch's.
    ``closed``: what the closed round touched, when the caller's end found it closed."""
    created: list[UUID] = []
    if closed is None:
        with uow() as tx:
            found = tx.runs.closed_round_versions(dispatch_id, round_no - 1)
            if found is None:  # still open: the run that closes it creates the next
                return []
            versions = found if decides_at_close(mode, round_no - 1) else []
            if not versions:  # nothing to decide first: one transaction
                created = opened_round(tx, dispatch_id, round_no)
    else:
        versions = list(closed) if decides_at_close(mode, round_no - 1) else []
        if not versions:
            with uow() as tx:
                created = opened_round(tx, dispatch_id, round_no)
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
            created = opened_round(tx, dispatch_id, round_no)
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
