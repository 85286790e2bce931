"""Recorded debates: `council import` and `council eval` at scale (issue 33).

**Data.** 10,000 records of a `council-debate-v1` file made here with a seeded generator:
3 agents of three providers, 4 simultaneous rounds (12 turns a record), 4 options, a
truth, stated confidences, and answers that drift toward the previous round's majority
(so flips of every kind occur). Written in memory, never a data set.

**import.** One call of the real service (`council.services.observation.import_debates`,
the path `council import` takes): parse and validate the whole file, then write every
thread, node, run, claim, exposure, resolution and event in one transaction (COPY).
Target: ≤ 60 s, i.e. `records_per_s` ≥ 166.7. A second import of the same bytes must
write nothing (checked).

**eval.** The same ledger, then one call of `council.services.observation.evaluate`
under 3 rule sets: the default (council-default-v1), council-default-v3 (effective
independence and exclusive alternatives: every record's four options are one set, so
its nodes are contested) and a stored variant. Target: ≤ 10 s.

A smoke run (``COUNCIL_BENCH_SMOKE``) imports and evaluates 20 records.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

from sqlalchemy import text

from benchmarks.harness import bench_database, sized
from council.ledger.unit import UnitOfWork
from tests.engines import engine_for, uow_of

RECORDS = 10_000
ROUNDS = 4
AGENTS = [
    {"name": "gpt", "model": "openai/gpt-4o-mini", "provider": "openai"},
    {"name": "claude", "model": "anthropic/claude-haiku-4-5", "provider": "anthropic"},
    {"name": "glm", "model": "zai/glm-4.6", "provider": "zhipu"},
]
OPTIONS = "ABCD"
IMPORT_TARGET_S = 60.0
EVAL_TARGET_S = 10.0
ACTOR = "bench"


def debate_file(records: int = RECORDS, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    lines = []
    for n in range(records):
        truth = rng.choice(OPTIONS)
        skill = {a["name"]: rng.uniform(0.35, 0.8) for a in AGENTS}
        turns: list[dict[str, Any]] = []
        previous: list[str] = []
        for round_no in range(ROUNDS):
            current = []
            for agent in AGENTS:
                if previous and rng.random() < 0.4:
                    answer = max(sorted(set(previous)), key=previous.count)  # conform to the last round
                else:
                    answer = truth if rng.random() < skill[agent["name"]] else rng.choice(OPTIONS)
                if rng.random() < 0.03:
                    answer = None
                turns.append({"round": round_no, "agent": agent["name"], "answer": answer,
                              "confidence": round(rng.uniform(0.3, 1.0), 2)})  # fmt: skip
                if answer is not None:
                    current.append(answer)
            previous = current or previous
        lines.append(json.dumps({
            "id": f"q{n}", "question": f"Question {n}: which option holds?",
            "options": {o: f"Option {o} of question {n}." for o in OPTIONS},
            "truth": truth, "agents": AGENTS, "turns": turns, "tags": ["bench"],
        }))  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


def _rule_sets(uow: UnitOfWork) -> list[str]:
    from council.services.counterfactual import store_rule_set

    names = []
    for ident, groups, providers in (("bench-two-groups-v1", 2, 1),):
        body = {
            "min_support_groups": groups,
            "min_support_providers": providers,
            "dispute_confidence_bar": 0.6,
        }
        store_rule_set(uow, {"id": ident, "description": "benchmark variant", "body": body}, report=None,
                       pin=False, actor=ACTOR)  # fmt: skip
        names.append(ident)
    return names


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _import(uow: UnitOfWork, data: bytes) -> tuple[float, float, Any]:
    from council.services.observation import import_debates

    cpu, wall = time.process_time(), time.perf_counter()
    result = import_debates(uow, data, file_name="bench.jsonl", actor=ACTOR)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def run_import() -> dict[str, Any]:
    data = debate_file(sized(RECORDS, 20))
    with bench_database() as (url, server):
        uow = uow_of(engine_for(url))
        load_before = _load()
        wall, cpu, result = _import(uow, data)
        again_wall, _, again = _import(uow, data)
        with engine_for(url).connect() as conn:
            runs = conn.execute(text("SELECT count(*) FROM agent_runs")).scalar_one()
        turns = result.turns
        return {
            "benchmark": "import",
            "server": server,
            "records": result.records,
            "turns": turns,
            "runs_written": runs,
            "seconds": round(wall, 3),
            "client_cpu_s": round(cpu, 3),
            "records_per_s": round(result.records / wall, 1),
            "turns_per_s": round(turns / wall, 1),
            "second_import_created": again.created,
            "second_import_s": round(again_wall, 3),
            "file_bytes": len(data),
            "load_before": load_before,
            "load_after": _load(),
            "target_s": IMPORT_TARGET_S,
            "ok": wall <= IMPORT_TARGET_S and runs == turns and again.created is False,
        }


def run_eval() -> dict[str, Any]:
    from council.services.observation import evaluate

    records = sized(RECORDS, 20)
    data = debate_file(records)
    with bench_database() as (url, server):
        uow = uow_of(engine_for(url))
        _import(uow, data)
        variants = _rule_sets(uow)
        load_before = _load()
        cpu, wall = time.process_time(), time.perf_counter()
        chosen = ["council-default-v1", "council-default-v3", *variants]
        report = evaluate(uow, tags=["bench"], rule_sets=chosen)
        seconds = time.perf_counter() - wall
        cpu_s = time.process_time() - cpu
        again = evaluate(uow, tags=["bench"], rule_sets=chosen)
        return {
            "benchmark": "eval",
            "server": server,
            "records": report.records,
            "resolved": report.resolved,
            "rule_sets": report.rule_sets,
            "seconds": round(seconds, 3),
            "client_cpu_s": round(cpu_s, 3),
            "records_per_s": round(report.resolved / seconds, 1),
            "decided": {k: v["decided"] for k, v in report.council.items()},
            "rivals": {k: v["rivals"] for k, v in report.council.items()},
            "same_bytes": again.report_sha256 == report.report_sha256,
            "load_before": load_before,
            "load_after": _load(),
            "target_s": EVAL_TARGET_S,
            "ok": seconds <= EVAL_TARGET_S
            and report.resolved == records
            and again.report_sha256 == report.report_sha256,
        }
