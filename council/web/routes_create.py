"""Writes that create ledger records — threads, evidence, nodes and versions,
recorded runs and claims — for the holder of the write token. The same
services and checks as the CLI's `thread create`, `evidence add`, `node add`,
`node version`, `run record` and `claim add`: bad input is 422 and an unknown
id 404, with nothing written."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Depends

from council.domain.commands import NewClaim, NewNode, NewVersion, RecordedRun, same_reading
from council.domain.results.evidence import EvidenceAdded
from council.domain.results.graph import ClaimAdded, VersionCreated
from council.domain.results.runs import RunClosed, RunRecorded
from council.domain.results.threads import ThreadCreated
from council.services.claims import add_claim
from council.services.evidence import EvidenceInput, add_evidence
from council.services.nodes import add_node, add_version
from council.services.runs import close_run, record_run
from council.services.threads import create_thread
from council.web.errors import documented
from council.web.models_create import ClaimIn, EdgeIn, EvidenceIn, NodeIn, RunIn, ThreadIn, VersionIn
from council.web.wiring import Wired, require_write, unicode_body

router = APIRouter(
    dependencies=[Depends(require_write), Depends(unicode_body)],
    tags=["writes"],
    responses=documented(401, 403, 404, 409, 413, 503),
)


@router.post("/threads", status_code=201, response_model=ThreadCreated, summary="Open a thread")
def thread_create(body: ThreadIn, wired: Wired) -> ThreadCreated:
    return create_thread(wired.uow, title=body.title, objective=body.objective, actor=wired.actor)


@router.post(
    "/threads/{thread_id}/evidence",
    status_code=201,
    response_model=EvidenceAdded,
    summary="Attach evidence (text, or a URL fetched within a deadline); same content, same row",
    responses=documented(502),
)
def evidence_add(thread_id: UUID, body: EvidenceIn, wired: Wired) -> EvidenceAdded:
    given = EvidenceInput(text=body.text, url=body.url, fetch=body.fetch, title=body.title)
    return add_evidence(wired.uow, thread_id, given, actor=wired.actor)


@router.post(
    "/threads/{thread_id}/nodes",
    status_code=201,
    response_model=VersionCreated,
    summary="Add a logical node with its first version",
)
def node_add(thread_id: UUID, body: NodeIn, wired: Wired) -> VersionCreated:
    node = NewNode(
        thread=thread_id,
        content=body.content,
        status=body.status,
        branch=body.branch_id,
        edges=(
            *(("depends_on", d) for d in body.depends_on),
            *(("contradicts", c) for c in body.contradicts),
            *_edges(body.edges),
        ),
        cites=same_reading(body.cites, body.role, body.interpretation),
        run=body.run_id,
    )
    return add_node(wired.uow, node, actor=wired.actor)


@router.post(
    "/logical-nodes/{logical_node_id}/versions",
    status_code=201,
    response_model=VersionCreated,
    summary="Add a new version of a logical node (content never changes in place)",
)
def node_version(logical_node_id: UUID, body: VersionIn, wired: Wired) -> VersionCreated:
    version = NewVersion(
        logical_node=logical_node_id,
        content=body.content,
        status=body.status,
        edges=_edges(body.edges),
        cites=same_reading(body.cites, body.role, body.interpretation),
        run=body.run_id,
    )
    return add_version(wired.uow, version, actor=wired.actor)


@router.post(
    "/threads/{thread_id}/runs",
    status_code=201,
    response_model=RunRecorded,
    summary="Record a run made outside the workers, with its lineage and the runs whose stances it saw",
)
def run_record(thread_id: UUID, body: RunIn, wired: Wired) -> RunRecorded:
    recorded = RecordedRun(
        thread=thread_id,
        agent=body.agent,
        model=body.model,
        provider=body.provider,
        parent_run=body.parent_run_id,
        exposed_to=tuple(body.exposed_to),
        round_no=body.round,
    )
    return record_run(wired.uow, recorded, actor=wired.actor)


@router.post(
    "/runs/{run_id}/close",
    response_model=RunClosed,
    summary="Close a run recorded by hand: it ends succeeded and takes no more claims",
)
def run_close(run_id: UUID, wired: Wired) -> RunClosed:
    return close_run(wired.uow, run_id, actor=wired.actor)


@router.post(
    "/runs/{run_id}/claims",
    status_code=201,
    response_model=ClaimAdded,
    summary="Record a run's claim on a node version",
)
def claim_add(run_id: UUID, body: ClaimIn, wired: Wired) -> ClaimAdded:
    claim = NewClaim(
        version=body.node_version_id,
        claim_type=body.type,
        confidence=body.confidence,
        rationale=body.rationale,
        cites=same_reading(body.cites, None, body.interpretation),
    )
    return add_claim(wired.uow, run_id, claim, actor=wired.actor)


def _edges(edges: list[EdgeIn]) -> tuple[tuple[str, UUID], ...]:
    return tuple((e.kind, e.to) for e in edges)
