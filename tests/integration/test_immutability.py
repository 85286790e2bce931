"""The ledger's history cannot be rewritten (docs/architecture.md §2, invariants 3, 8 and 10).

Every trigger of migration 0001 is exercised against real Postgres: immutable
tables refuse UPDATE, DELETE and TRUNCATE; tables with documented mutable
columns refuse DELETE and any change outside those columns; "current" status
columns move only when a transition row is appended; version rows move the
logical node's head; events record their inserting transaction (revision 0015
dropped the NOTIFY trigger) and are never trimmed.

The triggers themselves are under test, so these tests run as the owner of the
tables, whom no privilege stops (the application's role is refused earlier, by
privileges: tests/integration/test_app_role.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from sqlalchemy import Connection, Engine, text

from council.errors import BadInput, Conflict, ImmutableRow
from tests.engines import unit_of_work

IMMUTABLE_TABLES = [
    "rule_sets",
    "grouping_algorithms",
    "threads",
    "dispatches",
    "node_versions",
    "edges",
    "merges",
    "thread_evidence",
    "run_exposures",
    "run_attempts",
    "claims",
    "citations",
    "branch_transitions",
    "node_status_transitions",
    "evidence_transitions",
    "pending_action_transitions",
    "consolidation_transitions",
    "memory_transitions",
    "retraction_proposal_transitions",
    "consolidation_evidence",
    "consolidation_evaluations",
    "retraction_votes",
    "events",
]

GUARDED_TABLES = [
    "agent_runs",
    "branches",
    "logical_nodes",
    "node_version_states",
    "evidence",
    "pending_actions",
    "consolidations",
    "memory_items",
    "retraction_proposals",
]


@dataclass(frozen=True)
class Transition:
    """A transition table, the parent row it moves (by ledger key), the parent's
    current column, and a valid step from the freshly built state."""

    table: str
    fk: str
    parent: str
    key: str
    column: str
    start: str
    end: str

    @property
    def stamp(self) -> str:
        return f"{self.column}_changed_at"


# fmt: off
TRANSITIONS = [
    Transition("branch_transitions", "branch_id", "branches", "fork", "status",
               "active", "merged"),
    Transition("node_status_transitions", "node_version_id", "node_version_states", "v1", "status",
               "open", "resolved"),
    Transition("evidence_transitions", "evidence_id", "evidence", "evidence", "validity",
               "valid", "challenged"),
    Transition("pending_action_transitions", "pending_action_id", "pending_actions", "action", "status",
               "open", "satisfied"),
    Transition("consolidation_transitions", "consolidation_id", "consolidations", "consolidation", "status",
               "live", "superseded"),
    Transition("memory_transitions", "memory_item_id", "memory_items", "memory", "status",
               "stable", "provisional"),
    Transition("retraction_proposal_transitions", "proposal_id", "retraction_proposals", "proposal", "status",
               "open", "restored"),
]
# fmt: on

SUPERSEDE_CONSOLIDATION = next(step for step in TRANSITIONS if step.table == "consolidation_transitions")

CONSOLIDATION_SQL = (
    "INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id, "
    "grouping_algorithm_id, snapshot, snapshot_sha256, decision) "
    "VALUES (:t, :n, :v, 'council-default-v1', 'indep-v1', '{}'::jsonb, :sha, '{}'::jsonb)"
)


THREAD_CREATED = {
    "title": "SQLite parity",
    "rule_set_id": "council-default-v1",
    "grouping_algorithm_id": "indep-v1",
}


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _insert(conn: Connection, sql: str, params: dict[str, Any] | None = None) -> Any:
    return conn.execute(text(sql + " RETURNING id"), params or {}).scalar_one()


def _build_ledger(conn: Connection) -> dict[str, Any]:
    """A small thread touching every table, by raw INSERTs; returns the ids by role."""
    ids: dict[str, Any] = {}
    ids["thread"] = t = _insert(
        conn,
        "INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id) "
        "VALUES ('SQLite parity', 'Is SQLite parity sufficient?', 'council-default-v1', 'indep-v1')",
    )
    ids["main"] = _insert(
        conn, "INSERT INTO branches (thread_id, kind, label) VALUES (:t, 'main', 'main')", {"t": t}
    )
    ids["dispatch"] = _insert(
        conn,
        "INSERT INTO dispatches (thread_id, mode, agents, rounds) "
        "VALUES (:t, 'deliberative', ARRAY['claude', 'codex'], 2)",
        {"t": t},
    )
    run_sql = (
        "INSERT INTO agent_runs (thread_id, dispatch_id, agent, model, provider, round, mode, status) "
        "VALUES (:t, :d, :agent, :model, :provider, :round, 'deliberative', 'running')"
    )
    for key, agent, model, provider, round_ in (
        ("run_a", "claude", "anthropic/claude", "anthropic", 1),
        ("run_b", "codex", "openai/gpt", "openai", 2),
    ):
        ids[key] = _insert(
            conn,
            run_sql,
            {
                "t": t,
                "d": ids["dispatch"],
                "agent": agent,
                "model": model,
                "provider": provider,
                "round": round_,
            },
        )
    for suffix, content in (("", "SQLite parity is sufficient."), ("2", "The adapter has a test suite.")):
        ids[f"node{suffix}"] = node = _insert(
            conn,
            "INSERT INTO logical_nodes (thread_id, branch_id) VALUES (:t, :b)",
            {"t": t, "b": ids["main"]},
        )
        ids[f"v1{suffix}"] = _insert(
            conn,
            "INSERT INTO node_versions (logical_node_id, thread_id, branch_id, version_no, content, "
            "content_sha256, initial_status, created_by_run_id) "
            "VALUES (:n, :t, :b, 1, :c, :sha, 'open', :run)",
            {"n": node, "t": t, "b": ids["main"], "c": content, "sha": _sha(content), "run": ids["run_a"]},
        )
    ids["fork"] = _insert(
        conn,
        "INSERT INTO branches (thread_id, kind, parent_branch_id, fork_version_id, divergence_type, label) "
        "VALUES (:t, 'node', :main, :v, 'evidence_interpretation', 'benchmarks read differently')",
        {"t": t, "main": ids["main"], "v": ids["v1"]},
    )
    ids["edge"] = _insert(
        conn,
        "INSERT INTO edges (thread_id, branch_id, kind, from_version_id, to_version_id, created_by_run_id) "
        "VALUES (:t, :b, 'supports', :src, :dst, :run)",
        {"t": t, "b": ids["main"], "src": ids["v12"], "dst": ids["v1"], "run": ids["run_a"]},
    )
    ids["merge"] = _insert(
        conn,
        "INSERT INTO merges (thread_id, source_branch_id, target_branch_id, preferred_version_id, rationale, "
        "actor) VALUES (:t, :src, :dst, :v, 'the readings agree after all', 'lead')",
        {"t": t, "src": ids["fork"], "dst": ids["main"], "v": ids["v1"]},
    )
    content = "p95 latency is within 5% of Postgres on the reference workload."
    ids["evidence"] = _insert(
        conn,
        "INSERT INTO evidence (content_sha256, content, source_kind, byte_size, title) "
        "VALUES (:sha, :content, 'text', :size, 'Benchmark report')",
        {"sha": _sha(content), "content": content, "size": len(content.encode())},
    )
    conn.execute(
        text(
            "INSERT INTO thread_evidence (thread_id, evidence_id, title, added_by) "
            "VALUES (:t, :e, 'Benchmark report', 'lead')"
        ),
        {"t": t, "e": ids["evidence"]},
    )
    claim_sql = (
        "INSERT INTO claims (run_id, node_version_id, claim_type, confidence, rationale) "
        "VALUES (:run, :v, :type, :confidence, 'as measured')"
    )
    for run in ("run_a", "run_b"):  # a claim is taken only from a run its transaction holds (0041)
        conn.execute(text("SELECT council_hold_v1(:run, 0)"), {"run": ids[run]})
    for key, run, claim_type, confidence in (
        ("claim_a", "run_a", "originate", 0.8),
        ("claim_b", "run_b", "endorse", 0.7),
    ):
        ids[key] = _insert(
            conn, claim_sql, {"run": ids[run], "v": ids["v1"], "type": claim_type, "confidence": confidence}
        )
    ids["exposure"] = _insert(
        conn,
        "INSERT INTO run_exposures (run_id, kind, channel, exposed_to_run_id, claim_id, node_version_id) "
        "VALUES (:run, 'stance', 'previous_round', :seen, :claim, :v)",
        {"run": ids["run_b"], "seen": ids["run_a"], "claim": ids["claim_a"], "v": ids["v1"]},
    )
    ids["citation"] = _insert(
        conn,
        "INSERT INTO citations (node_version_id, evidence_id, branch_id, claim_id, run_id, role, "
        "interpretation) VALUES (:v, :e, :b, :claim, :run, 'supports', 'parity on the reference workload')",
        {
            "v": ids["v1"],
            "e": ids["evidence"],
            "b": ids["main"],
            "claim": ids["claim_a"],
            "run": ids["run_a"],
        },
    )
    ids["action"] = _insert(
        conn,
        "INSERT INTO pending_actions (thread_id, branch_id, node_version_id, description, "
        "acceptance_condition) VALUES (:t, :b, :v, 'rerun on production data', 'p95 within 10%')",
        {"t": t, "b": ids["main"], "v": ids["v1"]},
    )
    ids["consolidation"] = _insert(
        conn, CONSOLIDATION_SQL, {"t": t, "n": ids["node"], "v": ids["v1"], "sha": _sha("snapshot 1")}
    )
    conn.execute(
        text("INSERT INTO consolidation_evidence (evidence_id, consolidation_id) VALUES (:e, :c)"),
        {"e": ids["evidence"], "c": ids["consolidation"]},
    )
    ids["evaluation"] = _insert(
        conn,
        "INSERT INTO consolidation_evaluations (thread_id, logical_node_id, node_version_id, rule_set_id, "
        "grouping_algorithm_id, snapshot_sha256, outcome, reasons, snapshot) "
        "VALUES (:t, :n, :v, 'council-default-v1', 'indep-v1', :sha, 'not_ready', "
        "'[\"one support group\"]'::jsonb, '{}'::jsonb)",
        {"t": t, "n": ids["node2"], "v": ids["v12"], "sha": _sha("snapshot 2")},
    )
    ids["memory"] = _insert(
        conn,
        "INSERT INTO memory_items (thread_id, consolidation_id, logical_node_id, node_version_id, content) "
        "VALUES (:t, :c, :n, :v, 'SQLite parity is sufficient.')",
        {"t": t, "c": ids["consolidation"], "n": ids["node"], "v": ids["v1"]},
    )
    ids["proposal"] = _insert(
        conn,
        "INSERT INTO retraction_proposals (thread_id, consolidation_id, reason, rule_set_id, "
        "grouping_algorithm_id, opened_by) "
        "VALUES (:t, :c, 'the benchmark was run on a warm cache', 'council-default-v1', 'indep-v1', 'lead')",
        {"t": t, "c": ids["consolidation"]},
    )
    ids["vote"] = _insert(
        conn,
        "INSERT INTO retraction_votes (proposal_id, run_id, vote, confidence, rationale) "
        "VALUES (:p, :run, 'dispute', 0.6, 'cache state does not matter here')",
        {"p": ids["proposal"], "run": ids["run_b"]},
    )
    ids["attempt"] = _insert(
        conn,
        "INSERT INTO run_attempts (run_id, attempt, event, worker) "
        "VALUES (:run, 1, 'claimed', 'runs@host:1')",
        {"run": ids["run_a"]},
    )
    ids["event"] = _insert(
        conn,
        "INSERT INTO events (thread_id, kind, subject_id, actor, payload) "
        "VALUES (:t, 'thread.created', CAST(:t AS text), 'lead', CAST(:p AS jsonb))",
        {"t": t, "p": json.dumps(THREAD_CREATED)},
    )
    for key, run in (("claim_a", "run_a"), ("claim_b", "run_b")):  # each with its event (0030, 0041)
        payload = {"run_id": str(ids[run]), "node_version_id": str(ids["v1"]), "claim_type": "endorse",
                   "confidence": 0.7, "citations": 0}  # fmt: skip
        _insert(
            conn,
            "INSERT INTO events (thread_id, kind, subject_id, actor, payload) "
            "VALUES (:t, 'claim.added', CAST(:c AS text), 'lead', CAST(:p AS jsonb))",
            {"t": t, "c": ids[key], "p": json.dumps(payload)},
        )
    return ids


def _append(conn: Connection, step: Transition, ids: dict[str, Any], start: str | None = None) -> Any:
    return _insert(
        conn,
        f"INSERT INTO {step.table} ({step.fk}, from_status, to_status, reason, actor) "
        "VALUES (:parent, :start, :end, 'test step', 'tester')",
        {"parent": ids[step.key], "start": step.start if start is None else start, "end": step.end},
    )


def _current(conn: Connection, step: Transition, ids: dict[str, Any]) -> tuple[str, Any]:
    row = conn.execute(
        text(f"SELECT {step.column}, {step.stamp} FROM {step.parent} WHERE id = :id"), {"id": ids[step.key]}
    ).one()
    return row[0], row[1]


def _count(engine: Engine, table: str) -> int:
    with unit_of_work(engine) as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


@pytest.fixture
def engine(owner_engine: Engine) -> Engine:
    """The owner's engine: only the triggers stand between it and the history."""
    return owner_engine


