"""The soak's checker: the invariants of Council over what the ledger recorded, after the heal.

Brought in from the fault campaign of issue 31 (../shared/tools/nemesis/checker.py).

Reads the ledger as its owner (psycopg, plain SQL over the schema, the named
queries of the project's sweep), and calls the project's own services for what
is decided by code: the dry-run committer (is a head ready by the rules?) and
replay (does every decision rebuild to the same hash and decision?). Nothing
here writes, except `probe_adjudications`, which the caller runs last.

Same-transaction checks use the system column xmin (the inserting transaction
of a row; Council takes no savepoints) against events.tx and run_attempts:
a claim written by attempt k of a run has the xmin of that attempt's `ended`
row only if it was written in the transaction that ended attempt k.

Each anomaly: {"inv": "a".."g", "kind": short name, "detail": text, "ids": [...]}
  a  every dispatched run ended (succeeded, or failed with a reason) within a bound of its
     dispatch or of the heal (no lost run); attempts well-formed
  b  no duplicate claim; no output from an attempt other than the one that ended the run succeeded
  c  at most one live consolidation per node (and per version); every ready head consolidated;
     no claim that no evaluation saw (a lost evaluation)
  d  every consolidation and recorded evaluation replays to the same hash and decision
  e  the event log: exactly one event per recorded fact, in the fact's transaction; gapless chains
  f  nothing written outside its transaction (claims without a request, partial commits, hash mismatch)
  g  acknowledged client writes survived (durability)
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import psycopg

from tests.soak.checker_log import Anomaly, _a, _check_acked, _check_atomicity, _check_events, _rows
from tests.soak.checker_services import _check_by_services, _check_cli_replay


# ----------------------------------------------------------------------------- work left
def work_left(owner_url: str, threads: list[str]) -> list[str]:
    """What the system still has to do for these threads (empty: quiescent)."""
    from council.sql import driver_sql

    left: list[str] = []
    with psycopg.connect(owner_url, connect_timeout=5) as conn:
        conn.execute("SET statement_timeout = '20s'")
        for r in _rows(
            conn,
            "SELECT status, count(*) AS n FROM agent_runs WHERE thread_id = ANY(%(t)s::uuid[]) "
            "AND status NOT IN ('succeeded','failed') GROUP BY 1",
            t=threads,
        ):
            left.append(f"{r['n']} run(s) {r['status']}")
        unseen = _rows(conn, driver_sql("unevaluated_versions"), settle_s=0, limit=10000)
        mine = _thread_versions(conn, threads, [r["id"] for r in unseen])
        if mine:
            left.append(f"{len(mine)} version(s) with claims no evaluation saw")
        cont = _rows(conn, driver_sql("unfinished_continuations"), settle_s=0, limit=10000)
        if cont:
            left.append(f"{len(cont)} cascade continuation(s) not continued")
        stalled = _rows(conn, driver_sql("stalled_dispatches"), settle_s=0, limit=10000)
        stalled = [s for s in stalled if _dispatch_in(conn, s["dispatch_id"], threads)]
        if stalled:
            left.append(f"{len(stalled)} dispatch(es) whose next round is due")
        unre = _rows(conn, driver_sql("unreassessed_consolidations"), settle_s=0, limit=10000)
        unre = (
            [u for u in unre if str(u.get("thread_id")) in threads]
            if unre and "thread_id" in unre[0]
            else unre
        )
        if unre:
            left.append(f"{len(unre)} consolidation(s) not reassessed after a validity change")
        unreviewed = _rows(
            conn,
            "SELECT p.id FROM retraction_proposals p WHERE p.status = 'open' AND p.thread_id = "
            "ANY(%(t)s::uuid[]) "
            "AND NOT EXISTS (SELECT 1 FROM dispatches d WHERE d.proposal_id = p.id)",
            t=threads,
        )
        if unreviewed:
            left.append(f"{len(unreviewed)} open proposal(s) without a review dispatch")
    return left


def _thread_versions(conn: psycopg.Connection[Any], threads: list[str], ids: list[Any]) -> list[str]:
    if not ids:
        return []
    return [
        str(r["id"])
        for r in _rows(
            conn,
            "SELECT id FROM node_versions WHERE id = ANY(%(ids)s::uuid[]) AND thread_id = ANY(%(t)s::uuid[])",
            ids=[str(i) for i in ids],
            t=threads,
        )
    ]


def _dispatch_in(conn: psycopg.Connection[Any], dispatch_id: Any, threads: list[str]) -> bool:
    return bool(
        _rows(
            conn,
            "SELECT 1 FROM dispatches WHERE id = %(d)s AND thread_id = ANY(%(t)s::uuid[])",
            d=str(dispatch_id),
            t=threads,
        )
    )


# ----------------------------------------------------------------------------- the checks
def check(
    owner_url: str,
    app_url: str,
    threads: list[str],
    acked: list[dict[str, Any]] | None = None,
    *,
    heal_at: datetime | None = None,
    run_bound_s: float = 120,
    env: dict[str, str] | None = None,
    cli_replays: int = 1,
) -> tuple[list[Anomaly], dict[str, Any]]:
    """All invariants over the given threads; (anomalies, statistics). A run must have ended
    within ``run_bound_s`` of its creation or of ``heal_at``, whichever is later."""
    out: list[Anomaly] = []
    stats: dict[str, Any] = {}
    with psycopg.connect(owner_url, connect_timeout=10) as conn:
        conn.execute("SET statement_timeout = '120s'")
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        _check_runs(conn, threads, out, stats, heal_at, run_bound_s)
        _check_claims(conn, threads, out, stats)
        _check_consolidations(conn, threads, out, stats)
        _check_events(conn, threads, out, stats)
        _check_atomicity(conn, threads, out, stats)
        if acked is not None:
            _check_acked(conn, acked, out, stats)
        consolidations = [
            r["id"]
            for r in _rows(
                conn,
                "SELECT id FROM consolidations WHERE thread_id = ANY(%(t)s::uuid[]) ORDER BY created_at",
                t=threads,
            )
        ]
        evaluations = [
            r["id"]
            for r in _rows(
                conn,
                "SELECT id FROM council_v_evaluations WHERE thread_id = ANY(%(t)s::uuid[]) ORDER BY "
                "created_at",
                t=threads,
            )
        ]
        heads = [
            r["id"]
            for r in _rows(
                conn,
                "SELECT s.id FROM node_version_states s JOIN node_versions nv ON nv.id = s.id "
                "JOIN logical_nodes ln ON ln.head_version_id = s.id "
                "WHERE s.status IN ('open','tentative') AND nv.thread_id = ANY(%(t)s::uuid[]) "
                "AND EXISTS (SELECT 1 FROM claims c WHERE c.node_version_id = s.id)",
                t=threads,
            )
        ]
        conn.rollback()
    _check_by_services(app_url, consolidations, evaluations, heads, out, stats)
    if env is not None and cli_replays:
        _check_cli_replay(env, [*consolidations[:cli_replays], *evaluations[-cli_replays:]], out, stats)
    return out, stats


def _check_runs(
    conn: psycopg.Connection[Any],
    threads: list[str],
    out: list[Anomaly],
    stats: dict[str, Any],
    heal_at: datetime | None,
    bound_s: float,
) -> None:
    runs = _rows(
        conn,
        "SELECT id, status, attempt, error, mode, dispatch_id, request_sha256, created_at, finished_at "
        "FROM agent_runs "
        "WHERE thread_id = ANY(%(t)s::uuid[]) AND dispatch_id IS NOT NULL",
        t=threads,
    )
    stats["runs"] = len(runs)
    stats["runs_by_status"] = _count(r["status"] for r in runs)
    stats["runs_attempts_gt1"] = sum(1 for r in runs if r["attempt"] > 1)
    failed = [r for r in runs if r["status"] == "failed"]
    stats["failure_reasons"] = _count(_reason_class(r["error"] or "") for r in failed)
    for r in runs:
        if r["status"] not in ("succeeded", "failed"):
            out.append(
                _a(
                    "a",
                    "run_not_ended",
                    f"run {r['id']} is {r['status']} (attempt {r['attempt']})",
                    [r["id"]],
                )
            )
        elif r["status"] == "failed" and not (r["error"] or "").strip():
            out.append(_a("a", "failed_without_reason", f"run {r['id']} failed with no reason", [r["id"]]))
        if r["finished_at"] is not None:
            start = max(r["created_at"], heal_at) if heal_at is not None else r["created_at"]
            late = (r["finished_at"] - start).total_seconds() - bound_s
            if late > 0:
                out.append(
                    _a(
                        "a",
                        "run_late",
                        f"run {r['id']} ended {late:.0f} s past the bound of {bound_s:.0f} s "
                        "from its dispatch or the heal",
                        [r["id"]],
                    )
                )
    finished = [r["finished_at"] for r in runs if r["finished_at"] is not None]
    stats["run_s_max"] = round(
        max(
            (
                (r["finished_at"] - r["created_at"]).total_seconds()
                for r in runs
                if r["finished_at"] is not None
            ),
            default=0,
        ),
        1,
    )
    if heal_at is not None:  # recovery: from the heal to the last run's end
        stats["runs_done_after_heal_s"] = round(
            max(0.0, (max(finished, default=heal_at) - heal_at).total_seconds()), 1
        )
    for d in _rows(
        conn,
        "SELECT d.id, d.mode, d.rounds, cardinality(d.agents) AS agents, "
        "(SELECT count(*) FROM agent_runs a WHERE a.dispatch_id = d.id) AS runs, "
        "(SELECT count(DISTINCT a.round) FROM agent_runs a WHERE a.dispatch_id = d.id) AS rounds_made "
        "FROM dispatches d WHERE d.thread_id = ANY(%(t)s::uuid[])",
        t=threads,
    ):
        if d["runs"] != d["agents"] * d["rounds"]:
            out.append(
                _a(
                    "a",
                    "dispatch_incomplete",
                    f"dispatch {d['id']} ({d['mode']}, {d['rounds']} round(s) of {d['agents']}) has "
                    f"{d['runs']} run(s) in {d['rounds_made']} round(s)",
                    [d["id"]],
                )
            )
    # attempts: 1..N claimed once each; every attempt before N ended released/lease_expired;
    # N ended with the run's own status (a terminal run) or not at all (a running one)
    attempts = _rows(
        conn,
        "SELECT ra.run_id, ra.attempt, ra.event, ra.status FROM run_attempts ra JOIN agent_runs a ON "
        "a.id = ra.run_id "
        "WHERE a.thread_id = ANY(%(t)s::uuid[]) AND a.dispatch_id IS NOT NULL",
        t=threads,
    )
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in attempts:
        by_run.setdefault(str(row["run_id"]), []).append(row)
    takeovers: dict[str, int] = {}
    for r in runs:
        rows = by_run.get(str(r["id"]), [])
        n = r["attempt"]
        claimed = sorted(x["attempt"] for x in rows if x["event"] == "claimed")
        ended: dict[Any, Any] = {x["attempt"]: x["status"] for x in rows if x["event"] == "ended"}
        for status in ended.values():
            takeovers[status] = takeovers.get(status, 0) + 1
        problems = []
        if claimed != list(range(1, n + 1)):
            problems.append(f"claimed attempts {claimed}, run.attempt {n}")
        for k in range(1, n):
            if ended.get(k) not in ("released", "lease_expired"):
                problems.append(f"attempt {k} of {n} ended {ended.get(k)}")
        if r["status"] in ("succeeded", "failed"):
            if n == 0 or ended.get(n) != r["status"]:
                problems.append(f"final attempt {n} ended {ended.get(n)}, run {r['status']}")
        elif n in ended:
            problems.append(f"attempt {n} ended {ended[n]} but the run is {r['status']}")
        if problems:
            out.append(_a("a", "attempt_history_broken", f"run {r['id']}: " + "; ".join(problems), [r["id"]]))
    stats["attempt_endings"] = takeovers


def _check_claims(
    conn: psycopg.Connection[Any], threads: list[str], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    t = threads
    dup = _rows(
        conn,
        "SELECT c.run_id, c.node_version_id, count(*) AS n FROM claims c JOIN agent_runs a ON a.id = "
        "c.run_id "
        "WHERE a.thread_id = ANY(%(t)s::uuid[]) GROUP BY 1, 2 HAVING count(*) > 1",
        t=t,
    )
    for d in dup:
        out.append(
            _a(
                "b",
                "duplicate_claim",
                f"run {d['run_id']} claimed version {d['node_version_id']} {d['n']} times",
                [d["run_id"], d["node_version_id"]],
            )
        )
    stats["claims"] = _rows(
        conn,
        "SELECT count(*) AS n FROM claims c JOIN agent_runs a ON a.id = c.run_id "
        "WHERE a.thread_id = ANY(%(t)s::uuid[])",
        t=t,
    )[0]["n"]
    # every output row of a worker run: written by the transaction that ended its final attempt succeeded
    outputs = {
        "claim": "SELECT c.id, c.run_id, c.xmin::text AS x FROM claims c",
        "node version": "SELECT v.id, v.created_by_run_id AS run_id, v.xmin::text AS x FROM node_versions v "
        "WHERE v.created_by_run_id IS NOT NULL",
        "citation": "SELECT ci.id, ci.run_id, ci.xmin::text AS x FROM citations ci WHERE ci.run_id IS "
        "NOT NULL",
        "branch": "SELECT b.id, b.created_by_run_id AS run_id, b.xmin::text AS x FROM branches b "
        "WHERE b.created_by_run_id IS NOT NULL",
        "pending action": "SELECT p.id, p.created_by_run_id AS run_id, p.xmin::text AS x FROM "
        "pending_actions p "
        "WHERE p.created_by_run_id IS NOT NULL",
        "vote": "SELECT v.id, v.run_id, v.xmin::text AS x FROM retraction_votes v",
    }
    for what, sql in outputs.items():
        rows = _rows(
            conn,
            f"WITH o AS ({sql}) SELECT o.id, o.run_id, o.x, a.status, a.attempt, a.request_sha256, "
            "(SELECT ra.xmin::text FROM run_attempts ra WHERE ra.run_id = a.id AND ra.attempt = a.attempt "
            " AND ra.event = 'ended' AND ra.status = 'succeeded') AS ended_x, "
            "(SELECT string_agg(ra.attempt::text || ':' || ra.status, ',') FROM run_attempts ra "
            " WHERE ra.run_id = a.id AND ra.event = 'ended' AND ra.xmin::text = o.x) AS same_tx_end "
            "FROM o JOIN agent_runs a ON a.id = o.run_id "
            "WHERE a.thread_id = ANY(%(t)s::uuid[]) AND a.dispatch_id IS NOT NULL",
            t=t,
        )
        for r in rows:
            if r["status"] != "succeeded":
                out.append(
                    _a(
                        "b",
                        "output_of_unsucceeded_run",
                        f"{what} {r['id']} by run {r['run_id']} which is {r['status']}",
                        [r["id"], r["run_id"]],
                    )
                )
            elif r["x"] != r["ended_x"]:
                out.append(
                    _a(
                        "b",
                        "output_outside_final_attempt",
                        f"{what} {r['id']} of run {r['run_id']} (attempt {r['attempt']}) was not "
                        "written by the "
                        f"transaction that ended its final attempt (same-tx end: {r['same_tx_end']})",
                        [r["id"], r["run_id"]],
                    )
                )


def _check_consolidations(
    conn: psycopg.Connection[Any], threads: list[str], out: list[Anomaly], stats: dict[str, Any]
) -> None:
    from council.sql import driver_sql

    t = threads
    for r in _rows(
        conn,
        "SELECT logical_node_id, count(*) AS n FROM consolidations WHERE status = 'live' "
        "AND thread_id = ANY(%(t)s::uuid[]) GROUP BY 1 HAVING count(*) > 1",
        t=t,
    ):
        out.append(
            _a(
                "c",
                "two_live_consolidations",
                f"logical node {r['logical_node_id']}: {r['n']} live",
                [r["logical_node_id"]],
            )
        )
    for r in _rows(
        conn,
        "SELECT node_version_id, count(*) AS n, array_agg(status) AS st FROM consolidations "
        "WHERE thread_id = ANY(%(t)s::uuid[]) GROUP BY 1 HAVING count(*) > 1",
        t=t,
    ):
        out.append(
            _a(
                "c",
                "version_consolidated_twice",
                f"version {r['node_version_id']}: {r['n']} consolidations ({', '.join(r['st'])})",
                [r["node_version_id"]],
            )
        )
    cons = _rows(
        conn,
        "SELECT c.id, c.status, c.node_version_id, s.status AS version_status, m.id AS memory_id, "
        "m.status AS memory_status "
        "FROM consolidations c JOIN node_version_states s ON s.id = c.node_version_id "
        "LEFT JOIN memory_items m ON m.consolidation_id = c.id WHERE c.thread_id = ANY(%(t)s::uuid[])",
        t=t,
    )
    stats["consolidations"] = _count(c["status"] for c in cons)
    allowed = {
        "live": {"stable", "provisional", "contested"},
        "retracted": {"retracted"},
        "superseded": {"superseded"},
    }
    for c in cons:
        if c["memory_id"] is None:
            out.append(_a("c", "consolidation_without_memory", f"consolidation {c['id']}", [c["id"]]))
        elif c["memory_status"] not in allowed.get(c["status"], set()):
            out.append(
                _a(
                    "c",
                    "memory_status_inconsistent",
                    f"consolidation {c['id']} is {c['status']}, its memory {c['memory_status']}",
                    [c["id"]],
                )
            )
        if c["status"] == "live" and c["version_status"] != "resolved":
            out.append(
                _a(
                    "c",
                    "live_consolidation_unresolved",
                    f"consolidation {c['id']} is live, version {c['node_version_id']} is "
                    f"{c['version_status']}",
                    [c["id"]],
                )
            )
    for r in _rows(
        conn,
        "SELECT s.id FROM node_version_states s JOIN node_versions nv ON nv.id = s.id "
        "WHERE s.status = 'resolved' AND nv.thread_id = ANY(%(t)s::uuid[]) "
        "AND NOT EXISTS (SELECT 1 FROM consolidations c WHERE c.node_version_id = s.id)",
        t=t,
    ):
        out.append(_a("c", "resolved_without_consolidation", f"version {r['id']}", [r["id"]]))
    unseen = _rows(conn, driver_sql("unevaluated_versions"), settle_s=0, limit=100000)
    for v in _thread_versions(conn, t, [r["id"] for r in unseen]):
        out.append(
            _a("c", "lost_evaluation", f"version {v} holds claims no evaluation or consolidation saw", [v])
        )


def _count(items: Iterable[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in items:
        counts[str(i)] = counts.get(str(i), 0) + 1
    return counts


def _reason_class(reason: str) -> str:
    for key in (
        "no answer after",
        "invalid output",
        "has no pinned executor",
        "cannot run",
        "stored request",
    ):
        if key in reason:
            return key
    return reason[:60]
