"""Every noun listable (read use cases): a thread's evidence, nodes and dispatches, one
dispatch, and by filter runs, retraction proposals, consolidations, claims and pending
actions. Ids are taken whole or by a unique prefix; a bad filter is refused with its
reason (exit 2), and nothing here writes."""

from __future__ import annotations

from uuid import UUID

from council.domain.commands import IdRef
from council.domain.results.lists import (
    ActionList,
    ClaimList,
    ConsolidationList,
    DispatchList,
    DispatchShown,
    EvidenceList,
    NodeList,
    ProposalList,
    RunListing,
)
from council.domain.results.runs import Cost
from council.domain.vocabulary import (
    CLAIM_TYPES,
    CONSOLIDATION_STATUSES,
    PENDING_ACTION_STATUSES,
    PROPOSAL_STATUSES,
    RUN_STATUSES,
)
from council.errors import BadInput, NotFound
from council.ledger.lists import Lists
from council.services.ports import Tx, UnitOfWork

MAX_RUNS = 10_000


def _thread(tx: Tx, thread: IdRef) -> UUID:
    """The thread's id, refused (not found) unless the thread exists."""
    thread_id = tx.resolve("thread", thread)
    tx.threads.get(thread_id)
    return thread_id


def thread_evidence(uow: UnitOfWork, thread: IdRef) -> EvidenceList:
    with uow() as tx:
        thread_id = _thread(tx, thread)
        return EvidenceList(thread_id=thread_id, items=Lists(tx.conn).evidence(thread_id))


def thread_nodes(uow: UnitOfWork, thread: IdRef) -> NodeList:
    with uow() as tx:
        thread_id = _thread(tx, thread)
        return NodeList(thread_id=thread_id, items=Lists(tx.conn).nodes(thread_id))


def list_runs(
    uow: UnitOfWork,
    *,
    thread: IdRef | None = None,
    status: str | None = None,
    agent: str | None = None,
    dispatch: IdRef | None = None,
    limit: int = 200,
) -> RunListing:
    if status is not None and status not in RUN_STATUSES:
        raise BadInput(f"unknown run status {status!r}: one of {', '.join(RUN_STATUSES)}")
    _check(limit)
    with uow() as tx:
        thread_id = _thread(tx, thread) if thread is not None else None
        dispatch_id = tx.resolve("dispatch", dispatch) if dispatch is not None else None
        items, truncated = Lists(tx.conn).runs(
            thread_id=thread_id, status=status, agent=agent, dispatch_id=dispatch_id, limit=limit
        )
    cost = Cost.of(items)
    return RunListing(items=items, limit=limit, truncated=truncated, cost=cost)


def thread_dispatches(uow: UnitOfWork, thread: IdRef) -> DispatchList:
    with uow() as tx:
        thread_id = _thread(tx, thread)
        return DispatchList(thread_id=thread_id, items=Lists(tx.conn).dispatches(thread_id=thread_id))


def show_dispatch(uow: UnitOfWork, dispatch: IdRef) -> DispatchShown:
    with uow() as tx:
        dispatch_id = tx.resolve("dispatch", dispatch)
        lists = Lists(tx.conn)
        found = lists.dispatches(dispatch_id=dispatch_id)
        if not found:
            raise NotFound(f"no dispatch {dispatch_id}")
        (item,) = found
        runs, _ = lists.runs(dispatch_id=dispatch_id, limit=MAX_RUNS)
    return DispatchShown(**item.model_dump(), runs=runs)


def list_proposals(
    uow: UnitOfWork, *, thread: IdRef | None = None, status: str | None = None
) -> ProposalList:
    if status is not None and status not in PROPOSAL_STATUSES:
        raise BadInput(f"unknown proposal status {status!r}: one of {', '.join(PROPOSAL_STATUSES)}")
    with uow() as tx:
        thread_id = _thread(tx, thread) if thread is not None else None
        return ProposalList(items=Lists(tx.conn).proposals(thread_id=thread_id, status=status))


def list_consolidations(
    uow: UnitOfWork,
    *,
    thread: IdRef | None = None,
    status: str | None = None,
    node: IdRef | None = None,
    limit: int = 200,
) -> ConsolidationList:
    """Consolidations by thread, status and node (``node``: a version; every consolidation
    of its logical node), the newest ``limit`` in creation order."""
    _check(limit, status, CONSOLIDATION_STATUSES, "consolidation status")
    with uow() as tx:
        thread_id = _thread(tx, thread) if thread is not None else None
        logical = tx.nodes.get(tx.resolve("node version", node))["logical_node_id"] if node else None
        items, truncated = Lists(tx.conn).consolidations(
            thread_id=thread_id, status=status, logical_node_id=logical, limit=limit
        )
    return ConsolidationList(items=items, limit=limit, truncated=truncated)


def list_claims(
    uow: UnitOfWork,
    *,
    run: IdRef | None = None,
    node: IdRef | None = None,
    thread: IdRef | None = None,
    claim_type: str | None = None,
    limit: int = 200,
) -> ClaimList:
    """Claims by run, node version, thread and type, the newest ``limit`` in creation order."""
    _check(limit, claim_type, CLAIM_TYPES, "claim type")
    with uow() as tx:
        run_id = tx.resolve("run", run) if run is not None else None
        version_id = tx.resolve("node version", node) if node is not None else None
        thread_id = _thread(tx, thread) if thread is not None else None
        items, truncated = Lists(tx.conn).claims(
            run_id=run_id, node_version_id=version_id, thread_id=thread_id, claim_type=claim_type, limit=limit
        )
    return ClaimList(items=items, limit=limit, truncated=truncated)


def list_actions(
    uow: UnitOfWork,
    *,
    thread: IdRef | None = None,
    status: str | None = None,
    node: IdRef | None = None,
    limit: int = 200,
) -> ActionList:
    """Pending actions by thread, status and node version, the newest ``limit`` in creation order."""
    _check(limit, status, PENDING_ACTION_STATUSES, "action status")
    with uow() as tx:
        thread_id = _thread(tx, thread) if thread is not None else None
        version_id = tx.resolve("node version", node) if node is not None else None
        items, truncated = Lists(tx.conn).actions(
            thread_id=thread_id, status=status, node_version_id=version_id, limit=limit
        )
    return ActionList(items=items, limit=limit, truncated=truncated)


def _check(limit: int, value: str | None = None, allowed: tuple[str, ...] = (), what: str = "") -> None:
    """Refuse a filter outside its vocabulary, or a limit outside 1..MAX_RUNS."""
    if value is not None and value not in allowed:
        raise BadInput(f"unknown {what} {value!r}: one of {', '.join(allowed)}")
    if not 1 <= limit <= MAX_RUNS:
        raise BadInput(f"--limit must be between 1 and {MAX_RUNS}")
