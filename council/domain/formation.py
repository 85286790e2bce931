"""How independence groups formed on a node version, claim by claim (pure; docs/architecture.md §3).

A step is one claim in the order the ledger recorded it: the groups among the
runs that had claimed on the version by then (their parentage, exposures,
inputs and citations are immutable, so this is what the ledger knew at that
claim, not what it knows when printed), and the links by which the claiming
run joined groups that were apart until then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from council.domain.independence import Group, GroupingParams, Link, RunFacts, group_runs, merge_links


@dataclass(frozen=True)
class Step:
    run_id: str
    groups: tuple[Group, ...]
    links: tuple[Link, ...]  # the claiming run's links that joined it to earlier runs' groups

    @property
    def joined(self) -> int:
        """How many components the claiming run joined (0: it starts one of its own)."""
        return len(self.links)


def formation(runs_in_claim_order: Sequence[RunFacts], params: GroupingParams) -> list[Step]:
    """One step per claiming run, in order (quadratic in the runs: for reading, not for committing)."""
    steps = []
    before: dict[str, str] = {}  # run -> a representative of its component before the step
    for count in range(1, len(runs_in_claim_order) + 1):
        seen = runs_in_claim_order[:count]
        newest = seen[-1].run_id
        forest = merge_links(seen, params)
        # A link of the newest run joins it to a component of earlier runs; report one
        # link per component it joined (earlier runs were linked among themselves already).
        links: dict[str, Link] = {}
        for link in forest:
            if newest in (link.a, link.b):
                other = link.b if link.a == newest else link.a
                links.setdefault(before[other], Link(newest, other, link.kind))
        steps.append(Step(newest, tuple(group_runs(seen, params)), tuple(links.values())))
        before = _representatives([r.run_id for r in seen], forest)
    return steps


def _representatives(run_ids: Sequence[str], links: Sequence[Link]) -> dict[str, str]:
    parent = {run: run for run in run_ids}

    def find(run: str) -> str:
        while parent[run] != run:
            parent[run] = parent[parent[run]]
            run = parent[run]
        return run

    for link in links:
        parent[find(link.a)] = find(link.b)
    return {run: find(run) for run in run_ids}
