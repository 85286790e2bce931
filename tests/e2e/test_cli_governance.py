"""Governance by hand through the CLI (docs/architecture.md §5): the review setting on
`thread create` and `thread review`, and a person's votes and adjudication, in
human output and under --json. Real processes, real Postgres."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from council.services.consolidation import consolidate
from tests.builders import ACTOR, Ledger


def _ok(result: Any) -> Any:
    assert result.code == 0, (result.stdout, result.stderr)
    return result.json() if "--json" in result.args else result.stdout


def test_a_thread_is_created_for_manual_review_and_its_setting_changes_with_history(cli: Any) -> None:
    shown = _ok(cli("thread", "create", "--title", "Parity", "--objective", "Enough?", "--review", "manual"))
    assert "review: manual review (people vote and adjudicate)" in shown
    thread = _ok(cli("thread", "create", "--title", "Parity", "--objective", "Enough?", "--json"))
    assert thread["review"]["review"] == "auto"
    changed = _ok(cli("thread", "review", thread["id"][:8], "--set", "10m", "--reason", "give people time"))
    assert "automatic review after 10m" in changed and "give people time" in changed
    history = _ok(cli("thread", "review", thread["id"], "--json"))
    assert [h["review"] for h in history["history"]] == ["auto", "delayed"]
    bad = cli("thread", "review", thread["id"], "--set", "sometimes", "--json")
    assert bad.code == 2 and bad.json()["code"] == 2 and "review must be auto, manual" in bad.json()["error"]
    assert len(_ok(cli("thread", "review", thread["id"], "--json"))["history"]) == 2


def test_a_thread_names_its_reviewers_and_an_unknown_one_is_refused(cli: Any) -> None:
    thread = _ok(cli("thread", "create", "--title", "Parity", "--objective", "Enough?", "--json"))
    assert thread["review"]["description"] == "automatic review by the profiles that worked the thread"
    named = _ok(cli("thread", "review", thread["id"], "--agents", "claude,codex", "--reason", "two suffice"))
    assert "automatic review by claude, codex" in named and "claude,codex" in named and "two suffice" in named
    kept = _ok(cli("thread", "review", thread["id"], "--set", "10m", "--json"))
    assert (kept["current"]["review"], kept["current"]["agents"]) == ("delayed", ["claude", "codex"])
    bad = cli("thread", "review", thread["id"], "--agents", "claude,nobody", "--json")
    assert bad.code == 2 and "unknown agent profile 'nobody'" in bad.json()["error"]
    back = _ok(cli("thread", "review", thread["id"], "--agents", "thread", "--json"))
    assert [h["agents"] for h in back["history"]] == [None, ["claude", "codex"], ["claude", "codex"], None]


def test_people_vote_and_adjudicate_and_a_decided_proposal_says_so(cli: Any, engine: Engine) -> None:
    # Given a consolidated node in a manual thread
    ledger = Ledger.new(engine)
    _ok(cli("thread", "review", str(ledger.thread_id), "--set", "manual"))
    consolidation = consolidate(ledger.uow, ledger.ready_node(), actor=ACTOR).consolidation_id
    assert consolidation is not None
    proposal = _ok(
        cli("retraction", "propose", "--consolidation", str(consolidation), "--reason", "rerun", "--json")
    )["id"]
    # When two people's independent runs vote to retract and one of them adjudicates
    for provider in ("anthropic", "openai"):
        run = str(ledger.run(provider))
        _ok(cli("retraction", "vote", "--proposal", proposal[:8], "--run", run, "--vote", "endorse"))
    decided = _ok(cli("retraction", "adjudicate", "--proposal", proposal))
    # Then the human output gives the decision and the groups behind it
    assert f"proposal {proposal}: retracted" in decided
    assert "2 independent group(s) to retract, 0 to keep, 2 required" in decided
    assert decided.count("retract  group") == 2
    # And adjudicating again says it was decided already, and changes nothing
    again = _ok(cli("retraction", "adjudicate", "--proposal", proposal))
    assert "was already decided: retracted" in again
    assert (
        _ok(cli("retraction", "adjudicate", "--proposal", proposal, "--json"))["already_adjudicated"] is True
    )
    # And a restore needs a reason, then undoes the retraction
    refused = cli("retraction", "adjudicate", "--proposal", proposal, "--restore", "--json")
    assert refused.code == 2 and "reason" in refused.json()["error"]
    restored = _ok(
        cli("retraction", "adjudicate", "--proposal", proposal, "--restore", "--reason", "misread")
    )
    assert "retraction undone" in restored and "live" in restored
