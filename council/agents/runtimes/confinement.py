"""How an agent CLI is kept from every secret (docs/operations/security.md, docs/architecture.md §7).

Two parts, put together for each attempt by ``cli``:

- ``proxy_for``: the per-attempt loopback endpoint (``proxy.py``) that holds
  the key and forwards the provider's own routes; the CLI gets its URL and a
  dummy key. A CLI on its own login (a profile with neither ``api_base`` nor
  key variable) talks to its provider directly with the copied login file.
- ``wrap``: the command run under Council's Landlock sandbox (``sandbox.py``):
  a network namespace of its own whose one reachable address is its proxy (the
  sandbox's listening socket, handed to the proxy over ``handoff``'s channel); no
  capability, even under a worker running as root; reads limited to the attempt's
  working directory, its home, the CLIs' install folder, Node's and a minimal system
  set; writes to its home and output folder; TCP only to its proxy's port (to port
  443 for a CLI on its own login, which keeps the machine's network); no Unix socket
  of its own making (seccomp).
  ``COUNCIL_AGENT_SANDBOX=off`` runs it without, logged as a warning on every
  attempt and recorded in its request and trace.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from council.agents.runtimes import installed, sandbox
from council.agents.runtimes.proxy import ProviderProxy, credential_header, provider_proxy
from council.agents.runtimes.workdir import Attempt
from council.domain.profile import Profile
from council.settings import settings

log = logging.getLogger(__name__)

UNREACHABLE = "provider unreachable"
DEFAULT_BASES = {"codex-cli": "https://api.openai.com/v1", "claude-code": "https://api.anthropic.com"}
_MODES = {"": "on", "on": "on", "landlock": "on", "off": "off"}


def mode() -> str:
    """``on`` or ``off`` (``COUNCIL_AGENT_SANDBOX``); see ``refusal`` for a bad value."""
    return _MODES.get(settings().agent_sandbox.strip().lower(), "invalid")


def compiled() -> str:
    """What a request compiled here records as its sandbox: ``landlock`` or ``off``."""
    return "off" if mode() == "off" else "landlock"


def refusal(pinned: object) -> str | None:
    """Why this worker may not run a CLI whose request pinned sandbox ``pinned`` (None: it may).
    The worker runs what the request says or nothing: a request compiled under another
    setting (or before Council had a sandbox) is refused, never run differently."""
    chosen = mode()
    if chosen == "invalid":
        return f"{sandbox.MODE_ENV} must be on or off, not {settings().agent_sandbox!r}"
    if pinned != compiled():
        return (
            f"the run's request was compiled with council_sandbox={pinned or 'none'}, this worker runs "
            f"{compiled()} ({sandbox.MODE_ENV}); dispatch it again"
        )
    if chosen == "on":
        return sandbox.unavailable_reason()
    return None


@contextlib.contextmanager
def proxy_for(profile: Profile, key: str, login: bool) -> Iterator[ProviderProxy | None]:
    """The attempt's provider proxy (None for a CLI on its own login)."""
    if login:
        yield None
        return
    upstream = profile.api_base or DEFAULT_BASES[profile.runtime]
    with provider_proxy(profile.runtime, upstream, credential_header(profile.runtime, key)) as proxy:
        yield proxy


@contextlib.contextmanager
def handoff(chosen: str, proxy: ProviderProxy | None) -> Iterator[socket.socket | None]:
    """The Unix socket over which the sandbox hands the proxy the listening socket it made
    in the CLI's own network namespace (None: the CLI keeps the machine's network — the
    sandbox is off, or the CLI talks to its provider on its own login)."""
    if chosen == "off" or proxy is None:
        yield None
        return
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proxy.adopt(ours)
        yield theirs


def wrap(
    chosen: str,
    argv: Sequence[str],
    attempt: Attempt,
    executable: Path,
    proxy: ProviderProxy | None,
    channel: socket.socket | None = None,
) -> tuple[list[str], str, str]:
    """(the command to run, its TMPDIR, what the trace records of the sandbox); ``channel``:
    :func:`handoff`'s, inherited by the command."""
    tmp = attempt.home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    if chosen == "off":
        log.warning(
            "%s=off: running %s WITHOUT Council's sandbox; it can read every file and process "
            "environment this user can",
            sandbox.MODE_ENV,
            executable.name,
        )
        return list(argv), str(tmp), f"off ({sandbox.MODE_ENV}=off): the CLI could read what this user can"
    reads = [str(attempt.work), *_install_dirs(executable)]
    reads += list(settings().ssl_cert_paths)
    writes = [str(attempt.home), str(attempt.out)]
    # a CLI on its own login reaches its provider over HTTPS itself: port 443, nothing local
    connect = [proxy.port] if proxy is not None else [443]
    own = (proxy.port, channel.fileno()) if proxy is not None and channel is not None else None
    prefix = sandbox.wrapper(reads, writes, connect, proxy=own)
    network = (
        f"a network of its own: only its proxy (127.0.0.1:{proxy.port})"
        if own is not None and proxy is not None
        else "TCP to port 443 only"
    )
    described = (
        f"landlock ABI {sandbox.abi()} and seccomp: {network}; no capabilities; reads its working "
        "directory, home, the CLI and Node installs and a minimal system set; writes its home and output "
        "folder; no Unix sockets; no signals or ptrace outside"
    )
    return [*prefix, "--", *argv], str(tmp), described


def watching(
    watch: Callable[[], str | None] | None, proxy: ProviderProxy | None
) -> Callable[[], str | None] | None:
    """The CLI's own watch, and a stop the moment its proxy could not reach the provider
    (the CLIs retry a 502 for minutes)."""
    if proxy is None:
        return watch

    def both() -> str | None:
        if proxy.failure:
            return UNREACHABLE
        return watch() if watch is not None else None

    return both


def _install_dirs(executable: Path) -> list[str]:
    """The CLIs' install folder and Node's (the folder above its ``bin``), as real paths."""
    dirs = [str(installed.tools_dir().resolve())]
    node = shutil.which("node")
    if node:
        dirs.append(str(Path(node).resolve().parent.parent))
    real = executable.resolve()
    if not any(real.is_relative_to(d) for d in dirs):
        dirs.append(str(real.parent))
    return dirs