@pytest.fixture
def ledger(engine: Engine) -> dict[str, Any]:
    """Every table holds at least one row, every transition table included."""
    with unit_of_work(engine) as conn:
        ids = _build_ledger(conn)
        for step in TRANSITIONS:
            _append(conn, step, ids)
    return ids


@pytest.fixture
def fresh_ledger(engine: Engine) -> dict[str, Any]:
    """The same ledger before any transition was appended."""
    with unit_of_work(engine) as conn:
        return _build_ledger(conn)


# ------------------------------------------------------------ immutable tables


@pytest.mark.parametrize("table", IMMUTABLE_TABLES)
def test_immutable_table_refuses_update_delete_and_truncate(
    engine: Engine, ledger: dict[str, Any], table: str
) -> None:
    # Given a ledger in which the table holds rows
    before = _count(engine, table)
    assert before > 0
    statements = {
        # Any UPDATE is refused, even one that would leave the row unchanged.
        "UPDATE": f"UPDATE {table} SET {_some_column(table)} = {_some_column(table)}",
        "DELETE": f"DELETE FROM {table}",
        # CASCADE so that a foreign key cannot be what refuses it; the named
        # table's trigger fires first.
        "TRUNCATE": f"TRUNCATE {table} CASCADE",
    }
    for operation, sql in statements.items():
        # When the rows are updated, deleted or truncated
        with pytest.raises(ImmutableRow) as refused, unit_of_work(engine) as conn:
            conn.execute(text(sql))
        # Then a trigger refuses it, naming the operation and the table
        assert f"{operation} on {table} is refused" in str(refused.value)
    # And the rows are still there
    assert _count(engine, table) == before


