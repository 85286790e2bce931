"""Following a dispatch in the terminal: its runs, and the independence groups
forming on the nodes they claim on, refreshed from the ledger until done.

When a round ends, the groups its runs (and earlier rounds') form are printed
once: computed over exactly those runs, so a later round that has already
landed does not blur them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any
from uuid import UUID

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from council.bootstrap import UnitOfWork
from council.domain.terminal import inert, without_controls
from council.domain.vocabulary import TERMINAL_RUN_STATUSES
from council.errors import CouncilError
from council.services.consolidation import groups_among
from council.services.dispatch import dispatch_runs

TERMINAL = TERMINAL_RUN_STATUSES

POLL_S = 0.5
_COLOURS = {"succeeded": "green", "failed": "red", "running": "cyan", "queued": "yellow"}


class StepFailed(CouncilError):
    """A demo step did not reach what it waits for."""


Done = Callable[[list[dict[str, Any]]], bool]
# The nodes to show groups for, by name: fixed, or found as the runs make them (a council's
# propositions are made by its proposing round).
Nodes = Mapping[str, UUID] | Callable[[], Mapping[str, UUID]]


def finished(runs: list[dict[str, Any]], expected: int) -> bool:
    return len(runs) == expected and all(r["status"] in TERMINAL for r in runs)


class Watcher:
    """Names runs ``agent r<round>``; ``rounds`` keeps, per node name and round,
    the support and dispute group counts printed when that round ended."""

    def __init__(self, uow: UnitOfWork, out: Console) -> None:
        self.uow = uow
        self.out = out
        self.labels: dict[str, str] = {}
        self.rounds: dict[str, dict[int, dict[str, int]]] = {}

    def follow(
        self, title: str, dispatch_id: UUID, named: Nodes, done: Done, timeout_s: float
    ) -> list[dict[str, Any]]:
        """Refresh until ``done(runs)``; StepFailed after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        reported: set[int] = set()
        with Live(console=self.out, refresh_per_second=4, transient=False) as live:
            while True:
                runs = [r.json_document() for r in dispatch_runs(self.uow, dispatch_id)]
                nodes = named() if callable(named) else named
                for run in runs:
                    self.labels[str(run["id"])] = without_controls(f"{run['agent']} r{run['round']}")
                for round_no in sorted({r["round"] for r in runs} - reported):
                    if all(r["status"] in TERMINAL for r in runs if r["round"] == round_no):
                        reported.add(round_no)
                        upto = {str(r["id"]) for r in runs if r["round"] <= round_no}
                        for name, version in nodes.items():
                            live.console.print(self.groups_line(name, version, upto, round_no))
                live.update(self._render(title, runs, nodes))
                if done(runs):
                    break
                if time.monotonic() > deadline:
                    raise StepFailed(f"{title}: not done within {timeout_s:g} s")
                time.sleep(POLL_S)
        if not self.out.is_terminal:
            self.out.line()  # a non-interactive Live leaves its last line open
        return runs

    def groups_line(
        self, name: str, version_id: UUID, runs: Collection[str] | None = None, round_no: int | None = None
    ) -> Text:
        """The groups among ``runs`` (default: every run that claimed on the version)."""
        found = groups_among(self.uow, version_id, runs)
        counts = {kind: sum(1 for g in found if g.kind == kind) for kind in ("support", "dispute")}
        if round_no is not None:
            self.rounds.setdefault(name, {})[round_no] = counts
        line = Text(f"{name}" + (f" after round {round_no}" if round_no else "") + ": ", style="bold")
        if not found:
            return line.append("no claims", style="dim")
        line.append(f"{counts['support']} independent support, {counts['dispute']} dispute group(s)  ")
        for group in found:
            members = ", ".join(sorted(self.labels.get(r, r[:8]) for r in group.runs))
            line.append(f"{group.kind} [{members}] ", style="green" if group.kind == "support" else "red")
        return line

    def _render(self, title: str, runs: list[dict[str, Any]], nodes: Mapping[str, UUID]) -> Group:
        done = sum(1 for r in runs if r["status"] in TERMINAL)
        table = Table(title=f"{title}: {done}/{len(runs)} runs finished", title_justify="left")
        for column in ("round", "agent", "status", "attempt", "run"):
            table.add_column(column)
        for run in runs:
            status = f"[{_COLOURS.get(run['status'], 'white')}]{run['status']}[/]"
            agent = inert(run["agent"]) + (" (simulated)" if run["simulated"] else "")
            table.add_row(str(run["round"]), agent, status, str(run["attempt"]), str(run["id"])[:8])
        return Group(table, *(self.groups_line(name, version) for name, version in nodes.items()))
