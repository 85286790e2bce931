"""How Council's HTTP faces are served: uvicorn, with every connection bounded in time
(docs/architecture.md §11). ``council serve`` and ``council mcp --http`` both serve here.

uvicorn closes a keep-alive connection that stays idle after an answer
(``timeout_keep_alive``), but it gives no deadline to a request head: a
connection that sends nothing, or a header byte every few seconds, is held for
ever, and enough of them exhaust the server. So the protocol here gives every
request head a deadline of its own, ``COUNCIL_HTTP_HEADER_TIMEOUT_S`` (10 s),
from when the connection opens or its last answer ends, that bytes arriving
do not renew; a connection whose head is not complete by then is closed. A body
has a total deadline too, ``COUNCIL_HTTP_BODY_TIMEOUT_S`` (60 s) from the end of its
head, whoever sends it (the write token's holder included): a body still arriving then
is cut off and its connection closed. An idle keep-alive connection is closed after
``COUNCIL_HTTP_IDLE_TIMEOUT_S`` (5 s). A head is bounded in size too: h11's 16 KiB
(``h11_max_incomplete_event_size``); a body's size is the guard's
(``council.httpguard``).
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from council import config
from council.settings import DEFAULT_BODY_TIMEOUT_S, settings

MAX_HEAD_BYTES = 16 * 1024


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head."""

    header_timeout_s = config.DEFAULT_HEADER_TIMEOUT_S  # set per server by ``bounded_protocol``
    body_timeout_s = DEFAULT_BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in: the request is under way
            self._head_arrived()
        if self.conn.their_state is h11.SEND_BODY:
            if self._body_deadline is None:  # set once a request: bytes arriving do not renew it
                self._body_deadline = self.loop.call_later(self.body_timeout_s, self._body_late)
        else:
            self._body_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()  # the next request's head, if any, has the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        self._body_arrived()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._head_arrived()
        self._head_deadline = self.loop.call_later(self.header_timeout_s, self._head_late)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def _body_arrived(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _body_late(self) -> None:
        self._body_deadline = None
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()  # the app, waiting for the rest, is told the client left


def bounded_protocol(
    header_timeout_s: float, body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
) -> type[BoundedH11Protocol]:
    return type(
        "BoundedH11Protocol",
        (BoundedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s},
    )


@dataclass(frozen=True)
class Timeouts:
    header_s: float = config.DEFAULT_HEADER_TIMEOUT_S
    idle_s: float = config.DEFAULT_IDLE_TIMEOUT_S
    body_s: float = DEFAULT_BODY_TIMEOUT_S

    @classmethod
    def from_env(cls) -> Timeouts:
        """The environment's timeouts (read before serving: a bad value is refused at start)."""
        current = settings()
        return cls(
            header_s=current.http_header_timeout_s,
            idle_s=current.http_idle_timeout_s,
            body_s=current.http_body_timeout_s,
        )


def serve(app: ASGIApp, sock: socket.socket, log_config: dict[str, object], timeouts: Timeouts) -> None:
    """Serve ``app`` on the bound socket until interrupted, every connection bounded in time."""
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            http=bounded_protocol(timeouts.header_s, timeouts.body_s),
            timeout_keep_alive=timeouts.idle_s,  # type: ignore[arg-type]  # call_later takes a float
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            log_config=log_config,
            timeout_graceful_shutdown=5,
            proxy_headers=False,
        )
    )
    server.run(sockets=[sock])