def _some_column(table: str) -> str:
    return "consolidation_id" if table == "consolidation_evidence" else "created_at"


# --------------------------------------------------------------- guarded tables


@pytest.mark.parametrize("table", GUARDED_TABLES)
def test_guarded_table_refuses_delete_and_truncate(
    engine: Engine, ledger: dict[str, Any], table: str
) -> None:
    # Given a ledger in which the table holds rows
    before = _count(engine, table)
    assert before > 0
    for operation, sql in (("DELETE", f"DELETE FROM {table}"), ("TRUNCATE", f"TRUNCATE {table} CASCADE")):
        # When its rows are deleted or truncated
        with pytest.raises(ImmutableRow) as refused, unit_of_work(engine) as conn:
            conn.execute(text(sql))
        # Then a trigger refuses it
        assert f"{operation} on {table} is refused" in str(refused.value)
    assert _count(engine, table) == before


def test_agent_run_operational_columns_can_be_updated(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    # Given a run
    run = fresh_ledger["run_a"]
    # When a worker claims it: status, lease and attempt change
    with unit_of_work(engine) as conn:
        conn.execute(
            text(
                "UPDATE agent_runs SET status = 'running', lease_owner = 'worker-1', "
                "lease_expires_at = now() + interval '1 minute', attempt = attempt + 1, started_at = now() "
                "WHERE id = :id"
            ),
            {"id": run},
        )
    # Then the row shows the new operational state
    with unit_of_work(engine) as conn:
        row = conn.execute(
            text("SELECT status, lease_owner, attempt FROM agent_runs WHERE id = :id"), {"id": run}
        ).one()
    assert tuple(row) == ("running", "worker-1", 1)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("model", "'openai/gpt'"),
        ("provider", "'openai'"),
        ("thread_id", "gen_random_uuid()"),
        ("round", "3"),
        (
            "executor",
            """'{"model": "anthropic/claude", "provider": "anthropic", "simulated": false}'::jsonb""",
        ),
    ],
)
def test_agent_run_identity_columns_cannot_be_updated(
    engine: Engine, fresh_ledger: dict[str, Any], column: str, value: str
) -> None:
    # Given a run
    # When a column outside the documented operational state is changed
    with pytest.raises(ImmutableRow, match="UPDATE on agent_runs is refused"), unit_of_work(engine) as conn:
        conn.execute(
            text(f"UPDATE agent_runs SET {column} = {value} WHERE id = :id"), {"id": fresh_ledger["run_a"]}
        )
    # Then the guard refuses it


