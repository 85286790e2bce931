"""Agents: profiles, the request compiler, the output contract, the LLM gateway,
the agent-CLI runtimes (Codex CLI, Claude Code) and the simulated provider."""
