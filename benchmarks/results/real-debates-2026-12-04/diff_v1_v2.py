# ruff: noqa
"""Per record: the nodes v1 and v2 consolidate, their truth, and v2's effective_support reason."""

import sys
from typing import cast
from council.cli.common import uow
from council.domain.eval_effective import PairStats, measured, model_errors
from council.domain.independence import GroupingParams
from council.domain.observation import node_groups
from council.domain.rules import decide
from council.ledger import observation as store
from council.ledger.threads import DEFAULT_GROUPING
from council.services.observation import _records

tag = sys.argv[1]
with uow()() as tx:
    v1 = tx.rule_sets.get("council-default-v1")
    v2 = tx.rule_sets.get("council-default-v2")
    grouping = store.grouping_params(tx.conn, DEFAULT_GROUPING)
    rows = store.eval_rows(tx.conn, [], [tag])
records = [r for r in _records(rows) if r.resolved]
params = GroupingParams.from_record(grouping)
stats = PairStats(model_errors(records))
for r in sorted(records, key=lambda r: r.id):
    groups = node_groups(r, params)
    out = []
    for node, gs in sorted(groups.items()):
        if sum(1 for g in gs if g.kind == "support") < 2:
            continue
        res = {}
        for rs in (v1, v2):
            snap = {
                "node": {"status": "open", "head_version_id": node, "version_id": node},
                "objective_forks": [],
                "evidence": [],
                "citations": [],
                "claims": [],
                "pending_actions": [],
                "branch": {"kind": "main", "status": "active"},
                **measured(r, rs.body, stats),
            }
            d = decide(cast(object, snap), dict(rs.body), gs)
            res[rs.id] = d
        p1, p2 = res["council-default-v1"].positive, res["council-default-v2"].positive
        if p1 or p2:
            eff = [str(x) for x in getattr(res["council-default-v2"], "reasons", []) if "effective" in str(x)]
            runs = {t.run_id: t for t in r.turns}
            sup = sorted(
                {runs[m].model.split("/")[-1] for g in gs if g.kind == "support" for m in g.runs if m in runs}
            )
            out.append((r.truth.get(node), p1, p2, eff[0].split("detail=")[1][:40] if eff else "", sup))
    if any(p1 != p2 for _, p1, p2, *_ in out):
        print(r.id, out)
