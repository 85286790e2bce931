"""`council export`: a thread's decision record (docs/reference/formats.md) as JSON that
follows schema/decision-record.schema.json, the same bytes for the same ledger exported at
the same moment, and Markdown in which every ledger text is inert; against real Postgres."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest
from jsonschema import Draft202012Validator
from sqlalchemy import Engine

from council.ledger.unit import UnitOfWork
from council.services.consolidation import consolidate, replay
from council.services.export_record import decision_record, export_thread, record_json
from council.services.retraction import propose_retraction
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.published import DECISION_RECORD

HOSTILE = "<script>alert(1)</script> [x](javascript:alert(1)) # heading"
ANSWER = "I endorse it. <img src=x onerror=alert(1)> **bold** `code`\n# not a heading"


@dataclass
class Recorded:
    ledger: Ledger
    consolidated: UUID
    consolidation: UUID
    bare: UUID
    proposal: UUID
    answered_run: UUID


@pytest.fixture
def recorded(engine: Engine, uow: UnitOfWork) -> Recorded:
    ledger = Ledger.new(engine, title=HOSTILE, evidence_items=2)
    consolidated = ledger.ready_node("Parity holds " + HOSTILE)
    committed = consolidate(uow, consolidated, actor=ACTOR)
    assert committed.consolidation_id is not None
    bare = UUID(str(ledger.node("A second proposition, | not judged |")["version_id"]))
    dissenter = ledger.run("google")
    ledger.claim(dissenter, bare, "dispute", confidence=0.6, rationale="[link](javascript:alert(2))")
    changed = ledger.run("google", parent_run_id=dissenter, round_no=2)  # the same agent, later
    ledger.claim(changed, bare, "endorse", confidence=0.7)
    with uow() as tx:
        tx.answers.keep(dissenter, 1, 0, ANSWER)
    proposal = propose_retraction(uow, committed.consolidation_id, reason="doubt <b>", actor=ACTOR).id
    return Recorded(ledger, consolidated, committed.consolidation_id, bare, proposal, dissenter)


def test_the_json_record_follows_its_schema_and_holds_the_threads_decisions(
    uow: UnitOfWork, recorded: Recorded
) -> None:
    record = decision_record(uow, recorded.ledger.thread_id)
    document = json.loads(record_json(record))
    schema = json.loads(DECISION_RECORD.read_text(encoding="utf-8"))
    errors = list(Draft202012Validator(schema).iter_errors(document))
    assert not errors, errors[0].message

    assert document["format"] == "council-decision-record-v1"
    assert document["question"] == "Is SQLite parity sufficient for the production adapter?"
    assert document["thread"]["title"] == HOSTILE
    assert [e["id"] for e in document["evidence"]] == [str(e) for e in recorded.ledger.evidence]
    assert {e["validity"] for e in document["evidence"]} == {"valid"}
    heads = [p["head_version_id"] for p in document["propositions"]]
    assert heads == [str(recorded.consolidated), str(recorded.bare)]
    judged, bare = document["propositions"]
    assert [v["version_no"] for v in judged["versions"]] == [1]
    assert judged["support_groups"] == 2 and judged["n_eff"] is None
    assert {g["kind"] for g in bare["independence_groups"]} <= {"support", "dispute"}
    [consolidation] = judged["consolidations"]
    assert consolidation["id"] == str(recorded.consolidation)
    reasons = consolidation["reasons"]
    assert reasons and all({"rule", "ok", "detail"} <= r.keys() for r in reasons)
    # the snapshot hash is the one a replay recomputes
    assert consolidation["snapshot_sha256"] == replay(uow, recorded.consolidation).replayed_sha256
    assert bare["consolidations"] == []
    runs = {r["id"]: r for r in document["runs"]}
    assert len(runs) == 4
    answered = runs[str(recorded.answered_run)]
    assert answered["answer"]["excerpt"] == ANSWER and not answered["answer"]["excerpt_cut"]
    assert [c["claim_type"] for c in answered["claims"]] == ["dispute"]
    assert sum(len(r["claims"]) for r in runs.values()) == 4
    [retraction] = document["retractions"]
    assert retraction["id"] == str(recorded.proposal) and retraction["reason"] == "doubt <b>"
    assert retraction["consolidation_id"] == str(recorded.consolidation)
    [change] = [s for s in document["stance_changes"] if s["prior_claim_type"] is not None]
    assert (change["prior_claim_type"], change["claim_type"]) == ("dispute", "endorse")
    assert set(document["cost"]) >= {"usd", "prompt_tokens", "completion_tokens"}


def test_the_same_ledger_gives_the_same_bytes(uow: UnitOfWork, recorded: Recorded) -> None:
    thread, at = recorded.ledger.thread_id, datetime(2026, 12, 7, 22, 0, tzinfo=UTC)
    first_json = record_json(decision_record(uow, thread, at=at))
    assert first_json == record_json(decision_record(uow, thread, at=at))
    first = export_thread(uow, thread, "markdown", at=at).markdown
    assert first is not None and first == export_thread(uow, thread, "markdown", at=at).markdown
    assert "Exported 2026-12-07 22:00:00 UTC." in first


def test_markdown_has_a_heading_per_proposition_and_leaves_ledger_text_inert(
    uow: UnitOfWork, recorded: Recorded
) -> None:
    text = export_thread(uow, recorded.ledger.thread_id, "markdown").markdown
    assert text is not None
    assert text.count("\n## Proposition ") == 2
    assert "## Proposition 1: “Parity holds &lt;script&gt;" in text
    assert "## Proposition 2: “A second proposition, \\| not judged \\|”" in text
    # no ledger text is markup: no raw tag, no link, no heading, no emphasis of its own
    for raw in ("<script>", "<img", "<b>", "[x](javascript:", "**bold**", "`code`"):
        assert raw not in text, raw
    assert "\\[x\\](javascript:alert(1))" in text
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith("# ") and "Decision record" not in line]
    assert sum(line.startswith("# ") for line in lines) == 1
    assert "✓" in text  # the consolidation's rules, each ✓ or ✗
    # the answer's lines as list items: none becomes a heading inside its item
    assert "    - I endorse it. &lt;img src=x onerror=alert(1)&gt; \\*\\*bold\\*\\* \\`code\\`\n" in text
    assert "    - \\# not a heading\n" in text
    assert not [line for line in lines if re.match(r"\s*(?:[-*+]\s+)+#{1,6}\s", line)]


def test_the_cli_writes_a_new_file_only_and_prints_the_same_bytes(
    cli: CliRunner, recorded: Recorded, tmp_path: Path
) -> None:
    thread = str(recorded.ledger.thread_id)
    printed = cli("export", "--thread", thread)
    assert printed.code == 0, printed.stderr
    again = json.loads(cli("export", "--thread", thread, "--format", "json").stdout)
    document = json.loads(printed.stdout)
    moments = [datetime.fromisoformat(d.pop("exported_at")) for d in (document, again)]
    assert moments == sorted(moments)
    assert document == again  # the same record but for the moment it was made
    assert document["format"] == "council-decision-record-v1"
    out = tmp_path / "record.json"
    done = cli("export", "--thread", thread, "--out", str(out), "--json")
    assert done.code == 0, done.stderr
    assert done.json()["out"] == str(out) and done.json()["format"] == "decision-record"
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written.pop("exported_at") and written == document
    # an existing file is refused, with nothing written
    existing = tmp_path / "existing.md"
    existing.write_text("keep me\n", encoding="utf-8")
    refused = cli("export", "--thread", thread, "--format", "markdown", "--out", str(existing))
    assert refused.code == 2 and existing.read_text(encoding="utf-8") == "keep me\n"
    shown = cli("export", "--thread", thread, "--format", "markdown", "--json")
    assert shown.code == 0 and shown.json()["markdown"].startswith("# Decision record: ")
    assert cli("export", "--thread", thread, "--format", "xml").code == 2
    # a thread not made by import also exports as a recorded debate on request
    debate = cli("export", "--thread", thread, "--format", "debate", "--json")
    assert debate.code == 0 and debate.json()["format"] == "council-debate-v1"
