"""Every human view fits an 80-column terminal (issue 45): each list and show command, and
each command's --help, run at COLUMNS=80 on a ledger with a consolidation, a retraction
proposal, a dispatch, a pending action and long texts, prints no line over 80 characters,
breaks no id and no timestamp across lines, and cuts no model name. Real processes, real
Postgres."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.cli.main import REGISTERS
from council.domain.commands import NewAction
from council.services.claims import add_action
from council.services.consolidation import consolidate
from council.services.retraction import propose_retraction
from tests.builders import ACTOR, Ledger
from tests.conftest import CliResult, CliRunner
from tests.rows import query

WIDTH = 80
LONG = "Advisory locks give the scheduler one owner per node " + "and say so at length " * 6
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
HEXISH = re.compile(r"(?<![0-9A-Za-z-])[0-9a-f][0-9a-f-]{4,}(?![0-9A-Za-z-])")  # an id, or a piece of one
TABLES = (
    "threads", "agent_runs", "node_versions", "logical_nodes", "evidence", "claims", "consolidations",
    "dispatches", "retraction_proposals", "pending_actions", "memory_items",
)  # fmt: skip
PROFILES = """\
[profiles.claude]
model = "anthropic/claude-sonnet-4-6"

[profiles.longname]
model = "openrouter/meta-llama/llama-3.3-70b-instruct"
api_base = "http://127.0.0.1:9/v1"
api_key_env = ""
"""


@dataclass
class Seeded:
    ledger: Ledger
    consolidated: UUID
    consolidation: UUID
    bare: UUID
    run: UUID
    dispatch: UUID
    proposal: UUID
    ids: list[str]  # every id of the ledger, whole


@pytest.fixture
def seeded(engine: Engine) -> Seeded:
    ledger = Ledger.new(engine, title="Advisory locks: " + LONG[:100], evidence_items=2)
    consolidated = ledger.ready_node(LONG)
    committed = consolidate(ledger.uow, consolidated, actor=ACTOR)
    assert committed.consolidation_id is not None
    bare = UUID(str(ledger.node("Nobody has judged this one: " + LONG)["version_id"]))
    run = ledger.run("anthropic", agent="claude")
    ledger.claim(run, bare, "dispute", confidence=0.7, rationale=LONG)
    queued = ledger.dispatched("claude")
    proposal = propose_retraction(ledger.uow, committed.consolidation_id, reason=LONG, actor=ACTOR).id
    action = NewAction(thread=ledger.thread_id, description=LONG, acceptance_condition=LONG, version=bare)
    add_action(ledger.uow, action, actor=ACTOR)
    ids = [str(r["id"]) for table in TABLES for r in query(engine, f"SELECT id FROM {table}")]
    [dispatch] = query(engine, "SELECT dispatch_id FROM agent_runs WHERE id = :r", r=queued)
    return Seeded(
        ledger, consolidated, committed.consolidation_id, bare, run, dispatch["dispatch_id"], proposal, ids
    )


def _views(s: Seeded) -> list[tuple[str, ...]]:
    t, v, r = str(s.ledger.thread_id), str(s.consolidated), str(s.run)
    return [
        ("thread", "list"),
        ("thread", "show", t),
        ("thread", "budget", t),
        ("evidence", "list", "--thread", t),
        ("evidence", "show", str(s.ledger.evidence[0])),
        ("node", "list", "--thread", t),
        ("node", "show", v),
        ("run", "list", "--thread", t),
        ("run", "show", r),
        ("dispatch", "list", "--thread", t),
        ("dispatch", "show", str(s.dispatch)),
        ("proposal", "list", "--thread", t),
        ("consolidation", "list", "--thread", t),
        ("claim", "list", "--thread", t),
        ("action", "list", "--thread", t),
        ("branch", "list", "--thread", t),
        ("memory", "list", "--thread", t),
        ("groups", "--node", v),
        ("history", "--node", v),
        ("replay", str(s.consolidation)),
        ("events", "--thread", t),
        ("stances", "--thread", t),
        ("calibration",),
        ("rule-set", "list"),
        ("profiles",),
        ("status",),
        ("watch", "--thread", t, "--since", "0", "--timeout", "1"),
    ]


def _fits(result: CliResult, ids: list[str]) -> None:
    """No line over WIDTH; no id and no timestamp broken across lines: every piece of an id
    that a line shows is the id's start, 8 characters or more, and every date has its time."""
    lines = result.stdout.splitlines()
    assert lines, result.stderr
    long = [line for line in lines if len(line) > WIDTH]
    assert not long, "\n".join(long)
    for line in lines:
        for token in HEXISH.findall(line):
            whose = [whole for whole in ids if token in whole]
            broken = [whole for whole in whose if not (whole.startswith(token) and len(token) >= 8)]
            assert not broken, f"{token!r} is a piece of {broken[0]}:\n{result.stdout}"
        dates, stamps = DATE.findall(line), TIMESTAMP.findall(line)
        assert len(dates) == len(stamps), f"a timestamp broken:\n{line}\n{result.stdout}"


def test_every_list_and_show_command_fits_80_columns(cli: CliRunner, seeded: Seeded, tmp_path: Path) -> None:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(PROFILES, encoding="utf-8")
    env = {"COLUMNS": str(WIDTH), "COUNCIL_PROFILES": str(profiles)}
    failures = []
    for args in _views(seeded):
        shown = cli(*args, env=env)
        if shown.code != 0:
            failures.append(f"council {' '.join(args)} exited {shown.code}: {shown.stderr}")
            continue
        try:
            _fits(shown, seeded.ids)
        except AssertionError as exc:
            failures.append(f"council {' '.join(args)}:\n{exc}")
    assert not failures, "\n\n".join(failures)
    # And a model's name is shown whole
    listed = cli("profiles", env=env).stdout
    assert "openrouter/meta-llama/llama-3.3-70b-instruct" in listed, listed


def test_every_help_wraps_between_words_within_80_columns(cli: CliRunner) -> None:
    env = {"COLUMNS": str(WIDTH)}
    helps = [("--help",)] + [(name, "--help") for names in REGISTERS.values() for name in names]
    failures = []
    for args in dict.fromkeys(helps):
        shown = cli(*args, env=env)
        long = [line for line in shown.stdout.splitlines() if len(line) > WIDTH]
        early = _early_breaks(shown.stdout)
        if shown.code != 0 or long or early:
            failures.append(
                f"council {' '.join(args)}: exit {shown.code}, too long {long}, broken early {early}"
            )
    assert not failures, "\n".join(failures)


def _early_breaks(text: str) -> list[str]:
    """Lines of a help box that end before the box's edge although the next line's first word,
    which continues the same cell, would have fitted: a line break of the source text, kept
    (a sentence broken in the middle), not a wrap between words at the terminal's width."""
    lines = text.splitlines()
    found = []
    for above, below in itertools.pairwise(lines):
        if not (above.startswith("│") and above.endswith("│") and below.startswith("│")):
            continue
        inner, following = above[1:-1], below[1:-1]
        words = following.split()
        indent = len(following) - len(following.lstrip())
        if not words or indent <= 6 or words[0].startswith("["):
            continue  # a new row of the box, or the [default: …] a help text ends with
        if inner[indent - 1] != " " or inner[indent] == " ":
            continue  # the line above holds no text of that cell
        if len(inner.rstrip()) + 1 + len(words[0]) < len(inner):
            found.append(f"{above.strip()} / {below.strip()}")
    return found
