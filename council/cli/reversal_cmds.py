"""`council evidence challenge | invalidate | reaffirm` and `council retraction …`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from council.cli.common import JsonOpt, actor, council, record, uow
from council.cli.output import console, emit, inert, returns

retraction_app = typer.Typer(help="Propose, vote on and adjudicate retractions.", no_args_is_help=True)

Reason = Annotated[str, typer.Option("--reason", help="Why (recorded with the transition).")]


def _validity(action: str, evidence_id: str, reason: str, as_json: bool) -> None:
    from council.services.reversal import change_validity

    wired = council()
    result = change_validity(
        wired.uow, wired.scheduler(), evidence_id, action=action, reason=reason, actor=actor()
    )

    def render(data: dict[str, Any]) -> None:
        console.print(f"evidence {inert(data['id'])} is now [bold]{inert(data['validity'])}[/]")
        for item in data["affected"]:
            material = {True: "material", False: "immaterial", None: ""}[item["material"]]
            console.print(
                f"  consolidation {inert(item['consolidation_id'])}: "
                f"memory {inert(item['memory_status'])} {material}"
            )
        for proposal in data["proposals"]:
            console.print(f"  retraction proposal opened: {inert(proposal)}")
        cascade = data["cascade"]
        console.print(
            f"  cascade: {cascade['reached']} dependent(s) reached, {cascade['marked_provisional']} marked "
            f"provisional" + (", continuation queued" if cascade["continuation_queued"] else "")
        )

    emit(result, as_json, render)


def register(app: typer.Typer, evidence_app: typer.Typer) -> None:
    @evidence_app.command("challenge")
    @returns("council.domain.results.reversal:ValidityChanged")
    def challenge(evidence_id: str, reason: Reason, as_json: JsonOpt = False) -> None:
        """Challenge evidence: memory resting on it becomes provisional."""
        _validity("challenge", evidence_id, reason, as_json)

    @evidence_app.command("invalidate")
    @returns("council.domain.results.reversal:ValidityChanged")
    def invalidate(evidence_id: str, reason: Reason, as_json: JsonOpt = False) -> None:
        """Invalidate evidence: material consolidations become contested and a proposal opens."""
        _validity("invalidate", evidence_id, reason, as_json)

    @evidence_app.command("reaffirm")
    @returns("council.domain.results.reversal:ValidityChanged")
    def reaffirm(evidence_id: str, reason: Reason, as_json: JsonOpt = False) -> None:
        """Reaffirm challenged evidence: provisional memory resting on it becomes stable again."""
        _validity("reaffirm", evidence_id, reason, as_json)

    app.add_typer(retraction_app, name="retraction")


@retraction_app.command("propose")
@returns("council.domain.results.retraction:Proposal")
def propose_cmd(
    consolidation: Annotated[str, typer.Option("--consolidation", help="Consolidation id.")],
    reason: Reason,
    as_json: JsonOpt = False,
) -> None:
    """Open a retraction proposal (pins the rule set and grouping version now in force)."""
    from council.services.retraction import propose_retraction

    result = propose_retraction(uow(), consolidation, reason=reason, actor=actor())
    emit(
        result,
        as_json,
        record(
            "retraction proposal",
            ["id", "consolidation_id", "status", "rule_set_id", "grouping_algorithm_id"],
        ),
    )


@retraction_app.command("vote")
@returns("council.domain.results.retraction:Vote")
def vote_cmd(
    proposal: Annotated[str, typer.Option("--proposal", help="Proposal id.")],
    run: Annotated[str, typer.Option("--run", help="The voting run.")],
    vote: Annotated[str, typer.Option("--vote", help="endorse (retract), dispute (keep) or abstain.")],
    confidence: Annotated[float | None, typer.Option("--confidence")] = None,
    rationale: Annotated[str, typer.Option("--rationale")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Record a run's vote on a retraction proposal."""
    from council.services.retraction import vote as cast

    result = cast(
        uow(),
        proposal,
        run,
        choice=vote,
        confidence=confidence,
        rationale=rationale,
        actor=actor(),
    )
    emit(result, as_json, record("vote", ["id", "proposal_id", "run_id", "vote", "confidence"]))


@retraction_app.command("adjudicate")
@returns("council.domain.results.retraction:Adjudicated")
def adjudicate_cmd(
    proposal: Annotated[str, typer.Option("--proposal", help="Proposal id.")],
    restore: Annotated[
        bool, typer.Option("--restore", help="Undo the retraction this proposal decided (needs --reason).")
    ] = False,
    reason: Annotated[str, typer.Option("--reason", help="Why (with --restore).")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Apply the proposal's pinned rules to its independent vote groups (or --restore a retraction)."""
    from council.services.retraction import adjudicate

    result = adjudicate(uow(), proposal, actor=actor(), restore=restore, reason=reason)
    emit(result, as_json, _adjudication)


def _adjudication(data: dict[str, Any]) -> None:
    proposal, outcome = inert(data["proposal_id"]), inert(data["outcome"])
    if data["already_adjudicated"]:
        console.print(
            f"proposal {proposal} was already decided: [bold]{outcome}[/] (nothing changed; "
            "a decided proposal is not adjudicated again)"
        )
        return
    if data["restored_retraction"]:
        console.print(
            f"proposal {proposal}: retraction undone — consolidation {inert(data['consolidation_id'])} "
            "is [bold]live[/] again and its memory stable"
        )
        return
    tally = (
        f"{data['retract_groups']} independent group(s) to retract, {data['keep_groups']} to keep, "
        f"{data['required']} required"
    )
    if outcome == "pending":
        console.print(f"proposal {proposal} stays [bold]open[/]: {tally}")
    else:
        console.print(f"proposal {proposal}: [bold]{outcome}[/] ({tally})")
    for group in data["groups"] or []:
        side = {"support": "retract", "dispute": "keep"}.get(group["kind"], group["kind"])
        runs = ", ".join(str(r)[:8] for r in group["runs"])
        providers = inert(", ".join(group["providers"]))
        console.print(f"  {inert(side):<8} group {inert(str(group['id'])[:12])}: {inert(runs)} ({providers})")
    for rival in data.get("rivals_due") or []:  # blocked by the retracted consolidation until now
        console.print(
            f"  rival {inert(str(rival)[:8])} unblocked: council consolidate --node {inert(str(rival))}"
        )
