"""Reads across the ledger: runs, node versions and their groups, consolidations, memory."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query

from council.domain.vocabulary import MEMORY_STATUSES
from council.ledger.consolidation_reads import groups, history, memory_list, show_consolidation
from council.ledger.nodes import show_version
from council.ledger.replay import replay
from council.ledger.runs import show_run
from council.web.errors import documented
from council.web.models import (
    ConsolidationOut,
    GroupsOut,
    HistoryOut,
    MemoryList,
    NodeOut,
    ReplayOut,
    RunDetail,
)
from council.web.wiring import Wired, jsonable, require_read

router = APIRouter(dependencies=[Depends(require_read)], responses=documented(401, 503))
KNOWN = documented(404)


@router.get(
    "/runs/{run_id}",
    response_model=RunDetail,
    responses=KNOWN,
    tags=["runs"],
    summary="Lineage, exposures, request hash and claims of a run",
)
def run(run_id: UUID, wired: Wired) -> Any:
    return jsonable(show_run(wired.engine, run_id))


@router.get(
    "/nodes/{version_id}",
    response_model=NodeOut,
    responses=KNOWN,
    tags=["nodes"],
    summary="A node version with status, edges, claims, citations and history",
)
def node(version_id: UUID, wired: Wired) -> Any:
    return jsonable(show_version(wired.engine, version_id))


@router.get(
    "/nodes/{version_id}/groups",
    response_model=GroupsOut,
    responses=KNOWN,
    tags=["nodes"],
    summary="Independence groups of the runs that claimed on a node version",
)
def node_groups(version_id: UUID, wired: Wired) -> Any:
    return jsonable(groups(wired.engine, version_id))


@router.get(
    "/nodes/{version_id}/history",
    response_model=HistoryOut,
    responses=KNOWN,
    tags=["consolidations"],
    summary="Every consolidation and recorded evaluation of the version's logical node",
)
def node_history(version_id: UUID, wired: Wired) -> Any:
    return jsonable(history(wired.engine, version_id))


@router.get(
    "/consolidations/{consolidation_id}",
    response_model=ConsolidationOut,
    responses=KNOWN,
    tags=["consolidations"],
    summary="A consolidation as stored: snapshot, hash, decision, status history, evidence, memory",
)
def consolidation(consolidation_id: UUID, wired: Wired) -> Any:
    return jsonable(show_consolidation(wired.engine, consolidation_id))


@router.get(
    "/consolidations/{consolidation_id}/replay",
    response_model=ReplayOut,
    responses=KNOWN,
    tags=["consolidations"],
    summary="Rebuild a consolidation (or recorded evaluation) from the rows it names and compare",
)
def consolidation_replay(consolidation_id: UUID, wired: Wired) -> Any:
    return jsonable(replay(wired.engine, consolidation_id))


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
) -> Any:
    result = memory_list(wired.engine, status=status, thread_id=thread)
    wired.touched_memory(result["items"])
    return jsonable(result)
