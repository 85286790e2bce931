"""The agent-CLI runtime (docs/architecture.md §7): a run executed by the Codex CLI or
Claude Code, one process a call (``council.agents.runtimes.cli``), behind the port
(``council.agents.runtime``).

What is this runtime's own: the briefing's evidence written into each call's fresh
working directory; one deadline over the attempt's calls, kept below the lease; the
re-prompt as a new prompt (the stored one, the refused answer, the reason); the tokens
the CLI reports, priced by litellm's price map where the model has a price; each call's
trace and the evidence files it opened, recorded however the call ends. A CLI cites only
what it opened.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from council import config
from council.agents.compiler import cli_reprompt
from council.agents.pricing import price, unpriced_reason
from council.agents.runtime import Answer, Ask, Opened, Record
from council.agents.runtimes import cli
from council.agents.runtimes.registry import cli_driver
from council.agents.runtimes.trace import Trace
from council.agents.runtimes.workdir import EvidenceFile
from council.domain.profile import Profile
from council.domain.requests import StoredRequest
from council.domain.vocabulary import RuntimeName

# An agent CLI's deadline when its profile names none; it is always kept below the lease.
CLI_TIMEOUT_S = 240.0
CLI_READS = "whose file under evidence/ in your working directory you opened (open it, then cite it)"
LEASE_SHARE = 0.8


class CliRuntime:
    """An agent CLI's side of the port: one run of the CLI a call."""

    def __init__(self, name: RuntimeName) -> None:
        self.name = name

    def given(self, request: StoredRequest) -> Sequence[Opened]:
        return ()  # a CLI opens the files of its working directory: only what it opened counts

    def converse(self, ask: Ask, profile: Profile, record: Record) -> Answer:
        """Run the CLI on the stored prompt (or its re-prompt) in a fresh working directory
        holding the briefing's evidence; its trace lands in ``record`` however it ends."""
        request = ask.request
        files = request["settings"].get("evidence_files") or []
        contents = record.evidence([f["evidence_id"] for f in files])
        timeout_s = min(profile.timeout_s or CLI_TIMEOUT_S, config.run_lease_s() * LEASE_SHARE)
        deadline = record.started + timeout_s  # one deadline over the attempt's calls
        record.bill.note("runtime", profile.runtime)
        record.bill.note("simulated", False)
        prompt, call_no = request["prompt"], 1
        citable: tuple[str, ...] = ()
        if ask.reprompt is not None:
            refused = ask.reprompt.answer
            prompt = cli_reprompt(request["prompt"], refused.text, ask.reprompt.reason)
            citable, call_no = refused.citable or (), refused.round + 2
        try:
            answer = cli.call(
                request,
                profile,
                contents,
                prompt=prompt,
                call_no=call_no,
                deadline_s=max(0.1, deadline - time.monotonic()),
            )
        except (cli.CliFailed, cli.CliTimedOut, cli.CliTransient) as exc:
            if exc.trace is not None:
                record.trace(exc.trace.document())
            raise
        opened = self._opened(answer.trace, answer.opened)
        record.trace(answer.trace.document(), opened)
        tokens = _prompt_and_completion(answer.trace.usage)
        cost = price(profile.model, tokens)
        round_no = record.billed(
            tokens, cost, None if cost is not None else unpriced_reason(profile.model, tokens)
        )
        return Answer(
            answer.text, round_no, citable=(*citable, *(o["evidence_id"] for o in opened)), reads=CLI_READS
        )

    def _opened(self, trace: Trace, files: Sequence[EvidenceFile]) -> list[Opened]:
        tool = cli_driver(trace.runtime).read_tool
        return [{"evidence_id": f.evidence_id, "file": f.file, "tool": tool} for f in files]


def _prompt_and_completion(usage: dict[str, int]) -> dict[str, int]:
    """An agent CLI reports input and output tokens (its own usage report); they are
    recorded under the names API runs use too, so totals add up across runtimes, beside
    the CLI's own names."""
    tokens = dict(usage)
    for theirs, ours in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        if theirs in tokens:
            tokens[ours] = tokens[theirs]
    return tokens


CODEX = CliRuntime("codex-cli")
CLAUDE = CliRuntime("claude-code")
