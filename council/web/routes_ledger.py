"""Reads across the ledger: runs, node versions and their groups, consolidations, memory."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Query

from council.domain.results.consolidation import (
    ConsolidationShown,
    GroupsShown,
    History,
    MemoryList,
    Replayed,
)
from council.domain.results.evidence import EvidenceShown
from council.domain.results.graph import VersionShown
from council.domain.results.observation import EvalReport
from council.domain.results.runs import RunShown
from council.domain.vocabulary import MEMORY_STATUSES
from council.errors import BadInput
from council.services.consolidation import groups, history, memory_list, replay, show_consolidation
from council.services.evidence import show_evidence
from council.services.nodes import show_node
from council.services.observation import evaluate
from council.services.runs import show_run
from council.web.errors import documented
from council.web.wiring import Wired, require_read

router = APIRouter(dependencies=[Depends(require_read)], responses=documented(401, 503))
KNOWN = documented(404)


@router.get(
    "/runs/{run_id}",
    response_model=RunShown,
    responses=KNOWN,
    tags=["runs"],
    summary="Lineage, exposures, request hash and claims of a run",
)
def run(run_id: UUID, wired: Wired) -> RunShown:
    return show_run(wired.uow, run_id)


@router.get(
    "/evidence/{evidence_id}",
    response_model=EvidenceShown,
    responses=KNOWN,
    tags=["evidence"],
    summary="One evidence item in full: content, validity and its history, the threads it is in",
)
def evidence(evidence_id: UUID, wired: Wired) -> EvidenceShown:
    return show_evidence(wired.uow, evidence_id)


@router.get(
    "/nodes/{version_id}",
    response_model=VersionShown,
    responses=KNOWN,
    tags=["nodes"],
    summary="A node version with status, edges, claims, citations and history",
)
def node(version_id: UUID, wired: Wired) -> VersionShown:
    return show_node(wired.uow, version_id)


@router.get(
    "/nodes/{version_id}/groups",
    response_model=GroupsShown,
    responses=KNOWN,
    tags=["nodes"],
    summary="Independence groups of the runs that claimed on a node version",
)
def node_groups(version_id: UUID, wired: Wired) -> GroupsShown:
    return groups(wired.uow, version_id)


@router.get(
    "/nodes/{version_id}/history",
    response_model=History,
    responses=KNOWN,
    tags=["consolidations"],
    summary="Every consolidation and recorded evaluation of the version's logical node",
)
def node_history(version_id: UUID, wired: Wired) -> History:
    return history(wired.uow, version_id)


@router.get(
    "/consolidations/{consolidation_id}",
    response_model=ConsolidationShown,
    responses=KNOWN,
    tags=["consolidations"],
    summary="A consolidation as stored: snapshot, hash, decision, status history, evidence, memory",
)
def consolidation(consolidation_id: UUID, wired: Wired) -> ConsolidationShown:
    return show_consolidation(wired.uow, consolidation_id)


@router.get(
    "/consolidations/{consolidation_id}/replay",
    response_model=Replayed,
    responses=KNOWN,
    tags=["consolidations"],
    summary="Rebuild a consolidation (or recorded evaluation) from the rows it names and compare",
)
def consolidation_replay(consolidation_id: UUID, wired: Wired) -> Replayed:
    return replay(wired.uow, consolidation_id)


@router.get(
    "/memory",
    response_model=MemoryList,
    responses=KNOWN,
    tags=["memory"],
    summary="Memory items with their status and transition history",
)
def memory(
    wired: Wired,
    status: Annotated[
        str | None, Query(json_schema_extra={"enum": list(MEMORY_STATUSES)}, description="Only this status.")
    ] = None,
    thread: Annotated[UUID | None, Query(description="Only this thread.")] = None,
) -> MemoryList:
    result = memory_list(wired.uow, status=status, thread=thread)
    wired.touched_memory(result.json_document()["items"])
    return result


@router.get(
    "/eval",
    response_model=EvalReport,
    responses=KNOWN,
    tags=["observation"],
    summary="What a council added, against ground truth: every figure of `council eval` (writes nothing)",
)
def eval_report(
    wired: Wired,
    thread: Annotated[list[UUID] | None, Query(description="A thread to read (repeatable).")] = None,
    tag: Annotated[
        list[str] | None, Query(max_length=200, description="An imported record's tag (repeatable).")
    ] = None,
    rule_set: Annotated[
        list[str] | None,
        Query(max_length=200, description="A stored rule set's id (repeatable; default: the pinned one)."),
    ] = None,
) -> EvalReport:
    if len(thread or []) + len(tag or []) + len(rule_set or []) > 100:
        raise BadInput("at most 100 threads, tags and rule sets in all")
    return evaluate(wired.uow, threads=thread or [], tags=tag or [], rule_sets=list(rule_set or []))
