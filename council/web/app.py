"""The HTTP face: JSON over the ledger's services, a live event stream, the page.

Nothing is built at import time; :func:`create_app` is the one bootstrap that
wires the real dependencies (`council serve` calls it, tests pass their own).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy import Engine

from council import __version__, config
from council.adapters.scheduler import Scheduler
from council.ledger.db import engine_for
from council.web import (
    errors,
    observability,
    page,
    routes_ledger,
    routes_stream,
    routes_threads,
    routes_writes,
)
from council.web.hub import EventHub
from council.web.wiring import Wiring

TOKEN_ENV = "COUNCIL_API_TOKEN"  # noqa: S105 (the variable's name, not a secret)
DESCRIPTION = (
    "The reasoning ledger of a Council: threads, runs, independence groups, consolidations, "
    "memory, reentry packets and the event log, live. Reads are open; writes need the bearer "
    f"token the server was started with (`{TOKEN_ENV}`) and are refused when it has none."
)


def create_app(
    engine: Engine | None = None,
    *,
    token: str | None = None,
    scheduler: Callable[[], Scheduler | None] | None = None,
    keepalive_s: float = 15.0,
    actor: str = "api",
) -> FastAPI:
    """The application. Defaults: the configured database (``COUNCIL_DATABASE_URL``
    or the embedded stack), the token from ``COUNCIL_API_TOKEN``, and Celery as
    the scheduler when a broker is configured."""
    if engine is None:
        url = config.database_url()
        assert url is not None  # required=True raises instead
        engine = engine_for(url)
    wired = Wiring(
        engine=engine,
        token=token if token is not None else os.environ.get(TOKEN_ENV) or None,
        scheduler=scheduler or celery_scheduler,
        hub=EventHub(engine.url.set(drivername="postgresql").render_as_string(hide_password=False)),
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
    )
    app.state.wiring = wired
    errors.install(app)
    app.add_middleware(observability.HttpMetrics)
    for module in (routes_threads, routes_stream, routes_ledger, routes_writes, observability, page):
        app.include_router(module.router)
    page.mount_static(app)
    return app


def celery_scheduler() -> Scheduler | None:
    from workers.tasks import scheduler_if_configured

    return scheduler_if_configured()
