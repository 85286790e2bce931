"""The embedded stack and the server, as `council up | down | status | db upgrade | serve` print them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from council.domain.results.base import Result

ProcessState = Literal["starting", "running", "backoff", "stopped", "unsupervised"]


class StackComponent(Result):
    """One component: Postgres or Redis (embedded or external), the supervisor, or a
    process it supervises (a worker per queue, beat, the web server). Which keys a
    component carries depends on the command and the kind of component."""

    started_by_us: bool | None = None
    url: str | None = Field(default=None, description="Its URL, the password redacted.")
    pid: int | None = None
    running: bool | None = None
    external: bool | None = None
    reused: bool | None = None
    data_dir: str | None = None
    log: str | None = None
    state: ProcessState | None = None
    restarts: int | None = Field(default=None, ge=0)
    last_exit_code: int | None = Field(default=None, description="Negative: killed by that signal.")
    last_exit_at: str | None = Field(default=None, description="When it last exited (ISO 8601, UTC).")
    stopped: bool | None = Field(default=None, description="It was running and `down` stopped it.")


class StackReport(Result):
    """A stack report prints only the keys each component has (what was set)."""

    def json_document(self) -> dict[str, object]:
        return self.model_dump(mode="json", exclude_unset=True)


class StackUp(StackReport):
    """``workers_restarted``: why the running workers were restarted (their environment's keys
    or profiles differed from the current one); empty when they were not."""

    home: str
    database_url: str
    broker_url: str
    database_revision: str
    web_url: str | None
    components: dict[str, StackComponent]
    workers_restarted: list[str] = Field(default_factory=list)


class StackRestarted(StackReport):
    """`council restart`: the workers, beat and web started again with the current
    environment; ``changed``: how it differed from the one they had."""

    home: str
    changed: list[str]
    components: dict[str, StackComponent]


class StackDown(StackReport):
    home: str
    components: dict[str, StackComponent]


class StackStatus(StackReport):
    """``state``: up (every component runs), partial, or down (none does)."""

    home: str
    state: Literal["up", "partial", "down"]
    # How the running workers' environment falls short of now in a way they act on (a key a
    # profile names, set since they started): `council restart` picks it up.
    stale_environment: list[str] = Field(default_factory=list)
    environment_notes: list[str] = Field(default_factory=list)  # what else differs: no restart needed
    database_revision: str | None
    web_url: str | None
    components: dict[str, StackComponent]


class Migrated(Result):
    revision: str


class Serving(Result):
    url: str
    host: str
    port: int = Field(ge=1, le=65535)
    writes_enabled: bool
    reads_need_token: bool = Field(
        description="COUNCIL_API_TOKEN or COUNCIL_API_READ_TOKEN is set: every route but /health and "
        "the page's files needs a bearer token."
    )


class DatabaseUrl(Result):
    """`council db url`: the URL to connect with (embedded or configured), and as whom."""

    url: str
    role: str | None
    read_only: bool
