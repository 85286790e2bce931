"""The HTTP face: JSON over the ledger's services, a live event stream, the page.

Nothing is built at import time; :func:`create_app` takes the wired
dependencies (``council.bootstrap``: `council serve` bootstraps the configured
ones, tests pass their own).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import Depends, FastAPI

from council import __version__, config
from council.bootstrap import Council, bootstrap
from council.services.threads import settled_threads
from council.web import (
    errors,
    observability,
    page,
    routes_ask,
    routes_create,
    routes_ledger,
    routes_lists,
    routes_stream,
    routes_threads,
    routes_writes,
    security,
)
from council.web.hub import EventHub
from council.web.security import READ_TOKEN_ENV, TOKEN_ENV, Policy
from council.web.wiring import Wiring, plain_parameters

DESCRIPTION = (
    "The reasoning ledger of a Council: threads, runs, independence groups, consolidations, "
    "memory, reentry packets and the event log, live. Writes need the bearer token the server "
    f"was started with (`{TOKEN_ENV}`) and are refused when it has none. With a token configured, "
    f"reads need it too, or the read-only `{READ_TOKEN_ENV}`; `/health` never does."
)


def create_app(
    council: Council | None = None,
    *,
    policy: Policy | None = None,
    keepalive_s: float = 15.0,
    poll_s: float | None = None,
    actor: str = "api",
) -> FastAPI:
    """The application. Defaults: the configured dependencies (``bootstrap()``: the
    database of ``COUNCIL_DATABASE_URL`` or the embedded stack, Celery as the
    scheduler when a broker is configured) and the access policy of the
    environment (tokens, hosts, body limit: :mod:`council.web.security`). ``poll_s``:
    how often the event hub looks for settled events (default ``COUNCIL_EVENT_POLL_S``,
    else 0.25 s)."""
    council = council or bootstrap()
    wired = Wiring(
        council=council,
        policy=policy if policy is not None else Policy.from_env(),
        hub=EventHub(
            partial(settled_threads, council.uow),
            poll_s=config.event_poll_s() if poll_s is None else poll_s,
        ),
        actor=actor,
        keepalive_s=keepalive_s,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        wired.hub.start()
        try:
            yield
        finally:
            await wired.hub.stop()

    # No Swagger UI or ReDoc: FastAPI loads them from a CDN, and everything here works offline.
    app = FastAPI(
        title="Council",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        responses=errors.documented(400),
        dependencies=[Depends(plain_parameters)],
    )
    app.state.wiring = wired
    errors.install(app)
    # The last added runs first: every request is timed, the refused ones included.
    app.add_middleware(security.Guard, policy=wired.policy)
    app.add_middleware(observability.HttpMetrics)
    for module in (
        routes_threads,
        routes_lists,
        routes_stream,
        routes_ledger,
        routes_writes,
        routes_ask,
        routes_create,
        observability,
        page,
    ):
        app.include_router(module.router)
    page.mount_static(app)
    return app
