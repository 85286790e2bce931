"""Watching groups form (docs/architecture.md §3, §8): each claim of a thread with
its node version's groups as they were at that claim and the links by which
the claiming run joined earlier runs — computed from the stored records, not
the state at print time (`council watch`, the live page). A claim event whose payload
does not fit its kind (from before the database checked it) is left out and named."""

from __future__ import annotations

from uuid import UUID

from council.domain.commands import IdRef
from council.domain.event_shapes import problem
from council.domain.formation import formation as steps_of
from council.domain.independence import GroupingParams, RunFacts
from council.domain.results.consolidation import GroupShape
from council.domain.results.events import Event, Formation, FormationLink, FormationStep, SkippedEvent
from council.domain.rules import group_dict, run_facts
from council.services.ports import UnitOfWork


def formation(uow: UnitOfWork, thread: IdRef, *, after: int = 0) -> Formation:
    """The steps of the claims recorded after event ``after`` (all claims: 0)."""
    with uow() as tx:
        thread_id = tx.resolve("thread", thread)
        tx.threads.get(thread_id)
        claimed = [e for e in tx.events.of_thread(thread_id, after=after) if e.kind == "claim.added"]
        fresh, skipped = _well_formed(claimed)
        versions = sorted({str(e.payload["node_version_id"]) for e in fresh})
        ordered = _well_formed(tx.events.claims_on(thread_id, versions))[0] if versions else []
        snapshots = {v: tx.consolidations.current_snapshot(UUID(v)) for v in versions}
    wanted = {e.id for e in fresh}
    steps: list[FormationStep] = []
    for version in versions:
        snapshot = snapshots[version]
        facts: dict[str, RunFacts] = dict(
            zip((c["id"] for c in snapshot["claims"]), run_facts(snapshot), strict=True)
        )
        claims = {c["id"]: c for c in snapshot["claims"]}
        runs = {r["id"]: r for r in snapshot["runs"]}
        events = [
            e for e in ordered if str(e.payload["node_version_id"]) == version and e.subject_id in facts
        ]
        params = GroupingParams.from_record(snapshot["grouping"]["params"])
        for event, step in zip(
            events, steps_of([facts[str(e.subject_id)] for e in events], params), strict=True
        ):
            if event.id not in wanted:
                continue
            claim, run = claims[str(event.subject_id)], runs[step.run_id]
            steps.append(
                FormationStep(
                    event_id=event.id,
                    claim_id=claim["id"],
                    node_version_id=version,
                    run_id=step.run_id,
                    agent=run["agent"],
                    provider=run["provider"],
                    stance=claim["type"],
                    confidence=float(claim["confidence"]),
                    groups=[GroupShape(**group_dict(g)) for g in step.groups],
                    run_agents={r: runs[r]["agent"] for g in step.groups for r in g.component_runs},
                    links=[
                        FormationLink(kind=link.kind, run_id=link.b, agent=runs[link.b]["agent"])
                        for link in step.links
                    ],
                )
            )
    steps.sort(key=lambda s: s.event_id)
    return Formation(thread_id=thread_id, steps=steps, skipped=skipped)


def _well_formed(events: list[Event]) -> tuple[list[Event], list[SkippedEvent]]:
    """The events whose payload fits their kind, and the others, named with the reason
    (an event from before the database checked it: council/domain/event_shapes.py)."""
    kept: list[Event] = []
    skipped: list[SkippedEvent] = []
    for event in events:
        why = problem(event.kind, event.payload)
        if why is None:
            kept.append(event)
        else:
            skipped.append(SkippedEvent(event_id=event.id, kind=event.kind, reason=why))
    return kept, skipped
