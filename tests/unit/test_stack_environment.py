"""What the stack's workers were started with, and how it drifts (issue 29 part 3,
council/stack/environment.py): `council up` restarts workers whose key variables *or
profiles* changed, and says which by name, never by value. The e2e test in
tests/e2e/test_stack.py drives a key exported after `up`; this one covers the profiles."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from council import settings as settings_module
from council.stack import environment

SECRET = "sk-drift-value-never-shown-0123456789"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(settings_module, "_installed", None)
    for name in list(os.environ):
        if name.startswith(("COUNCIL_PROFILE", "COUNCIL_SIMULATE")) or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text('[profiles.alpha]\nmodel = "openai/alpha"\n', encoding="utf-8")
    monkeypatch.setenv("COUNCIL_PROFILES", str(profiles))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    home = tmp_path / "home"
    home.mkdir()
    environment.record(home, environment.current(home))
    return home


def test_an_unchanged_environment_does_not_drift(home: Path) -> None:
    assert environment.drift(home) == []
    assert SECRET not in (home / environment.FILE).read_text()


def test_an_edited_profiles_file_drifts(home: Path, tmp_path: Path) -> None:
    # When the profiles file the workers started with is edited
    (tmp_path / "profiles.toml").write_text('[profiles.alpha]\nmodel = "openai/beta"\n', encoding="utf-8")
    # Then the drift says the profiles changed
    assert environment.drift(home) == ["the profiles (file or COUNCIL_PROFILE_* variables) changed"]


@pytest.mark.parametrize(
    ("name", "value"),
    [("COUNCIL_PROFILE_CLAUDE_MODEL", "openai/other"), ("COUNCIL_SIMULATE", "always")],
)
def test_a_profile_variable_set_after_the_start_drifts(
    home: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert environment.drift(home) == ["the profiles (file or COUNCIL_PROFILE_* variables) changed"]


def test_keys_drift_by_name_and_never_show_their_values(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # When one key is gone and another is set
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("ZAI_API_KEY", SECRET + "-zai")
    changes = environment.drift(home)
    # Then both are named, and no value appears
    assert changes == [
        "set now, not when the workers started: ZAI_API_KEY",
        "set when the workers started, not now: OPENAI_API_KEY",
    ]
    assert SECRET not in json.dumps(changes)
