"""Errors of the LLM boundary (docs/architecture.md §7), raised only by ``council.agents.gateway``.

Transient: the provider may answer if asked again later (rate limit, timeout,
connection, 5xx); the gateway makes one attempt, and the run's task decides
whether to try again (``council.domain.retry``, the one policy). Permanent:
asking again cannot help (missing or refused credentials, bad request, unknown
model, content policy, the offline switch); the run fails with the reason.
Messages never carry a key.
"""

from __future__ import annotations

from council.errors import CouncilError, Transient, Unreachable


class TransientLLMError(Transient):
    """The provider did not answer this time; safe to retry later."""


class UnreachableLLMError(TransientLLMError, Unreachable):
    """The provider's endpoint could not be reached: the connection was refused, or its host
    did not resolve or answer. The message names the endpoint's host and port, never a key."""


class PermanentLLMError(CouncilError):
    """The provider refused the request (or the offline switch did); retrying cannot help."""
