"""What the stack's workers were started with, to notice when it has changed
(issue 29 part 3): the *names* of the key and token variables set — never their values —
and a digest of what decides the profiles (the profiles file and the ``COUNCIL_PROFILE_*``
and ``COUNCIL_SIMULATE`` variables, none of which may hold a secret). Recorded when the
supervisor starts (``workers-environment.json``, private); ``council up`` restarts workers
whose environment differs from the current one, and ``council status`` says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypedDict, cast

from council.files import write_private
from council.settings import settings

FILE = "workers-environment.json"
PROFILES_FILE = "profiles.toml"
# Variables whose presence changes what a worker can run (their values are never read here).
_KEY_SUFFIXES = ("_API_KEY", "_API_TOKEN", "_AUTH_TOKEN")
_PROFILE_VARIABLES = ("COUNCIL_PROFILE", "COUNCIL_SIMULATE", "COUNCIL_PROFILES")


class Fingerprint(TypedDict):
    """What the workers were started with (``FILE``): key variables' names, the profiles' digest."""

    keys: list[str]
    profiles_sha256: str


def current(home: Path) -> Fingerprint:
    """The names of the provider key variables set now, and the profiles' digest."""
    current = settings()
    keys = sorted(name for name, value in current.variables() if name.endswith(_KEY_SUFFIXES) and value)
    digest = hashlib.sha256()
    for name, value in sorted(current.variables()):
        if name.startswith(_PROFILE_VARIABLES):
            digest.update(f"{name}={value}\n".encode())
    path = current.profiles_file or home / PROFILES_FILE
    try:
        digest.update(path.read_bytes() if path.is_file() else b"(no profiles file)")
    except OSError:
        digest.update(b"(unreadable profiles file)")
    return {"keys": keys, "profiles_sha256": digest.hexdigest()}


def record(home: Path, fingerprint: Fingerprint) -> None:
    write_private(home / FILE, json.dumps(fingerprint, indent=2, sort_keys=True))


def recorded(home: Path) -> Fingerprint | None:
    try:
        data = json.loads((home / FILE).read_text())
    except (OSError, ValueError):
        return None
    return cast(Fingerprint, data) if isinstance(data, dict) else None  # as `record` wrote it


def drift(home: Path) -> list[str]:
    """How the current environment differs from the one the running workers were started
    with, one phrase each (empty: the same, or nothing recorded)."""
    before = recorded(home)
    if before is None:
        return []
    now = current(home)
    changes = []
    added = sorted(set(now["keys"]) - set(before.get("keys") or []))
    removed = sorted(set(before.get("keys") or []) - set(now["keys"]))
    if added:
        changes.append("set now, not when the workers started: " + ", ".join(added))
    if removed:
        changes.append("set when the workers started, not now: " + ", ".join(removed))
    if now["profiles_sha256"] != before.get("profiles_sha256"):
        changes.append("the profiles (file or COUNCIL_PROFILE_* variables) changed")
    return changes
