"""The one place that wires real dependencies (cosmicpython's bootstrap).

Faces — the CLI, the HTTP API, the MCP server and the Celery tasks — call
:func:`bootstrap` once and hand what it returns to the services; nothing
builds a pool or a client at import time. It is also where the
settings are read: :func:`bootstrap_settings` parses the environment once into
the frozen :class:`council.settings.Settings` the rest of Council asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from council import config
from council import settings as settings_module
from council.adapters.scheduler import Scheduler as Scheduler  # the faces' handle on the port
from council.errors import ConfigError
from council.ledger.unit import UnitOfWork as UnitOfWork  # the faces' handle on it

NO_BROKER = "this needs a broker: set COUNCIL_BROKER_URL or run `council up`"


@dataclass
class Council:
    """What a face needs: the unit of work and, when a broker is configured, the scheduler."""

    uow: UnitOfWork
    scheduler_factory: Callable[[], Scheduler | None] = field(repr=False)
    _scheduler: Scheduler | None = field(default=None, init=False, repr=False)
    _resolved: bool = field(default=False, init=False, repr=False)

    def scheduler(self) -> Scheduler | None:
        """The task queue, or None when no broker is configured (resolved once)."""
        if not self._resolved:
            self._scheduler = self.scheduler_factory()
            self._resolved = True
        return self._scheduler

    def required_scheduler(self) -> Scheduler:
        scheduler = self.scheduler()
        if scheduler is None:
            raise ConfigError(NO_BROKER)
        return scheduler

    def pooled(self) -> Council:
        """Open the database pool now (a long-running face started from the CLI:
        its reads then take pooled connections too)."""
        _ = self.uow.pool
        return self


def bootstrap_settings() -> settings_module.Settings:
    """Read this process's settings from its environment, once, and install them
    (ConfigError names a bad variable: exit 2 from the CLI)."""
    current = settings_module.load()
    settings_module.install(current)
    return current


def bootstrap(
    database_url: str | None = None,
    *,
    scheduler: Callable[[UnitOfWork], Scheduler | None] | None = None,
    lazy_pool: bool = False,
) -> Council:
    """The configured database (``COUNCIL_DATABASE_URL``, else the embedded stack)
    and the Celery scheduler when a broker is configured. ``lazy_pool`` (one CLI
    command): the pool is opened when a transaction first needs it, and a read
    (``uow.reading()``) before that opens a connection of its own, so a read started
    by a script opens one connection, not a pool."""
    bootstrap_settings()
    url = database_url or config.database_url()
    assert url is not None  # required=True raises instead
    if lazy_pool:
        config.libpq_url(url)  # a URL that is not Postgres is refused here, as eagerly
        uow = UnitOfWork(url=url)
    else:
        from council.ledger.db import pool_for

        uow = UnitOfWork(pool_for(url))
    make = scheduler or celery_if_configured
    return Council(uow=uow, scheduler_factory=lambda: make(uow))


def celery_if_configured(uow: UnitOfWork) -> Scheduler | None:
    """Celery, with evaluations planned into batches by the consolidation service."""
    from council.adapters.celery import scheduler_if_configured
    from council.services.consolidation import plan_batches

    batch = settings_module.settings().evaluation_batch
    return scheduler_if_configured(lambda ids: plan_batches(uow, ids, max_versions=batch))


def release() -> None:
    """Close every pooled database connection of this process (before it stops the stack)."""
    from council.ledger.db import dispose_all

    dispose_all()
