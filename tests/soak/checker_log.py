"""The checker's reading of the event log and of transactions (see checker.py).

e  exactly one event per recorded fact, in the fact's transaction; no event without
   its fact (event_without_fact); gapless evaluation chains
f  nothing written outside its transaction (output without a request, partial commits)
g  acknowledged client writes survived (durability)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.rows import dict_row

Anomaly = dict[str, Any]


def _a(inv: str, kind: str, detail: str, ids: Iterable[Any] = ()) -> Anomaly:
    return {"inv": inv, "kind": kind, "detail": detail, "ids": [str(i) for i in ids]}


def _rows(conn: psycopg.Connection[Any], sql: str, **params: Any) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        return list(cur.fetchall())


def _check_events(
    conn: psycopg.Connection[Any], threads: list[str], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    t = threads
    stats["events"] = _rows(
        conn, "SELECT count(*) AS n FROM events WHERE thread_id = ANY(%(t)s::uuid[])", t=t
    )[0]["n"]
    for r in _rows(
        conn, "SELECT count(*) AS n FROM events WHERE thread_id = ANY(%(t)s::uuid[]) AND tx IS NULL", t=t
    ):
        if r["n"]:
            out.append(_a("e", "event_without_tx", f"{r['n']} event(s) with no tx"))
    # run.started: exactly one per run that stored a request, in the tx that stored its exposures
    for r in _rows(
        conn,
        "SELECT a.id, a.request_sha256, "
        "(SELECT count(*) FROM events e WHERE e.kind = 'run.started' AND e.subject_id = a.id::text) AS n, "
        "(SELECT e.payload->>'request_sha256' FROM events e WHERE e.kind = 'run.started' AND "
        "e.subject_id = a.id::text LIMIT 1) AS h, "
        "(SELECT (e.payload->>'exposures')::int FROM events e WHERE e.kind = 'run.started' AND "
        "e.subject_id = a.id::text LIMIT 1) AS nexp, "
        "(SELECT count(*) FROM run_exposures x WHERE x.run_id = a.id) AS exposures "
        "FROM agent_runs a WHERE a.thread_id = ANY(%(t)s::uuid[]) AND a.dispatch_id IS NOT NULL",
        t=t,
    ):
        want = 1 if r["request_sha256"] else 0
        if r["n"] != want or (want and (r["h"] != r["request_sha256"] or r["nexp"] != r["exposures"])):
            out.append(
                _a(
                    "e",
                    "run_started_event_mismatch",
                    f"run {r['id']}: {r['n']} run.started event(s) for {'a' if want else 'no'} stored "
                    "request; "
                    f"event hash {r['h']}, exposures {r['nexp']} vs {r['exposures']} stored",
                    [r["id"]],
                )
            )
    # run.<status>: exactly one per terminal worker run, of its final attempt, in the tx that ended it
    for r in _rows(
        conn,
        "SELECT a.id, a.status, a.attempt, "
        "(SELECT count(*) FROM events e WHERE e.subject_id = a.id::text AND e.kind IN "
        "('run.succeeded','run.failed')) AS n, "
        "(SELECT string_agg(e.kind || '@' || coalesce(e.payload->>'attempt','?'), ',') FROM events e "
        " WHERE e.subject_id = a.id::text AND e.kind IN ('run.succeeded','run.failed')) AS seen, "
        "(SELECT bool_and(e.tx::text = ra.xmin::text) FROM events e, run_attempts ra WHERE e.subject_id "
        "= a.id::text "
        " AND e.kind IN ('run.succeeded','run.failed') AND ra.run_id = a.id AND ra.attempt = a.attempt "
        "AND ra.event = 'ended') AS same_tx "
        "FROM agent_runs a WHERE a.thread_id = ANY(%(t)s::uuid[]) AND a.dispatch_id IS NOT NULL "
        "AND a.status IN ('succeeded','failed')",
        t=t,
    ):
        if r["n"] != 1 or r["seen"] != f"run.{r['status']}@{r['attempt']}" or not r["same_tx"]:
            out.append(
                _a(
                    "e",
                    "run_end_event_mismatch",
                    f"run {r['id']} {r['status']} at attempt {r['attempt']}: events {r['seen']}, same "
                    f"tx {r['same_tx']}",
                    [r["id"]],
                )
            )
    # claim.added: exactly one per claim, in the claim's tx (an originate claim: the node.created
    # event of the version it originates, in its tx)
    for r in _rows(
        conn,
        "SELECT c.id, c.claim_type, "
        "(SELECT count(*) FROM events e WHERE CASE WHEN c.claim_type = 'originate' "
        " THEN e.kind = 'node.created' AND e.subject_id = c.node_version_id::text "
        " ELSE e.kind = 'claim.added' AND e.subject_id = c.id::text END) AS n, "
        "(SELECT bool_and(e.tx::text = c.xmin::text) FROM events e WHERE CASE WHEN c.claim_type = "
        "'originate' "
        " THEN e.kind = 'node.created' AND e.subject_id = c.node_version_id::text "
        " ELSE e.kind = 'claim.added' AND e.subject_id = c.id::text END) AS same "
        "FROM claims c JOIN agent_runs a ON a.id = c.run_id WHERE a.thread_id = ANY(%(t)s::uuid[])",
        t=t,
    ):
        if r["n"] != 1 or not r["same"]:
            out.append(
                _a(
                    "e",
                    "claim_event_mismatch",
                    f"{r['claim_type']} claim {r['id']}: {r['n']} event(s), same tx {r['same']}",
                    [r["id"]],
                )
            )
    # consolidation.committed: exactly one per consolidation, in its tx (the tx of its 'resolved'
    # transition: consolidation rows are updated by later status changes, their xmin moves)
    for r in _rows(
        conn,
        "SELECT c.id, (SELECT count(*) FROM events e WHERE e.kind = 'consolidation.committed' AND "
        "e.subject_id = c.id::text) AS n, "
        "(SELECT bool_and(e.tx::text = n.xmin::text) FROM events e, node_status_transitions n "
        " WHERE e.kind = 'consolidation.committed' AND e.subject_id = c.id::text "
        " AND n.consolidation_id = c.id AND n.to_status = 'resolved') AS same "
        "FROM consolidations c WHERE c.thread_id = ANY(%(t)s::uuid[])",
        t=t,
    ):
        if r["n"] != 1 or not r["same"]:
            out.append(
                _a(
                    "e",
                    "commit_event_mismatch",
                    f"consolidation {r['id']}: {r['n']} consolidation.committed event(s), same tx "
                    f"{r['same']}",
                    [r["id"]],
                )
            )
    # consolidation.not_ready: exactly one per recorded evaluation, in its tx
    for r in _rows(
        conn,
        "SELECT v.id, (SELECT count(*) FROM events e WHERE e.kind = 'consolidation.not_ready' "
        " AND e.payload->>'evaluation_id' = v.id::text) AS n, "
        "(SELECT bool_and(e.tx::text = ce.xmin::text) FROM events e, consolidation_evaluations ce WHERE "
        "ce.id = v.id "
        " AND e.kind = 'consolidation.not_ready' AND e.payload->>'evaluation_id' = v.id::text) AS same "
        "FROM council_v_evaluations v WHERE v.thread_id = ANY(%(t)s::uuid[])",
        t=t,
    ):
        if r["n"] != 1 or not r["same"]:
            out.append(
                _a(
                    "e",
                    "evaluation_event_mismatch",
                    f"evaluation {r['id']}: {r['n']} consolidation.not_ready event(s), same tx {r['same']}",
                    [r["id"]],
                )
            )
    # evaluation chains: seq gapless from 0 per version
    # (docs/guide/independence-and-consolidation.md: "gapless per version")
    for r in _rows(
        conn,
        "SELECT ce.node_version_id, min(ce.seq) AS lo, max(ce.seq) AS hi, count(*) AS n FROM "
        "consolidation_evaluations ce "
        "JOIN node_versions nv ON nv.id = ce.node_version_id WHERE ce.seq IS NOT NULL AND nv.thread_id "
        "= ANY(%(t)s::uuid[]) "
        "GROUP BY 1",
        t=t,
    ):
        if r["lo"] != 0 or r["n"] != r["hi"] - r["lo"] + 1:
            out.append(
                _a(
                    "e",
                    "evaluation_chain_gap",
                    f"version {r['node_version_id']}: seq {r['lo']}..{r['hi']} with {r['n']} row(s)",
                    [r["node_version_id"]],
                )
            )
    _check_event_facts(conn, t, out, stats)
    stats["evaluations"] = _rows(
        conn, "SELECT count(*) AS n FROM council_v_evaluations WHERE thread_id = ANY(%(t)s::uuid[])", t=t
    )[0]["n"]
    # every transition row has an event of the same transaction about it
    transitions = {
        "evidence": (
            "SELECT tr.id, tr.evidence_id AS subj, tr.to_status, tr.xmin::text AS x FROM "
            "evidence_transitions tr "
            "JOIN thread_evidence te ON te.evidence_id = tr.evidence_id AND te.thread_id = ANY(%(t)s::uuid[])"
        ),
        "memory": (
            "SELECT tr.id, tr.memory_item_id AS subj, tr.to_status, tr.xmin::text AS x FROM "
            "memory_transitions tr "
            "JOIN memory_items m ON m.id = tr.memory_item_id AND m.thread_id = ANY(%(t)s::uuid[])"
        ),
        "consolidation": (
            "SELECT tr.id, tr.consolidation_id AS subj, tr.to_status, tr.xmin::text AS x FROM "
            "consolidation_transitions tr "
            "JOIN consolidations c ON c.id = tr.consolidation_id AND c.thread_id = ANY(%(t)s::uuid[])"
        ),
        "proposal": (
            "SELECT tr.id, tr.proposal_id AS subj, tr.to_status, tr.xmin::text AS x FROM "
            "retraction_proposal_transitions tr "
            "JOIN retraction_proposals p ON p.id = tr.proposal_id AND p.thread_id = ANY(%(t)s::uuid[])"
        ),
    }
    for what, sql in transitions.items():
        try:
            rows = _rows(
                conn,
                f"WITH tr AS ({sql}) SELECT tr.id, tr.subj, tr.to_status, "
                "(SELECT count(*) FROM events e WHERE e.tx::text = tr.x AND (e.subject_id = tr.subj::text "
                " OR e.payload ? 'memory_item_id' AND e.payload->>'memory_item_id' = tr.subj::text "
                " OR e.payload->>'consolidation_id' = tr.subj::text)) AS n FROM tr",
                t=t,
            )
        except psycopg.Error as exc:  # a column name this checker guessed wrong: report, do not crash
            conn.rollback()
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            out.append(_a("e", "checker_error", f"{what} transitions: {exc}".splitlines()[0]))
            continue
        for r in rows:
            if r["n"] == 0:
                out.append(
                    _a(
                        "e",
                        "transition_without_event",
                        f"{what} {r['subj']} → {r['to_status']} (transition {r['id']}) has no event in "
                        "its transaction",
                        [r["subj"]],
                    )
                )


def _check_atomicity(
    conn: psycopg.Connection[Any], threads: list[str], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    from council.domain.canonical import canonical_sha256

    t = threads
    for r in _rows(
        conn,
        "SELECT a.id, a.status FROM agent_runs a WHERE a.thread_id = ANY(%(t)s::uuid[]) AND "
        "a.dispatch_id IS NOT NULL "
        "AND a.request_sha256 IS NULL AND (a.status = 'succeeded' OR EXISTS (SELECT 1 FROM claims c "
        "WHERE c.run_id = a.id))",
        t=t,
    ):
        out.append(
            _a(
                "f",
                "output_without_request",
                f"run {r['id']} ({r['status']}) has output but no stored request",
                [r["id"]],
            )
        )
    for r in _rows(
        conn,
        "SELECT a.id, a.request, a.request_sha256 FROM agent_runs a WHERE a.thread_id = ANY(%(t)s::uuid[]) "
        "AND a.request IS NOT NULL",
        t=t,
    ):
        if canonical_sha256(r["request"]) != r["request_sha256"]:
            out.append(
                _a(
                    "f",
                    "request_hash_mismatch",
                    f"run {r['id']}: stored request does not hash to its request_sha256",
                    [r["id"]],
                )
            )
    for r in _rows(
        conn,
        "SELECT x.run_id, count(DISTINCT x.xmin::text) AS txs FROM run_exposures x JOIN agent_runs a ON "
        "a.id = x.run_id "
        "WHERE a.thread_id = ANY(%(t)s::uuid[]) AND a.dispatch_id IS NOT NULL GROUP BY 1 HAVING "
        "count(DISTINCT x.xmin::text) > 1",
        t=t,
    ):
        out.append(
            _a(
                "f",
                "exposures_split",
                f"run {r['run_id']}: exposures written by {r['txs']} transactions",
                [r["run_id"]],
            )
        )
    # a commit writes consolidation, evidence index, memory item, resolved transition and event together
    # (consolidation and memory rows are updated later, so the commit's tx is its event's)
    for r in _rows(
        conn,
        "WITH c AS (SELECT c.*, (SELECT e.tx::text FROM events e WHERE e.kind = 'consolidation.committed' "
        " AND e.subject_id = c.id::text LIMIT 1) AS x FROM consolidations c WHERE c.thread_id = "
        "ANY(%(t)s::uuid[])) "
        "SELECT c.id, c.x, "
        "(SELECT count(*) FROM memory_items m JOIN events e ON e.kind = 'consolidation.committed' AND "
        "e.subject_id = c.id::text "
        " AND e.payload->>'memory_item_id' = m.id::text WHERE m.consolidation_id = c.id) AS mem, "
        "(SELECT count(*) FROM node_status_transitions n WHERE n.consolidation_id = c.id AND "
        "n.to_status = 'resolved' "
        " AND n.xmin::text = c.x) AS resolved, "
        "(SELECT count(*) FROM consolidation_evidence ce WHERE ce.consolidation_id = c.id AND "
        "ce.xmin::text <> c.x) AS late_index, "
        "(SELECT count(DISTINCT ev->>'id') FROM jsonb_array_elements(c.snapshot->'evidence') ev) AS "
        "snap_evidence, "
        "(SELECT count(*) FROM consolidation_evidence ce WHERE ce.consolidation_id = c.id) AS indexed "
        "FROM c",
        t=t,
    ):
        if r["mem"] != 1 or r["resolved"] != 1 or r["late_index"]:
            out.append(
                _a(
                    "f",
                    "partial_commit",
                    f"consolidation {r['id']}: memory {r['mem']}, resolved transition {r['resolved']}, "
                    f"index rows from another tx {r['late_index']} (same tx expected)",
                    [r["id"]],
                )
            )
        if r["indexed"] == 0 and r["snap_evidence"]:
            out.append(
                _a(
                    "f",
                    "evidence_index_missing",
                    f"consolidation {r['id']}: snapshot names {r['snap_evidence']} evidence item(s), "
                    "index none",
                    [r["id"]],
                )
            )


def _check_acked(
    conn: psycopg.Connection[Any], acked: list[dict[str, Any]], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    """Every write the client saw acknowledged is in the ledger (durability across restarts)."""
    tables = {
        "thread": "threads",
        "evidence": "evidence",
        "node": "node_versions",
        "dispatch": "dispatches",
        "consolidation": "consolidations",
        "run": "agent_runs",
        "proposal": "retraction_proposals",
    }
    n = 0
    for op in acked:
        for kind, ident in op.get("ids", []):
            n += 1
            table = tables[kind]
            if not _rows(conn, f"SELECT 1 FROM {table} WHERE id = %(i)s::uuid", i=ident):
                out.append(
                    _a(
                        "g",
                        "acknowledged_write_lost",
                        f"{op['op']} at {op['t']:.1f}s returned {kind} {ident}; it is not in the ledger",
                        [ident],
                    )
                )
        if op.get("invalidated"):
            n += 1
            if not _rows(
                conn,
                "SELECT 1 FROM evidence_transitions WHERE evidence_id = %(i)s::uuid AND to_status = "
                "'invalidated'",
                i=op["invalidated"],
            ):
                out.append(
                    _a(
                        "g",
                        "acknowledged_write_lost",
                        f"invalidation of {op['invalidated']} was acknowledged; no such transition",
                        [op["invalidated"]],
                    )
                )
    stats["acked_ids_checked"] = n


# an event kind: the fact it announces, a row inserted by the event's own transaction
# (%(t)s: the threads; e: the event). Kinds not named here are counted, not checked.
EVENT_FACTS = {
    "run.started": "SELECT 1 FROM agent_runs a WHERE a.id::text = e.subject_id AND a.request_sha256 IS "
    "NOT NULL "
    "AND a.request_sha256 = e.payload->>'request_sha256'",
    "run.succeeded": "SELECT 1 FROM run_attempts ra JOIN agent_runs a ON a.id = ra.run_id "
    "WHERE ra.run_id::text = e.subject_id AND ra.event = 'ended' AND ra.status = 'succeeded' "
    "AND a.status = 'succeeded' AND ra.xmin::text = e.tx::text",
    "run.failed": "SELECT 1 FROM run_attempts ra JOIN agent_runs a ON a.id = ra.run_id "
    "WHERE ra.run_id::text = e.subject_id AND ra.event = 'ended' AND ra.status = 'failed' "
    "AND a.status = 'failed' AND ra.xmin::text = e.tx::text",
    "claim.added": "SELECT 1 FROM claims c WHERE c.id::text = e.subject_id AND c.xmin::text = e.tx::text",
    "node.created": "SELECT 1 FROM node_versions v WHERE v.id::text = e.subject_id AND v.xmin::text = "
    "e.tx::text",
    "consolidation.committed": "SELECT 1 FROM consolidations c JOIN node_status_transitions n "
    "ON n.consolidation_id = c.id AND n.to_status = 'resolved' "
    "WHERE c.id::text = e.subject_id AND n.xmin::text = e.tx::text",
    "consolidation.not_ready": "SELECT 1 FROM consolidation_evaluations ce "
    "WHERE ce.id::text = e.payload->>'evaluation_id' AND ce.xmin::text = e.tx::text",
    "dispatch.created": "SELECT 1 FROM dispatches d WHERE d.id::text = e.subject_id AND d.xmin::text = "
    "e.tx::text",
    "evidence.added": "SELECT 1 FROM evidence v WHERE v.id::text = e.subject_id",
}


def _check_event_facts(
    conn: psycopg.Connection[Any], threads: list[str], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    """No event without its fact: each event of a checked kind has the row it announces,
    written by the event's own transaction (an event a rolled-back or fenced-out write left
    behind, or one written twice by a retry, would have none)."""
    for kind, fact in EVENT_FACTS.items():
        for r in _rows(
            conn,
            "SELECT e.id, e.subject_id FROM events e WHERE e.thread_id = ANY(%(t)s::uuid[]) AND e.kind "
            "= %(k)s "
            f"AND NOT EXISTS ({fact})",
            t=threads,
            k=kind,
        ):
            out.append(
                _a(
                    "e",
                    "event_without_fact",
                    f"{kind} event {r['id']} (subject {r['subject_id']}): no such fact in its transaction",
                    [r["id"], r["subject_id"]],
                )
            )
    rest = _rows(
        conn,
        "SELECT kind, count(*) AS n FROM events WHERE thread_id = ANY(%(t)s::uuid[]) "
        "AND NOT kind = ANY(%(k)s::text[]) GROUP BY 1",
        t=threads,
        k=list(EVENT_FACTS),
    )
    stats["event_kinds_unchecked"] = {r["kind"]: r["n"] for r in rest}
