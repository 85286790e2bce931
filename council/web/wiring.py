"""What the routes are given: the engine, the token, the scheduler, the event hub.

Built once by :func:`council.web.app.create_app` and kept on ``app.state``;
routes reach it through :func:`wiring`, and write routes are guarded by
:func:`require_token`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from council.adapters.scheduler import Scheduler
from council.errors import ConfigError
from council.ledger.unit import UnitOfWork
from council.services.reversal import request_reverification
from council.web.hub import EventHub

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wiring:
    engine: Engine
    token: str | None
    scheduler: Callable[[], Scheduler | None]
    hub: EventHub
    actor: str
    keepalive_s: float

    @property
    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.engine)

    def required_scheduler(self) -> Scheduler:
        scheduler = self.scheduler()
        if scheduler is None:
            raise ConfigError("dispatch needs a broker: set COUNCIL_BROKER_URL or run `council up`")
        return scheduler

    def touched_memory(self, items: Sequence[Mapping[str, Any]]) -> None:
        """A read showed these memory items: queue re-verification of the provisional
        ones (DESIGN §5, lazily). The read never fails for it: with no broker, or
        the broker down, the periodic sweep does the work."""
        try:
            scheduler = self.scheduler()
            if scheduler is not None:
                request_reverification(scheduler, items)
        except Exception as exc:
            log.warning("re-verification not queued (%s); the sweep will do it", type(exc).__name__)


def wiring(request: Request) -> Wiring:
    found: Wiring = request.app.state.wiring
    return found


Wired = Annotated[Wiring, Depends(wiring)]

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description="The value of COUNCIL_API_TOKEN the server was started with (write paths only).",
)


def require_token(
    wired: Wired, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Writes need the server's bearer token; with none configured they are refused."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if not wired.token:
        raise HTTPException(
            401, "write paths are disabled: the server was started without COUNCIL_API_TOKEN", challenge
        )
    if credentials is None:
        raise HTTPException(401, "a bearer token is required (Authorization: Bearer TOKEN)", challenge)
    # Bytes: compare_digest refuses non-ASCII str, and a header may carry any latin-1 text.
    if not secrets.compare_digest(credentials.credentials.encode(), wired.token.encode()):
        raise HTTPException(401, "invalid token", challenge)


def jsonable(data: Any) -> Any:
    """Plain JSON values (UUID, datetime, Decimal as number), as the CLI prints them."""
    return jsonable_encoder(data)
