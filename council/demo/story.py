"""The demo's steps, through the real services and the stack's Celery workers.

1. Open a thread: the question and the one evidence item it then holds.
2. The council protocol, blind: claude, codex and glm each propose their own answer in their
   own words (round 1), then each judges the others' propositions, shown without author or
   stance (round 2, the cross-review); the commit worker consolidates what independent
   agents' blind runs support — the answer.
3. Deliberative rounds on a follow-up proposition (kept open by a pending load test): round 2
   is shown round 1's stances, so their groups merge.
4. The decisive evidence is invalidated: the consolidations resting on it are contested and
   retraction proposals open. The council reviews them and each proposal is adjudicated.
5. The reentry packet: what a later session resumes from.

With the simulated provider this is deterministic: each agent holds a view drawn from its
temperament and the question (on this question all three answer yes, in three wordings),
and cites the only evidence the thread holds when it answers, so that one item decides it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from rich.console import Console

from council.bootstrap import Scheduler, UnitOfWork
from council.demo import scenario
from council.demo.live import StepFailed, Watcher, finished
from council.domain.commands import NewAction, NewNode, same_reading
from council.domain.reentry_markdown import FetchHint, render_markdown
from council.domain.terminal import inert, without_controls
from council.domain.vocabulary import DEFAULT_COUNCIL
from council.errors import CouncilError
from council.services.ask import outcome, pending_consolidation
from council.services.claims import add_action
from council.services.consolidation import history, replay, show_consolidation
from council.services.dispatch import dispatch, dispatch_runs
from council.services.evidence import EvidenceInput, add_evidence
from council.services.learning import stances
from council.services.nodes import add_node, show_node
from council.services.reentry import reentry_packet
from council.services.retraction import adjudicate
from council.services.reversal import change_validity
from council.services.threads import create_thread, list_events, thread_graph

AGENTS = DEFAULT_COUNCIL
ACTOR = "demo"


class Story:
    def __init__(
        self, uow: UnitOfWork, scheduler: Scheduler, out: Console, *, timeout_s: float, hint: FetchHint
    ) -> None:
        self.uow = uow
        self.hint = hint
        self.scheduler = scheduler
        self.out = out
        self.timeout_s = timeout_s
        self.watcher = Watcher(uow, out)
        self.steps: list[dict[str, Any]] = []
        self.summary: dict[str, Any] = dict.fromkeys(
            ("thread_id", "page_url", "consolidation", "invalidation", "retraction", "reentry_markdown")
        )
        self.summary.update(node_version_ids={}, dispatches=[])

    def run(self, page_url: Callable[[UUID], str | None]) -> dict[str, Any]:
        """Every step in order; stops at the first that fails. Returns the summary."""
        begun = time.monotonic()
        try:
            with self.step("open the thread"):
                self.open_thread()
            with self.step("the council proposes and cross-reviews, blind"):
                answer = self.council_rounds()
            with self.step("deliberative rounds"):
                self.deliberate(answer)
            if url := page_url(self.summary["thread_id"]):
                self.out.print(f"[bold]live page:[/] {url}")
                self.summary["page_url"] = url
            with self.step("invalidate the decisive evidence"):
                proposals = self.invalidate(UUID(str(self.summary["consolidation"]["id"])))
            with self.step("review vote and adjudication"):
                self.review(proposals)
            with self.step("reentry packet"):
                self.reentry()
        except CouncilError:
            pass  # recorded by step(); the summary says which step failed
        for entry in self.summary["dispatches"]:
            entry["runs"] = [
                {k: r[k] for k in ("id", "agent", "round", "status", "simulated")}
                for r in (run.json_document() for run in dispatch_runs(self.uow, entry["id"]))
            ]
        self.summary.update(
            ok=all(s["ok"] for s in self.steps),
            groups_by_round=self.watcher.rounds,
            steps=self.steps,
            elapsed_s=round(time.monotonic() - begun, 1),
        )
        return self.summary

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.out.rule(name)
        started = time.monotonic()
        record: dict[str, Any] = {"name": name, "ok": False, "error": None}
        self.steps.append(record)
        try:
            yield
        except CouncilError as exc:
            record["error"] = str(exc)
            self.out.print(f"[red]✗ {inert(name)}:[/] {inert(exc)}")
            raise
        finally:
            record["seconds"] = round(time.monotonic() - started, 1)
        record["ok"] = True

    def open_thread(self) -> None:
        tid = create_thread(self.uow, title=scenario.TITLE, objective=scenario.OBJECTIVE, actor=ACTOR).id
        stamp = str(tid)[:8]
        given = EvidenceInput(text=scenario.DECISIVE.body.format(stamp=stamp), title=scenario.DECISIVE.title)
        decisive = add_evidence(self.uow, tid, given, actor=ACTOR).id
        self.out.print(f"thread {tid}: {scenario.OBJECTIVE}")
        self.out.print(f"evidence: {scenario.DECISIVE.title}")
        self.summary.update(
            thread_id=tid, question=scenario.OBJECTIVE, evidence_ids=[decisive], decisive_evidence_id=decisive
        )

    def council_rounds(self) -> UUID:
        """Round 1 proposes, round 2 cross-reviews, both blind; wait for the runs, then for
        the commit worker's decisions; the answer is the consolidated proposition the
        council's outcome leads with."""
        tid = self.summary["thread_id"]
        created = self._dispatch("council", 0)
        runs = self.watcher.follow(
            "propose, then cross-review (blind)",
            created,
            lambda: self._propositions(created),
            lambda found: (
                finished(found, 2 * len(AGENTS))
                and (_any_failed(found) or pending_consolidation(self.uow, tid) == 0)
            ),
            self.timeout_s,
        )
        _require_succeeded(runs)
        answer = outcome(self.uow, tid, created, settled=True).answer
        if not answer.established or answer.version_id is None:
            raise StepFailed("the council established no answer in its blind rounds")
        for name, version in self._propositions(created).items():
            shown = show_node(self.uow, version)
            mark = "[green]consolidated[/]" if version in self._consolidated() else "open"
            self.out.print(f"{inert(name)} {str(version)[:8]} ({mark}): “{inert(shown.content)}”")
        [live] = [c.json_document() for c in history(self.uow, answer.version_id).consolidations
                  if c.status == "live"]  # fmt: skip
        shown_live = show_consolidation(self.uow, live["id"]).json_document()
        support = [g for g in shown_live["decision"]["groups"] if g["kind"] == "support"]
        providers = ", ".join(sorted({p for g in support for p in g["providers"]}))
        committed = [
            e
            for e in list_events(self.uow, tid).json_document()["items"]
            if e["kind"] == "consolidation.committed" and e["subject_id"] == str(live["id"])
        ]
        by = inert(committed[0]["actor"])
        self.out.print(
            f"[green]answer[/] {str(answer.version_id)[:8]}, consolidated by {by} on {len(support)} "
            f"independent support groups ({inert(providers)}): its author's blind proposal and the "
            "others' blind cross-review endorsements; none of them was shown another's stance"
        )
        self.summary["node_version_ids"]["answer"] = answer.version_id
        self.summary["consolidation"] = {
            "id": live["id"],
            "node_version_id": answer.version_id,
            "content": answer.content,
            "committed_by": committed[0]["actor"],
            "support_groups": len(support),
            "evidence_ids": shown_live["evidence_ids"],
            "replay_match": replay(self.uow, live["id"]).match,
        }
        return UUID(str(answer.version_id))

    def _propositions(self, dispatch_id: UUID) -> dict[str, UUID]:
        """Each agent's own proposition, made by its run of the proposing round."""
        made = {r.id: r.agent for r in dispatch_runs(self.uow, dispatch_id) if r.round == 1}
        graph = thread_graph(self.uow, self.summary["thread_id"])
        return {
            f"{made[v.created_by_run_id]}'s proposition": v.version_id
            for node in graph.nodes
            for v in node.versions
            if v.created_by_run_id in made
        }

    def _consolidated(self) -> set[UUID]:
        graph = thread_graph(self.uow, self.summary["thread_id"])
        return {c.node_version_id for c in graph.consolidations if c.status == "live"}

    def deliberate(self, answer: UUID) -> None:
        tid = self.summary["thread_id"]
        stamp = str(tid)[:8]
        context = [
            add_evidence(
                self.uow,
                tid,
                EvidenceInput(text=item.body.format(stamp=stamp), title=item.title),
                actor=ACTOR,
            ).id
            for item in scenario.CONTEXT
        ]
        self.summary["evidence_ids"] += context
        follow_up = add_node(
            self.uow,
            NewNode(
                thread=tid,
                content=scenario.FOLLOW_UP,
                edges=(("depends_on", answer),),
                cites=same_reading(context, "context", scenario.FOLLOW_UP_READING),
            ),
            actor=ACTOR,
        ).version_id
        add_action(
            self.uow,
            NewAction(
                thread=tid,
                description=scenario.ACTION,
                acceptance_condition=scenario.ACCEPTANCE,
                version=follow_up,
            ),
            actor=ACTOR,
        )
        self.summary["node_version_ids"]["follow_up"] = follow_up
        self.out.print(f"evidence: {', '.join(i.title for i in scenario.CONTEXT)}")
        self.out.print(f"follow-up {str(follow_up)[:8]}: “{scenario.FOLLOW_UP}”, awaiting: {scenario.ACTION}")
        created = self._dispatch("deliberative", 2)
        runs = self.watcher.follow(
            "deliberative rounds",
            created,
            {"follow-up": follow_up},
            lambda found: finished(found, 2 * len(AGENTS)),
            self.timeout_s,
        )
        _require_succeeded(runs)
        self.out.print(
            "round 2 was shown round 1's stances (recorded exposures), so its runs joined their groups: "
            "agreement after deliberation is inherited, not independent"
        )
        moved = {k: n for k, n in stances(self.uow, self.summary["thread_id"]).counts.items() if n}
        self.out.print(
            "stance changes (`council stances`): "
            + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in moved.items())
        )

    def invalidate(self, consolidation_id: UUID) -> list[UUID]:
        decisive = self.summary["decisive_evidence_id"]
        changed = change_validity(
            self.uow,
            self.scheduler,
            decisive,
            action="invalidate",
            reason=scenario.INVALIDATION,
            actor=ACTOR,
        ).json_document()
        mine = [a for a in changed["affected"] if str(a["consolidation_id"]) == str(consolidation_id)]
        if not mine or mine[0]["proposal_id"] is None:
            raise StepFailed(f"invalidating {decisive} opened no retraction proposal for {consolidation_id}")
        for item in changed["affected"]:
            self.out.print(
                f"consolidation {item['consolidation_id']}: memory [bold]{inert(item['memory_status'])}[/]"
                + (f", retraction proposal {item['proposal_id']} opened" if item["proposal_id"] else "")
            )
        self.summary["invalidation"] = {
            "evidence_id": decisive,
            "reason": scenario.INVALIDATION,
            "memory_status": mine[0]["memory_status"],
            "proposal_id": mine[0]["proposal_id"],
            "proposals": changed["proposals"],
        }
        return [UUID(str(p)) for p in changed["proposals"]]

    def review(self, proposals: Sequence[UUID]) -> None:
        """Review every proposal the invalidation opened; the decisive one must be retracted."""
        outcomes: dict[str, Any] = {}
        for proposal in proposals:
            created = self._dispatch("review", 1, proposal_id=proposal)
            runs = self.watcher.follow(
                f"review of {str(proposal)[:8]}",
                created,
                {},
                lambda f: finished(f, len(AGENTS)),
                self.timeout_s,
            )
            _require_succeeded(runs)
            adjudicated = adjudicate(self.uow, proposal, actor=ACTOR)
            outcomes[str(proposal)] = adjudicated.outcome
            self.out.print(f"proposal {proposal}: [bold]{adjudicated.outcome}[/]")
        mine = str(self.summary["invalidation"]["proposal_id"])
        self.summary["retraction"] = {"proposal_id": mine, "outcome": outcomes[mine], "all": outcomes}
        if outcomes[mine] != "retracted":
            raise StepFailed(f"proposal {mine} was adjudicated {outcomes[mine]}, not retracted")

    def reentry(self) -> None:
        markdown = render_markdown(reentry_packet(self.uow, self.summary["thread_id"]), self.hint)
        self.out.print(without_controls(markdown), markup=False, highlight=False)
        self.summary["reentry_markdown"] = markdown

    def _dispatch(self, mode: str, rounds: int, proposal_id: UUID | None = None) -> UUID:
        """A dispatch of the demo's agents; ``rounds`` as ``--rounds`` counts them (a council's:
        its deliberative rounds)."""
        created = dispatch(
            self.uow,
            self.scheduler,
            self.summary["thread_id"],
            AGENTS,
            mode=mode,
            rounds=rounds,
            actor=ACTOR,
            proposal=proposal_id,
        )
        self.summary["dispatches"].append({"id": created.dispatch_id, "mode": mode, "rounds": created.rounds})
        return created.dispatch_id


def _any_failed(runs: list[dict[str, Any]]) -> bool:
    return any(r["status"] == "failed" for r in runs)


def _require_succeeded(runs: list[dict[str, Any]]) -> None:
    failed = [f"{r['agent']} r{r['round']}: {r['error']}" for r in runs if r["status"] != "succeeded"]
    if failed:
        raise StepFailed("runs failed: " + "; ".join(failed))
