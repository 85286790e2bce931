"""Configuration: the settings (``council.settings``, parsed once from the environment)
first, then the embedded stack's state file.

Variables (documented in docs/operations/configuration.md):

- ``COUNCIL_DATABASE_URL`` — Postgres URL (``postgresql://…``) the application
  uses (as the role ``council_app``, migration 0007); when unset the embedded
  stack's URL from the state file is used.
- ``COUNCIL_MIGRATE_DATABASE_URL`` — the URL ``council db upgrade`` migrates
  with, as the owner of the tables; when unset, ``COUNCIL_DATABASE_URL``, then the
  embedded stack's owner URL.
- ``COUNCIL_BROKER_URL`` — Redis URL for Celery; same fallback.
- ``COUNCIL_API_TOKEN`` — the bearer token of the HTTP faces (`council serve`
  writes, `council mcp --http` every request); never stored or logged.
- ``COUNCIL_HOME`` — where the embedded stack keeps its data and state file
  (default: the user's data directory, e.g. ``~/.local/share/council``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict, cast

from council.domain.retry import RetryPolicy
from council.errors import ConfigError, StackError
from council.settings import DEFAULT_HEADER_TIMEOUT_S as DEFAULT_HEADER_TIMEOUT_S
from council.settings import DEFAULT_IDLE_TIMEOUT_S as DEFAULT_IDLE_TIMEOUT_S
from council.settings import DEFAULT_POOL_SIZE as DEFAULT_POOL_SIZE
from council.settings import settings
from council.urls import checked_database_url as checked_database_url
from council.urls import libpq_url as libpq_url
from council.urls import redact_url as redact_url
from council.urls import split_hosts as split_hosts
from council.urls import url_role as url_role
from council.urls import with_role as with_role

STATE_FILE_NAME = "stack.json"
API_TOKEN_ENV = "COUNCIL_API_TOKEN"  # noqa: S105 (the variable's name, not a secret)


def council_home() -> Path:
    explicit = settings().home
    if explicit:
        return explicit
    import platformdirs

    return Path(platformdirs.user_data_dir("council", appauthor=False))


class ComponentRecord(TypedDict, total=False):
    """One component as the stack records and reports it (``council up | down | status``,
    published as ``StackComponent``): which keys it has depends on the command and the
    kind of component."""

    started_by_us: bool
    url: str | None
    pid: int | None
    running: bool
    external: bool
    reused: bool
    data_dir: str
    log: str
    state: str
    restarts: int
    last_exit_code: int | None
    last_exit_at: str | None
    stopped: bool


class StackState(TypedDict, total=False):
    """The embedded stack's state file, as `council up` writes it (council.stack)."""

    home: str
    components: dict[str, ComponentRecord]
    web_port: int
    database_url: str
    migrate_database_url: str
    broker_url: str


def state_file() -> Path:
    return council_home() / STATE_FILE_NAME


def read_state() -> StackState | None:
    path = state_file()
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"unreadable stack state file {path}: {exc}") from exc
    return cast(StackState, data) if isinstance(data, dict) else None  # the file as `up` wrote it


def write_state(data: StackState) -> None:
    """Private (0600): it holds the embedded broker's password."""
    from council.files import home_mode, private_dir, write_private

    path = state_file()
    private_dir(path.parent, home_mode())
    write_private(path, json.dumps(data, indent=2, sort_keys=True))


def clear_state() -> None:
    state_file().unlink(missing_ok=True)


def api_token() -> str | None:
    """The bearer token of the HTTP faces, or None when unset."""
    return settings().api_token


def database_url(required: bool = True) -> str | None:
    url = settings().database_url  # checked when the settings were read
    if url:
        return url
    state = read_state()
    if state and state.get("database_url"):
        return str(state["database_url"])
    if required:
        # Nothing to answer: the stack is down (exit 1, as any database that does not answer),
        # not the caller's mistake.
        raise StackError(
            "the database is not answering: no stack runs here (`council up` starts it) "
            "and COUNCIL_DATABASE_URL is unset"
        )
    return None


READ_ONLY_ROLE = "council_dashboard"  # migration 0004: SELECT on the documented views only


def read_only_database_url(required: bool = True) -> str | None:
    """The dashboards' read-only URL: COUNCIL_DASHBOARD_DATABASE_URL, else the
    application's URL with the read-only role and no password at all — neither in its
    user information nor as a ``password`` query parameter: the application's is not
    the role's."""
    url = settings().dashboard_database_url
    if url:
        return url
    app_url = database_url(required=required)
    if app_url is None:
        return None
    return with_role(app_url, READ_ONLY_ROLE)


