"""The dashboard views (docs/architecture.md §8, schema/views.md) against real Postgres.

One test per observation question of the specification, each on a ledger
built for it; the base views; the computed independence groups against the
Python grouping they must equal. The read-only role ``council_dashboard``
has its own file, test_dashboard_role.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from uuid import UUID

from sqlalchemy import Engine, text

from council.domain.commands import NewAction, NewFork, NewVersion
from council.domain.requests import Exposure
from council.services.branches import close_branch, fork_branch, merge_branch
from council.services.claims import add_action
from council.services.consolidation import consolidate, groups
from council.services.nodes import add_version, set_node_status, show_node
from council.services.reversal import change_validity
from tests.builders import ACTOR, Ledger
from tests.dashboard import fail_run, version_of, view_rows, worker_run
from tests.engines import uow_of

VIEWS_DOC = Path(__file__).resolve().parents[2] / "schema" / "views.md"


# ---------------------------------------------------- observation questions


def test_q1_an_endorsement_is_independent_alone_in_its_group_and_inherited_when_it_shares_one(
    engine: Engine,
) -> None:
    # Given a node originated by one run, endorsed by a second run blind, and by
    # a third run that was shown the second one's stance; and a dispute
    ledger = Ledger.new(engine)
    originator = ledger.open_run("zhipu")
    version = version_of(ledger, "SQLite parity suffices for tests", run_id=originator)
    blind = ledger.run("anthropic")
    ledger.claim(blind, version, cites=[ledger.evidence[0]])
    follower = ledger.run("openai", exposed_to=[blind])
    ledger.claim(follower, version, cites=[ledger.evidence[1]])
    ledger.claim(ledger.run("openai"), version, claim_type="dispute")
    # When the question's view is read for the node version
    rows = {
        r["run_id"]: r
        for r in view_rows(engine, "council_v_endorsement_independence", node_version_id=version)
    }
    # Then every support claim is there, and only those
    assert set(rows) == {originator, blind, follower}
    answer = {
        run: (r["claim_type"], r["group_size"], r["independence"], r["linked_by"], r["linked_runs"])
        for run, r in rows.items()
    }
    assert answer == {
        originator: ("originate", 1, "independent", [], []),
        blind: ("endorse", 2, "inherited", ["stance_seen"], [follower]),
        follower: ("endorse", 2, "inherited", ["saw_stance"], [blind]),
    }
    # And the groups are the ones `council groups` reports
    support = {g.id: sorted(g.runs) for g in groups(uow_of(engine), version).groups if g.kind == "support"}
    assert {r["group_id"]: sorted(map(str, r["group_runs"])) for r in rows.values()} == support


def test_q2_the_evidence_each_run_relied_on_with_its_role_and_reading(engine: Engine) -> None:
    # Given a node a person made citing evidence, an endorsement and a dispute
    # citing other evidence with their readings, and an abstention citing context
    ledger = Ledger.new(engine)
    e0, e1, e2 = ledger.evidence
    version = version_of(ledger, "SQLite parity suffices for tests", cites=[e0])
    other = version_of(ledger, "WAL mode changes nothing")
    endorser, disputer = ledger.run("anthropic"), ledger.run("openai")
    ledger.claim(endorser, version, cites=[e0], interpretation="writers serialise, readers do not")
    ledger.claim(disputer, version, claim_type="dispute", cites=[e1], interpretation="one writer only")
    ledger.claim(disputer, other, claim_type="abstain", cites=[e2])
    # When the question's view is read for the thread
    rows = view_rows(engine, "council_v_evidence_reliance", thread_id=ledger.thread_id)
    # Then each run's citations are there with role and reading; the person's is not
    answer = {
        (
            r["run_id"],
            r["agent"],
            r["node_version_id"],
            r["claim_type"],
            r["evidence_id"],
            r["role"],
            r["interpretation"],
        )
        for r in rows
    }
    assert answer == {
        (endorser, "anthropic", version, "endorse", e0, "supports", "writers serialise, readers do not"),
        (disputer, "openai", version, "dispute", e1, "contradicts", "one writer only"),
        (disputer, "openai", other, "abstain", e2, "context", ""),
    }
    assert {(r["evidence_title"], r["evidence_validity"]) for r in rows if r["evidence_id"] == e0} == {
        ("SQLite parity: evidence item 0", "valid")
    }


def test_q3_what_each_branch_diverged_over(engine: Engine) -> None:
    # Given a thread with one fork of each divergence type
    ledger = Ledger.new(engine)
    e0, e1, _ = ledger.evidence
    root = version_of(
        ledger, "SQLite parity suffices for tests", cites=[e0], interpretation="WAL lock serialises"
    )
    forker = ledger.run("anthropic")

    def fork(label: str, divergence: str, **kw: Any) -> UUID:
        kind = "objective" if divergence == "objective" else "node"
        at = None if kind == "objective" else root
        made = fork_branch(
            uow_of(engine),
            NewFork(
                thread=ledger.thread_id,
                kind=kind,
                label=label,
                divergence_type=divergence,
                at_version=at,
                **kw,
            ),
            actor=ACTOR,
        )
        return made.id

    scope = fork("scope", "objective", objective="Is it cheap enough to run?")
    latency = fork("tail latency", "claim", run=forker)
    reading = fork("reading of the WAL trace", "evidence_interpretation")
    version_of(
        ledger, "the trace shows contention only", branch_id=reading, cites=[e0], interpretation="contention"
    )
    version_of(ledger, "and a second trace agrees", branch_id=reading, cites=[e1])
    acceptance = fork("what would settle it", "acceptance_condition")
    bar = version_of(ledger, "parity needs a p99 bar", branch_id=acceptance)
    add_action(
        uow_of(engine),
        NewAction(
            thread=ledger.thread_id,
            description="benchmark 8 writers",
            acceptance_condition="p99 under 50 ms",
            version=bar,
        ),
        actor=ACTOR,
    )
    merge = merge_branch(uow_of(engine), latency, rationale="latency folded into main", actor=ACTOR)
    # When the question's view is read for the thread
    rows = {
        r["branch_id"]: r
        for r in view_rows(engine, "council_v_branch_divergence", thread_id=ledger.thread_id)
    }
    # Then there is one row per fork (never the main line), with what it diverged over
    answer = {
        r["label"]: (r["kind"], r["divergence_type"], r["fork_version_id"], r["objective"], r["status"])
        for r in rows.values()
    }
    assert answer == {
        "scope": ("objective", "objective", None, "Is it cheap enough to run?", "active"),
        "tail latency": ("node", "claim", root, None, "merged"),
        "reading of the WAL trace": ("node", "evidence_interpretation", root, None, "active"),
        "what would settle it": ("node", "acceptance_condition", root, None, "active"),
    }
    # And what the ledger holds about each: a reading that differs from the
    # parent's, an acceptance condition, who forked, where it merged
    assert {r["label"]: r["reinterpreted_evidence"] for r in rows.values()} == {
        "scope": 0,
        "tail latency": 0,
        "reading of the WAL trace": 1,
        "what would settle it": 0,
    }
    assert rows[acceptance]["acceptance_conditions"] == ["p99 under 50 ms"]
    assert rows[latency]["created_by_agent"] == "anthropic" and rows[scope]["created_by_agent"] is None
    with ledger.uow() as tx:
        main = tx.threads.main_branch_id(ledger.thread_id)
    assert {r["parent_branch_id"] for r in rows.values()} == {main}
    merged = rows[latency]
    assert (merged["merged_into_branch_id"], merged["merge_rationale"]) == (main, "latency folded into main")
    assert merge.target_branch_id == main
    assert rows[scope]["thread_objective"] == "Is SQLite parity sufficient for the production adapter?"


def test_q4_whether_a_run_saw_another_conclusion_before_forming_its_own(engine: Engine) -> None:
    # Given r1's endorsement, then r2 (shown r1's stances) disputing after it;
    # on a second node r2 claims first and r1 only later
    ledger = Ledger.new(engine)
    v = version_of(ledger, "SQLite parity suffices for tests")
    w = version_of(ledger, "WAL mode changes nothing")
    r1 = ledger.run("anthropic")
    r1_on_v = ledger.claim(r1, v)["id"]
    r2 = ledger.run("openai", exposed_to=[r1])
    r2_on_v = ledger.claim(r2, v, claim_type="dispute")["id"]
    r2_on_w = ledger.claim(r2, w)["id"]
    r1_on_w = ledger.claim(r1, w, claim_type="dispute")["id"]
    # And a worker run shown v as a proposition and r1's stance on v (not on w)
    r3, _, _ = worker_run(
        ledger,
        exposures=[
            Exposure("proposition", "briefing", node_version_id=str(v)),
            Exposure(
                "stance",
                "previous_round",
                exposed_to_run_id=str(r1),
                claim_id=str(r1_on_v),
                node_version_id=str(v),
            ),
        ],
    )
    r3_on_v, r3_on_w = ledger.claim(r3, v)["id"], ledger.claim(r3, w)["id"]
    # And a run shown nothing
    ledger.claim(ledger.run("zhipu"), v, claim_type="dispute")
    # When the question's view is read for the thread
    rows = view_rows(engine, "council_v_exposure_before_claim", thread_id=ledger.thread_id)
    # Then each claim is paired with the conclusion it was shown, and whether it came first
    answer = {
        (r["claim_id"], r["exposed_to_run_id"], r["seen_claim_id"], r["channel"], r["saw_before_claiming"])
        for r in rows
    }
    assert answer == {
        (r2_on_v, r1, r1_on_v, "explicit", True),
        (r2_on_w, r1, r1_on_w, "explicit", False),  # r1 concluded on w after r2 did
        (r3_on_v, r1, r1_on_v, "previous_round", True),
    }
    assert r3_on_w not in {r["claim_id"] for r in rows}  # shown r1's stance on v only


def test_q5_whether_each_convergence_was_independent_or_inherited(engine: Engine) -> None:
    # Given nodes supported independently, through one exposure, partly through
    # lineage, by one run only, and by nobody
    ledger = Ledger.new(engine)
    e0, e1, _ = ledger.evidence
    independent = ledger.ready_node("independent support")
    inherited = version_of(ledger, "inherited support")
    source = ledger.run("anthropic")
    ledger.claim(source, inherited)
    ledger.claim(ledger.run("openai", exposed_to=[source]), inherited)
    partly = version_of(ledger, "partly inherited support")
    parent = ledger.run("anthropic")
    ledger.claim(parent, partly, cites=[e0])
    ledger.claim(ledger.run("anthropic", parent_run_id=parent, round_no=2), partly, cites=[e1])
    ledger.claim(ledger.run("openai"), partly)
    single = version_of(ledger, "one supporter")
    ledger.claim(ledger.run("zhipu"), single)
    ledger.claim(ledger.run("openai"), single, claim_type="dispute", confidence=0.9)
    unsupported = version_of(ledger, "nobody supports this")
    ledger.claim(ledger.run("zhipu"), unsupported, claim_type="abstain")
    committed = consolidate(uow_of(engine), independent, actor=ACTOR)
    # When the question's view is read for the thread
    rows = {
        r["node_version_id"]: r
        for r in view_rows(engine, "council_v_convergence", thread_id=ledger.thread_id)
    }
    # Then support runs are set against support groups
    answer = {
        v: (r["support_runs"], r["support_groups"], r["dispute_groups"], r["abstentions"], r["convergence"])
        for v, r in rows.items()
    }
    assert answer == {
        independent: (2, 2, 0, 0, "independent"),
        inherited: (2, 1, 0, 0, "inherited"),
        partly: (3, 2, 0, 0, "partly_inherited"),
        single: (1, 1, 1, 0, "single_support"),
        unsupported: (0, 0, 0, 1, "no_support"),
    }
    assert rows[independent]["support_providers"] == ["anthropic", "openai"]
    assert (rows[independent]["node_status"], rows[independent]["live_consolidation_id"]) == (
        "resolved",
        committed.consolidation_id,
    )
    assert rows[inherited]["live_consolidation_id"] is None


# --------------------------------------------------------------- base views


def test_thread_overview_counts_what_the_thread_holds(engine: Engine) -> None:
    # Given a thread with a consolidated node, an open node with a pending action and a dispute
    ledger = Ledger.new(engine)
    consolidate(uow_of(engine), ledger.ready_node(), actor=ACTOR)
    open_version = version_of(ledger, "WAL mode changes nothing")
    ledger.claim(ledger.run("zhipu"), open_version, claim_type="dispute")
    add_action(
        uow_of(engine),
        NewAction(
            thread=ledger.thread_id,
            description="re-run on PG 16",
            acceptance_condition="suite green",
            version=open_version,
        ),
        actor=ACTOR,
    )
    # When the overview is read
    [row] = view_rows(engine, "council_v_threads", thread_id=ledger.thread_id)
    # Then its counts are the thread's
    expected = {
        "active_branches": 1, "open_objective_forks": 0, "logical_nodes": 2, "node_versions": 2,
        "frontier_heads": 1, "evidence": 3, "runs": 3, "failed_runs": 0, "claims": 3,
        "live_consolidations": 1, "stable_memory": 1, "unsettled_memory": 0, "open_pending_actions": 1,
    }  # fmt: skip
    assert {column: row[column] for column in expected} == expected
    assert (row["title"], row["rule_set_id"], row["grouping_algorithm_id"]) == (
        "SQLite parity",
        "council-default-v1",
        "indep-v1",
    )
    assert row["last_event_at"] is not None


def test_runs_show_lineage_mode_status_and_request_hash(engine: Engine) -> None:
    # Given a recorded run and its child (shown the parent's stance), a worker
    # run whose request is stored, and a worker run that failed
    ledger = Ledger.new(engine)
    version = version_of(ledger, "SQLite parity suffices for tests")
    parent = ledger.run("anthropic", agent="claude")
    child = ledger.run("anthropic", agent="claude-2", parent_run_id=parent, exposed_to=[parent], round_no=2)
    ledger.claim(child, version)
    ledger.close(parent)
    ledger.close(child)
    worker, _, request_sha = worker_run(ledger, "openai", mode="independent")
    failed, attempt, _ = worker_run(ledger, "zhipu")
    fail_run(ledger, failed, attempt)
    # When the runs are read
    rows = {r["run_id"]: r for r in view_rows(engine, "council_v_runs", thread_id=ledger.thread_id)}
    # Then each carries its lineage, mode, status and hash
    answer = {
        run: (
            r["parent_run_id"],
            r["parent_agent"],
            r["round"],
            r["mode"],
            r["status"],
            r["stance_exposures"],
        )
        for run, r in rows.items()
    }
    assert answer == {
        parent: (None, None, 1, "external", "succeeded", 0),
        child: (parent, "claude", 2, "external", "succeeded", 1),
        worker: (None, None, 1, "independent", "running", 0),
        failed: (None, None, 1, "deliberative", "failed", 0),
    }
    assert rows[worker]["request_sha256"] == request_sha and rows[worker]["dispatch_id"] is not None
    assert (rows[failed]["error"], rows[child]["claims"]) == ("provider said no", 1)
    assert rows[failed]["duration_s"] >= 0
    # And the claim view names the run and the version it was made on
    [claim] = view_rows(engine, "council_v_claims", run_id=child)
    assert (claim["node_version_id"], claim["agent"], claim["claim_type"], claim["round"]) == (
        version,
        "claude-2",
        "endorse",
        2,
    )


def test_decisions_record_reasons_and_groups_of_consolidations_and_evaluations(engine: Engine) -> None:
    # Given a node that is not ready (one supporter) and one that is committed
    ledger = Ledger.new(engine)
    lonely = version_of(ledger, "one supporter")
    ledger.claim(ledger.run("anthropic"), lonely)
    not_ready = consolidate(uow_of(engine), lonely, actor=ACTOR)
    ready = ledger.ready_node()
    committed = consolidate(uow_of(engine), ready, actor=ACTOR)
    # When the decisions are read
    rows = {r["decision_id"]: r for r in view_rows(engine, "council_v_decisions", thread_id=ledger.thread_id)}
    # Then both are there, with their outcome and failed rules
    answer = {
        d: (r["kind"], r["node_version_id"], r["outcome"], r["consolidation_status"], r["support_groups"],
            r["failed_rules"])
        for d, r in rows.items()
    }  # fmt: skip
    assert answer == {
        not_ready.evaluation_id: (
            "evaluation", lonely, "not_ready", None, None, ["independent_support", "provider_diversity"],
        ),
        committed.consolidation_id: ("consolidation", ready, "committed", "live", 2, []),
    }  # fmt: skip
    assert rows[committed.consolidation_id]["memory_item_id"] == committed.memory_item_id
    # And one reason row per rule, in the rule set's order
    reasons = view_rows(engine, "council_v_decision_reasons", decision_id=not_ready.evaluation_id)
    assert [(r["rule"], r["ok"], r["detail"]) for r in sorted(reasons, key=lambda r: r["position"])] == [
        (r.rule, r.ok, r.detail) for r in not_ready.reasons
    ]
    # And the groups the consolidation recorded are the groups the view computes now
    recorded = view_rows(
        engine, "council_v_consolidation_groups", consolidation_id=committed.consolidation_id
    )
    current = view_rows(engine, "council_v_independence_groups", node_version_id=ready)
    assert sorted((r["group_id"], r["kind"], r["runs"], r["providers"]) for r in recorded) == sorted(
        (r["group_id"], r["kind"], r["runs"], r["providers"]) for r in current
    )
    assert committed.groups is not None
    assert [g.id for g in committed.groups] == [
        r["group_id"] for r in sorted(recorded, key=lambda r: r["position"])
    ]


def test_memory_items_carry_their_status_history(engine: Engine) -> None:
    # Given stable memory whose evidence is challenged, then reaffirmed
    ledger = Ledger.new(engine)
    uow = uow_of(engine)
    committed = consolidate(uow, ledger.ready_node(), actor=ACTOR)
    change_validity(
        uow, None, ledger.evidence[0], action="challenge", reason="method questioned", actor=ACTOR
    )
    change_validity(uow, None, ledger.evidence[0], action="reaffirm", reason="re-run confirmed", actor=ACTOR)
    # When the memory views are read
    [item] = view_rows(engine, "council_v_memory_items", thread_id=ledger.thread_id)
    history = view_rows(engine, "council_v_memory_history", memory_item_id=item["memory_item_id"])
    # Then the item shows where it went and why, and each step is a row
    assert (item["consolidation_id"], item["status"], item["transitions"]) == (
        committed.consolidation_id,
        "stable",
        2,
    )
    assert item["status_path"] == "stable > provisional > stable"
    assert (
        item["last_reason"] == history[-1]["reason"] == max(history, key=lambda h: h["created_at"])["reason"]
    )
    assert [(h["from_status"], h["to_status"]) for h in item["history"]] == [
        ("stable", "provisional"),
        ("provisional", "stable"),
    ]
    assert sorted((h["from_status"], h["to_status"]) for h in history) == [
        ("provisional", "stable"),
        ("stable", "provisional"),
    ]


def test_frontier_holds_open_and_tentative_heads_of_live_branches(engine: Engine) -> None:
    # Given an open and a tentative head, a superseded version, a killed node,
    # a resolved node, and heads on a merged and on an abandoned branch
    ledger = Ledger.new(engine)
    base = version_of(ledger, "SQLite parity suffices for tests")
    tentative = version_of(ledger, "WAL mode changes nothing", status="tentative", depends_on=[base])
    ledger.claim(ledger.run("openai"), tentative, claim_type="dispute")
    old = version_of(ledger, "old wording")
    uow = uow_of(engine)
    logical = show_node(uow, old).logical_node_id
    new = add_version(uow, NewVersion(logical_node=logical, content="new wording"), actor=ACTOR).version_id
    killed = version_of(ledger, "killed")
    set_node_status(uow, killed, status="killed", reason="wrong", actor=ACTOR)
    consolidate(uow, ledger.ready_node(), actor=ACTOR)
    on_branch = {}
    for label in ("merged", "abandoned"):
        fork = fork_branch(
            uow,
            NewFork(
                thread=ledger.thread_id, kind="node", label=label, divergence_type="claim", at_version=base
            ),
            actor=ACTOR,
        )
        on_branch[label] = version_of(ledger, f"on the {label} branch", branch_id=fork.id)
        if label == "merged":
            merge_branch(uow, fork.id, rationale="agreed", actor=ACTOR)
        else:
            close_branch(uow, fork.id, status="abandoned", reason="dropped", actor=ACTOR)
    # When the frontier is read
    rows = {
        r["node_version_id"]: r for r in view_rows(engine, "council_v_frontier", thread_id=ledger.thread_id)
    }
    # Then exactly the live heads are there, with their counts
    assert set(rows) == {base, tentative, new, on_branch["merged"]}
    assert (rows[tentative]["status"], rows[tentative]["dispute_claims"], rows[tentative]["depends_on"]) == (
        "tentative",
        1,
        1,
    )
    assert (rows[new]["version_no"], rows[on_branch["merged"]]["branch_status"]) == (2, "merged")


def _documented_columns() -> dict[str, list[tuple[str, str]]]:
    """(column, type) of each view, from its section of schema/views.md."""
    documented: dict[str, list[tuple[str, str]]] = {}
    view = None
    for line in VIEWS_DOC.read_text(encoding="utf-8").splitlines():
        if heading := re.fullmatch(r"### `(council_v_\w+)`", line):
            view = heading[1]
            documented[view] = []
        elif view and (row := re.match(r"\| `(\w+)` \| ([^|]+?) \|", line)):
            documented[view].append((row[1], row[2]))
    return documented


def test_every_view_and_column_is_documented_in_schema_views_md(engine: Engine) -> None:
    # Given the views as the migrations built them
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.relname, a.attname, replace(format_type(a.atttypid, a.atttypmod), "
                "'timestamp with time zone', 'timestamptz') FROM pg_class c "
                "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
                "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v' "
                "ORDER BY c.relname, a.attnum"
            )
        ).all()
    built: dict[str, list[tuple[str, str]]] = {}
    for view, column, type_ in rows:
        built.setdefault(view, []).append((column, type_))
    # When schema/views.md is read
    documented = _documented_columns()
    # Then it documents every view, column by column, in order, with its type
    assert documented == built
