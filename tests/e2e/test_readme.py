"""The README's quick start (five minutes with the CLI), run command by command as a new user
would (docs/architecture.md §9): every line of its first bash block must succeed in order, its
`council ask` establishes an answer through the council's blind cross-review, and what the
README shows a command printing (its ```text block of `$ council …` outputs) must still be
printed by that command, line by line in order (ids, timestamps and `…` stand for what differs
from run to run or is left out)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from uuid import UUID

import redis

from council.services.consolidation import show_consolidation
from tests.conftest import free_port
from tests.engines import engine_for, uow_of
from tests.rows import query

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Quick start: five minutes with the CLI"


def walkthrough() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    match = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert match is not None, f"no bash block under {SECTION!r}"
    return match.group(1)


MARK = "@@@ readme output of: "
HEX_ID = re.compile(r"\b[0-9a-f]{8}\b")
FULL_ID = re.compile(r"\b[0-9a-f]{4,8}(-…|…)")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
HEX_DIGEST = re.compile(r"\b[0-9a-f]{12}\b")


def shown_outputs() -> dict[str, list[str]]:
    """What the README shows each `$ council …` command printing, by command."""
    text = README.read_text(encoding="utf-8")
    match = re.search(r"```text\n(\$ council .*?)```", text, re.DOTALL)
    assert match is not None, "no ```text block of command outputs in the README"
    shown: dict[str, list[str]] = {}
    for part in re.split(r"^\$ ", match.group(1), flags=re.MULTILINE)[1:]:
        command, *lines = part.rstrip("\n").split("\n")
        shown[command.strip()] = [line for line in lines if line.strip()]
    return shown


def pattern(line: str) -> re.Pattern[str]:
    """A README line as a pattern of the printed one: an id, a digest, a timestamp, an event
    number and `…` match whatever is printed there; spaces match any run of spaces."""
    kinds = {"ID": r"[0-9a-f-]{8,36}", "TS": r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}",
             "DIGEST": r"[0-9a-f]{12}", "HEX": r"[0-9a-f]{8}", "EVENT": r"#\d+"}  # fmt: skip
    marked = FULL_ID.sub("\x00ID\x00", line)
    marked = TIMESTAMP.sub("\x00TS\x00", marked)
    marked = HEX_DIGEST.sub("\x00DIGEST\x00", marked)
    marked = HEX_ID.sub("\x00HEX\x00", marked)
    marked = re.sub(r"^#\d+", "\x00EVENT\x00", marked)
    regex = "".join(
        kinds[piece]
        if n % 2
        else r"\s+".join(re.escape(w).replace("…", ".*") for w in re.split(r" +", piece))
        for n, piece in enumerate(marked.split("\x00"))
    )
    return re.compile(f"^{regex}\\s*$")


def missing(shown: list[str], printed: list[str]) -> list[str]:
    """The README's lines that the printed output does not have, in order (a line of `…`
    stands for lines left out)."""
    at, lost = 0, []
    for line in shown:
        if line.strip() == "…":
            continue
        wanted = pattern(line)
        found = next((i for i in range(at, len(printed)) if wanted.match(printed[i])), None)
        if found is None:
            lost.append(line)
        else:
            at = found + 1
    return lost


def with_outputs_marked(block: str, commands: list[str]) -> str:
    """The walkthrough, each first run of a command the README shows the output of preceded
    by a marker line, and followed by one, so the test can cut its output out."""
    marked, left = [], list(commands)
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command in left:
            left.remove(command)
            marked += [f"echo '{MARK}{command}'", command, f"echo '{MARK}end'"]
        else:
            marked.append(line)
    assert not left, f"the README shows the output of {left}, which its walkthrough never runs"
    return "\n".join(marked) + "\n"


def test_a_readme_line_no_longer_printed_is_caught() -> None:
    shown = ["  runtime recorded outside the workers · mode external · round 1 · attempt 0",
             "#9 claude (anthropic, run 9b1d2c3e) endorse on node 5e6f7a8b at 0.80"]  # fmt: skip
    printed = ["  runtime recorded outside the workers · mode external · round 1 · attempt 1",
               "#12 claude (anthropic, run 0a1b2c3d) endorse on node 99aa88bb at 0.80"]  # fmt: skip
    assert missing(shown, printed) == [shown[0]]
    assert (
        missing(
            ["logical node 0d4e…", "  …", "    ✓ rule: 3 group(s)"],
            ["logical node 1f2e3d4c-aaaa-bbbb-cccc-0123456789ab", "x", "    ✓ rule:  3 group(s)"],
        )
        == []
    )


def test_the_walkthrough_names_only_real_commands() -> None:
    block = walkthrough()
    assert "council up" in block and block.rstrip().endswith("council down")
    assert "jq" not in block  # a new machine has Python, not jq


def test_the_walkthrough_runs_command_by_command(db_url: str, redis_url: str, tmp_path: Path) -> None:
    # Given a new user's shell: the project's .venv, no API keys, a fresh home
    # (the test's own database and Redis stand in for the embedded ones)
    redis.Redis.from_url(redis_url).flushdb()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_") and not k.endswith("_API_KEY")}
    env.update(
        COUNCIL_HOME=str(tmp_path / "home"),
        COUNCIL_DATABASE_URL=db_url,
        COUNCIL_BROKER_URL=redis_url,
        COUNCIL_WEB_PORT=str(free_port()),
        COUNCIL_OFFLINE="1",
        NO_COLOR="1",
        COLUMNS="160",  # the README shows lines unwrapped (80 columns: tests/e2e/test_cli_80_columns.py)
    )
    shown = shown_outputs()
    script = "set -euo pipefail -x\n" + with_outputs_marked(walkthrough(), list(shown))
    # When the block runs in bash from the repository root
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=README.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run(["bash", "-c", ". .venv/bin/activate && council down"], cwd=README.parent, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
    # Then every command succeeded, down included
    assert done.returncode == 0, f"walkthrough failed:\n{done.stderr[-4000:]}\n{done.stdout[-2000:]}"
    assert "not_ready" in done.stdout  # the hand-recorded runs were one group, as the comment says
    # And the council `ask` established an answer through its blind cross-review: a proposition
    # consolidated on independent support groups of different agents' blind runs (one agent
    # proposed it in round 1, others endorsed it in round 2, none shown another's stance)
    question = re.search(r'council ask "([^"]+)"', walkthrough())
    assert question is not None
    # (and its human rendering led with that answer, then each agent's words, then the propositions)
    led = re.search(
        r"^answer [0-9a-f]{8}: .*?^each agent, in its own words:.*?^propositions:", done.stdout, re.M | re.S
    )
    assert led is not None, done.stdout[-3000:]
    blind = consolidated_on_blind_runs(db_url, question.group(1))
    assert blind, "the README's ask consolidated nothing on blind runs"
    for agents_by_group in blind:
        assert len(agents_by_group) >= 2 and len(set(agents_by_group)) == len(agents_by_group)
    # And each command whose output the README shows still prints every line it shows, in order
    printed = {
        part.split("\n", 1)[0]: part.split("\n", 1)[1].splitlines()
        for part in done.stdout.split(MARK)[1:]
        if not part.startswith("end")
    }
    for command, lines in shown.items():
        lost = missing(lines, [p for p in printed[command] if not p.startswith(MARK)])
        assert not lost, f"the README shows `{command}` printing lines it no longer prints: {lost}"


def consolidated_on_blind_runs(db_url: str, question: str) -> list[list[str]]:
    """For each live consolidation of the thread that asked ``question``: the agent of each of
    its support groups, when every group's runs are one agent's runs of a council's two blind
    rounds (proposing and cross-review)."""
    engine = engine_for(db_url)
    [thread] = query(engine, "SELECT id FROM threads WHERE objective = :q", q=question)
    found = []
    for live in query(engine, "SELECT id FROM consolidations WHERE thread_id = :t AND status = 'live'",
                      t=thread["id"]):  # fmt: skip
        shown = show_consolidation(uow_of(engine), live["id"])
        agents = []
        for group in (g for g in shown.decision["groups"] if g["kind"] == "support"):
            runs = query(engine, "SELECT agent, round, mode FROM agent_runs WHERE id = ANY(:r)",
                         r=[UUID(r) for r in group["runs"]])  # fmt: skip
            if {(r["mode"], r["round"] <= 2) for r in runs} != {("council", True)}:
                break
            if len({r["agent"] for r in runs}) != 1:
                break
            agents.append(runs[0]["agent"])
        else:
            found.append(agents)
    return found
