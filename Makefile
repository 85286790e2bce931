# The two commands of the README: `make demo` and `make test`.
# Both create .venv when missing and install the project with its dev extras.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# The agent CLIs the CLI runtimes drive, pinned (council/agents/runtimes/installed.py names the same
# pair), installed once from npm into a project-local, git-ignored folder.
AGENT_CLIS          := .tools/agent-clis
CODEX_VERSION       := 0.171.0
CLAUDE_CODE_VERSION := 2.1.197
AGENT_CLIS_STAMP    := $(AGENT_CLIS)/.installed-codex-$(CODEX_VERSION)-claude-code-$(CLAUDE_CODE_VERSION)

.PHONY: demo test check lint typecheck unit schema clean agent-clis agent-clis-if-npm soak test-replicated

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/council demo

# pytest-xdist workers (tests/conftest.py gives each its own databases and Redis database),
# a test file to one worker, in its order (module fixtures such as test_stack's `council up`
# are shared by its tests, which run in order); PYTEST_WORKERS=0 runs the suite in one process.
PYTEST_WORKERS ?= 3
test: $(STAMP) check agent-clis-if-npm
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=30

# The replicated ledger (tests/replicated): a primary and its synchronous standby of the tests'
# own, the primary SIGKILLed and the standby promoted; each test also runs against an asynchronous
# standby, where it must fail. Not part of `make test`; .ci/run runs it after.
test-replicated: $(STAMP)
	COUNCIL_TEST_REPLICATED=1 $(BIN)/python -m pytest -q tests/replicated

# The fault campaign as a standing test (tests/soak): SCHEDULES seeded schedules of faults against
# Council as real processes on a private Postgres and Redis, each checked from the ledger.
SCHEDULES ?= 50
SEED      ?= 1
soak: $(STAMP)
	$(BIN)/python -m tests.soak --schedules $(SCHEDULES) --seed $(SEED) $(SOAK_ARGS)

agent-clis: $(AGENT_CLIS_STAMP)

$(AGENT_CLIS_STAMP):
	@command -v npm >/dev/null || { echo "npm is not on PATH: install Node.js (npm) to get the agent CLIs" >&2; exit 1; }
	npm install --prefix $(AGENT_CLIS) --no-audit --no-fund --loglevel=error \
		@openai/codex@$(CODEX_VERSION) @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	touch $@

# `make test` installs them when it can; without npm the tests that need them skip, saying why.
agent-clis-if-npm:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory agent-clis; \
	else echo "npm not found: the tests that drive the Codex CLI and Claude Code will skip"; fi

check: lint typecheck

lint: $(STAMP)
	$(BIN)/ruff check council tests benchmarks migrations
	$(BIN)/ruff format --check council tests benchmarks migrations

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

# Regenerate schema/ from a database built by the migrations.
schema: $(STAMP)
	$(BIN)/python -m tests.migrations.schema_dump --write
	$(BIN)/python -m tests.published --write

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