def migrate_database_url(required: bool = True) -> str | None:
    """The owner's URL, for migrations: the environment's, else the embedded stack's."""
    url = settings().migrate_database_url or settings().database_url
    if url:
        return url
    state = read_state() or {}
    # A state file of a release before the application role has only database_url.
    url = state.get("migrate_database_url") or state.get("database_url")
    if url:
        return str(url)
    if required:
        raise ConfigError(
            "no database configured: set COUNCIL_MIGRATE_DATABASE_URL or COUNCIL_DATABASE_URL, "
            "or run `council up`"
        )
    return None


def broker_url(required: bool = True) -> str | None:
    url = settings().broker_url
    if url:
        return url
    state = read_state()
    if state and state.get("broker_url"):
        return str(state["broker_url"])
    if required:
        raise StackError(
            "the broker is not answering: no stack runs here (`council up` starts it) "
            "and COUNCIL_BROKER_URL is unset"
        )
    return None


def proposal_pins() -> tuple[str | None, str | None]:
    """The rule set and grouping a new retraction proposal pins instead of the
    thread's (``COUNCIL_RULE_SET`` / ``COUNCIL_GROUPING_ALGORITHM``), if set."""
    current = settings()
    return current.rule_set, current.grouping_algorithm


# Connections a process's database pool holds, as many again when all are busy (it opens
# them as transactions wait for one). A worker with a thread pool raises it to its concurrency.
POOL_SIZE_ENV = "COUNCIL_DB_POOL_SIZE"


def pool_size() -> int:
    return settings().db_pool_size or DEFAULT_POOL_SIZE


# The one retry policy's settings (council.domain.retry), read by the worker that retries.
RETRY_MAX_ENV = "COUNCIL_RETRY_MAX"  # retries after the first try
RETRY_BASE_ENV = "COUNCIL_RETRY_BASE_S"  # the backoff's first ceiling, doubled at each retry
RETRY_CAP_ENV = "COUNCIL_RETRY_CAP_S"  # the most any one wait may be


def retry_policy() -> RetryPolicy:
    """The policy under this process's settings (a bad variable was refused when they were read)."""
    return settings().retry


# How long an attempt owns its run before the sweep may hand it to another worker; a
# coalescing mark (council.adapters.coalesce) lives no longer than this by default.
RUN_LEASE_ENV = "COUNCIL_RUN_LEASE_S"
MARK_TTL_ENV = "COUNCIL_MARK_TTL_S"


def run_lease_s() -> float:
    return settings().run_lease_s


def mark_ttl_s() -> int:
    """How long a waiting message's coalescing mark holds the sweep off its work: the run
    lease, unless ``COUNCIL_MARK_TTL_S`` says otherwise (at least 1 s)."""
    return settings().mark_ttl_s


# How much evidence text an API run is given inline, in tokens (about 4 characters each):
# whole items in the briefing's order while they fit; an item that does not fit is read through
# the read_evidence tool, and a citation of evidence neither given nor read is refused
# (docs/architecture.md §7: a run cites only what it read).
INLINE_EVIDENCE_ENV = "COUNCIL_INLINE_EVIDENCE_TOKENS"
# How many tool rounds (answers that call read_evidence) an API run may take before its
# final answer; each round may read several items.
EVIDENCE_TOOL_TURNS_ENV = "COUNCIL_EVIDENCE_TOOL_TURNS"


def inline_evidence_tokens() -> int:
    return settings().inline_evidence_tokens


def evidence_tool_turns() -> int:
    return settings().evidence_tool_turns


# How often a web process's event hub polls the log for settled events (the live
# stream's wake-up, council.web.hub); a stream's latency is about this much.
EVENT_POLL_ENV = "COUNCIL_EVENT_POLL_S"


def event_poll_s() -> float:
    return settings().event_poll_s


# How long Council's HTTP servers (`council serve`, `council mcp --http`) wait for a
# connection's request head, from when it opens or its last answer ends, however
# slowly its bytes come (council.httpserver); and how long an idle keep-alive
# connection stays open (Settings.http_header_timeout_s, http_idle_timeout_s).
HEADER_TIMEOUT_ENV = "COUNCIL_HTTP_HEADER_TIMEOUT_S"
IDLE_TIMEOUT_ENV = "COUNCIL_HTTP_IDLE_TIMEOUT_S"
# How long an MCP HTTP session may go without a request before it is ended and its
# unanswered runs fail (council.mcp.http; Settings.mcp_session_idle_s).
MCP_SESSION_IDLE_ENV = "COUNCIL_MCP_SESSION_IDLE_S"
