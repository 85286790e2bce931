"""Reads of a thread: the thread, its answer, graph, runs, stance changes, events and reentry
packet."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from fastapi.responses import PlainTextResponse

from council.domain.reentry import Fetch, ReentryPacket
from council.domain.reentry_markdown import render_markdown
from council.domain.results.answer import Answer
from council.domain.results.events import EventList, Formation
from council.domain.results.governance import Governance
from council.domain.results.graph import ThreadGraph
from council.domain.results.learning import StancesShown
from council.domain.results.runs import RunList
from council.domain.results.threads import ThreadList, ThreadShown
from council.services.export_record import thread_answer
from council.services.formation import formation
from council.services.governance import thread_governance
from council.services.learning import stances as stance_changes
from council.services.reentry import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET, reentry_packet
from council.services.runs import thread_runs
from council.services.threads import list_events, list_threads, show_thread, thread_graph
from council.web.errors import documented
from council.web.models import MAX_EVENT_ID
from council.web.wiring import Wired, Wiring, require_read

router = APIRouter(
    prefix="/threads", tags=["threads"], dependencies=[Depends(require_read)], responses=documented(401, 503)
)
KNOWN = documented(404)

Budget = Annotated[int, Query(ge=MIN_BUDGET, le=MAX_BUDGET, description="Token budget.")]
Blind = Annotated[bool, Query(description="Redact stances (the agents' briefing).")]


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


@router.get("", response_model=ThreadList, summary="Every thread, oldest first")
def threads(wired: Wired) -> ThreadList:
    return list_threads(wired.uow)


@router.get("/{thread_id}", response_model=ThreadShown, responses=KNOWN, summary="A thread with counts")
def thread(thread_id: UUID, wired: Wired) -> ThreadShown:
    return show_thread(wired.uow, thread_id)


@router.get(
    "/{thread_id}/answer",
    response_model=Answer,
    responses=KNOWN,
    summary="The council's answer on the thread, as its decision record leads with it",
)
def answer(thread_id: UUID, wired: Wired) -> Answer:
    return thread_answer(wired.uow, thread_id)


@router.get(
    "/{thread_id}/graph",
    response_model=ThreadGraph,
    responses=KNOWN,
    summary="Nodes with their versions, edges, branches, consolidations and memory",
)
def graph(thread_id: UUID, wired: Wired) -> ThreadGraph:
    return thread_graph(wired.uow, thread_id)


@router.get(
    "/{thread_id}/formation",
    response_model=Formation,
    responses=KNOWN,
    summary="Each claim with its node's groups as they were then, and the links that joined them",
)
def formation_of(thread_id: UUID, wired: Wired) -> Formation:
    return formation(wired.uow, thread_id)


@router.get(
    "/{thread_id}/governance",
    response_model=Governance,
    responses=KNOWN,
    summary="Why each open head is or is not consolidated; evidence with history; proposals with votes",
)
def governance(thread_id: UUID, wired: Wired) -> Governance:
    return thread_governance(wired.uow, thread_id)


@router.get("/{thread_id}/runs", response_model=RunList, responses=KNOWN, summary="The thread's runs")
def runs(thread_id: UUID, wired: Wired) -> RunList:
    return thread_runs(wired.uow, thread_id)


@router.get(
    "/{thread_id}/stances",
    response_model=StancesShown,
    responses=KNOWN,
    summary="Stance changes: held, toward or against what a run was shown, after evidence, no recorded cause",
)
def stances(thread_id: UUID, wired: Wired) -> StancesShown:
    return stance_changes(wired.uow, thread_id)


@router.get(
    "/{thread_id}/events",
    response_model=EventList,
    responses=KNOWN,
    summary="The append-only event log, in order (pages with after/limit; never truncated silently)",
)
def events(
    thread_id: UUID,
    wired: Wired,
    after: Annotated[int, Query(ge=0, le=MAX_EVENT_ID, description="Only events with a larger id.")] = 0,
    limit: Annotated[int | None, Query(ge=1, le=10_000, description="Page size (default: all).")] = None,
) -> EventList:
    return list_events(wired.uow, thread_id, after=after, limit=limit)


@router.get(
    "/{thread_id}/reentry",
    response_model=ReentryPacket,
    responses=KNOWN,
    summary="The reentry packet as JSON (schema/reentry-packet.schema.json)",
)
def reentry(
    thread_id: UUID, wired: Wired, budget: Budget = DEFAULT_BUDGET, blind: Blind = False
) -> ReentryPacket:
    return _packet(wired, thread_id, budget, blind)


@router.get(
    "/{thread_id}/reentry.md",
    response_class=MarkdownResponse,
    responses=KNOWN,
    summary="The reentry packet as Markdown",
)
def reentry_markdown(
    thread_id: UUID, wired: Wired, budget: Budget = DEFAULT_BUDGET, blind: Blind = False
) -> MarkdownResponse:
    return MarkdownResponse(render_markdown(_packet(wired, thread_id, budget, blind), _fetch_path))


def _fetch_path(thread_id: str, fetch: Fetch) -> str:
    """Where a left-out section can be read, as this API's path."""
    paths = {
        "reentry": f"`GET /threads/{thread_id}/reentry.md?budget={fetch.budget}`",
        "evidence": "`GET /evidence/{id}`",
        "branches": f"`GET /threads/{thread_id}/graph` (its branches)",
        "memory": f"`GET /memory?thread={thread_id}`",
    }
    return paths[fetch.read]


def _packet(wired: Wiring, thread_id: UUID, budget: int, blind: bool) -> ReentryPacket:
    packet = reentry_packet(wired.uow, thread_id, budget=budget, blind=blind)
    wired.touched_memory([item.model_dump() for item in packet.memory])
    return packet
