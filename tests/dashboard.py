"""Shared by the dashboard tests: the read-only role's URL and a run made as a worker makes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from council.domain.profile import Profile
from council.domain.requests import CompiledRequest, Exposure
from tests.builders import ACTOR, MODELS, Ledger
from tests.engines import engine_for
from tests.migrations.schema_dump import role_url

DASHBOARD_ROLE = "council_dashboard"


def dashboard_url(db_url: str) -> str:
    """The same database, logged in as the dashboard role (no password: trust auth)."""
    return role_url(db_url, DASHBOARD_ROLE)


def worker_run(
    ledger: Ledger,
    provider: str = "zhipu",
    *,
    exposures: Sequence[Exposure] = (),
    mode: str = "deliberative",
) -> tuple[UUID, int, str]:
    """A run as a worker makes it: dispatched, claimed for an attempt, its
    request and exposures stored before the call. Returns (id, attempt, request hash)."""
    profile = Profile(name=provider, model=MODELS[provider], provider=provider)
    with ledger.uow() as tx:
        _, [run_id], _ = tx.runs.create_dispatch(
            thread_id=ledger.thread_id, profiles=[profile], mode=mode, rounds=1, actor=ACTOR
        )
    with ledger.uow() as tx:
        claimed = tx.runs.begin(run_id, owner="test-worker", lease_s=300).run
    assert claimed is not None
    request = CompiledRequest(
        model=profile.model,
        messages=[{"role": "user", "content": "the council briefing"}],
        params={},
        exposures=list(exposures),
    )
    with ledger.uow() as tx:
        assert tx.runs.store_request(run_id, claimed.attempt, request)
    return run_id, claimed.attempt, request.sha256


def fail_run(
    ledger: Ledger,
    run_id: UUID,
    attempt: int,
    reason: str = "provider said no",
    *,
    usage: dict[str, Any] | None = None,
    cost_usd: float | None = None,
) -> None:
    """The attempt fails as a worker records it: fenced on the attempt, then finished
    (with the tokens and cost of its calls, when given: a run failed on an invalid answer)."""
    with ledger.uow() as tx:
        fenced = tx.runs.fence(run_id, attempt)
        assert fenced is not None
        tx.runs.finish(
            fenced,
            attempt,
            status="failed",
            usage=usage,
            cost_usd=cost_usd,
            error=reason,
            event_payload={"reason": reason},
        )


def view_rows(engine: Engine, view: str, **where: Any) -> list[dict[str, Any]]:
    """Rows of a view where each given column equals its value, read as the views'
    reader, the dashboard role, on the database of ``engine``."""
    reader = engine_for(dashboard_url(engine.url.render_as_string(hide_password=False)))
    condition = " AND ".join(f"{column} = :{column}" for column in where) or "true"
    with reader.connect() as conn:
        return [
            dict(r) for r in conn.execute(text(f"SELECT * FROM {view} WHERE {condition}"), where).mappings()
        ]


def version_of(ledger: Ledger, content: str, **kw: Any) -> UUID:
    """A new node's first version."""
    return UUID(str(ledger.node(content, **kw)["version_id"]))
