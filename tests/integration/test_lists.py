"""Every noun listable: the list services, their CLI commands (80 columns, published JSON)
and their GET routes, against real Postgres."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from council.adapters.scheduler import Recorder
from council.bootstrap import bootstrap
from council.domain.commands import NewAction
from council.errors import BadInput
from council.ledger.unit import UnitOfWork
from council.services.claims import add_action
from council.services.consolidation import consolidate
from council.services.lists import (
    list_actions,
    list_claims,
    list_consolidations,
    list_proposals,
    list_runs,
    show_dispatch,
    thread_dispatches,
    thread_evidence,
    thread_nodes,
)
from council.services.retraction import propose_retraction
from council.web.app import create_app
from council.web.security import Policy
from tests.builders import ACTOR, Ledger
from tests.conftest import CliRunner
from tests.published import validate_cli_output


@dataclass
class Listed:
    ledger: Ledger
    consolidated: UUID  # a version with a live consolidation
    bare: UUID  # a version nobody claimed on
    queued: UUID  # a dispatched run, still queued
    proposal: UUID


@pytest.fixture
def listed(engine: Engine, uow: UnitOfWork) -> Listed:
    ledger = Ledger.new(engine, title="Lists", evidence_items=3)
    consolidated = ledger.ready_node("A proposition two providers endorse " + "and say more " * 10)
    committed = consolidate(uow, consolidated, actor=ACTOR)
    assert committed.consolidation_id is not None
    bare = UUID(str(ledger.node("Nobody has judged this one")["version_id"]))
    queued = ledger.dispatched("claude")
    proposal = propose_retraction(uow, committed.consolidation_id, reason="doubt", actor=ACTOR).id
    action = NewAction(
        thread=ledger.thread_id, description="Run the suite on PG 16", acceptance_condition="suite green",
        version=bare,
    )  # fmt: skip
    add_action(uow, action, actor=ACTOR)
    return Listed(ledger, consolidated, bare, queued, proposal)


def test_a_threads_evidence_and_nodes_list_in_order_with_validity_claims_and_consolidation(
    uow: UnitOfWork, listed: Listed
) -> None:
    evidence = thread_evidence(uow, str(listed.ledger.thread_id)[:8])
    assert [e.id for e in evidence.items] == listed.ledger.evidence
    assert {e.validity for e in evidence.items} == {"valid"}
    nodes = {n.version_id: n for n in thread_nodes(uow, listed.ledger.thread_id).items}
    assert list(nodes) == [listed.consolidated, listed.bare]
    judged = nodes[listed.consolidated]
    assert (judged.support_claims, judged.dispute_claims, judged.abstain_claims) == (2, 0, 0)
    assert judged.live_consolidation_version_id == listed.consolidated
    assert nodes[listed.bare].support_claims == 0 and nodes[listed.bare].live_consolidation_id is None


def test_runs_filter_by_thread_status_agent_and_dispatch_and_keep_the_newest_within_the_limit(
    uow: UnitOfWork, listed: Listed
) -> None:
    everything = list_runs(uow, thread=listed.ledger.thread_id)
    assert len(everything.items) == 3 and not everything.truncated
    assert [r.id for r in list_runs(uow, status="queued").items] == [listed.queued]
    assert {r.provider for r in list_runs(uow, thread=listed.ledger.thread_id, status="succeeded").items} == {
        "anthropic",
        "openai",
    }
    assert [r.id for r in list_runs(uow, agent="claude").items] == [listed.queued]
    newest = list_runs(uow, thread=listed.ledger.thread_id, limit=1)
    assert newest.truncated and [r.id for r in newest.items] == [listed.queued]
    dispatch_id = newest.items[0].dispatch_id
    assert [r.id for r in list_runs(uow, dispatch=dispatch_id).items] == [listed.queued]
    with pytest.raises(BadInput, match="unknown run status 'done'"):
        list_runs(uow, status="done")
    with pytest.raises(BadInput, match="--limit"):
        list_runs(uow, limit=0)


def test_a_dispatch_lists_and_shows_with_its_runs_by_status(uow: UnitOfWork, listed: Listed) -> None:
    [item] = thread_dispatches(uow, listed.ledger.thread_id).items
    assert (item.run_count, item.succeeded, item.failed, item.unfinished) == (1, 0, 0, 1)
    assert item.agents == ["claude"] and item.cost.usd == 0
    shown = show_dispatch(uow, str(item.id)[:8])
    # runs is the list of its runs, as in every other document
    assert shown.id == item.id and [r.id for r in shown.runs] == [listed.queued]
    assert "run_items" not in shown.json_document()


def test_proposals_list_by_thread_and_status(uow: UnitOfWork, listed: Listed) -> None:
    [open_one] = list_proposals(uow, thread=listed.ledger.thread_id, status="open").items
    assert open_one.id == listed.proposal and open_one.node_version_id == listed.consolidated
    assert open_one.votes == 0 and open_one.reason == "doubt"
    assert list_proposals(uow, status="retracted").items == []
    with pytest.raises(BadInput, match="unknown proposal status"):
        list_proposals(uow, status="closed")


def test_consolidations_claims_and_actions_list_by_their_filters(uow: UnitOfWork, listed: Listed) -> None:
    thread = listed.ledger.thread_id
    # consolidations: by thread, status and node (any version of it)
    [live] = list_consolidations(uow, thread=str(thread)[:8]).items
    # (its memory is contested: the fixture opened a retraction proposal on it)
    assert (live.node_version_id, live.status) == (listed.consolidated, "live")
    assert live.memory_status == "contested"
    assert live.content.startswith("A proposition two providers endorse")
    assert list_consolidations(uow, node=listed.consolidated).items == [live]
    assert list_consolidations(uow, node=listed.bare).items == []
    assert list_consolidations(uow, status="retracted").items == []
    with pytest.raises(BadInput, match="unknown consolidation status 'dead'"):
        list_consolidations(uow, status="dead")
    # claims: by run, node, thread and type, with the claiming run's agent and round
    claims = list_claims(uow, node=listed.consolidated)
    assert len(claims.items) == 2 and {c.claim_type for c in claims.items} == {"endorse"}
    first = claims.items[0]
    assert [c.id for c in list_claims(uow, run=str(first.run_id)[:8]).items] == [first.id]
    assert (
        len(list_claims(uow, thread=thread).items) == 2 and list_claims(uow, claim_type="dispute").items == []
    )
    newest = list_claims(uow, thread=thread, limit=1)
    assert newest.truncated and [c.id for c in newest.items] == [claims.items[-1].id]
    with pytest.raises(BadInput, match="unknown claim type 'agree'"):
        list_claims(uow, claim_type="agree")
    # actions: by thread, status and node version
    [action] = list_actions(uow, thread=thread).items
    assert (action.status, action.node_version_id, action.acceptance_condition) == (
        "open",
        listed.bare,
        "suite green",
    )
    assert list_actions(uow, node=listed.bare).items == [action]
    assert list_actions(uow, status="satisfied").items == []
    with pytest.raises(BadInput, match="--limit"):
        list_actions(uow, limit=0)


def test_an_unknown_thread_is_bad_input_and_writes_nothing(uow: UnitOfWork, listed: Listed) -> None:
    with pytest.raises(BadInput):
        thread_nodes(uow, uuid.uuid4())


@pytest.mark.parametrize(
    "words",
    [
        ("evidence", "list", "--thread", "{t}"),
        ("node", "list", "--thread", "{t}"),
        ("run", "list", "--thread", "{t}"),
        ("dispatch", "list", "--thread", "{t}"),
        ("proposal", "list", "--thread", "{t}"),
        ("consolidation", "list", "--thread", "{t}"),
        ("claim", "list", "--thread", "{t}"),
        ("action", "list", "--thread", "{t}"),
        ("thread", "list"),
    ],
)
def test_each_list_prints_its_published_json_and_a_table_within_80_columns(
    cli: CliRunner, listed: Listed, words: tuple[str, ...]
) -> None:
    args = tuple(w.format(t=listed.ledger.thread_id) for w in words)
    as_json = cli(*args, "--json")
    assert as_json.code == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    validate_cli_output((*args, "--json"), document)
    assert document["items"]
    if args[0] == "thread":  # every thread of the test database: find ours
        assert {"status", "runs", "cost_usd"} <= set(document["items"][0])
        document["items"] = [i for i in document["items"] if i["id"] == str(listed.ledger.thread_id)]
    human = cli(*args, env={"COLUMNS": "80"})
    assert human.code == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, human.stdout
    first = document["items"][0]
    assert str(first.get("run_id") or first.get("id") or first["version_id"])[:8] in human.stdout


def test_dispatch_show_and_the_dispatch_command_without_a_thread(cli: CliRunner, listed: Listed) -> None:
    dispatch_id = str(listed.queued)  # not a dispatch: refused by kind
    assert cli("dispatch", "show", dispatch_id[:8]).code == 2
    listing = json.loads(cli("dispatch", "list", "--thread", str(listed.ledger.thread_id), "--json").stdout)
    shown = cli("dispatch", "show", listing["items"][0]["id"][:8], "--json")
    assert shown.code == 0, shown.stderr
    validate_cli_output(("dispatch", "show", "x", "--json"), json.loads(shown.stdout))
    bare = cli("dispatch", "--json")
    assert bare.code == 2 and "--thread is required" in bare.stderr
    assert json.loads(bare.stdout)["code"] == 2


def test_the_routes_list_through_the_same_services(db_url: str, listed: Listed) -> None:
    app = create_app(bootstrap(db_url, scheduler=lambda uow: Recorder()), policy=Policy(), keepalive_s=0.2)
    thread = listed.ledger.thread_id
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert len(client.get(f"/threads/{thread}/evidence").json()["items"]) == 3
        assert len(client.get(f"/threads/{thread}/nodes").json()["items"]) == 2
        queued = client.get("/runs", params={"status": "queued"}).json()
        assert [r["id"] for r in queued["items"]] == [str(listed.queued)]
        [dispatch] = client.get(f"/threads/{thread}/dispatches").json()["items"]
        assert client.get(f"/dispatches/{dispatch['id']}").json()["runs"][0]["id"] == str(listed.queued)
        [consolidation] = client.get("/consolidations", params={"thread": str(thread)}).json()["items"]
        assert consolidation["node_version_id"] == str(listed.consolidated)
        claims = client.get("/claims", params={"node": str(listed.consolidated), "type": "endorse"}).json()
        assert len(claims["items"]) == 2
        assert client.get("/actions", params={"thread": str(thread)}).json()["items"][0]["status"] == "open"
        assert client.get("/claims", params={"type": "agree"}).status_code == 422
        assert client.get("/proposals", params={"thread": str(thread)}).json()["items"][0]["status"] == "open"
        assert client.get("/proposals", params={"status": "closed"}).status_code == 422
        assert client.get("/runs", params={"limit": 0}).status_code == 422
        assert client.get(f"/threads/{uuid.uuid4()}/nodes").status_code == 404


def test_node_show_lists_the_claims_on_the_version(cli: CliRunner, listed: Listed) -> None:
    shown = cli("node", "show", str(listed.consolidated), env={"COLUMNS": "80"})
    assert shown.code == 0, shown.stderr
    claim_lines = [line for line in shown.stdout.splitlines() if re.match(r"^ {4}[0-9a-f]{8} endorse ", line)]
    assert "claims (2):" in shown.stdout and len(claim_lines) == 2, shown.stdout
