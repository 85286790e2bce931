"""The checker's calls into the project's own code (see checker.py): replay of every
decision, the committer's dry run on every open head with claims, `council replay` on a
sample, and, last and the only write, the adjudication probe.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import psycopg

from tests.soak.checker_log import Anomaly, _a, _rows


def _check_by_services(
    app_url: str,
    consolidations: list[Any],
    evaluations: list[Any],
    heads: list[Any],
    out: list[Anomaly],
    stats: dict[str, Any],
) -> None:
    """The project's own code: replay every decision; dry-run the committer on every head with claims."""
    from council.services.consolidation import consolidate, replay
    from tests.engines import dispose_all, engine_for, uow_of

    engine = engine_for(app_url)
    uow = uow_of(engine)
    started = time.monotonic()
    mismatched = 0
    for kind, ids in (("consolidation", consolidations), ("evaluation", evaluations)):
        for ident in ids:
            try:
                r = replay(uow, str(ident))
            except Exception as exc:
                out.append(
                    _a(
                        "d",
                        "replay_error",
                        f"{kind} {ident}: {type(exc).__name__}: {exc}".splitlines()[0],
                        [ident],
                    )
                )
                continue
            if not r.match:
                mismatched += 1
                out.append(
                    _a(
                        "d",
                        "replay_mismatch",
                        f"{kind} {ident}: hash_match {r.hash_match}, decision_match {r.decision_match}, "
                        "stored "
                        f"{r.stored_outcome} replayed {r.replayed_outcome}, differs in {r.differences}",
                        [ident],
                    )
                )
    stats["replayed"] = len(consolidations) + len(evaluations)
    stats["replay_s"] = round(time.monotonic() - started, 1)
    for head in heads:
        try:
            dry = consolidate(uow, str(head), actor="soak:checker", dry_run=True)
        except Exception as exc:
            out.append(
                _a(
                    "c",
                    "dry_run_error",
                    f"version {head}: {type(exc).__name__}: {exc}".splitlines()[0],
                    [head],
                )
            )
            continue
        if dry.outcome == "would_commit":
            out.append(
                _a(
                    "c",
                    "ready_not_consolidated",
                    f"version {head} is ready by the rules (dry run: would_commit) and has no live "
                    "consolidation",
                    [head],
                )
            )
    stats["heads_dry_run"] = len(heads)
    dispose_all()


def _check_cli_replay(env: dict[str, str], ids: list[Any], out: list[Anomaly], stats: dict[str, Any]) -> None:
    """`council replay ID --json`, as docs/reference/cli.md names it, on a sample: exit 0 and match true."""
    from tests.soak.cluster import BIN, REPO

    for ident in ids:
        done = subprocess.run(
            [str(BIN / "council"), "replay", str(ident), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            doc = {}
        if done.returncode != 0 or not doc.get("match"):
            out.append(
                _a(
                    "d",
                    "cli_replay_mismatch",
                    f"council replay {ident}: exit {done.returncode}, "
                    f"{done.stdout.strip()[:300] or done.stderr.strip()[:300]}",
                    [ident],
                )
            )
    stats["cli_replayed"] = len(ids)


def probe_adjudications(app_url: str, owner_url: str, threads: list[str]) -> list[Anomaly]:
    """Last, and the only write: adjudicate each open proposal whose review dispatch ended
    (what the sweep does). A decision now (retracted/restored) means the system left it undone."""
    from council.services.retraction import adjudicate_if_automatic
    from tests.engines import dispose_all, engine_for, uow_of

    out: list[Anomaly] = []
    with psycopg.connect(owner_url) as conn:
        open_reviewed = _rows(
            conn,
            "SELECT p.id FROM retraction_proposals p JOIN dispatches d ON d.proposal_id = p.id AND "
            "d.mode = 'review' "
            "JOIN agent_runs a ON a.dispatch_id = d.id WHERE p.status = 'open' AND p.thread_id = "
            "ANY(%(t)s::uuid[]) "
            "GROUP BY p.id HAVING bool_and(a.status IN ('succeeded','failed'))",
            t=threads,
        )
    uow = uow_of(engine_for(app_url))
    for r in open_reviewed:
        try:
            decided = adjudicate_if_automatic(uow, r["id"], actor="soak:probe")
        except Exception as exc:
            out.append(
                _a("c", "adjudication_probe_error", f"proposal {r['id']}: {exc}".splitlines()[0], [r["id"]])
            )
            continue
        if decided is not None and decided.outcome not in ("pending", "already_adjudicated"):
            out.append(
                _a(
                    "c",
                    "lost_adjudication",
                    f"proposal {r['id']}: its review ended, yet it was still open; adjudicating now gives "
                    f"{decided.outcome}",
                    [r["id"]],
                )
            )
    dispose_all()
    return out
