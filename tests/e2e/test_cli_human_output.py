"""The CLI's human output says what `--json` says (issue 18 §1): lineage,
exposures (whose stance, how it arrived), request hash and claims of a run;
each evaluation's reasons per rule; memory and evidence transitions (from → to,
actor, reason, time). Real processes, real Postgres."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from council.services.consolidation import consolidate
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger


def _human(cli: Any, *args: str) -> str:
    result = cli(*args)
    assert result.code == 0, result.stderr
    return str(result.stdout)


def _json(cli: Any, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.code == 0, result.stderr
    return result.json()


def test_run_show_gives_lineage_exposures_hash_and_claims(cli: Any, engine: Engine) -> None:
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL is safe")["version_id"]))
    first = ledger.run("anthropic", agent="claude")
    ledger.claim(first, version, confidence=0.7)
    second = ledger.run("openai", agent="codex", parent_run_id=first, exposed_to=[first])
    ledger.claim(second, version, "dispute", confidence=0.6, rationale="writers still serialise")
    document = _json(cli, "run", "show", str(second))
    shown = _human(cli, "run", "show", str(second)[:8])
    assert f"run {second}  codex · openai/gpt-5.5 (provider openai, recorded)" in shown
    assert "mode external" in shown
    assert f"parent {str(first)[:8]}" in shown and "round 1" in shown
    [exposure] = document["exposures"]
    assert exposure["exposed_to_agent"] == "claude"
    assert f"stance of run {str(first)[:8]} (claude) — arrived via {exposure['channel']}" in shown
    assert f"dispute node {str(version)[:8]} confidence 0.60 — writers still serialise" in shown
    assert "request sha256: (none stored)" in shown and document["request_sha256"] is None


def test_history_memory_and_evidence_show_reasons_and_transitions(cli: Any, engine: Engine) -> None:
    ledger = Ledger.new(engine)
    lonely = UUID(str(ledger.node("A lonely claim")["version_id"]))
    ledger.claim(ledger.run("anthropic"), lonely, confidence=0.9)
    assert consolidate(ledger.uow, lonely, actor=ACTOR).outcome == "not_ready"
    version = ledger.ready_node()
    assert consolidate(ledger.uow, version, actor=ACTOR).outcome == "committed"
    change_validity(
        ledger.uow, None, ledger.evidence[0], action="challenge", reason="method doubted", actor="alice"
    )

    not_ready = _human(cli, "history", "--node", str(lonely))
    assert "not_ready" in not_ready
    assert "✗ independent_support: 1 independent support group(s), 2 required" in not_ready
    assert "✓ no_strong_dispute" in not_ready
    committed = _human(cli, "history", "--node", str(version))
    assert (
        "consolidation" in committed and "✓ independent_support: 2 independent support group(s)" in committed
    )

    memory = _human(cli, "memory", "list", "--thread", str(ledger.thread_id))
    [item] = _json(cli, "memory", "list", "--thread", str(ledger.thread_id))["items"]
    assert item["status"] == "provisional" and f"{item['id'][:8]} provisional" in memory
    for move in item["history"]:
        assert f"{move['from_status']} → {move['to_status']}  by {move['actor']}" in memory
    assert "stable → provisional  by alice" in memory

    evidence = _human(cli, "evidence", "show", str(ledger.evidence[0]))
    assert "validity challenged" in evidence
    assert "valid → challenged  by alice: method doubted" in evidence


def test_watch_shows_each_claim_with_the_groups_then_and_the_link_that_merged_them(
    cli: Any, engine: Engine
) -> None:
    ledger = Ledger.new(engine)
    version = UUID(str(ledger.node("WAL is safe")["version_id"]))
    first = ledger.run("anthropic", agent="claude")
    ledger.claim(first, version, confidence=0.8)
    second = ledger.run("openai", agent="codex")
    ledger.claim(second, version, confidence=0.7)
    third = ledger.run("zhipu", agent="glm", exposed_to=[first, second], round_no=2)
    ledger.claim(third, version, confidence=0.6)
    shown = _human(cli, "watch", "--thread", str(ledger.thread_id), "--since", "0", "--timeout", "1")
    assert "claude (anthropic" in shown and "independent of every earlier claimant" in shown
    assert "merged 2 groups: was shown the stance of" in shown
    assert f"was shown the stance of claude {str(first)[:8]}" in shown
    assert f"was shown the stance of codex {str(second)[:8]}" in shown
    # the second claim's groups: two of one run each (groups are ordered by their run ids)
    then = [line for line in shown.splitlines() if "groups then:" in line]
    assert len(then) == 3
    assert f"support[claude {str(first)[:8]}]" in then[1] and f"support[codex {str(second)[:8]}]" in then[1]
    assert then[2].count("support[") == 1
    watched = _json(cli, "watch", "--thread", str(ledger.thread_id), "--since", "0", "--timeout", "1")
    assert [len(s["groups"]) for s in watched["steps"]] == [1, 2, 1]
    assert [len(g["runs"]) for g in watched["groups"][str(version)]] == [3]
