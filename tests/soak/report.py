"""Markdown tables of a soak's summary (the body of tests/soak/RESULTS.md).

python -m tests.soak.report WORKDIR      # WORKDIR/summary.json, written by python -m tests.soak
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _s(spread: dict[str, Any]) -> str:
    if not spread.get("n"):
        return "–"
    return f"{spread['min']} / {spread['median']} / {spread['max']}"


def render(doc: dict[str, Any]) -> str:
    summary, results = doc["summary"], doc["results"]
    load = summary["load"]
    lines = [
        f"- schedules: {summary['schedules']} (seeds {min(summary['seeds'])}–{max(summary['seeds'])}), "
        f"{summary['faults_total']} faults, wall time {summary['wall_s'] / 60:.0f} min",
        f"- load: {load['dispatch_ops']} dispatch calls, {load['runs']} runs ({load['runs_by_status']}), "
        f"{load['claims']} claims, {load['evaluations']} evaluations, {load['events']} events; "
        f"{load['replayed']} decisions replayed",
        f"- anomalies: {summary['anomalies'] or 'none'}; "
        f"seeds with an anomaly: {summary['failed_seeds'] or 'none'}",
        f"- processes that exited on their own (not a fault): {summary['unexpected_exits']}",
        f"- runs done after the heal (s, min / median / max): {_s(summary['runs_done_after_heal_s'])}; "
        f"quiescent after the heal: {_s(summary['quiescent_after_heal_s'])}",
        "",
        "### Recovery per fault kind",
        "",
        "From the fault's end (the process resumed or restarted, the partition healed; for a fault left "
        "in place, the heal) to the end of the last run of its thread that had not ended by then; only "
        "faults that left runs unfinished count. Seconds, min / median / max.",
        "",
        "| fault | faults | with runs in flight | recovery s |",
        "|---|---|---|---|",
    ]
    for kind, r in summary["recovery_by_fault_kind"].items():
        lines.append(f"| {kind} | {r['faults']} | {r['with_runs_in_flight']} | {_s(r['recovery_s'])} |")
    lines += [
        "",
        "Quiescence (no run unfinished, no claim unevaluated, no cascade or review left: what the commit "
        "and maintenance queues recover) after the heal, by the kind of fault a schedule held "
        "(`mixed`: several kinds). Seconds, min / median / max.",
        "",
        "| schedule kind | schedules | quiescent after heal s |",
        "|---|---|---|",
    ]
    for kind, spread in summary.get("quiescent_after_heal_by_schedule_kind", {}).items():
        lines.append(f"| {kind} | {spread['n']} | {_s(spread)} |")
    lines += _failovers(summary, results)
    lines += ["", "### Faults as carried out", "", "| fault | count |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in summary["faults"].items()]
    lines += [
        "",
        "### Schedules",
        "",
        "| seed | faults | runs | anomalies | runs done after heal s | quiescent s | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        st = r.get("stats", {})
        anomalies = ", ".join(sorted({a["kind"] for a in r["anomalies"]})) or "–"
        lines.append(
            f"| {r['seed']} | {', '.join(r.get('faults', []))} | {st.get('runs', '?')} | {anomalies} | "
            f"{st.get('runs_done_after_heal_s', '?')} | {r.get('quiescence_s')} | {r.get('wall_s')} |"
        )
    return "\n".join(lines) + "\n"


def _failovers(summary: dict[str, Any], results: list[dict[str, Any]]) -> list[str]:
    """A replicated soak's failovers: resumption (the writer's last acknowledgement before the primary
    was lost to its first after), and what the live reader and the writer saw."""
    fo = summary.get("failovers") or {}
    if not fo.get("n"):
        return []
    lines = [
        "",
        "### Failovers",
        "",
        f"{fo['n']} failovers ({fo['by_variant']}); the old primary rejoined by {fo['rejoined_by']}. "
        "Resumption: from the last write the probe writer (one every 0.2 s, through the multi-host URL) "
        "saw acknowledged before the primary was lost to the first it saw acknowledged after. "
        "Seconds, min / median / max.",
        "",
        "| primary lost by | failovers | resumption s |",
        "|---|---|---|",
        *(f"| {how} | {sp['n']} | {_s(sp)} |" for how, sp in fo["resumption_s_by_how"].items()),
        f"| all | {fo['resumption_s']['n']} | {_s(fo['resumption_s'])} |",
        "",
        "| seed | failovers (how, during, rejoined, resumption s) | events the live reader saw | its "
        "reconnects | probe writes acknowledged / failed |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        st = r.get("stats", {})
        each = "; ".join(
            f"{f['how']} {f['during']} {f.get('rejoined') or 'at the heal'} {f.get('resumption_s')}"
            for f in r.get("failovers", [])
        )
        lines.append(
            f"| {r['seed']} | {each or '–'} | {st.get('feed_events_seen', '–')} | "
            f"{st.get('feed_reconnects', '–')} | {st.get('probe_writes_acked', '–')} / "
            f"{st.get('probe_writes_failed', '–')} |"
        )
    return lines


if __name__ == "__main__":
    sys.stdout.write(render(json.loads((Path(sys.argv[1]) / "summary.json").read_text())))