# A different value of each column type, whatever the row holds (NULL included).
_CHANGED = {
    "uuid": "gen_random_uuid()",
    "text": "coalesce({c}, '') || 'x'",
    "integer": "coalesce({c}, 0) + 1",
    "smallint": "coalesce({c}, 0) + 1",
    "boolean": "NOT coalesce({c}, false)",
    "numeric": "coalesce({c}, 0) + 1",
    "timestamp with time zone": "coalesce({c}, now()) + interval '1 second'",
    "jsonb": "'{{\"changed\": true}}'::jsonb",
}


# A run's operational state (council_run_moves_forward_v1 keeps a finished run's), and the
# columns the run guard lets be set once, from NULL.
RUN_FREE = {
    "status",
    "attempt",
    "lease_owner",
    "lease_expires_at",
    "usage",
    "cost_usd",
    "error",
    "lint_findings",
    "started_at",
    "finished_at",
}
RUN_WRITE_ONCE = {"request_sha256", "input_fingerprint", "request"}


@pytest.mark.parametrize("table", ["agent_runs", "cascade_continuations"])
def test_every_column_the_guard_does_not_name_is_refused(
    engine: Engine, fresh_ledger: dict[str, Any], table: str
) -> None:
    # Given a row of a table guarded by council_guard_update_v3 (revision 0016) or the run
    # guard (revision 0038), and the columns its trigger lets change, read from the catalog
    with unit_of_work(engine) as conn:
        if table == "cascade_continuations":
            conn.execute(
                text("INSERT INTO cascade_continuations (pending, actor) VALUES ('[[\"x\", 1]]', 't')")
            )
        function, args = conn.execute(
            text(
                "SELECT p.proname, encode(t.tgargs, 'escape') FROM pg_trigger t "
                "JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = CAST(:t AS regclass) "
                "AND t.tgname = :t || '_guard'"
            ),
            {"t": table},
        ).one()
        columns = conn.execute(
            text(
                "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                "WHERE attrelid = CAST(:t AS regclass) AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
            ),
            {"t": table},
        ).all()
        protected = set(
            conn.execute(
                text(
                    "SELECT a.attname FROM pg_trigger t JOIN pg_attribute a "
                    "ON a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr) "
                    "WHERE t.tgrelid = CAST(:t AS regclass) AND t.tgname = :t || '_guard'"
                ),
                {"t": table},
            ).scalars()
        )
    if table == "agent_runs":
        # The run guard (revision 0038) fires only on an UPDATE naming a column it protects:
        # every column is protected or free to change, none left out
        assert function == "council_guard_agent_runs_v1"
        assert {column for column, _ in columns} == protected | RUN_FREE and not protected & RUN_FREE
        unnamed = [(column, kind) for column, kind in columns if column in protected - RUN_WRITE_ONCE]
    else:
        named = {arg.removeprefix("once:") for arg in args.split("\\000") if arg}
        assert function == "council_guard_update_v3" and not protected  # fires on every update
        unnamed = [(column, kind) for column, kind in columns if column not in named]
    assert len(unnamed) >= 3  # its identity: id, created_at and more
    for column, kind in unnamed:
        # When any of the others is changed
        changed = _CHANGED[kind].format(c=column)
        with pytest.raises(ImmutableRow, match=f"UPDATE on {table} is refused"), unit_of_work(engine) as conn:
            conn.execute(text(f"UPDATE {table} SET {column} = {changed}"))
        # Then the guard refuses it


