"""The guard in front of every HTTP face (the API and ``council mcp --http``):
who may use it, under which host name, with how large a body (docs/architecture.md §11).

Tokens. ``COUNCIL_API_TOKEN`` grants reads and writes; ``COUNCIL_API_READ_TOKEN``
grants reads only. A token shorter than ``MIN_TOKEN_CHARS`` is refused at start-up,
and an empty one counts as none. With either set, every route needs ``Authorization: Bearer
TOKEN`` except ``/health`` and the page's own files (``/``, ``/static/…``,
``/openapi.json``), which hold no ledger data; with neither, reads are open (the
server binds loopback by default) and writes are refused. Tokens are compared in
constant time and never appear in a URL or a log line: a request whose query
string carries a token-named parameter or a configured token's value is refused
(400), and the access log drops every query string (``QueryFreeAccessLog``).

Headers. Every answer carries a content security policy that allows only the
server's own scripts, styles and connections and no framing, ``X-Frame-Options:
DENY``, ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.

Hosts. A request whose ``Host`` header names no allowed host is refused (400)
before anything else is looked at: a page elsewhere that points its own DNS name
at 127.0.0.1 (DNS rebinding) still sends that name. Allowed: ``127.0.0.1``,
``localhost`` and ``[::1]`` on any port, the host the server is bound to, and the
names in ``COUNCIL_ALLOWED_HOSTS`` (comma-separated; ``*`` turns the check off).

Bodies. Only write routes take a body, so a body is read only from the holder of
the write token: anyone else is refused before its first byte. Its size is bounded
by ``COUNCIL_API_MAX_BODY_BYTES`` (default 6 MiB, above the 5 MiB evidence cap)
before it is read: a larger ``Content-Length`` is refused at once (413), a chunked
body is counted as it arrives and refused as soon as it passes the bound. Every
such refusal closes the connection, so the rest of the body is never read. A JSON
body is then read whole and must be JSON as Council takes it: UTF-8, numbers finite
(no ``NaN`` or ``Infinity``, which Python's parser accepts and no column or answer
can hold), nesting at most 64 deep; otherwise the API answers 422 as FastAPI words
a malformed body, and ``council mcp --http`` 400 with a JSON-RPC parse error
(``Policy.malformed_json``). The app receives the body it would have read.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from council import config
from council.domain import strict_json
from council.domain.jsonvalue import JsonObject
from council.domain.validate import MAX_EVIDENCE_BYTES
from council.errors import ConfigError
from council.settings import settings

TOKEN_ENV = config.API_TOKEN_ENV
READ_TOKEN_ENV = "COUNCIL_API_READ_TOKEN"  # noqa: S105 (the variable's name, not a secret)
ALLOWED_HOSTS_ENV = "COUNCIL_ALLOWED_HOSTS"
MAX_BODY_ENV = "COUNCIL_API_MAX_BODY_BYTES"
DEFAULT_MAX_BODY_BYTES = MAX_EVIDENCE_BYTES + 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
ANY_ADDRESS = ("0.0.0.0", "::", "")  # noqa: S104 (compared with, never bound: a wildcard names no host)
MIN_TOKEN_CHARS = 16
# Query parameters that name a credential: refused, whatever their value.
_TOKEN_PARAMETERS = frozenset(
    {"token", "access_token", "api_token", "api_key", "apikey", "key", "auth", "authorization", "bearer"}
)
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)

Grant = Literal["write", "read"]
MalformedJson = Literal["http", "jsonrpc"]


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str
    document: JsonObject | None = None  # the answer's body, when not {"detail": detail}

    @property
    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"} if self.status == 401 else {}


def malformed(reason: str, style: MalformedJson) -> Refusal:
    """A JSON body refused, as the face words a malformed body."""
    if style == "jsonrpc":
        error: JsonObject = {"code": -32700, "message": f"Parse error: {reason}"}
        return Refusal(400, reason, {"jsonrpc": "2.0", "id": None, "error": error})
    return Refusal(422, reason, {"detail": [{"type": "json_invalid", "loc": ["body"], "msg": reason}]})


@dataclass(frozen=True)
class Policy:
    write_token: str | None = None
    read_token: str | None = None
    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS  # None: any host
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    malformed_json: MalformedJson = "http"  # how a refused JSON body is answered (see ``malformed``)

    @classmethod
    def from_env(cls, *, bound_host: str | None = None) -> Policy:
        """The policy the settings configure, for a server bound to ``bound_host``."""
        current = settings()
        return cls(
            write_token=checked_token(TOKEN_ENV, config.api_token()),
            read_token=checked_token(READ_TOKEN_ENV, current.api_read_token),
            allowed_hosts=allowed_hosts(current.allowed_hosts, bound_host),
            max_body_bytes=current.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
        )

    @property
    def reads_guarded(self) -> bool:
        return bool(self.write_token or self.read_token)

    def grant(self, token: str | None) -> Grant | None:
        """What ``token`` grants. Both comparisons always run, each in constant time."""
        if not token:
            return None
        # Bytes: compare_digest refuses non-ASCII str, and a header may carry any latin-1 text.
        given = token.encode()
        write = hmac.compare_digest(given, (self.write_token or "").encode()) and bool(self.write_token)
        read = hmac.compare_digest(given, (self.read_token or "").encode()) and bool(self.read_token)
        return "write" if write else "read" if read else None

    def refusal(self, token: str | None, *, write: bool) -> Refusal | None:
        """Why the bearer of ``token`` (None: no token sent) may not read, or write; None if it may."""
        if write and not self.write_token:
            return Refusal(401, f"write paths are disabled: the server was started without {TOKEN_ENV}")
        if not write and not self.reads_guarded:
            return None
        if token is None:
            return Refusal(401, "a bearer token is required (Authorization: Bearer TOKEN)")
        grant = self.grant(token)
        if grant is None:
            return Refusal(401, "invalid token")
        if write and grant != "write":
            return Refusal(403, f"the read token cannot write; {TOKEN_ENV} can")
        return None

    def token_in_query(self, query: bytes) -> bool:
        """Whether a query string carries a credential: a token-named parameter, or a
        configured token's value anywhere in it."""
        text = query.decode("latin-1")
        if not text:
            return False
        if any(
            name.strip().lower() in _TOKEN_PARAMETERS for name, _ in parse_qsl(text, keep_blank_values=True)
        ):
            return True
        return any(token and token in text for token in (self.write_token, self.read_token))

    def host_allowed(self, host: str | None) -> bool:
        if self.allowed_hosts is None:
            return True
        return host is not None and hostname(host) in self.allowed_hosts


