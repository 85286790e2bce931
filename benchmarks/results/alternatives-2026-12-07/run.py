# ruff: noqa
"""Rerun the blind councils of real-debates-2026-12-04 under council-default-v1, -v2 and -v3.

Usage: run.py BLIND_DIR OUT_DIR, where BLIND_DIR holds blind-1.jsonl and blind-3.jsonl as
build_blind_council.py writes them. Each is split by task into blind-TASK-N.jsonl, imported
into a fresh database (migrated to head, on an embedded Postgres) with `council import`, and
evaluated with `council eval --tag file:blind-TASK-N.jsonl --rule-set council-default-v1
--rule-set council-default-v2 --rule-set council-default-v3 --json`, as the 12-04 run did
with v1 and v2. Writes each report to OUT_DIR/TASK-N.json and the table to stdout; then the
same evaluation under v3's rules with other margins (rule-set files), OUT_DIR/margins.txt."""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.harness import bench_database

RULE_SETS = ["council-default-v1", "council-default-v2", "council-default-v3"]
MARGINS = (0, 0.25, 0.5, 0.75, 1.0)


def council(url: str, *args: str) -> dict:
    env = {**os.environ, "COUNCIL_DATABASE_URL": url, "COUNCIL_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "council.cli", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"council {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main() -> None:
    blind, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    swept = []
    with bench_database() as (url, server):
        v3 = next(r for r in council(url, "rule-set", "list")["rule_sets"] if r["id"] == "council-default-v3")
        files = []
        for m in MARGINS:
            variant = out / f"v3-margin-{m}.json"
            variant.write_text(
                json.dumps({"id": f"v3-margin-{m}", "body": {**v3["body"], "min_rival_margin": m}})
            )
            files.append(variant)
        for n in (1, 3):
            records = [json.loads(line) for line in (blind / f"blind-{n}.jsonl").read_text().splitlines()]
            for task in ("gsm", "mmlu"):
                name = f"blind-{task}-{n}.jsonl"
                path = out / name
                path.write_text("".join(json.dumps(r) + "\n" for r in records if task in r["tags"]))
                council(url, "import", str(path))
                args = [a for rs in RULE_SETS for a in ("--rule-set", rs)]
                report = council(url, "eval", "--tag", f"file:{name}", *args)
                (out / f"{task}-{n}.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
                sweep = council(
                    url, "eval", "--tag", f"file:{name}", *[a for f in files for a in ("--rule-set", str(f))]
                )
                swept.append(
                    (
                        f"{task}, {n}",
                        {k: (v["decided"], v["wrong"], v["rivals"]) for k, v in sweep["council"].items()},
                    )
                )
                path.unlink()  # derived from the harness's files: not kept
                figures = {rs: report["council"][rs] for rs in RULE_SETS}
                rows.append(
                    (
                        f"{task}, {n} agent(s)/model",
                        report["resolved"],
                        figures,
                        report["effective_votes"]["mean_n_eff"],
                    )
                )
    for f in files:
        f.unlink()
    lines = ["v3's rules with other min_rival_margin (n_eff): decided / wrong / rivals per blind council"]
    for label, figures in swept:
        lines.append(f"{label}: " + "; ".join(f"margin {m}: {figures[f'v3-margin-{m}']}" for m in MARGINS))
    (out / "margins.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"server: {server}")
    print(
        "| blind council | "
        + " | ".join(f"{rs[-2:]} decided | {rs[-2:]} wrong | {rs[-2:]} rivals" for rs in RULE_SETS)
        + " |"
    )
    for label, resolved, figures, _ in rows:
        cells = " | ".join(
            f"{f['decided']} / {resolved} | {f['wrong']} | {f['rivals']}" for f in figures.values()
        )
        print(f"| {label} | {cells} |")


if __name__ == "__main__":
    main()
