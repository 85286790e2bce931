"""What the routes are given: the wired dependencies, the access policy, the event hub.

Built once by :func:`council.web.app.create_app` and kept on ``app.state``;
routes reach it through :func:`wiring`; read routes are guarded by
:func:`require_read`, write routes by :func:`require_write` and :func:`unicode_body`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from council.bootstrap import Council, Scheduler, UnitOfWork
from council.domain.validate import lone_surrogate_at
from council.errors import BadInput
from council.services.reversal import reverify_touched
from council.web.hub import EventHub
from council.web.security import Policy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wiring:
    council: Council
    policy: Policy
    hub: EventHub
    actor: str
    keepalive_s: float

    @property
    def uow(self) -> UnitOfWork:
        return self.council.uow

    def scheduler(self) -> Scheduler | None:
        return self.council.scheduler()

    def required_scheduler(self) -> Scheduler:
        return self.council.required_scheduler()

    def touched_memory(self, items: Sequence[Mapping[str, object]]) -> None:
        """A read showed these memory items: queue re-verification of the provisional
        ones (docs/architecture.md §5, lazily). The read never fails for it: with no broker, or
        the broker down, the periodic sweep does the work."""
        reason = reverify_touched(self.scheduler, items)
        if reason is not None:
            log.warning("%s", reason)


def wiring(request: Request) -> Wiring:
    found: Wiring = request.app.state.wiring
    return found


Wired = Annotated[Wiring, Depends(wiring)]

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description=(
        "COUNCIL_API_TOKEN (reads and writes) or COUNCIL_API_READ_TOKEN (reads only). With neither "
        "configured, reads need no token and writes are refused."
    ),
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def require_read(wired: Wired, credentials: Credentials) -> None:
    """With a token configured, reads need one (either); without, they are open."""
    _enforce(wired.policy, credentials, write=False)


def require_write(wired: Wired, credentials: Credentials) -> None:
    """Writes need the write token; with none configured they are refused."""
    _enforce(wired.policy, credentials, write=True)


def plain_parameters(request: Request) -> None:
    """Every route's query and path parameters hold text Postgres can store: a NUL
    character (``%00``) is refused naming the parameter, never handed to a query (which
    would fail as a server error)."""
    pairs = [*request.query_params.multi_items(), *((k, str(v)) for k, v in request.path_params.items())]
    for name, value in pairs:
        if "\x00" in name or "\x00" in value:
            shown = name.replace("\x00", "\\0")
            raise BadInput(f"parameter {shown!r} contains a NUL character")


async def unicode_body(request: Request) -> None:
    """A write's JSON body holds Unicode text only: a lone surrogate (``"\\ud800"``) is
    refused, naming where, before any route reads it (FastAPI has parsed the body once
    already; this reads its cached parse)."""
    if not (await request.body()):
        return
    try:
        document = await request.json()
    except ValueError:
        return  # not JSON: the route's own validation says so
    where = lone_surrogate_at(document)
    if where is not None:
        raise BadInput(f"{where}: text holds a lone surrogate (not Unicode text)")


def _enforce(policy: Policy, credentials: HTTPAuthorizationCredentials | None, *, write: bool) -> None:
    refusal = policy.refusal(credentials.credentials if credentials else None, write=write)
    if refusal is not None:
        raise HTTPException(refusal.status, refusal.detail, refusal.headers or None)