def test_a_pinned_executor_agrees_with_the_run_and_never_changes(
    engine: Engine, fresh_ledger: dict[str, Any]
) -> None:
    insert = text(
        "INSERT INTO agent_runs (thread_id, agent, model, provider, simulated, round, mode, status, "
        "executor) VALUES (:t, 'claude', :model, 'anthropic', :sim, 1, 'independent', 'created', "
        "CAST(:executor AS jsonb)) RETURNING id"
    )
    pinned = {"profile": "claude", "model": "council-sim/claude", "provider": "anthropic", "simulated": True}
    # Given a run inserted with the executor it was pinned to
    with unit_of_work(engine) as conn:
        run = conn.execute(
            insert,
            {
                "t": fresh_ledger["thread"],
                "model": "council-sim/claude",
                "sim": True,
                "executor": json.dumps(pinned),
            },
        ).scalar_one()
    # When the executor is changed afterwards, the guard refuses it
    with pytest.raises(ImmutableRow, match="UPDATE on agent_runs is refused"), unit_of_work(engine) as conn:
        conn.execute(
            text(
                "UPDATE agent_runs SET executor = jsonb_set(executor, '{simulated}', 'false') WHERE id = :id"
            ),
            {"id": run},
        )
    # And a run whose model or simulated flag disagrees with its executor cannot be inserted
    for model, sim in (("anthropic/claude-sonnet-4-6", True), ("council-sim/claude", False)):
        with pytest.raises(BadInput, match="agent_runs_executor_pinned"), unit_of_work(engine) as conn:
            conn.execute(
                insert,
                {"t": fresh_ledger["thread"], "model": model, "sim": sim, "executor": json.dumps(pinned)},
            )


