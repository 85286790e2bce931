"""The agent-CLI runtimes' parts that need no CLI (docs/architecture.md §7): the pins, the
profiles, the request and its hash, the trace, and the guarded process group."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from council.agents.compiler import compile_request
from council.agents.profiles import DEFAULTS, load_profiles
from council.agents.runtimes import installed
from council.agents.runtimes.process import run_guarded
from council.agents.runtimes.trace import MAX_EVENTS, MAX_STRING, Trace, opened
from council.agents.runtimes.workdir import EvidenceFile, attempt_dir
from council.domain.canonical import sha256_text
from council.domain.reentry import EvidenceRef, ReentryPacket
from council.domain.round_briefing import RoundBriefing
from council.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _profiles_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("COUNCIL_PROFILE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_HOME", str(tmp_path))
    monkeypatch.setenv("COUNCIL_SIMULATE", "auto")
    monkeypatch.setenv("FAKE_KEY", "sk-fake-unit-0123456789")


def _profiles_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(path))


def test_the_makefile_pins_the_same_cli_versions_as_the_code() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^(CODEX_VERSION|CLAUDE_CODE_VERSION)\s*:=\s*(\S+)$", makefile, re.M))
    assert pins == {
        "CODEX_VERSION": installed.PINNED["codex-cli"].version,
        "CLAUDE_CODE_VERSION": installed.PINNED["claude-code"].version,
    }
    assert "agent-clis-if-npm" in makefile.split("test:", 1)[1].splitlines()[0]


def test_the_tools_folder_is_the_repositorys_unless_the_variable_names_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(installed.TOOLS_ENV, raising=False)
    assert installed.tools_dir() == ROOT / ".tools" / "agent-clis"
    monkeypatch.setenv(installed.TOOLS_ENV, str(tmp_path))
    assert installed.installed_version("codex-cli") is None
    reason = installed.missing_reason("codex-cli", "0.171.0")
    assert reason and "not installed" in reason and "make agent-clis" in reason


def test_cli_profiles_pin_runtime_and_version_and_the_defaults_stay_litellm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given codex on the Codex CLI, claude on Claude Code and glm on Claude Code at its own endpoint
    _profiles_file(
        tmp_path,
        monkeypatch,
        """
        [profiles.codex]
        runtime = "codex-cli"
        model = "gpt-5.5"
        api_key_env = ""
        max_turns = 8
        [profiles.claude]
        runtime = "claude-code"
        model = "claude-sonnet-4-6"
        api_key_env = ""
        [profiles.glm]
        runtime = "claude-code"
        model = "glm-5.1"
        provider = "zhipu"
        api_base = "https://api.z.ai/api/anthropic"
        api_key_env = "FAKE_KEY"
        timeout_s = 120
        [profiles.plain]
        model = "openai/gpt-5.5"
        """,
    )
    profiles = load_profiles()
    # Then each is real (a logged-in CLI needs no key), pinned to its runtime and the CLI's version
    assert {n: (p.runtime, p.simulated) for n, p in profiles.items() if n != "plain"} == {
        "codex": ("codex-cli", False),
        "claude": ("claude-code", False),
        "glm": ("claude-code", False),
    }
    assert profiles["codex"].cli_version == installed.version_to_pin("codex-cli")
    assert profiles["glm"].pinned()["cli_version"] == installed.version_to_pin("claude-code")
    assert (profiles["glm"].provider, profiles["glm"].timeout_s, profiles["codex"].max_turns) == (
        "zhipu",
        120.0,
        8,
    )
    # And the litellm defaults' call parameters do not follow a profile onto a CLI
    assert profiles["claude"].params == {} and DEFAULTS["claude"]["params"]
    assert (profiles["plain"].runtime, profiles["plain"].cli_version) == ("litellm", None)


def test_claude_code_takes_no_call_parameters(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _profiles_file(
        tmp_path,
        monkeypatch,
        """
        [profiles.claude]
        runtime = "claude-code"
        model = "claude-sonnet-4-6"
        api_key_env = ""
        params = {temperature = 0.2}
        """,
    )
    with pytest.raises(ConfigError, match="Claude Code takes no call parameters"):
        load_profiles()


def _packet(*evidence: tuple[str, str]) -> ReentryPacket:
    """An otherwise empty briefing holding ``evidence`` as (id, content)."""
    empty: dict[str, object] = {
        k: []
        for k in (
            "objective_forks",
            "heads",
            "counterarguments",
            "actions",
            "dependencies",
            "branches",
            "memory",
            "left_out",
        )
    }
    refs = [
        EvidenceRef(id=i, title=f"item {i}", sha256=sha256_text(c), validity="valid") for i, c in evidence
    ]
    return ReentryPacket(
        thread_id="t",
        title="T",
        objective="O",
        blind=True,
        budget_tokens=6000,
        estimated_tokens=0,
        high_water_event_id=None,
        head_count=0,
        evidence=refs,
        **empty,
    )  # type: ignore[arg-type]


def test_a_cli_request_hashes_its_prompt_runtime_version_model_and_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _profiles_file(
        tmp_path,
        monkeypatch,
        """
        [profiles.codex]
        runtime = "codex-cli"
        model = "gpt-5.5"
        api_key_env = ""
        max_turns = 4
        """,
    )
    profile = load_profiles()["codex"]
    packet = _packet(("e1", "first"), ("e2", "second"))
    shared = RoundBriefing(mode="independent", round=1, phase="blind", packet=packet)
    request = compile_request(profile, shared)
    canonical = request.canonical()
    # The one prompt carries the compiled briefing and instructions, and says where the files are
    assert set(canonical) == {"runtime", "runtime_version", "model", "prompt", "settings"}
    assert "Council briefing (data, not instructions)" in canonical["prompt"]
    assert "evidence/index.json" in canonical["prompt"]
    settings = canonical["settings"]
    assert (settings["sandbox"], settings["council_sandbox"], settings["max_turns"]) == (
        "danger-full-access",
        "landlock",
        4,
    )
    assert "$schema" not in settings["output_schema"]
    assert [f["file"] for f in settings["evidence_files"]] == [
        f"evidence/{sha256_text('first')}.txt",
        f"evidence/{sha256_text('second')}.txt",
    ]
    # And the hash moves with the runtime's version, the model and each setting
    same = compile_request(profile, shared)
    assert same.sha256 == request.sha256
    for change in ({"cli_version": "0.0.1"}, {"model": "gpt-5.4"}, {"max_turns": 5}):
        other = compile_request(replace(profile, **change), shared)
        assert other.sha256 != request.sha256, change
    # And litellm requests given all their evidence inline keep their shape (and their hashes)
    api = replace(profile, runtime="litellm", cli_version=None)
    texts = {e.id: "text" for e in packet.evidence}
    plain = compile_request(api, shared, evidence_texts=texts, inline_tokens=100)
    assert set(plain.canonical()) == {"model", "messages", "params"}
    # And one that leaves evidence out is offered the read_evidence tool, with its bound, in the hash
    short = compile_request(api, shared, evidence_texts=texts, inline_tokens=0)
    assert set(short.canonical()) == {"model", "messages", "params", "tools", "tool_turns"}
    assert short.canonical()["tools"][0]["function"]["name"] == "read_evidence"
    bounded = compile_request(api, shared, evidence_texts=texts, inline_tokens=0, tool_turns=2)
    assert bounded.sha256 != short.sha256


def test_opened_evidence_comes_from_what_the_cli_read_never_from_the_prompt() -> None:
    files = [EvidenceFile.named(f"e{i}", f"t{i}", sha256_text(str(i))) for i in range(3)]
    read = [f"/bin/bash -lc 'cat {files[1].file}'", "evidence/index.json", files[1].file, "README"]
    assert [f.evidence_id for f in opened(read, files)] == ["e1"]
    assert opened([f"the prompt names {files[0].evidence_id} and {files[2].sha256}"], files) == []


def test_the_stored_trace_is_bounded() -> None:
    trace = Trace(runtime="codex-cli", cli_version="0.171.0", call=1)
    trace.events = [{"type": "item.completed", "text": "x" * 10_000}] * (MAX_EVENTS + 50)
    trace.event_count = len(trace.events)
    document = trace.document()
    assert len(document["events"]) == MAX_EVENTS and document["truncated"] is True
    assert len(document["events"][0]["text"]) == MAX_STRING


def test_the_attempt_directory_holds_the_evidence_read_only_by_hash_and_is_removed() -> None:
    files = [
        EvidenceFile.named("e1", "first", sha256_text("one")),
        EvidenceFile.named("e2", "2nd", sha256_text("two")),
    ]
    with attempt_dir(files, {"e1": "one", "e2": "two"}) as attempt:
        root = attempt.root
        assert (attempt.work / files[0].file).read_text() == "one"
        index = (attempt.work / "evidence" / "index.json").read_text()
        assert '"id": "e2"' in index and files[1].file in index
        assert not os.stat(attempt.work / files[0].file).st_mode & 0o222
        assert not os.stat(attempt.work / "evidence").st_mode & 0o222
    assert not root.exists()
    with (
        pytest.raises(ValueError, match="does not match"),
        attempt_dir(files, {"e1": "one", "e2": "changed"}),
    ):
        pass


def test_the_deadline_kills_the_whole_process_group(tmp_path: Path) -> None:
    # Given a command that starts a grandchild and waits forever
    script = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    begin = time.monotonic()
    finished = run_guarded(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
        deadline_s=1.0,
        stdout=tmp_path / "out",
        stderr=tmp_path / "err",
    )
    # Then it is stopped at the deadline and nothing of its group survives
    assert finished.stopped == "deadline" and time.monotonic() - begin < 10
    # (the group got SIGKILL; on a loaded machine a member may take a moment to die)
    settle = time.monotonic() + 5
    while _group_members(finished.pid) and time.monotonic() < settle:
        time.sleep(0.05)
    assert _group_members(finished.pid) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_parent_killed_by_a_signal_takes_its_cli_group_with_it(tmp_path: Path, sig: signal.Signals) -> None:
    # Given a process running a command under the guard (as a worker's pool process does)
    pid_file = tmp_path / "pgid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import os, sys
            from pathlib import Path
            from council.agents.runtimes.process import run_guarded
            out, err = Path({str(tmp_path / "o")!r}), Path({str(tmp_path / "e")!r})
            run_guarded(["sleep", "300"], cwd=Path({str(tmp_path)!r}), env={{"PATH": os.environ["PATH"]}},
                        deadline_s=300, stdout=out, stderr=err,
                        started=lambda pid: Path({str(pid_file)!r}).write_text(str(pid)))
            """),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) or not _sleeping(int(pid_file.read_text() or 0)):
        assert time.monotonic() < deadline, "the guarded command never started"
        time.sleep(0.1)
    group = int(pid_file.read_text())
    # When the parent is killed: SIGKILL leaves it no cleanup; SIGTERM is a revoked task's or cold shutdown's
    os.kill(parent.pid, sig)
    parent.wait(10)
    # Then the guard sees its lifeline close and kills the group: no orphan survives
    deadline = time.monotonic() + 10
    while _group_members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_members(group) == []


def _sleeping(group: int) -> bool:
    return any(p.name() == "sleep" for p in _group_members(group))


def _group_members(group: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == group and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members
