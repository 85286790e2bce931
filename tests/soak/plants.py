"""Does the checker see what it claims to? Each plant writes one anomaly into a copy of a
soak's ledger (a database made from it as a template, as the superuser, with the
immutability triggers and foreign keys standing aside), and the checker must report it.

``validate(cluster, thread)`` returns {plant: (caught, kinds reported)}; the test
(tests/soak/test_soak.py) requires every plant caught and the unplanted copy clean.
"""

from __future__ import annotations

from typing import Any

import psycopg

from tests.soak.checker import check

RUN_SUCCEEDED = (
    "SELECT id FROM agent_runs WHERE thread_id = %(t)s AND status = 'succeeded' AND dispatch_id IS NOT NULL "
    "AND mode <> 'review'"
)
LIVE = "SELECT id FROM consolidations WHERE thread_id = %(t)s AND status = 'live' ORDER BY created_at LIMIT 1"
# The claims that reached a live consolidation's version after it (a later dispute may make the
# version no longer ready; removing them restores what the consolidation decided on).
LATER_CLAIMS = (
    f"SELECT cl.id FROM claims cl JOIN consolidations c ON c.node_version_id = cl.node_version_id "
    f"WHERE c.id = ({LIVE}) AND cl.created_at > c.created_at"
)

# What the plants write over: a schedule's faults can leave a thread without one of these
# (a dispute or a failed run leaves no live consolidation), and a plant that changes nothing
# proves nothing, so the test tops the thread up first (``missing_material``).
MATERIAL = {
    "a succeeded dispatched run": RUN_SUCCEEDED,
    "a live consolidation": LIVE,
    "a dispatched run's endorse or dispute claim": (
        "SELECT c.id FROM claims c JOIN agent_runs a ON a.id = c.run_id WHERE a.thread_id = %(t)s "
        "AND a.dispatch_id IS NOT NULL AND c.claim_type <> 'originate'"
    ),
    "a run.succeeded event": "SELECT id FROM events WHERE thread_id = %(t)s AND kind = 'run.succeeded'",
    "a stored request": "SELECT id FROM agent_runs WHERE thread_id = %(t)s AND request IS NOT NULL",
}

