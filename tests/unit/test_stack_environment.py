"""What the stack's workers were started with, and how it drifts (issue 29 part 3, issue 45;
council/stack/environment.py): `council up` restarts, and `council status` advises
restarting, workers only when a key a profile names is set now but was not when they
started; changed profiles (pinned where a dispatch is made) and a key the workers hold
but this shell does not are noted, with no restart. Keys are named, never shown. The e2e
test in tests/e2e/test_stack.py drives a key exported after `up`."""

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


def test_an_edited_profiles_file_is_noted_and_needs_no_restart(home: Path, tmp_path: Path) -> None:
    # When the profiles file the workers started with is edited
    (tmp_path / "profiles.toml").write_text('[profiles.alpha]\nmodel = "openai/beta"\n', encoding="utf-8")
    # Then no restart is called for (a dispatch pins the new profile itself), and it is noted
    assert environment.drift(home) == []
    [note] = environment.notes(home)
    assert note.startswith("the profiles (file or COUNCIL_PROFILE_* variables) changed: ")


@pytest.mark.parametrize(
    ("name", "value"),
    [("COUNCIL_PROFILE_CLAUDE_MODEL", "openai/other"), ("COUNCIL_SIMULATE", "always")],
)
def test_a_profile_variable_set_after_the_start_is_noted(
    home: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert environment.drift(home) == []
    assert environment.notes(home)[0].startswith("the profiles (file or COUNCIL_PROFILE_* variables) changed")


def test_a_key_a_profile_names_set_after_the_start_calls_for_a_restart_by_name(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # When one key is gone and two are set: one a profile names, one no profile names
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("ZAI_API_KEY", SECRET + "-zai")
    monkeypatch.setenv("GITHUB_API_TOKEN", SECRET + "-gh")
    used = {"OPENAI_API_KEY", "ZAI_API_KEY"}
    # Then only the key a profile names and the workers lack calls for a restart
    assert environment.drift(home, used) == ["set now, not when the workers started: ZAI_API_KEY"]
    # And the others are noted, needing none
    assert environment.notes(home, used) == [
        "set when the workers started, not now (they can still use it): OPENAI_API_KEY",
        "set now, not when the workers started, named by no profile: GITHUB_API_TOKEN",
    ]
    # And with no profile known, any key set since counts
    assert environment.drift(home) == ["set now, not when the workers started: GITHUB_API_TOKEN, ZAI_API_KEY"]
    assert SECRET not in json.dumps([environment.drift(home), environment.notes(home, used)])
