"""The HTTP face: `council serve` (FastAPI, server-sent events, the live page)."""
