"""In-library fakes for tests: a local OpenAI-compatible HTTP server, a local web site."""
