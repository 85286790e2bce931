"""Agent-CLI runtimes (docs/architecture.md §7): a run executed by the Codex CLI
(``codex exec``) or Claude Code (``claude -p``) instead of one litellm call.

``installed`` finds the pinned CLIs; ``workdir`` builds an attempt's fresh,
read-only working directory and isolated homes; ``process`` runs a CLI in its
own process group under a guard (``guard.py``) with a hard deadline; ``proxy``
holds the provider key for an attempt and ``sandbox`` confines the CLI
(Landlock), put together by ``confinement``; ``codex``
and ``claude`` know each CLI's flags and event stream, and ``registry`` chooses
between them once (``RuntimeKind``, ``CliDriver``: a profile's runtime name to its
description, litellm included); ``cli`` runs one call, and ``cli_runtime`` is the
CLIs' side of the runtime port (``council.agents.runtime``), which ``ports`` names for
each runtime.
"""