def test_request_hash_is_write_once(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    run = fresh_ledger["run_a"]
    update = text("UPDATE agent_runs SET request_sha256 = :sha, request = CAST(:req AS jsonb) WHERE id = :id")
    request = '{"model": "m", "messages": [], "params": {}}'
    # Given a run whose request and hash are not yet recorded
    # When they are recorded
    with unit_of_work(engine) as conn:
        conn.execute(update, {"sha": _sha("request"), "req": request, "id": run})
    # Then they are stored, and recording the same values again is harmless
    with unit_of_work(engine) as conn:
        conn.execute(update, {"sha": _sha("request"), "req": request, "id": run})
    # But changing or clearing the hash is refused
    for new in (_sha("another request"), None):
        with pytest.raises(ImmutableRow, match="request_sha256 is write-once"), unit_of_work(engine) as conn:
            conn.execute(update, {"sha": new, "req": request, "id": run})
    # And so is changing the stored request
    with pytest.raises(ImmutableRow, match="request is write-once"), unit_of_work(engine) as conn:
        conn.execute(update, {"sha": _sha("request"), "req": '{"model": "other"}', "id": run})
    # And a hash without its request (or the reverse) violates the pairing constraint
    with pytest.raises(BadInput), unit_of_work(engine) as conn:
        conn.execute(
            text("UPDATE agent_runs SET request_sha256 = :sha WHERE id = :id"),
            {"sha": _sha("x"), "id": fresh_ledger["run_b"]},
        )
    with unit_of_work(engine) as conn:
        stored = conn.execute(
            text("SELECT request_sha256 FROM agent_runs WHERE id = :id"), {"id": run}
        ).scalar()
    assert stored == _sha("request")


@pytest.mark.parametrize("step", TRANSITIONS, ids=lambda step: step.table)
def test_status_moves_only_by_appending_a_current_transition(
    engine: Engine, fresh_ledger: dict[str, Any], step: Transition
) -> None:
    # Given a row in its initial status
    # When its status is updated in place, without a history row
    with pytest.raises(ImmutableRow, match="changes only by appending"), unit_of_work(engine) as conn:
        conn.execute(
            text(f"UPDATE {step.parent} SET {step.column} = :end WHERE id = :id"),
            {"end": step.end, "id": fresh_ledger[step.key]},
        )
    # Then it is refused and the status is unchanged
    with unit_of_work(engine) as conn:
        assert _current(conn, step, fresh_ledger)[0] == step.start

    # When a transition from the current status is appended
    with unit_of_work(engine) as conn:
        transition = _append(conn, step, fresh_ledger)
        stamp = conn.execute(
            text(f"SELECT created_at FROM {step.table} WHERE id = :id"), {"id": transition}
        ).scalar_one()
    # Then the status and its timestamp follow the transition
    with unit_of_work(engine) as conn:
        assert _current(conn, step, fresh_ledger) == (step.end, stamp)

    # When another writer appends a transition that still starts from the old status
    with pytest.raises(Conflict, match="stale transition"), unit_of_work(engine) as conn:
        _append(conn, step, fresh_ledger, start=step.start)
    # Then it is refused, nothing of it is kept, and the status is where the first writer left it
    assert _count(engine, step.table) == 1
    with unit_of_work(engine) as conn:
        assert _current(conn, step, fresh_ledger) == (step.end, stamp)


def test_node_version_state_cannot_be_inserted_directly(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    # Given a node version (whose state row the version trigger wrote)
    # When a state row is inserted by hand
    with pytest.raises(ImmutableRow, match="written only by triggers"), unit_of_work(engine) as conn:
        conn.execute(
            text(
                "INSERT INTO node_version_states (id, status, status_changed_at) "
                "VALUES (gen_random_uuid(), 'resolved', now())"
            )
        )
    # Then it is refused


def test_new_version_moves_the_logical_node_head(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    ids = fresh_ledger
    # Given a logical node whose head is version 1
    with unit_of_work(engine) as conn:
        head = conn.execute(
            text("SELECT head_version_id, head_version_no FROM logical_nodes WHERE id = :id"),
            {"id": ids["node"]},
        ).one()
    assert tuple(head) == (ids["v1"], 1)
    # When version 2 is inserted
    content = "SQLite parity is sufficient for read-mostly workloads."
    with unit_of_work(engine) as conn:
        v2 = _insert(
            conn,
            "INSERT INTO node_versions (logical_node_id, thread_id, branch_id, version_no, "
            "parent_version_id, content, content_sha256, initial_status) "
            "VALUES (:n, :t, :b, 2, :v1, :c, :sha, 'tentative')",
            {
                "n": ids["node"],
                "t": ids["thread"],
                "b": ids["main"],
                "v1": ids["v1"],
                "c": content,
                "sha": _sha(content),
            },
        )
    # Then the head is version 2, which has its own state row, and version 1 is untouched
    with unit_of_work(engine) as conn:
        head = conn.execute(
            text("SELECT head_version_id, head_version_no FROM logical_nodes WHERE id = :id"),
            {"id": ids["node"]},
        ).one()
        states = dict(
            conn.execute(
                text("SELECT id, status FROM node_version_states WHERE id IN (:v1, :v2)"),
                {"v1": ids["v1"], "v2": v2},
            ).all()
        )
    assert tuple(head) == (v2, 2)
    assert states == {ids["v1"]: "open", v2: "tentative"}


def test_head_cannot_be_moved_by_hand(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    # Given a logical node and a version of another node
    # When its head is pointed elsewhere directly
    with (
        pytest.raises(ImmutableRow, match="head_version_id changes only by appending"),
        unit_of_work(engine) as conn,
    ):
        conn.execute(
            text("UPDATE logical_nodes SET head_version_id = :v WHERE id = :id"),
            {"v": fresh_ledger["v12"], "id": fresh_ledger["node"]},
        )
    # Then it is refused


# -------------------------------------------------------- one live consolidation


def test_only_one_live_consolidation_per_logical_node(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    ids = fresh_ledger
    params = {"t": ids["thread"], "n": ids["node"], "v": ids["v1"], "sha": _sha("another snapshot")}
    # Given a logical node with a live consolidation
    # When a second live consolidation of it is inserted (another snapshot of the same version)
    with pytest.raises(Conflict, match="consolidations_one_live_per_node"), unit_of_work(engine) as conn:
        _insert(conn, CONSOLIDATION_SQL, params)
    # Then the partial unique index refuses it
    # But once the first is superseded, a new live one is accepted
    with unit_of_work(engine) as conn:
        _append(conn, SUPERSEDE_CONSOLIDATION, ids)
        _insert(conn, CONSOLIDATION_SQL, params)
    with unit_of_work(engine) as conn:
        statuses = conn.execute(
            text("SELECT status FROM consolidations WHERE logical_node_id = :n"),
            {"n": ids["node"]},
        ).scalars()
        assert sorted(statuses) == ["live", "superseded"]


# ----------------------------------------------------------------------- events


def test_an_event_records_its_transaction_and_its_commit_notifies_nobody(
    db_url: str, engine: Engine, fresh_ledger: dict[str, Any]
) -> None:
    # Given a listener on the channel events were announced on before revision 0015
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute("LISTEN council_events")
        # When an event is committed
        with unit_of_work(engine) as conn:
            event_id = _insert(
                conn,
                "INSERT INTO events (thread_id, kind, actor, payload) "
                "VALUES (:t, 'thread.created', 'tester', CAST(:p AS jsonb))",
                {"t": fresh_ledger["thread"], "p": json.dumps(THREAD_CREATED)},
            )
            writer = conn.execute(text("SELECT CAST(pg_current_xact_id() AS text)")).scalar_one()
        # Then the row holds the id of the transaction that inserted it
        with unit_of_work(engine) as conn:
            stored = conn.execute(
                text("SELECT CAST(tx AS text) FROM events WHERE id = :id"), {"id": event_id}
            ).scalar_one()
        assert stored == writer
        # And nothing was sent: writers hold no notify-queue lock at commit
        assert list(listener.notifies(timeout=1, stop_after=1)) == []


@pytest.mark.slow
def test_event_log_keeps_every_row_of_a_large_append(engine: Engine, fresh_ledger: dict[str, Any]) -> None:
    n = 200_000
    before = _count(engine, "events")
    # Given a thread
    # When 200,000 events are appended in one statement
    with unit_of_work(engine) as conn:
        conn.execute(
            text(
                "INSERT INTO events (thread_id, kind, actor, payload) "
                "SELECT :t, 'rule_set.pinned', 'tester', jsonb_build_object('n', g) "
                "FROM generate_series(1, :n) AS g"
            ),
            {"t": fresh_ledger["thread"], "n": n},
        )
    # Then every one of them is there, exactly once
    with unit_of_work(engine) as conn:
        count, distinct, total = conn.execute(
            text(
                "SELECT count(*), count(DISTINCT payload ->> 'n'), sum((payload ->> 'n')::bigint) "
                "FROM events WHERE kind = 'rule_set.pinned' AND actor = 'tester'"
            )
        ).one()
    assert (count, distinct, total) == (n, n, n * (n + 1) // 2)
    assert _count(engine, "events") == before + n
    # And the log can be neither trimmed nor truncated
    for operation, sql in (
        ("DELETE", "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT 1000)"),
        ("TRUNCATE", "TRUNCATE events"),
    ):
        with (
            pytest.raises(ImmutableRow, match=f"{operation} on events is refused"),
            unit_of_work(engine) as conn,
        ):
            conn.execute(text(sql))
    assert _count(engine, "events") == before + n
