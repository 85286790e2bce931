"""What one attempt of a run records as its runtime converses, and the write of its answer
(docs/architecture.md §7): the attempt's side of the runtime port (``council.agents.runtime``)
for the one loop of ``council.services.execution``.

Every call the provider answered is added to the run's :class:`~council.domain.bill.Bill`
as it returns, before its answer is read, so whatever ends the attempt — an answer
applied, invalid output after the re-prompt, a provider's refusal or a transient error
after a tool round — the loop still holds what was billed, and stores it with the run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from uuid import UUID

from council.agents.runtime import FencedOut, Opened
from council.domain.agent_output import AgentOutput
from council.domain.bill import Bill
from council.domain.output_check import References, references
from council.domain.results.runs import Applied
from council.errors import BadInput
from council.ledger.run_rows import ClaimedRun, RoundEnd
from council.services.in_tx.output import apply_checked
from council.services.in_tx.round_opening import open_at_close
from council.services.ports import UnitOfWork
from council.services.run_answers import keep_answer, kept_if_refused


@dataclass
class AttemptRecord:
    """The ``Record`` of one claimed attempt: what its calls were billed (carried from
    earlier attempts), the answers kept, the evidence read (recorded at once, fenced) and
    the traces and files an agent CLI opened (stored with the attempt's end, however it ends)."""

    uow: UnitOfWork
    run: ClaimedRun
    bill: Bill
    traces: list[dict[str, object]] = field(default_factory=list)
    opened: list[Opened] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self._calls_before = self.bill.calls  # an earlier attempt's calls keep their own numbering
        self._texts: dict[str, str] | None = None

    def billed(
        self, tokens: Mapping[str, object] | None, cost_usd: float | None, unpriced: str | None
    ) -> int:
        self.bill.add(tokens, cost_usd, unpriced)
        return self.bill.calls - 1 - self._calls_before

    def keep(self, round_no: int, text: str) -> None:
        keep_answer(self.uow, self.run.id, self.run.attempt, round_no, text)

    def evidence(self, ids: Sequence[str]) -> Mapping[str, str]:
        if self._texts is None:  # read once an attempt: a re-prompt's call gets the same files
            with self.uow() as tx:
                self._texts = dict(tx.evidence.contents(list(ids)))
        return {e: self._texts[e] for e in ids if e in self._texts}

    def read(self, ids: Sequence[str], tool: str) -> Mapping[str, str]:
        with self.uow() as tx:
            if tx.runs.fence(self.run.id, self.run.attempt) is None:
                raise FencedOut(f"run {self.run.id}: attempt {self.run.attempt} no longer owns it")
            texts = tx.evidence.contents(list(ids))
            opened: list[Opened] = [
                {"evidence_id": e, "file": "tool", "tool": tool} for e in ids if e in texts
            ]
            tx.traces.record(self.run.id, self.run.attempt, [], stored(opened))
        return texts

    def trace(self, trace: Mapping[str, object], opened: Sequence[Opened] = ()) -> None:
        self.traces.append(dict(trace))
        self.opened += opened


def stored(opened: Sequence[Opened]) -> list[dict[str, str]]:
    """Opened evidence as the traces store takes it."""
    return [{"evidence_id": o["evidence_id"], "file": o["file"], "tool": o["tool"]} for o in opened]


def apply_answer(
    uow: UnitOfWork,
    run_id: UUID,
    attempt: int,
    output: AgentOutput,
    *,
    bill: Bill,
    record: AttemptRecord | None = None,
    answer: tuple[int, str] | None = None,
    claimed: ClaimedRun | None = None,
) -> tuple[Applied, RoundEnd | None] | None:
    """Check and apply the output, lint its prose and close the run (with what it was
    billed, and an agent CLI's traces), in one transaction; None for a fenced-out attempt.
    An invalid output raises BadInput and nothing is written (the caller may re-prompt).
    ``answer`` (its round and text) is kept by the same transaction, first, whether or
    not the attempt is fenced out; when the transaction rolls back, in one of its own.
    With what was written, what the run's end found of its round; when it closed it and
    ``claimed`` (the run as claimed) says a next round follows with nothing to decide
    first, the same transaction opens it (:func:`council.services.rounds.open_at_close`)."""
    kept = kept_if_refused(uow, run_id, attempt, answer) if answer is not None else nullcontext()
    usage, cost_usd = bill.stored()
    try:  # what the check will read, read by the statement that fences the run
        refs: References | None = references(output)
    except (BadInput, ValueError):  # the check refuses it, once the run is fenced, as before
        refs = None
    with kept, uow() as tx:
        ended = tx.runs.end(
            run_id,
            attempt,
            answer=answer,
            versions=refs.claimed_versions if refs is not None else (),
            evidence=refs.evidence if refs is not None else (),
        )
        run = ended.run
        if run is None:
            return None
        if record is not None:
            tx.traces.record(run_id, attempt, record.traces, stored(record.opened))
        applied, round_end = apply_checked(
            tx,
            run,
            attempt,
            output,
            actor=f"run:{run['agent']}",
            usage=usage,
            cost_usd=cost_usd,
            facts=ended.facts if refs is not None else None,
        )
        if claimed is not None:
            round_end = open_at_close(tx, claimed, round_end)
        return applied, round_end
