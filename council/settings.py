"""Settings: every value Council takes from its environment, read in one place.

:meth:`Settings.from_environ` parses and checks each variable once (a bad value is a
``ConfigError`` naming the variable, exit 2 from the CLI); ``council.bootstrap`` builds
it from ``os.environ`` and installs it, and the rest of Council asks :func:`settings`.
Before anything is installed (a library call, a test that sets a variable and calls a
function), :func:`settings` builds one from the environment as it is at that moment.

This is the only module that reads ``os.environ``. A child process's environment is
built by :func:`child_environment`; a variable that a library reads for itself
(prometheus_client's, litellm's) is set by :func:`export`. Variables whose names are
only known at run time — a profile's ``api_key_env``, ``COUNCIL_PROFILE_*`` overrides,
the key variables redaction looks for (``council.known_secrets``) — are read from the
snapshot a Settings keeps (:meth:`Settings.variable`, :meth:`Settings.variables`).
Secrets are never part of its ``repr``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from council.domain.retry import RetryPolicy
from council.errors import ConfigError

RETRY_MAX_LIMIT = 100
DEFAULT_POOL_SIZE = 5
DEFAULT_RUN_LEASE_S = 300.0
DEFAULT_INLINE_EVIDENCE_TOKENS = 8000
DEFAULT_EVIDENCE_TOOL_TURNS = 4
DEFAULT_EVENT_POLL_S = 0.25
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_IDLE_TIMEOUT_S = 5.0
DEFAULT_BODY_TIMEOUT_S = 60.0
DEFAULT_MCP_SESSION_IDLE_S = 600.0
DEFAULT_FETCH_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Settings:
    """Council's configuration, parsed. ``None``: the variable is unset (its default or
    fallback is the caller's, e.g. the embedded stack's URL)."""

    home: Path | None = None  # COUNCIL_HOME
    database_url: str | None = field(default=None, repr=False)  # COUNCIL_DATABASE_URL
    migrate_database_url: str | None = field(default=None, repr=False)  # COUNCIL_MIGRATE_DATABASE_URL
    dashboard_database_url: str | None = field(default=None, repr=False)  # COUNCIL_DASHBOARD_DATABASE_URL
    broker_url: str | None = field(default=None, repr=False)  # COUNCIL_BROKER_URL
    api_token: str | None = field(default=None, repr=False)  # COUNCIL_API_TOKEN
    api_read_token: str | None = field(default=None, repr=False)  # COUNCIL_API_READ_TOKEN
    allowed_hosts: tuple[str, ...] = ()  # COUNCIL_ALLOWED_HOSTS, comma-separated
    max_body_bytes: int | None = None  # COUNCIL_API_MAX_BODY_BYTES (None: council.httpguard's default)
    actor: str | None = None  # COUNCIL_ACTOR
    debug: bool = False  # COUNCIL_DEBUG
    offline: bool = False  # COUNCIL_OFFLINE=1
    simulate: str = ""  # COUNCIL_SIMULATE, as given (council.agents.profiles checks it)
    profiles_file: Path | None = None  # COUNCIL_PROFILES
    rule_set: str | None = None  # COUNCIL_RULE_SET
    grouping_algorithm: str | None = None  # COUNCIL_GROUPING_ALGORITHM
    db_pool_size: int | None = None  # COUNCIL_DB_POOL_SIZE
    # COUNCIL_RETRY_MAX, _BASE_S, _CAP_S, _UNREACHABLE_BASE_S, _UNREACHABLE_CAP_S
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    run_lease_s: float = DEFAULT_RUN_LEASE_S  # COUNCIL_RUN_LEASE_S
    mark_ttl_s: int = math.ceil(DEFAULT_RUN_LEASE_S)  # COUNCIL_MARK_TTL_S, else the lease
    inline_evidence_tokens: int = DEFAULT_INLINE_EVIDENCE_TOKENS  # COUNCIL_INLINE_EVIDENCE_TOKENS
    evidence_tool_turns: int = DEFAULT_EVIDENCE_TOOL_TURNS  # COUNCIL_EVIDENCE_TOOL_TURNS
    event_poll_s: float = DEFAULT_EVENT_POLL_S  # COUNCIL_EVENT_POLL_S
    http_header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S  # COUNCIL_HTTP_HEADER_TIMEOUT_S
    http_idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S  # COUNCIL_HTTP_IDLE_TIMEOUT_S
    http_body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S  # COUNCIL_HTTP_BODY_TIMEOUT_S
    mcp_session_idle_s: float = DEFAULT_MCP_SESSION_IDLE_S  # COUNCIL_MCP_SESSION_IDLE_S
    evaluation_batch: int = 50  # COUNCIL_EVALUATION_BATCH
    evaluation_delay_s: float = 0.0  # COUNCIL_EVALUATION_DELAY_S
    sweep_every_s: float = 30.0  # COUNCIL_SWEEP_EVERY_S
    reverify_every_s: float = 60.0  # COUNCIL_REVERIFY_EVERY_S
    sweep_stale_s: float = 300.0  # COUNCIL_SWEEP_STALE_S
    fetch_timeout_s: float = DEFAULT_FETCH_TIMEOUT_S  # COUNCIL_FETCH_TIMEOUT_S
    web_port: int | None = None  # COUNCIL_WEB_PORT
    metrics_port: int | None = None  # COUNCIL_METRICS_PORT
    metrics_addr: str = "127.0.0.1"  # COUNCIL_METRICS_ADDR
    metrics_dir: str | None = None  # PROMETHEUS_MULTIPROC_DIR (prometheus_client's own)
    agent_sandbox: str = ""  # COUNCIL_AGENT_SANDBOX, as given (council.agents.runtimes.confinement checks it)
    agent_work_dir: str | None = None  # COUNCIL_AGENT_WORK_DIR
    agent_clis: Path | None = None  # COUNCIL_AGENT_CLIS
    claude_config_dir: Path | None = None  # CLAUDE_CONFIG_DIR (Claude Code's own)
    codex_home: Path | None = None  # CODEX_HOME (Codex's own)
    ssl_cert_paths: tuple[str, ...] = ()  # SSL_CERT_FILE, SSL_CERT_DIR (a confined CLI may read them)
    litellm_log: str | None = None  # LITELLM_LOG
    openai_direct: bool = True  # COUNCIL_OPENAI_DIRECT=0: OpenAI-compatible calls through litellm too
    # The snapshot, for variables named at run time; holds provider keys, so never shown.
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        """Every variable parsed and checked; ConfigError names the first bad one."""
        environ = dict(environ)  # one copy: os.environ decodes at every lookup
        env = _Reader(environ)
        default = RetryPolicy()
        retries = env.number("COUNCIL_RETRY_MAX", default.max_retries)
        if retries != int(retries) or not 0 <= retries <= RETRY_MAX_LIMIT:
            raise ConfigError(f"COUNCIL_RETRY_MAX must be a whole number from 0 to {RETRY_MAX_LIMIT}")
        lease = env.number("COUNCIL_RUN_LEASE_S", DEFAULT_RUN_LEASE_S)
        if lease < 1:
            raise ConfigError("COUNCIL_RUN_LEASE_S must be at least 1 s")
        mark_ttl = env.number("COUNCIL_MARK_TTL_S", lease)
        if mark_ttl < 1:
            raise ConfigError("COUNCIL_MARK_TTL_S must be at least 1 s")
        turns = env.number("COUNCIL_EVIDENCE_TOOL_TURNS", DEFAULT_EVIDENCE_TOOL_TURNS)
        if not 1 <= turns <= 16:
            raise ConfigError("COUNCIL_EVIDENCE_TOOL_TURNS must be between 1 and 16")
        home = env.text("COUNCIL_HOME")
        profiles = env.text("COUNCIL_PROFILES")
        return cls(
            home=Path(home).expanduser().resolve() if home else None,
            database_url=env.database_url("COUNCIL_DATABASE_URL"),
            migrate_database_url=env.database_url("COUNCIL_MIGRATE_DATABASE_URL"),
            dashboard_database_url=env.database_url("COUNCIL_DASHBOARD_DATABASE_URL"),
            broker_url=env.text("COUNCIL_BROKER_URL"),
            api_token=env.text("COUNCIL_API_TOKEN", strip=True),
            api_read_token=env.text("COUNCIL_API_READ_TOKEN", strip=True),
            allowed_hosts=tuple(environ.get("COUNCIL_ALLOWED_HOSTS", "").split(",")),
            max_body_bytes=env.count("COUNCIL_API_MAX_BODY_BYTES", "a positive number of bytes"),
            actor=env.text("COUNCIL_ACTOR"),
            debug=bool(environ.get("COUNCIL_DEBUG")),
            offline=environ.get("COUNCIL_OFFLINE") == "1",
            simulate=environ.get("COUNCIL_SIMULATE", ""),
            profiles_file=Path(profiles).expanduser() if profiles else None,
            rule_set=env.text("COUNCIL_RULE_SET"),
            grouping_algorithm=env.text("COUNCIL_GROUPING_ALGORITHM"),
            db_pool_size=env.pool_size("COUNCIL_DB_POOL_SIZE"),
            retry=RetryPolicy(
                max_retries=int(retries),
                base_s=env.number("COUNCIL_RETRY_BASE_S", default.base_s),
                cap_s=env.number("COUNCIL_RETRY_CAP_S", default.cap_s),
                unreachable_base_s=env.number("COUNCIL_RETRY_UNREACHABLE_BASE_S", default.unreachable_base_s),
                unreachable_cap_s=env.number("COUNCIL_RETRY_UNREACHABLE_CAP_S", default.unreachable_cap_s),
            ),
            run_lease_s=lease,
            mark_ttl_s=math.ceil(mark_ttl),
            inline_evidence_tokens=int(
                env.number("COUNCIL_INLINE_EVIDENCE_TOKENS", DEFAULT_INLINE_EVIDENCE_TOKENS)
            ),
            evidence_tool_turns=int(turns),
            event_poll_s=env.positive("COUNCIL_EVENT_POLL_S", DEFAULT_EVENT_POLL_S),
            http_header_timeout_s=env.positive("COUNCIL_HTTP_HEADER_TIMEOUT_S", DEFAULT_HEADER_TIMEOUT_S),
            http_idle_timeout_s=env.positive("COUNCIL_HTTP_IDLE_TIMEOUT_S", DEFAULT_IDLE_TIMEOUT_S),
            http_body_timeout_s=env.positive("COUNCIL_HTTP_BODY_TIMEOUT_S", DEFAULT_BODY_TIMEOUT_S),
            mcp_session_idle_s=env.positive("COUNCIL_MCP_SESSION_IDLE_S", DEFAULT_MCP_SESSION_IDLE_S),
            evaluation_batch=max(1, int(env.number("COUNCIL_EVALUATION_BATCH", 50))),
            evaluation_delay_s=env.number("COUNCIL_EVALUATION_DELAY_S", 0.0),
            sweep_every_s=env.positive("COUNCIL_SWEEP_EVERY_S", 30.0),
            reverify_every_s=env.positive("COUNCIL_REVERIFY_EVERY_S", 60.0),
            sweep_stale_s=env.positive("COUNCIL_SWEEP_STALE_S", 300.0),
            fetch_timeout_s=env.fetch_timeout("COUNCIL_FETCH_TIMEOUT_S"),
            web_port=env.port("COUNCIL_WEB_PORT"),
            metrics_port=env.port("COUNCIL_METRICS_PORT"),
            metrics_addr=env.text("COUNCIL_METRICS_ADDR", strip=True) or "127.0.0.1",
            metrics_dir=env.text("PROMETHEUS_MULTIPROC_DIR"),
            agent_sandbox=environ.get("COUNCIL_AGENT_SANDBOX", ""),
            agent_work_dir=env.text("COUNCIL_AGENT_WORK_DIR"),
            agent_clis=env.path("COUNCIL_AGENT_CLIS"),
            claude_config_dir=env.path("CLAUDE_CONFIG_DIR"),
            codex_home=env.path("CODEX_HOME"),
            ssl_cert_paths=tuple(v for v in (environ.get("SSL_CERT_FILE"), environ.get("SSL_CERT_DIR")) if v),
            litellm_log=env.text("LITELLM_LOG"),
            openai_direct=environ.get("COUNCIL_OPENAI_DIRECT", "1").strip() != "0",
            environ=MappingProxyType(environ),
        )

    def variable(self, name: str) -> str:
        """The value of a variable named at run time (a profile's ``api_key_env``), or ""."""
        return self.environ.get(name, "")

    def variables(self) -> Iterable[tuple[str, str]]:
        """Every variable of the snapshot (profile overrides, the workers' key fingerprint)."""
        return self.environ.items()


class _Reader:
    """One variable at a time, each refusal naming it (and never repeating a URL)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def text(self, variable: str, *, strip: bool = False) -> str | None:
        raw = self.environ.get(variable, "")
        return (raw.strip() if strip else raw) or None

    def path(self, variable: str) -> Path | None:
        raw = self.environ.get(variable, "").strip()
        return Path(raw).expanduser() if raw else None

    def number(self, variable: str, default: float) -> float:
        raw = self.environ.get(variable, "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{variable} must be a number, got {raw!r}") from None
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{variable} must be a number of at least 0, got {raw!r}")
        return value

    def positive(self, variable: str, default: float) -> float:
        value = self.number(variable, default)
        if value <= 0:
            raise ConfigError(f"{variable} must be more than 0 s")
        return value

    def count(self, variable: str, what: str) -> int | None:
        raw = self.environ.get(variable, "").strip()
        if not raw:
            return None
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(f"{variable} must be {what}, got {raw!r}")
        return int(raw)

    def pool_size(self, variable: str) -> int | None:
        raw = self.environ.get(variable, "")
        try:
            return max(1, int(raw)) if raw else None
        except ValueError:
            raise ConfigError(f"{variable} must be a whole number, got {raw!r}") from None

    def port(self, variable: str) -> int | None:
        raw = self.environ.get(variable, "").strip()
        if not raw:
            return None
        if not raw.isdigit() or not 0 < int(raw) < 65536:
            raise ConfigError(f"{variable} must be a TCP port number, got {raw!r}")
        return int(raw)

    def fetch_timeout(self, variable: str) -> float:
        raw = self.environ.get(variable, "").strip()
        if not raw:
            return DEFAULT_FETCH_TIMEOUT_S
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{variable} must be a positive number of seconds, got {raw!r}")
        return value

    def database_url(self, variable: str) -> str | None:
        url = self.environ.get(variable)
        if not url:
            return None
        from council.urls import checked_database_url

        return checked_database_url(variable, url)


_installed: Settings | None = None
_last_read: tuple[tuple[tuple[str, str], ...], Settings] | None = None  # before any install


def settings() -> Settings:
    """The settings ``bootstrap()`` installed; before that, the environment's as it is now
    (parsed again only when it has changed since the last call)."""
    global _last_read
    if _installed is not None:
        return _installed
    items = tuple(os.environ.items())
    if _last_read is None or _last_read[0] != items:
        _last_read = (items, Settings.from_environ(dict(items)))
    return _last_read[1]


def load() -> Settings:
    """Parse this process's environment (``bootstrap()`` does, once)."""
    return Settings.from_environ(os.environ)


def install(value: Settings | None) -> Settings | None:
    """Make ``value`` this process's settings (None: read the environment again); returns
    the previous. Called by ``bootstrap()``, and by tests that pin settings."""
    global _installed
    previous, _installed = _installed, value
    return previous


def snapshot() -> Mapping[str, str]:
    """The installed settings' variables, else the environment's now, unparsed: for
    redaction, which must work even when a value is refused."""
    return _installed.environ if _installed is not None else MappingProxyType(dict(os.environ))


def debug_requested() -> bool:
    """``COUNCIL_DEBUG`` without parsing anything else (the CLI's last-resort error path)."""
    return bool(snapshot().get("COUNCIL_DEBUG"))


def child_environment(names: Iterable[str] | None = None, **overrides: str) -> dict[str, str]:
    """The environment for a child process: this process's (only ``names`` of it, when
    given) with ``overrides``. Passing an environment on is not a read of a setting."""
    current = os.environ if names is None else {k: os.environ[k] for k in names if k in os.environ}
    return {**current, **overrides}


def export(name: str, value: str, *, overwrite: bool = True) -> None:
    """Set ``name`` for a library that reads it itself and for child processes (a forked
    pool process inherits it); the installed settings are rebuilt to match."""
    if not overwrite and name in os.environ:
        return
    os.environ[name] = value
    if _installed is not None:
        install(Settings.from_environ(os.environ))
