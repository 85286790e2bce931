"""Council: a governed reasoning ledger with a council of LLM agents on top of it."""

__version__ = "0.1.0"
