"""`council mcp --http`: streamable HTTP, every request behind the bearer token.

The token is the HTTP API's write token (``COUNCIL_API_TOKEN``): an MCP client
writes (begins runs, submits output), so it needs the token that may write.
The server refuses to start without it. It binds loopback unless told
otherwise, and the SDK's DNS-rebinding check allows only loopback ``Host``
names there.
"""

from __future__ import annotations

import hmac
import json
import socket
from typing import Any

from mcp.server.fastmcp import FastMCP
from starlette.types import ASGIApp, Receive, Scope, Send


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


def serve(server: FastMCP, sock: socket.socket, token: str, log_config: dict[str, Any]) -> None:
    """Serve streamable HTTP on the bound socket until interrupted."""
    import uvicorn

    app = BearerGuard(server.streamable_http_app(), token)
    uvicorn.Server(
        uvicorn.Config(app, log_config=log_config, timeout_graceful_shutdown=5, proxy_headers=False)
    ).run(sockets=[sock])
