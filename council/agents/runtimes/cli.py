"""One call of an agent CLI for a run (docs/architecture.md §7): the entry point the
execution service uses, whatever the runtime.

``settings(profile, files)`` is what the compiler puts in the request (and so in
its hash): sandbox, allowed tools, turn limit, output schema, the evidence
files. ``call(...)`` runs the CLI once, in a fresh attempt directory, under a
hard deadline, and returns its answer text with the trace and the evidence it
opened — or raises, with the trace: ``CliTimedOut`` (transient, the deadline
passed: a server that never answers makes both CLIs retry forever) or
``CliFailed`` (permanent: not installed, authentication refused, turn limit,
non-zero exit). Whether the answer is valid is Council's to decide, never the
CLI's. The key stays in this process, with the attempt's provider proxy
(``confinement``); the CLI gets the proxy's URL and a dummy key, runs under
Council's sandbox, and none of the worker's other variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from council import settings as council_settings
from council.agents.errors import PermanentLLMError, TransientLLMError
from council.agents.runtimes import confinement, installed
from council.agents.runtimes.process import run_guarded
from council.agents.runtimes.proxy import BadUpstream
from council.agents.runtimes.registry import cli_driver
from council.agents.runtimes.trace import Trace, cut, opened
from council.agents.runtimes.workdir import EvidenceFile, EvidenceMismatch, attempt_dir, login_tokens
from council.domain.agent_output import output_json_schema
from council.domain.profile import Profile
from council.domain.requests import CliSettings, StoredRequest
from council.known_secrets import redact

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR")
_AUTH = re.compile(
    r"\b401\b|unauthori[sz]ed|authentication|invalid[ _-]?(x-)?api[ _-]?key|not logged in", re.I
)
_TRANSIENT = re.compile(r"\b(429|5\d\d)\b|rate.?limit|overloaded", re.I)


class CliFailed(PermanentLLMError):
    def __init__(self, reason: str, trace: Trace | None = None) -> None:
        super().__init__(reason)
        self.trace = trace


class CliTimedOut(TransientLLMError):
    def __init__(self, reason: str, trace: Trace | None = None) -> None:
        super().__init__(reason)
        self.trace = trace


class CliTransient(TransientLLMError):
    def __init__(self, reason: str, trace: Trace | None = None) -> None:
        super().__init__(reason)
        self.trace = trace


@dataclass(frozen=True)
class CliAnswer:
    text: str
    trace: Trace
    opened: list[EvidenceFile]


def output_schema() -> dict[str, Any]:
    """The contract's schema as handed to a CLI: without ``"$schema"`` (see ``claude``)."""
    schema = output_json_schema()
    schema.pop("$schema", None)
    return schema


def settings(profile: Profile, files: Sequence[EvidenceFile]) -> CliSettings:
    own = cli_driver(profile.runtime).settings_by_sandbox[confinement.compiled()]
    return {
        **own,
        "max_turns": profile.max_turns,
        "output_schema": output_schema(),
        "evidence_files": [f.__dict__ for f in files],
        "params": dict(sorted(profile.params.items())),
    }


def call(
    request: StoredRequest,
    profile: Profile,
    contents: Mapping[str, str],
    *,
    prompt: str,
    call_no: int,
    deadline_s: float,
) -> CliAnswer:
    """One call of the pinned CLI on ``prompt`` (the stored one, or its re-prompt), the
    evidence ``contents`` by id written into a fresh attempt directory."""
    runtime = profile.runtime
    version = str(request.get("runtime_version") or "")
    trace = Trace(runtime=runtime, cli_version=version, call=call_no)
    missing = installed.missing_reason(runtime, version)
    if missing:
        raise CliFailed(missing, trace)
    _refuse_if_offline(profile)
    refused = confinement.refusal(request["settings"].get("council_sandbox"))
    if refused:
        raise CliFailed(refused, trace)
    key = ""
    if profile.api_key_env:
        key = council_settings.settings().variable(profile.api_key_env)
        if not key:
            raise CliFailed(f"{profile.api_key_env} is not set in this process's environment", trace)
    files = [EvidenceFile(**f) for f in request["settings"].get("evidence_files") or []]
    try:
        return _run(request, profile, contents, files, trace, key, prompt=prompt, deadline_s=deadline_s)
    except (EvidenceMismatch, BadUpstream) as exc:
        raise CliFailed(str(exc), trace) from None


