"""`council eval` on live threads and on imported records with options (docs/guide/observe.md):
on a live thread only consolidated nodes that carry a resolution are judged, so a node
resolved true is right (the page's "Against ground truth" panel reads the same report);
an imported record's options are one set, so under exclusive_alternatives no record holds
two consolidated alternatives (``rivals``), while rules without it consolidate both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.services.consolidation import consolidate
from council.services.observation import evaluate, import_debates, resolve
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import ACTOR, Ledger
from tests.rows import rows

PLAIN_V1 = "council-default-v1"
V3 = "council-default-v3"


def test_a_consolidated_node_resolved_true_on_a_live_thread_is_right(engine: Engine, db_url: str) -> None:
    # Given an ordinary thread: one proposition consolidated and resolved true, and another
    # that the rules would also consolidate, which nobody resolved
    ledger = Ledger.new(engine)
    right = ledger.ready_node("the adapter passes the parity suite")
    ledger.ready_node("the parity suite covers the adapter's queries")
    assert consolidate(ledger.uow, right, actor=ACTOR).outcome == "committed"
    resolve(ledger.uow, str(right), outcome="true", source="ci", reason="the suite passed", actor=ACTOR)
    # When the thread is evaluated
    report = evaluate(ledger.uow, threads=[str(ledger.thread_id)], rule_sets=[PLAIN_V1])
    # Then the record is decided and right: the unresolved proposition is judged neither way
    council = report.council[PLAIN_V1]
    assert (council["decided"], council["correct"], council["wrong"], council["accuracy"]) == (1, 1, 0, 1.0)
    assert council["unjudged"] == 0
    # And the page's panel reads the same report from the API
    read = "r" * 20
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(read_token=read))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        served = client.get(
            "/eval", params={"thread": str(ledger.thread_id)}, headers={"Authorization": f"Bearer {read}"}
        )
    assert served.status_code == 200, served.text
    panel = served.json()["council"][served.json()["rule_sets"][0]]
    assert (panel["decided"], panel["correct"], panel["wrong"]) == (1, 1, 0)


def test_a_live_thread_whose_consolidated_node_nobody_resolved_is_unjudged(engine: Engine) -> None:
    # Given a consolidated node, and a resolution of another node only
    ledger = Ledger.new(engine)
    decided = ledger.ready_node("the adapter passes the parity suite")
    other = ledger.node("the suite is flaky")["version_id"]
    consolidate(ledger.uow, decided, actor=ACTOR)
    resolve(ledger.uow, str(other), outcome="false", source="ci", reason="it is not", actor=ACTOR)
    # Then the record is decided but judged neither right nor wrong
    council = evaluate(ledger.uow, threads=[str(ledger.thread_id)], rule_sets=[PLAIN_V1]).council[PLAIN_V1]
    assert (council["decided"], council["correct"], council["wrong"], council["unjudged"]) == (1, 0, 0, 1)
    assert council["accuracy"] is None


def _record(rid: str, votes: dict[str, str], truth: str) -> dict[str, Any]:
    """A blind record: each agent (of its own provider) answers once; confidences unstated."""
    agents = [{"name": name, "model": f"{name}/model", "provider": name} for name in votes]
    return {
        "id": rid,
        "question": f"Which option holds in {rid}?",
        "options": {"A": "the first", "B": "the second", "C": "the third"},
        "truth": truth,
        "agents": agents,
        "turns": [{"round": 0, "agent": name, "answer": answer} for name, answer in votes.items()],
        "tags": ["rivals"],
    }


def test_an_imported_records_options_are_one_set_and_v3_leaves_no_record_with_two(
    engine: Engine, tmp_path: Path
) -> None:
    # Given records where two agents of two providers answer A and two others answer B
    records = [
        _record("split", {"p1": "A", "p2": "A", "p3": "B", "p4": "B"}, "A"),
        _record("lean", {"p1": "A", "p2": "A", "p3": "A", "p4": "B", "p5": "B"}, "A"),
    ]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    imported = import_debates(
        Ledger.new(engine, evidence_items=0).uow, data, file_name="rivals.jsonl", actor=ACTOR
    )
    # Then each record's options are one option set, and its thread is pinned to v3
    for thread in imported.thread_ids:
        [option_set] = rows(engine, "option_sets", "thread_id = :v", v=thread)
        labels = rows(engine, "option_set_members", "option_set_id = :v", v=option_set["id"])
        assert sorted(m["label"] for m in labels) == ["A", "B", "C"]
        [thread_row] = rows(engine, "threads", "id = :v", v=thread)
        assert thread_row["rule_set_id"] == V3
    # When they are evaluated without and with exclusive alternatives (v1's bar, a margin of one group)
    body = {"min_support_groups": 2, "min_support_providers": 2, "dispute_confidence_bar": 0.6}
    exclusive = {
        "id": "exclusive-v1",
        "body": {**body, "exclusive_alternatives": True, "min_rival_margin": 1},
    }
    report = evaluate(
        Ledger.new(engine, evidence_items=0).uow, tags=["rivals"], rule_sets=[PLAIN_V1, exclusive, V3]
    )
    plain, alone = report.council[PLAIN_V1], report.council["exclusive-v1"]
    # Then v1 consolidates both rivals of both records: two rivals, both wrong
    assert (plain["decided"], plain["wrong"], plain["rivals"]) == (2, 2, 2)
    # And with exclusive alternatives, "split" (2 against 2) is undecided, "lean" (3 against 2) right
    assert (alone["decided"], alone["correct"], alone["wrong"], alone["rivals"]) == (1, 1, 0, 0)
    assert report.council[V3]["rivals"] == 0
