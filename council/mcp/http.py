"""`council mcp --http`: streamable HTTP, every request behind the bearer token.

The token is the HTTP API's write token (``COUNCIL_API_TOKEN``): an MCP client
writes (begins runs, submits output), so it needs the token that may write.
The server refuses to start without it. It binds loopback unless told
otherwise. In front of the token check sits the HTTP API's guard
(``council.httpguard``): a ``Host`` that is not loopback, the bound host or in
``COUNCIL_ALLOWED_HOSTS`` is refused (400, DNS rebinding), and a body larger
than ``COUNCIL_API_MAX_BODY_BYTES`` is refused before it is read (413) — on
every address, not only loopback, where the SDK's own check applies — and a JSON
body that is not UTF-8 or holds ``NaN`` or ``Infinity`` is answered 400 with a
JSON-RPC parse error (the SDK answered 500 to one that is not UTF-8).
"""

from __future__ import annotations

import hmac
import json
import socket
from dataclasses import replace

from mcp.server.fastmcp import FastMCP
from starlette.types import ASGIApp, Receive, Scope, Send

from council import httpguard, httpserver


class BearerGuard:
    """Pure ASGI around the MCP app: no request reaches it without the token
    (compared in constant time); lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credentials = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    given = credentials.strip()
        if not given or not hmac.compare_digest(given, self._token):
            detail = "a bearer token is required" if not given else "invalid token"
            body = json.dumps({"detail": detail}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def guarded(app: ASGIApp, token: str, *, bound_host: str) -> ASGIApp:
    """``app`` behind the Host allow-list and body bound, then the bearer token."""
    policy = replace(httpguard.Policy.from_env(bound_host=bound_host), malformed_json="jsonrpc")
    return httpguard.Guard(BearerGuard(app, token), policy)


def serve(
    server: FastMCP,
    sock: socket.socket,
    token: str,
    log_config: dict[str, object],
    timeouts: httpserver.Timeouts,
    *,
    bound_host: str,
) -> None:
    """Serve streamable HTTP on the bound socket until interrupted, every connection
    bounded in time (``council.httpserver``)."""
    app = guarded(server.streamable_http_app(), token, bound_host=bound_host)
    httpserver.serve(app, sock, log_config, timeouts)
