"""The MCP face: outside agents (Claude Code, Codex, any MCP client) as council members."""
