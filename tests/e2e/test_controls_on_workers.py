"""Conformity separated from self-revision (issue 34 part 2) on real Postgres, Redis and
Celery workers: deliberative dispatches with controls on the simulated provider, whose
profiles set a conformity and a self-revision rate. Over 300 deliberative runs (each with
its control run, so 900 runs in all) the classes of `council stances` come out within a
stated tolerance of the set rates, and no control run is counted as support.

The agents all have codex's temperament (endorse or dispute, never abstain, drawn per agent
and head; no new nodes), so a round-1 stance is ±1 and moving to the shown strict majority
is always toward the mean of what was shown. They are all of one provider family, so no
node consolidates and every head is judged in both rounds. What each rate predicts, per
round-2 claim (the run's first-round claim on the head is its prior stance):

- self_revision: the run revised its stance (probability S, whether or not it saw anyone),
  so its control did too, alike: the share of self_revision among the claims is S;
- conformity: of the claims that did not self-revise and were shown a strict majority
  other than their prior stance, the share that took it (toward_exposure, its control
  holding) is C.

Tolerance: four binomial standard errors, sqrt(p (1 - p) / n), of each share's n."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest
from sqlalchemy import Engine

from council.agents.simulated import TEMPERAMENTS, temperament_for
from council.bootstrap import bootstrap
from council.services.dispatch import dispatch
from tests.builders import ACTOR, Ledger
from tests.dashboard import dashboard_url
from tests.e2e.conftest import Workers, council, rows, wait_for
from tests.engines import engine_for, uow_of

CONFORMITY, SELF_REVISION = 0.6, 0.3
THREADS, AGENTS, HEADS = 30, 10, 3  # 300 deliberative runs, 300 controls, 300 blind runs
SIGMAS = 4


def sceptics(n: int) -> list[str]:
    """``n`` profile names the simulated provider gives codex's temperament."""
    names = (f"sceptic-{i}" for i in range(1000))
    return [name for name in names if temperament_for(name) is TEMPERAMENTS["codex"]][:n]


def write_profiles(path: Path, names: list[str]) -> None:
    path.write_text(
        "".join(
            f'[profiles.{name}]\nmodel = "council-sim/{name}"\nprovider = "openai"\n'
            f"params = {{ conformity = {CONFORMITY}, self_revision = {SELF_REVISION} }}\n\n"
            for name in names
        ),
        encoding="utf-8",
    )


def within(observed: int, n: int, rate: float, what: str) -> None:
    tolerance = SIGMAS * (rate * (1 - rate) / n) ** 0.5
    share = observed / n
    assert abs(share - rate) <= tolerance, (
        f"{what}: {observed}/{n} = {share:.3f}, set {rate} ± {tolerance:.3f}"
    )


def majority(types: list[str]) -> str | None:
    if not types:
        return None
    top, votes = Counter(types).most_common(1)[0]
    return top if votes * 2 > len(types) else None


