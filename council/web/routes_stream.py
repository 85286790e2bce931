"""`GET /threads/{id}/stream`: the thread's events as server-sent events.

Each event is one SSE message whose ``id`` is the event id and whose data is
the event as JSON. Events are sent once settled, in the log's settled order
(:mod:`council.domain.tail`), which is not always id order: an event is never
skipped for having committed after a later id. A client that reconnects sends
``Last-Event-ID`` (browsers do) and gets every event after that one in the same
order, from the ledger first; a new client starts from now (whatever is not yet
visible when it connects), or after ``?after=N``. Between events a keep-alive
comment is sent, which is also when a stream notices its client has gone.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from council.domain.results.events import Event
from council.domain.tail import TailCursor
from council.errors import ConfigError
from council.services.threads import tail_events, tail_from
from council.web.errors import documented
from council.web.models import MAX_EVENT_ID
from council.web.wiring import Wired, Wiring, require_read

router = APIRouter(tags=["threads"], dependencies=[Depends(require_read)])
PAGE = 500
READY_TIMEOUT_S = 5.0

EventId = Annotated[int | None, Query(ge=0, le=MAX_EVENT_ID, description="Start after this event id.")]


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"


@router.get(
    "/threads/{thread_id}/stream",
    response_class=EventStreamResponse,
    responses={
        **documented(401, 404, 503),
        200: {"description": "Server-sent events: `id` is the event id, `data` the event as JSON."},
    },
    summary="The thread's events, live (server-sent events; resumes from Last-Event-ID)",
)
async def stream(
    thread_id: UUID,
    wired: Wired,
    after: EventId = None,
    last_event_id: Annotated[
        int | None, Header(ge=0, le=MAX_EVENT_ID, description="Resume after this event id.")
    ] = None,
) -> EventStreamResponse:
    resume = last_event_id if last_event_id is not None else after
    # 404 for an unknown thread
    cursor = await run_in_threadpool(partial(tail_from, wired.uow, thread_id, after=resume))
    if not wired.hub.running:
        raise ConfigError("the event stream is not running (the app was started without its lifespan)")
    return EventStreamResponse(
        _frames(wired, thread_id, cursor),
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _frames(wired: Wiring, thread_id: UUID, cursor: TailCursor) -> AsyncIterator[str]:
    with wired.hub.subscribe(thread_id) as subscription:
        yield "retry: 3000\n\n"
        # Subscribed, and the hub polling, before the first read: whatever settles after it wakes us.
        await wired.hub.ready(READY_TIMEOUT_S)
        yield ": listening\n\n"
        while True:
            page = await run_in_threadpool(partial(tail_events, wired.uow, thread_id, cursor, limit=PAGE))
            cursor = page.cursor
            for event in page.events:
                yield _frame(event)
            if page.full:
                continue
            # A timeout also re-reads: a wake-up missed while the database was away is only late.
            if not await subscription.wait(wired.keepalive_s):
                yield ": keep-alive\n\n"


def _frame(event: Event) -> str:
    return f"id: {event.id}\ndata: {json.dumps(event.json_document(), separators=(',', ':'))}\n\n"
