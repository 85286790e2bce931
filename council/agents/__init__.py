"""Agents: profiles, the request compiler, the output contract, the LLM gateway
and the simulated provider."""
