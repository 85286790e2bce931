"""The one write path of every run's output, a worker's or an outside agent's, inside
the transaction that fenced the run: lint the prose, check and write, end the run."""

from __future__ import annotations

from typing import Any

from council.domain.agent_output import AgentOutput
from council.domain.results.runs import Applied
from council.ledger.run_phases import CheckFacts, DeferredClaims
from council.ledger.run_rows import RoundEnd
from council.services.in_tx.lint import lint_prose
from council.services.ports import Tx


def apply_checked(
    tx: Tx,
    run: Any,
    attempt: int,
    output: AgentOutput,
    *,
    actor: str,
    usage: dict[str, object] | None = None,
    cost_usd: float | None = None,
    facts: CheckFacts | None = None,
) -> tuple[Applied, RoundEnd | None]:
    """Inside the transaction that fenced ``run`` (its row) on ``attempt``: lint
    the output's prose, check and write it, and end the run succeeded. The one
    write path of every run's output, a worker's or an outside agent's. ``facts``: what the
    output check needs, read by the call that fenced the run (``council_end_run_v2``).
    With what was written, what the run's end found of its round (a run of a dispatch)."""
    findings = [
        f.json_document() for f in lint_prose(tx, run["thread_id"], _prose(output))
    ]  # before its writes
    later: list[dict[str, object]] = []  # its output_applied event, appended with the run's end
    deferred = DeferredClaims()  # its claims and citations, inserted by the run's end
    applied = tx.outputs.apply(run, output, actor=actor, later=later, facts=facts, deferred=deferred)
    round_end = tx.runs.finish(
        run,
        attempt,
        status="succeeded",
        usage=usage,
        cost_usd=cost_usd,
        lint_findings=findings,
        event_payload={"lint_findings": len(findings)},
        events_before=later,
        deferred=deferred,
    )
    return applied.model_copy(update={"lint_findings": len(findings)}), round_end


def _prose(output: AgentOutput) -> str:
    """What of an answer the epistemic-word check reads: its summary and rationales."""
    parts = [output.summary, *(c.rationale for c in output.claims), *(v.rationale for v in output.votes)]
    return "\n\n".join(p for p in parts if p)