def test_controls_separate_self_revision_from_conformity_at_the_set_rates(
    engine: Engine,
    workers: Workers,
    worker_env: dict[str, str],
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = time.monotonic()
    # Given 30 threads of three propositions each, and ten simulated sceptics with the set rates
    names = sceptics(AGENTS)
    profiles = tmp_path / "profiles.toml"
    write_profiles(profiles, names)
    env = {**worker_env, "COUNCIL_PROFILES": str(profiles)}
    ledgers = [Ledger.new(engine, title=f"controls {t}", evidence_items=0) for t in range(THREADS)]
    for ledger in ledgers:
        for h in range(HEADS):
            ledger.node(f"Proposition {h}: the replica keeps workload class {h} under budget")
    threads = [ledger.thread_id for ledger in ledgers]
    # And --controls without --mode deliberative is refused: one line, exit 2, nothing written
    refused = council(env, "dispatch", "--thread", str(threads[0]), "--agents", names[0], "--controls")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--controls needs --mode deliberative" in refused.stderr
    assert rows(engine, "SELECT count(*) AS n FROM dispatches")[0].n == 0
    # When a worker runs them, and each thread's council deliberates two rounds with controls
    # (the first through the CLI, the others through the same service in this process)
    workers("--queues", "runs,commit,maintenance", env=env)
    agents = ",".join(names)
    first = council(env, "dispatch", "--thread", str(threads[0]), "--agents", agents,
                    "--mode", "deliberative", "--rounds", "2", "--controls", "--json")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["controls"] is True
    monkeypatch.setenv("COUNCIL_BROKER_URL", redis_url)  # this process's scheduler
    monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
    scheduler = bootstrap(str(engine.url.render_as_string(hide_password=False))).required_scheduler()
    for thread in threads[1:]:
        dispatch(uow_of(engine), scheduler, thread, names, mode="deliberative", rounds=2, actor=ACTOR,
                 controls=True)  # fmt: skip
    total = THREADS * AGENTS * 3

    def ended() -> bool:
        [found] = rows(engine, "SELECT count(*) AS n FROM agent_runs WHERE status IN ('succeeded', 'failed')")
        return int(found.n) == total

    wait_for(ended, 240, f"{total} runs to end")
    ran_s = time.monotonic() - started
    # Then every run succeeded: per thread ten blind, ten deliberative and ten control runs
    runs = rows(engine, "SELECT id, round, status, control_of FROM agent_runs")
    assert len(runs) == total and all(r.status == "succeeded" for r in runs)
    controls = {r.id for r in runs if r.control_of is not None}
    deliberative = [r for r in runs if r.round == 2 and r.control_of is None]
    assert len(deliberative) >= 300 and len(controls) == len(deliberative)
    assert {r.control_of for r in runs if r.control_of is not None} == {r.id for r in deliberative}
    # And the CLI shows them as controls: run list, run show, and the stances the page reads
    dispatched = json.loads(first.stdout)["dispatch_id"]
    listed = council(env, "run", "list", "--dispatch", dispatched)
    assert listed.returncode == 0 and listed.stdout.count(" control ") == AGENTS, listed.stdout
    control = next(r.id for r in runs if r.control_of is not None)
    shown = council(env, "run", "show", str(control))
    assert shown.returncode == 0 and "control run of" in shown.stdout, shown.stdout
    said = council(env, "stances", "--thread", str(threads[0]))
    assert said.returncode == 0 and "self_revision" in said.stdout, said.stdout

    # And the classes come out at the set rates
    changes = rows(engine, "SELECT * FROM council_v_stance_changes WHERE round = 2")
    assert not {c.run_id for c in changes} & controls  # a control run is never a subject
    judged = [c for c in changes if c.prior_claim_id is not None]
    assert len(judged) == len(deliberative) * HEADS
    classes = Counter(c.change_class for c in judged)
    assert set(classes) <= {"held", "self_revision", "toward_exposure"}, classes
    within(classes["self_revision"], len(judged), SELF_REVISION, "self_revision share")
    assert all(c.control_claim_type == c.claim_type for c in judged if c.change_class == "self_revision")
    eligible = [
        c for c in judged
        if c.change_class != "self_revision"
        and majority(list(c.exposed_claim_types)) not in (None, c.prior_claim_type)
    ]  # fmt: skip
    conformed = [c for c in eligible if c.claim_type == majority(list(c.exposed_claim_types))]
    within(len(conformed), len(eligible), CONFORMITY, "conformity (toward the shown majority)")
    assert all(c.change_class == "toward_exposure" for c in conformed)
    assert all(c.control_claim_type == c.prior_claim_type for c in conformed)  # its control held
    assert classes["toward_exposure"] == len(conformed)

    # And no control run is counted as support: the evaluations the commit worker recorded
    # saw only the council's claims, and the independence groups hold no control run
    claims = rows(engine, """
        SELECT c.node_version_id, count(*) FILTER (WHERE r.control_of IS NULL) AS council,
               count(*) AS all_claims
        FROM claims c JOIN agent_runs r ON r.id = c.run_id GROUP BY c.node_version_id""")  # fmt: skip
    assert len(claims) == THREADS * HEADS and all(c.all_claims == c.council * 3 // 2 for c in claims)
    counted = {c.node_version_id: c.council for c in claims}
    reader = engine_for(dashboard_url(engine.url.render_as_string(hide_password=False)))  # the views' reader

    def evaluated() -> bool:
        seen = rows(reader, """
            SELECT node_version_id, max(claims_seen) AS seen FROM council_v_evaluations
            GROUP BY node_version_id""")  # fmt: skip
        return {s.node_version_id: s.seen for s in seen} == counted

    wait_for(evaluated, 60, "every version evaluated on the council's claims alone")
    grouped = rows(reader, "SELECT DISTINCT unnest(runs) AS run_id FROM council_v_independence_groups")
    assert grouped and not {UUID(str(g.run_id)) for g in grouped} & controls
    assert not rows(engine, "SELECT 1 FROM consolidations")
    print(f"\n{total} runs in {ran_s:.1f} s; {dict(classes)}; conformed {len(conformed)} of {len(eligible)}")
