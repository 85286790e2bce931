"""The profiling benchmarks name real code (docs/benchmarks.md): ``steps`` wraps functions by
attribute, and ``statements`` and ``worker-profile`` charge CPU and statements to the phase
whose function is on the stack. A function renamed or moved under them would make ``steps``
fail and, worse, quietly move the others' figures to "other"; so each name must still be
defined where the benchmark looks for it."""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

import pytest

from benchmarks import statements, steps, worker_profile

ROOT = Path(__file__).resolve().parents[2]


@cache
def functions_in(path: str) -> frozenset[str]:
    """The functions and methods defined in ``path``: the tree's, else an installed package's."""
    source = ROOT / path
    if not source.exists():
        package, _, rest = path.partition("/")
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, f"no package {package}"
        source = Path(next(iter(spec.submodule_search_locations))) / rest
    tree = ast.parse(source.read_text(encoding="utf-8"))
    return frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def stale(named: list[tuple[str, str]]) -> list[str]:
    return [f"{name} in {path}" for name, path in named if name not in functions_in(path)]


def test_every_phase_the_statements_benchmark_charges_is_a_function_where_it_says() -> None:
    assert not stale([(name, path) for name, path, _ in statements.PHASES])


def test_every_step_of_the_worker_profile_is_a_function_where_it_says() -> None:
    assert not stale([(name, path) for _, name, path in worker_profile.STEPS])


def test_every_step_the_steps_benchmark_wraps_is_there() -> None:
    missing = [
        f"{owner.__name__}.{name}" for owner, name, _ in steps.timed_steps() if not hasattr(owner, name)
    ]
    assert not missing


def test_a_stale_name_is_caught() -> None:
    # Given a name the tree no longer defines where the benchmark looked (steps wrapped
    # execution._apply until the call loops moved to run_calls), Then the check names it
    assert stale([("_apply", "council/services/execution.py")]) == ["_apply in council/services/execution.py"]
    # And a file that is gone is an error, not an empty list
    with pytest.raises(FileNotFoundError):
        stale([("apply_answer", "council/services/no_such_module.py")])