def _run(
    request: StoredRequest,
    profile: Profile,
    contents: Mapping[str, str],
    files: Sequence[EvidenceFile],
    trace: Trace,
    key: str,
    *,
    prompt: str,
    deadline_s: float,
) -> CliAnswer:
    runtime = profile.runtime
    driver = cli_driver(runtime)
    settings_ = request["settings"]
    login = not profile.api_key_env and not profile.api_base
    executable = installed.executable(runtime)
    confined = confinement.mode()
    with (
        attempt_dir(files, contents) as attempt,
        confinement.proxy_for(profile, key, login) as proxy,
        confinement.handoff(confined, proxy) as channel,
    ):
        api_base = proxy.base_url if proxy is not None else profile.api_base
        base = council_settings.child_environment(PASSED_ENV)
        launch = driver.launch(
            executable,
            settings_,
            attempt,
            model=profile.model,
            prompt=prompt,
            api_base=api_base,
            key_env=profile.api_key_env,
            key=key,
            proxy_key=proxy.cli_key if proxy is not None else None,
            login=login,
        )
        argv, env, watch = launch.argv, {**base, **launch.env}, launch.watch
        logins = login_tokens(attempt.home) if login else set()
        wrapped = confinement.wrap(confined, argv, attempt, executable, proxy, channel)
        argv, env["TMPDIR"], trace.sandbox = wrapped
        finished = run_guarded(
            argv,
            cwd=attempt.work,
            env=env,
            deadline_s=deadline_s,
            stdout=attempt.out / "events.jsonl",
            stderr=attempt.out / "stderr.txt",
            watch=confinement.watching(watch, proxy),
            pass_fds=[channel.fileno()] if channel is not None else [],
        )
        # the key, the attempt's dummy key and a CLI's own login tokens (as copied, as refreshed)
        hidden = (key, proxy.cli_key if proxy is not None else "", *logins, *login_tokens(attempt.home))
        stdout = _redacted((attempt.out / "events.jsonl").read_text("utf-8", "replace"), *hidden)
        stderr = _redacted((attempt.out / "stderr.txt").read_text("utf-8", "replace"), *hidden)
        trace.exit_status, trace.stopped = finished.exit_code, finished.stopped
        trace.duration_ms = int(finished.elapsed_s * 1000)
        trace.stderr_tail = cut(stderr.strip()[-1500:])
        text, failure = driver.read(stdout, attempt, trace)
        if proxy is not None:
            trace.errors += [f"council proxy refused {r}" for r in proxy.refused]
            if proxy.failure:
                trace.errors.insert(0, _redacted(proxy.failure, key))
                failure = failure or confinement.UNREACHABLE
    answer = CliAnswer(
        text=_redacted(text or "", *hidden), trace=trace, opened=opened(trace.files_read, files)
    )
    _raise_for_failure(answer, failure, profile, deadline_s)
    return answer


def _raise_for_failure(answer: CliAnswer, failure: str | None, profile: Profile, deadline_s: float) -> None:
    trace = answer.trace
    name = installed.PINNED[profile.runtime].package
    said = "; ".join(e for e in trace.errors if e) or trace.stderr_tail
    if trace.stopped == "deadline":
        raise CliTimedOut(
            f"{name}: deadline passed after {deadline_s:g}s without an answer"
            + (f" (last said: {cut(said, 300)})" if said else ""),
            trace,
        )
    if trace.stopped == confinement.UNREACHABLE or failure == confinement.UNREACHABLE:
        raise CliTransient(f"{name}: {cut(trace.errors[0], 400)}", trace)
    if trace.stopped == "authentication refused":
        raise CliFailed(f"{name}: authentication refused: {cut(said, 400)}", trace)
    if trace.stopped == "turn limit" or failure == "error_max_turns":
        raise CliFailed(f"{name}: turn limit reached (max_turns {profile.max_turns})", trace)
    if trace.exit_status == 0 and not failure and (answer.text.strip() or not trace.errors):
        return  # an answer (valid or not: Council checks it)
    if _AUTH.search(said):
        raise CliFailed(f"{name}: authentication refused: {cut(said, 400)}", trace)
    if _TRANSIENT.search(said):
        raise CliTransient(f"{name}: {cut(said, 400)}", trace)
    if trace.exit_status != 0:
        raise CliFailed(f"{name} exited with status {trace.exit_status}: {cut(said, 400)}", trace)
    raise CliFailed(f"{name} reported an error and gave no answer: {cut(said, 400)}", trace)


def _refuse_if_offline(profile: Profile) -> None:
    if not council_settings.settings().offline:
        return
    if profile.api_base and urlsplit(profile.api_base).hostname in LOCAL_HOSTS:
        return
    raise CliFailed(f"offline: refusing to run {profile.runtime} for {profile.model} away from localhost")


def _redacted(text: str, *secrets: str) -> str:
    """The given secrets (the key, the attempt's dummy key), and every other known secret, in
    any common encoding, taken out."""
    return redact(text, [s for s in secrets if s])