def checked_token(variable: str, token: str | None) -> str | None:
    """A configured token, refused when it is too short to be one."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{variable} is {len(token)} characters: a token needs at least {MIN_TOKEN_CHARS} "
            "(e.g. openssl rand -hex 32)"
        )
    return token


class QueryFreeAccessLog(logging.Filter):
    """uvicorn's access log line without the request's query string (no credential a
    client put in a URL is ever written to a log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


def allowed_hosts(extra: Iterable[str], bound_host: str | None = None) -> frozenset[str] | None:
    """Loopback, the bound host and ``extra`` (``*`` among them: None, any host)."""
    names = {entry.strip() for entry in extra if entry.strip()}
    if "*" in names:
        return None
    if bound_host is not None and bound_host not in ANY_ADDRESS:
        names.add(f"[{bound_host}]" if ":" in bound_host and not bound_host.startswith("[") else bound_host)
    return LOOPBACK_HOSTS | {hostname(name) for name in names}


def hostname(host: str) -> str:
    """The name in a ``Host`` header, without its port, lower case: ``[::1]:8787`` → ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end > 0 else host
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.removesuffix(".")


class Guard:
    """Pure ASGI, around the whole app: the Host check, then for a request with a body
    the sender's right to write and the body's size, all before a byte of it is read.
    A chunked body is read here, counted as it arrives and refused as soon as it passes
    the bound; the app then receives it whole, so no app sees a byte past the bound."""

    def __init__(self, app: ASGIApp, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = Headers(scope=scope)
        if not self.policy.host_allowed(headers.get("host")):
            await _answer(
                send, Refusal(400, f"this server does not answer to that Host ({ALLOWED_HOSTS_ENV})")
            )
            return
        if self.policy.token_in_query(scope.get("query_string", b"")):
            await _answer(
                send, Refusal(400, "a token goes in the Authorization header, never in a URL's query string")
            )
            return
        length = headers.get("content-length")
        if (length is None or length == "0") and "transfer-encoding" not in headers:
            await self.app(scope, receive, send)
            return
        scheme, token = _bearer(headers.get("authorization"))
        refusal = self.policy.refusal(token if scheme.lower() == "bearer" and token else None, write=True)
        limit = self.policy.max_body_bytes
        if refusal is None and length is not None and (not length.isdigit() or int(length) > limit):
            refusal = Refusal(413, too_large_reason(limit))
        if refusal is not None:
            await _answer(send, refusal)
            return
        json_body = _is_json(headers.get("content-type"))
        if length is not None and not json_body:  # the server frames the body by its stated length
            await self.app(scope, receive, send)
            return
        body = await _bounded(receive, limit)
        if body is None:
            await _answer(send, Refusal(413, too_large_reason(limit)))
            return
        reason = strict_json.body_problem(body) if json_body and body else None
        if reason is not None:
            await _answer(send, malformed(reason, self.policy.malformed_json))
            return
        await self.app(scope, _replay(body, receive), send)


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _with_security_headers(send: Send) -> Send:
    async def secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name, value) for name, value in SECURITY_HEADERS if name not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return secured


def _bearer(authorization: str | None) -> tuple[str, str]:
    """``Authorization: Scheme credentials`` split as FastAPI splits it."""
    if not authorization:
        return "", ""
    scheme, _, credentials = authorization.partition(" ")
    return scheme, credentials.strip()


async def _bounded(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``limit`` (the rest is never read)."""
    parts: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts)  # disconnected: the app sees what came, then the disconnect
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def too_large_reason(limit: int) -> str:
    return f"the request body exceeds {limit} bytes ({MAX_BODY_ENV})"


async def _answer(send: Send, refusal: Refusal) -> None:
    """The refusal as FastAPI words an HTTPException; the connection closes after it,
    so an unread body is never read."""
    body = json.dumps(refusal.document or {"detail": refusal.detail}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *((name.lower().encode(), value.encode()) for name, value in refusal.headers.items()),
    ]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
