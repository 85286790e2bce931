"""MCP tools that wait (`ask`): while the council's runs work, the tool sends a progress
notification (runs ended of all) every ``PROGRESS_EVERY_S``, so a client whose request
timeout resets on progress (most time out at 90–180 s otherwise) keeps waiting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.session import ServerSession
from mcp.types import CallToolResult
from pydantic import Field

from council.bootstrap import Council
from council.domain.budget import runs_per_agent
from council.domain.results.base import Result
from council.domain.vocabulary import DEFAULT_COUNCIL
from council.errors import CouncilError
from council.services.ask import Question, ask, outcome_now
from council.services.dispatch import dispatch_runs

PROGRESS_EVERY_S = 2.0
Ctx = Context[ServerSession, object, object]


def register(
    server: FastMCP,
    council: Council,
    holder: Callable[[Ctx], str],
    answer: Callable[[Callable[[], Result]], Awaitable[CallToolResult]],
    error: Callable[[CouncilError], CallToolResult],
) -> None:
    uow = council.uow

    @server.tool(name="ask")
    async def ask_tool(
        question: Annotated[str, Field(description="the question (a new thread's objective)")],
        ctx: Ctx,
        agents: Annotated[list[str] | None, Field(description="profile names")] = None,
        rounds: Annotated[
            int, Field(description="deliberative rounds after the proposing and cross-review rounds")
        ] = 2,
        thread: Annotated[str | None, Field(description="continue this thread")] = None,
        budget_usd: Annotated[float | None, Field(description="the dispatch's budget in USD")] = None,
        controls: Annotated[
            bool, Field(description="also run each deliberative run blind, as a control (never support)")
        ] = False,
        options: Annotated[
            list[str] | None,
            Field(description="LABEL=TEXT each: the question is multiple-choice, its options rivals"),
        ] = None,
        wait_s: Annotated[float, Field(description="seconds to wait for the runs", gt=0, le=3600)] = 600,
    ) -> CallToolResult:
        """Ask the council (`council ask`): a thread, then the council protocol (each agent
        proposes blind, cross-reviews blind, then deliberates). Waits for the runs, sending
        progress notifications (runs ended of all), then answers the outcome."""
        asked_question = Question(
            text=question,
            agents=tuple(agents or DEFAULT_COUNCIL),
            rounds=rounds,
            thread=thread,
            budget_usd=budget_usd,
            controls=controls,
            options=tuple(options or ()),
        )
        try:
            asked = await anyio.to_thread.run_sync(
                partial(ask, uow, council.required_scheduler(), asked_question, actor=holder(ctx))
            )
        except CouncilError as exc:
            return error(exc)
        dispatched = asked.dispatch
        total = len(asked_question.agents) * runs_per_agent(
            dispatched.rounds, controls=controls, mode=dispatched.mode
        )
        with anyio.move_on_after(wait_s):
            while True:
                runs = await anyio.to_thread.run_sync(partial(dispatch_runs, uow, asked.dispatch.dispatch_id))
                ended = sum(1 for r in runs if r.status in ("succeeded", "failed"))
                failed = sum(1 for r in runs if r.status == "failed")
                await ctx.report_progress(ended, total, f"{ended} of {total} runs ended, {failed} failed")
                if ended >= total:
                    break
                await anyio.sleep(PROGRESS_EVERY_S)
        return await answer(partial(outcome_now, uow, asked.dispatch.dispatch_id))
