"""The decision record is one to hand to a colleague (issue 45): it opens with the answer,
dates what happened, holds each node's resolutions and each failed run's reason, lists an
independence group once with each agent once, escapes Markdown only where Markdown needs
it (stored text stays inert), shows an agent's JSON answer as words and numbers rounds as
`run show` does; against real Postgres."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import pytest
from jsonschema import Draft202012Validator
from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate
from council.services.export_record import decision_record, export_thread, record_json
from council.services.observation import import_debates, resolve
from council.services.runs import show_run
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.dashboard import fail_run, worker_run
from tests.published import DECISION_RECORD

AT = datetime(2026, 12, 7, 23, 0, 5, tzinfo=UTC)
ANSWER = "WAL mode (write-ahead logging) is safe for concurrent readers - council-default-v1 holds"
JSON_ANSWER = json.dumps(
    {
        "summary": "WAL lets readers run beside one writer (since SQLite 3.7).",
        "new_nodes": [{"ref": "wal", "content": "Readers never block the writer in WAL mode"}],
        "claims": [{"node_version_id": "0f1e2d3c-0000-4000-8000-000000000000", "type": "endorse",
                    "confidence": 0.8, "rationale": "the docs say so (section 2.1)"}],
    }
)  # fmt: skip
HOSTILE = (
    "# heading\n| a | b |\n|---|---|\n[link](javascript:alert(1)) <script>alert(2)</script> "
    "`tick` **bold** _under_ ~~gone~~ ![img](x.png) [^1] \\*"
)


@dataclass
class Handed:
    ledger: Ledger
    answer: UUID
    hostile: UUID
    failed: UUID
    answered: UUID
    consolidation: UUID


@pytest.fixture
def handed(engine: Engine, uow: UnitOfWork) -> Handed:
    ledger = Ledger.new(engine, title="WAL for the ledger (group(s) of readers)", evidence_items=2)
    answer = ledger.ready_node(ANSWER)
    committed = consolidate(uow, answer, actor=ACTOR)
    assert committed.consolidation_id is not None
    hostile = UUID(str(ledger.node(HOSTILE)["version_id"]))
    # one agent twice in one group (its second run is its first's child), another beside it
    first = ledger.run("anthropic", "fclaude")
    ledger.claim(first, hostile, "endorse", confidence=0.7)
    again = ledger.run("anthropic", "fclaude", parent_run_id=first, round_no=2)
    ledger.claim(again, hostile, "endorse", confidence=0.7)
    seen = ledger.run("zhipu", "fglm", exposed_to=[first], round_no=2)
    ledger.claim(seen, hostile, "endorse", confidence=0.6)
    with uow() as tx:
        tx.answers.keep(seen, 1, 0, "```json\n" + JSON_ANSWER + "\n```")
    failed, attempt, _ = worker_run(ledger, "openai")
    fail_run(ledger, failed, attempt, "APIConnectionError: connection refused by 127.0.0.1:9 (3 tries)")
    resolve(
        uow,
        answer,
        outcome="true",
        source="SQLite docs, wal.html",
        reason="section 2.1 (readers)",
        actor=ACTOR,
    )
    return Handed(ledger, answer, hostile, failed, seen, committed.consolidation_id)


def _markdown(uow: UnitOfWork, thread: UUID) -> str:
    text = export_thread(uow, thread, "markdown", at=AT).markdown
    assert text is not None
    return text


def test_the_markdown_opens_with_the_answer_and_needs_no_backslash_in_plain_text(
    uow: UnitOfWork, handed: Handed
) -> None:
    text = _markdown(uow, handed.ledger.thread_id)
    lines = text.splitlines()
    # the title, then the answer: what was established, on which independent groups
    assert lines[0] == "# Decision record: WAL for the ledger (group(s) of readers)"
    assert lines[2] == "## Answer"
    established = f"**Established:** “{ANSWER}” (version `{str(handed.answer)[:8]}`), on 2 independent"
    assert lines[4].startswith(established)
    assert text.index("## Answer") < text.index("**Question:**") < text.index("## Proposition 1")
    # hyphens, parentheses, dots, colons and quotes in ordinary text are left alone
    for needless in ("\\-", "\\(", "\\)", "\\.", "\\:", "\\=", "\\'", '\\"'):
        assert needless not in text, needless
    assert "council-default-v1" in text


def test_stored_markup_stays_inert_escaped_minimally(uow: UnitOfWork, handed: Handed) -> None:
    text = _markdown(uow, handed.ledger.thread_id)
    [heading] = [line for line in text.splitlines() if line.startswith("## Proposition 2: ")]
    assert heading == (
        "## Proposition 2: “# heading \\| a \\| b \\| \\|---\\|---\\| \\[link\\](javascript:alert(1)) "
        "&lt;script&gt;alert(2)&lt;/script&gt; \\`tick\\` \\*\\*bold\\*\\* \\_under\\_ \\~\\~gone\\~\\~ "
        "!\\[img\\](x.png) \\[^1\\] \\\\\\*”"
    )
    lines = text.splitlines()
    # no stored text starts a line, so none is a heading, a table row, a quote or a list of its own
    assert [line for line in lines if line.startswith("# ")] == [lines[0]]
    assert not [line for line in lines if line.startswith(("|", ">", "<"))]
    for raw in ("<script>", "[link](", "`tick`", "**bold**", "~~gone~~", "![img]"):
        assert raw not in text, raw


def test_dates_resolutions_and_failed_runs_in_markdown_and_json(uow: UnitOfWork, handed: Handed) -> None:
    record = decision_record(uow, handed.ledger.thread_id, at=AT)
    document = json.loads(record_json(record))
    schema = json.loads(DECISION_RECORD.read_text(encoding="utf-8"))
    errors = list(Draft202012Validator(schema).iter_errors(document))
    assert not errors, errors[0].message
    text = _markdown(uow, handed.ledger.thread_id)
    when = lambda moment: moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")  # noqa: E731

    # dates: the thread's creation, each round's span, each consolidation, the export
    assert document["exported_at"] == "2026-12-07T23:00:05Z"
    assert f"created {when(record.thread.created_at)}" in text and "Exported 2026-12-07 23:00:05 UTC." in text
    assert "- 2026-12-07 23:00:05 UTC: exported" in text
    [dispatched] = [r for r in document["rounds"] if r["dispatch_id"] is not None]
    assert (dispatched["round"], dispatched["runs"], dispatched["failed"]) == (1, 1, 1)
    assert dispatched["started_at"] and dispatched["finished_at"]
    round_line = f"round 1 of dispatch `{dispatched['dispatch_id'][:8]}`, until "
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert re.search(rf"- {stamp}: {re.escape(round_line)}.*: 1 run\(s\), 1 failed", text)
    [consolidation] = record.propositions[0].consolidations
    assert f"consolidation `{str(handed.consolidation)[:8]}` of version `{str(handed.answer)[:8]}`, " in text
    consolidated = (
        f"{when(consolidation.created_at)}: proposition 1: consolidation `{str(handed.consolidation)[:8]}`"
    )
    assert consolidated in text

    # resolutions: outcome, source, reason, actor and time, on the node they decide
    [resolution] = document["propositions"][0]["resolutions"]
    assert {k: resolution[k] for k in ("outcome", "source", "reason", "actor", "in_force")} == {
        "outcome": True, "source": "SQLite docs, wal.html", "reason": "section 2.1 (readers)",
        "actor": ACTOR, "in_force": True,
    }  # fmt: skip
    assert document["propositions"][1]["resolutions"] == []
    resolved_at = when(datetime.fromisoformat(resolution["created_at"]))
    assert (
        f"- true (in force), version `{str(handed.answer)[:8]}`, {resolved_at}, by {ACTOR}; "
        "source “SQLite docs, wal.html”; reason “section 2.1 (readers)”"
    ) in text

    # a failed run with its reason
    reason = "APIConnectionError: connection refused by 127.0.0.1:9 (3 tries)"
    [failed] = [r for r in document["runs"] if r["id"] == str(handed.failed)]
    assert failed["status"] == "failed" and failed["error"] == reason
    assert f"`{str(handed.failed)[:8]}` openai (openai/gpt-5.5, openai), failed: “{reason}”" in text


def test_a_group_is_listed_once_with_each_agent_once(uow: UnitOfWork, handed: Handed) -> None:
    document = json.loads(record_json(decision_record(uow, handed.ledger.thread_id, at=AT)))
    groups = document["propositions"][1]["independence_groups"]
    [merged] = [g for g in groups if len(g["runs"]) == 3]
    assert merged["agents"] == [{"agent": "fclaude", "runs": 2}, {"agent": "fglm", "runs": 1}]
    text = _markdown(uow, handed.ledger.thread_id)
    assert text.count("- support group: fclaude (2 runs), fglm (providers anthropic, zhipu)") == 1
    assert "fclaude, fclaude" not in text and "fglm, fglm" not in text
    # and the answer's alternatives name each group's agents once
    assert "support 1 independent group(s): fclaude, fglm" in text


def test_an_agents_json_answer_reads_as_words(uow: UnitOfWork, handed: Handed) -> None:
    document = json.loads(record_json(decision_record(uow, handed.ledger.thread_id, at=AT)))
    [run] = [r for r in document["runs"] if r["id"] == str(handed.answered)]
    assert run["answer"]["readable"] == (
        "WAL lets readers run beside one writer (since SQLite 3.7).\n"
        "proposes: Readers never block the writer in WAL mode\n"
        "endorse 0f1e2d3c (0.80): the docs say so (section 2.1)"
    )
    text = _markdown(uow, handed.ledger.thread_id)
    assert (
        "  - answer:\n"
        "    - WAL lets readers run beside one writer (since SQLite 3.7).\n"
        "    - proposes: Readers never block the writer in WAL mode\n"
        "    - endorse 0f1e2d3c (0.80): the docs say so (section 2.1)\n"
    ) in text
    assert '\\"summary\\"' not in text and '"summary"' not in text and "```" not in text


def test_an_imported_turns_round_is_run_shows_with_its_records_round(engine: Engine, cli: CliRunner) -> None:
    # Given a recorded debate whose turns are its round 0 and round 1
    debate = {
        "id": "q-1",
        "question": "Which holds?",
        "options": {"A": "the first", "B": "the second"},
        "truth": "A",
        "agents": [{"name": "p1", "model": "p1/model", "provider": "p1"}],
        "turns": [{"round": 0, "agent": "p1", "answer": "A"}, {"round": 1, "agent": "p1", "answer": "A"}],
    }
    uow = Ledger.new(engine, evidence_items=0).uow
    data = (json.dumps(debate) + "\n").encode()
    [thread] = import_debates(uow, data, file_name="q.jsonl", actor=ACTOR).thread_ids
    # When its decision record is made
    document = json.loads(record_json(decision_record(uow, thread, at=AT)))
    text = _markdown(uow, thread)
    # Then each run's round is the one `run show` prints, beside the record's own
    for run in document["runs"]:
        shown = show_run(uow, run["id"])
        assert run["round"] == shown.round == run["debate_round"] + 1
        printed = cli("run", "show", run["id"])
        assert f"round {shown.round} · attempt" in printed.stdout
    assert sorted(r["debate_round"] for r in document["runs"]) == [0, 1]
    assert "### Round 1 of the import: " in text and "### Round 2 of the import: " in text
    assert "(the imported record's round 0), succeeded" in text
    assert "(the imported record's round 1), succeeded" in text
    # and the import's truth is the node's resolution
    assert any(p["resolutions"] for p in document["propositions"])
