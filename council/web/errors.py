"""The project's exceptions as HTTP answers, mapped in one place.

Unknown ids are 404, other bad input 422 (shaped like FastAPI's own
validation errors, so every 422 reads the same), a refused state change 409,
a URL that could not be fetched 502 (one whose body is not readable text 422), a
retryable database condition or missing configuration 503.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from council.domain.jsonvalue import JsonObject
from council.errors import (
    BadInput,
    ConfigError,
    Conflict,
    CouncilError,
    FetchError,
    ImmutableRow,
    NotFound,
    StackError,
    TransientDatabaseError,
)
from council.web.models import ErrorOut

# First match wins: NotFound is a kind of BadInput.
_STATUS: tuple[tuple[type[CouncilError], int], ...] = (
    (NotFound, 404),
    (BadInput, 422),
    (Conflict, 409),
    (ImmutableRow, 409),
    (TransientDatabaseError, 503),
    (ConfigError, 503),
    (StackError, 503),
    (FetchError, 502),
)


def status_of(exc: CouncilError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


async def council_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CouncilError)
    status = status_of(exc)
    message = " ".join(str(exc).split()) or type(exc).__name__
    if status == 422:
        body: JsonObject = {"detail": [{"loc": [], "msg": message, "type": "bad_input"}]}
    else:
        body = {"detail": message}
    headers = {"Retry-After": "1"} if isinstance(exc, TransientDatabaseError) else None
    return JSONResponse(body, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(CouncilError, council_error)


def documented(*statuses: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI entries for the error answers a route can give (422 FastAPI documents itself)."""
    descriptions = {
        400: "The Host header names no host this server answers to (COUNCIL_ALLOWED_HOSTS).",
        401: "No, or a wrong, bearer token; for a write, also: the server has no write token configured.",
        403: "The read token, where a write needs the write token.",
        404: "An id that names nothing of the expected kind.",
        409: "The ledger refused the change in its current state.",
        502: "A URL to fetch could not be fetched (deadline, network, its status, the size cap).",
        413: "The request body exceeds COUNCIL_API_MAX_BODY_BYTES; the connection is closed.",
        503: "Not available now (no broker configured, a retryable database condition).",
    }
    return {status: {"model": ErrorOut, "description": descriptions[status]} for status in statuses}