PLANTS: dict[str, tuple[set[str], str]] = {
    # name: (the anomaly kinds that report it (any one), SQL; %(t)s is the thread)
    "lost run (left queued)": (
        {"run_not_ended"},
        f"UPDATE agent_runs SET status = 'queued', finished_at = NULL WHERE id = ({RUN_SUCCEEDED} LIMIT 1)",
    ),
    "run ended past the bound": (
        {"run_late"},
        f"UPDATE agent_runs SET finished_at = created_at + interval '1 hour' "
        f"WHERE id = ({RUN_SUCCEEDED} ORDER BY created_at LIMIT 1)",
    ),
    "failed without reason": (
        {"failed_without_reason"},
        f"UPDATE agent_runs SET status = 'failed', error = NULL WHERE id = ({RUN_SUCCEEDED} LIMIT 1)",
    ),
    "duplicate claim (the unique key dropped)": (
        {"duplicate_claim"},
        """ALTER TABLE claims DROP CONSTRAINT claims_run_id_node_version_id_key;
           INSERT INTO claims (run_id, node_version_id, claim_type, confidence, rationale)
           SELECT c.run_id, c.node_version_id, c.claim_type, c.confidence, c.rationale FROM claims c
           JOIN agent_runs a ON a.id = c.run_id WHERE a.thread_id = %(t)s AND a.dispatch_id IS NOT NULL
           AND c.claim_type <> 'originate' LIMIT 1""",
    ),
    "unfenced claim (rewritten by a transaction other than its run's final attempt)": (
        {"output_outside_final_attempt"},
        """UPDATE claims SET rationale = rationale || ' (late)' WHERE id = (SELECT c.id FROM claims c
           JOIN agent_runs a ON a.id = c.run_id WHERE a.thread_id = %(t)s AND a.dispatch_id IS NOT NULL
           AND c.claim_type <> 'originate' LIMIT 1)""",
    ),
    "second live consolidation of a node (the unique index dropped)": (
        {"two_live_consolidations"},
        f"""DROP INDEX consolidations_one_live_per_node;
            INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id,
                                        grouping_algorithm_id, snapshot, snapshot_sha256, decision, status)
            SELECT thread_id, logical_node_id, node_version_id, rule_set_id, grouping_algorithm_id, snapshot,
                   repeat('0', 64), decision, 'live' FROM consolidations WHERE id = ({LIVE})""",
    ),
    "ready version left unconsolidated (its consolidation removed)": (
        {"ready_not_consolidated"},
        f"""WITH later AS ({LATER_CLAIMS}),
                 cited AS (DELETE FROM citations WHERE claim_id IN (SELECT id FROM later)),
                 shown AS (DELETE FROM run_exposures WHERE claim_id IN (SELECT id FROM later)),
                 gone AS (DELETE FROM claims WHERE id IN (SELECT id FROM later))
            UPDATE node_version_states SET status = 'open'
              WHERE id = (SELECT node_version_id FROM consolidations WHERE id = ({LIVE}));
            DELETE FROM node_status_transitions WHERE consolidation_id = ({LIVE});
            DELETE FROM memory_items WHERE consolidation_id = ({LIVE});
            DELETE FROM consolidations WHERE id = ({LIVE})""",
    ),
    "tampered snapshot (the consolidation does not replay)": (
        {"replay_mismatch", "replay_error"},
        f"UPDATE consolidations SET snapshot = jsonb_set(snapshot, '{{claims}}', '[]'::jsonb) WHERE id "
        f"= ({LIVE})",
    ),
    "event without its fact": (
        {"event_without_fact"},
        """INSERT INTO events (thread_id, kind, subject_id, actor, payload)
           VALUES (%(t)s, 'claim.added', gen_random_uuid()::text, 'worker:planted', '{}')""",
    ),
    "lost event (a run's end event deleted)": (
        {"run_end_event_mismatch"},
        "DELETE FROM events WHERE id = (SELECT id FROM events WHERE thread_id = %(t)s AND kind = "
        "'run.succeeded' "
        "LIMIT 1)",
    ),
    "request hash mismatch": (
        {"request_hash_mismatch"},
        "UPDATE agent_runs SET request = jsonb_set(request, '{model}', '\"tampered\"') "
        "WHERE id = (SELECT id FROM agent_runs WHERE thread_id = %(t)s AND request IS NOT NULL LIMIT 1)",
    ),
    "partial commit (the memory item missing)": (
        {"consolidation_without_memory", "partial_commit"},
        f"DELETE FROM memory_items WHERE consolidation_id = ({LIVE})",
    ),
}


def missing_material(owner_url: str, thread: str) -> list[str]:
    """What of ``MATERIAL`` the thread lacks (empty: every plant has something to change)."""
    with psycopg.connect(owner_url) as conn:
        return [
            name
            for name, sql in MATERIAL.items()
            if conn.execute(f"SELECT EXISTS ({sql})".encode(), {"t": thread}).fetchone() == (False,)
        ]


def validate(admin_url: str, thread: str, run_bound_s: float = 600) -> dict[str, tuple[bool, list[str]]]:
    """Each plant alone in its own copy of the ``council`` database on the server of ``admin_url``
    (the soak's owner URL of database ``postgres``); the clean copy is keyed ``""``."""
    base = admin_url.rsplit("/", 1)[0]
    out: dict[str, tuple[bool, list[str]]] = {}
    for i, (name, (expected, sql)) in enumerate([("", (set(), "")), *PLANTS.items()]):
        db = f"plant_{i}"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db}".encode())
            conn.execute(f"CREATE DATABASE {db} TEMPLATE council".encode())
        try:
            owner, app = f"{base}/{db}", f"{base}/{db}".replace("//postgres@", "//council_app@")
            with psycopg.connect(owner) as conn:
                conn.execute("SET session_replication_role = replica")  # triggers and foreign keys aside
                for statement in [s for s in sql.split(";") if s.strip()]:
                    cur = conn.execute(statement.encode(), {"t": thread})
                    assert cur.rowcount != 0, f"plant {name!r} changed nothing: {statement.strip()[:80]}"
            found, _ = check(owner, app, [thread], run_bound_s=run_bound_s)
            kinds = sorted({a["kind"] for a in found})
            out[name] = (not kinds if not name else bool(expected & set(kinds)), kinds)
        finally:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)".encode())
    return out


def describe(results: dict[str, Any]) -> str:
    return "\n".join(
        f"{'caught' if ok else 'MISSED'}: {name or '(nothing planted)'}: {kinds}"
        for name, (ok, kinds) in results.items()
    )
