"""What the stack's workers were started with, to notice when it has changed
(issue 29 part 3): the *names* of the key and token variables set — never their values —
and a digest of what decides the profiles (the profiles file and the ``COUNCIL_PROFILE_*``
and ``COUNCIL_SIMULATE`` variables, none of which may hold a secret). Recorded when the
supervisor starts (``workers-environment.json``, private).

Only a difference the workers would act on calls for a restart (:func:`drift`): a key a
profile names that is set now but was not when the workers started — a run dispatched
from here is pinned to the real model, and a worker without its key would fail it. The
rest is said, not acted on (:func:`notes`): a dispatch pins each run's executor where it
is made, so changed profiles take effect at once without a restart (only the automatic
reviews the maintenance worker dispatches read them there), and a key the workers hold
but this shell does not is one they can still use. ``council up`` restarts the workers
only for :func:`drift`; ``council status`` advises ``council restart`` only for it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
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


def drift(home: Path, used_keys: Collection[str] | None = None) -> list[str]:
    """How the running workers' environment falls short of the current one in a way they
    act on, one phrase each (empty: no restart needed, or nothing recorded): the key
    variables set now but not when they started, of those a profile names (``used_keys``;
    None: every key variable)."""
    before = recorded(home)
    if before is None:
        return []
    added = set(current(home)["keys"]) - set(before.get("keys") or [])
    if used_keys is not None:
        added &= set(used_keys)
    return ["set now, not when the workers started: " + ", ".join(sorted(added))] if added else []


def notes(home: Path, used_keys: Collection[str] | None = None) -> list[str]:
    """What else differs from when the workers started, that needs no restart."""
    before = recorded(home)
    if before is None:
        return []
    now = current(home)
    found = []
    removed = sorted(set(before.get("keys") or []) - set(now["keys"]))
    unused = sorted((set(now["keys"]) - set(before.get("keys") or [])) - set(used_keys or now["keys"]))
    if removed:
        found.append("set when the workers started, not now (they can still use it): " + ", ".join(removed))
    if unused:
        found.append("set now, not when the workers started, named by no profile: " + ", ".join(unused))
    if now["profiles_sha256"] != before.get("profiles_sha256"):
        found.append(
            "the profiles (file or COUNCIL_PROFILE_* variables) changed: a dispatch pins its runs' "
            "executors where it is made, so they take effect now (the workers' automatic reviews "
            "read them at their next start)"
        )
    return found
