"""`GET /health`, `GET /metrics` and the middleware that times every request by route template."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Depends, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from council import metrics
from council.web.errors import documented
from council.web.models import HealthOut
from council.web.wiring import require_read

router = APIRouter(tags=["operations"])
UNMATCHED = "<unmatched>"


@router.get(
    "/health",
    response_model=HealthOut,
    summary="The process answers (no token needed; no ledger data, no database round trip)",
)
def health() -> HealthOut:
    return HealthOut(ok=True)


@router.get(
    "/metrics",
    dependencies=[Depends(require_read)],
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **documented(401)},
    summary="Prometheus metrics of this process",
)
def metrics_page() -> Response:
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)


class HttpMetrics:
    """Pure ASGI (it must not buffer a server-sent event stream); the route
    template, never the raw path, labels the observation, so ids do not
    become label values (nor does a made-up method: ``metrics.observe_http``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            metrics.observe_http(scope["method"], _template(scope), status, time.perf_counter() - started)


def _template(scope: Scope) -> str:
    route: Any = scope.get("route")
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    return str(path) if path else UNMATCHED
