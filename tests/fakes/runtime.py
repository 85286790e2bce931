"""A runtime that answers from a script, for tests of the one loop (``council.services.execution``)
without a model: it implements the runtime port (``council.agents.runtime.Runtime``) and
is type-checked against it (``[tool.mypy] modules``).

Each step of the script is the text of an answer, billed as a call that cost
``COST_USD`` before it is returned, or an exception, raised without a bill (as a
provider's refusal before it answers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from council.agents.runtime import Answer, Ask, Opened, Record, Runtime
from council.domain.profile import Profile
from council.domain.requests import StoredRequest

COST_USD = 0.25
TOKENS = {"prompt_tokens": 100, "completion_tokens": 20}


@dataclass
class ScriptedRuntime:
    script: list[str | Exception]
    asked: list[Ask] = field(default_factory=list)

    def given(self, request: StoredRequest) -> Sequence[Opened]:
        return ()

    def converse(self, ask: Ask, profile: Profile, record: Record) -> Answer:
        self.asked.append(ask)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        round_no = record.billed(TOKENS, COST_USD, None)
        return Answer(step, round_no)


_checked: Runtime = ScriptedRuntime([])  # mypy: the fake is a Runtime
