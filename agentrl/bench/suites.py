"""Named sets of env ids for ``agentrl bench --suite NAME``.

* ``all``: every registered AgentRL id.
* ``text``: the ids whose observations are text only (no screenshots, no game frames).
* ``quick``: one cheap text env, for smoke tests of an agent.

Suites are computed from the registry when asked for, so domains registered later (or by plugins
imported before the call) are included.

Some envs need parts of the system (Debian packages): the games need Chromium, the desktop needs
Xvfb and its apps. :data:`SYSTEM_REQUIREMENTS` says which, in the terms of the table that
``python3 agentrl/_system_deps.py check --json`` prints (its ``parts``: tiers and part names);
:func:`missing_requirements` takes those rows and says, per env id, what is missing and how to install
it, so that ``agentrl bench`` skips those envs with that message instead of erroring every episode.

>>> "AgentRL/TIRMath-v0" in suite_env_ids("all")
True
>>> suite_env_ids("quick")
['AgentRL/TIRMath-v0']
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SUITES",
    "SYSTEM_REQUIREMENTS",
    "MissingPart",
    "SystemRequirement",
    "missing_requirements",
    "resolve_env_ids",
    "suite_env_ids",
]

def _tagged(tag: str | None) -> list[str]:
    import agentrl  # noqa: F401  (registers the built-in ids)
    from agentrl.core.registry import registered_domains

    return [spec.env_id for spec in registered_domains() if tag is None or tag in spec.tags]


def _all() -> list[str]:
    return _tagged(None)


def _text() -> list[str]:
    return _tagged("text")


def _games() -> list[str]:
    return _tagged("games")


def _desktop() -> list[str]:
    return _tagged("desktop")


def _quick() -> list[str]:
    return [env_id for env_id in _all() if env_id.startswith("AgentRL/TIRMath-")][:1]


#: suite name -> (description, function returning the ids)
SUITES: dict[str, tuple[str, Callable[[], list[str]]]] = {
    "all": ("every registered AgentRL env id", _all),
    "text": ("envs with text-only observations", _text),
    "games": ("the browser and Flash game envs (pixel observations)", _games),
    "desktop": ("AgentRL/OSWorld-v0: a real Linux desktop with OSWorld's tasks", _desktop),
    "quick": ("one cheap text env (smoke test)", _quick),
}


def suite_env_ids(name: str) -> list[str]:
    """The env ids of a named suite.

    Raises:
        ValueError: no suite has that name (the message lists them).
    """
    try:
        _, ids = SUITES[name]
    except KeyError:
        names = ", ".join(f"{key} ({desc})" for key, (desc, _) in SUITES.items())
        raise ValueError(f"unknown suite {name!r}; suites: {names}") from None
    found = ids()
    if not found:
        raise ValueError(f"suite {name!r} has no env ids in this installation")
    return found


def resolve_env_ids(env_ids: list[str] | None, suite: str | None) -> list[str]:
    """``--env`` ids and/or a ``--suite``, deduplicated in order; at least one id is required."""
    resolved = list(env_ids or [])
    if suite:
        resolved += suite_env_ids(suite)
    resolved = list(dict.fromkeys(resolved))
    if not resolved:
        raise ValueError("give at least one env: --env ID [ID ...] or --suite NAME")
    return resolved


# -- system requirements ----------------------------------------------------------------------------
@dataclass(frozen=True)
class MissingPart:
    """A system part an env needs that is not on this machine, and the command that installs it."""

    part: str
    package: str
    fix: str


@dataclass(frozen=True)
class SystemRequirement:
    """The envs matching ``pattern`` (``fnmatch``) need every part of ``tier`` but ``optional``.

    ``applies`` (given the ``gym.make`` keyword arguments) limits it to some configurations.
    """

    pattern: str
    tier: str
    optional: tuple[str, ...] = ()
    applies: Callable[[Mapping[str, Any]], bool] | None = None


def _local_desktop(env_kwargs: Mapping[str, Any]) -> bool:
    return env_kwargs.get("provider", "local") == "local"


def _docker_desktop(env_kwargs: Mapping[str, Any]) -> bool:
    return env_kwargs.get("provider") == "docker"


#: The accessibility-tree parts: without them the desktop runs and says so (no a11y tree).
A11Y_PARTS = ("at-spi-bus-launcher", "gi (python3)", "Atspi-2.0")

#: which envs need which parts (tiers and part names of agentrl/_system_deps.py's table)
SYSTEM_REQUIREMENTS: tuple[SystemRequirement, ...] = (
    SystemRequirement("AgentRL/FlashGame-*", "browser"),
    SystemRequirement("AgentRL/OSWorld-*", "desktop", optional=A11Y_PARTS, applies=_local_desktop),
    SystemRequirement("AgentRL/OSWorld-*", "docker", applies=_docker_desktop),
)


def _chromium_override() -> bool:
    """``$AGENTRL_CHROMIUM`` names a Chromium elsewhere (the game envs use it): no Debian package needed."""
    path = os.environ.get("AGENTRL_CHROMIUM")
    return bool(path) and os.path.isfile(path)


def _ruffle_missing() -> MissingPart | None:
    """Ruffle (the Flash emulator of FlashGame-SWF): missing when neither installed nor installable with npm."""
    import shutil

    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.envs.games.ruffle import install_command, ruffle_dir

    try:
        ruffle_dir(install=False)
    except DependencyNotInstalled:
        if shutil.which("npm") is None or os.environ.get("AGENTRL_RUFFLE_DIR"):
            return MissingPart("Ruffle", "npm @ruffle-rs/ruffle", install_command())
    return None


def missing_requirements(
    env_ids: Sequence[str],
    env_kwargs: Mapping[str, Any],
    parts: Sequence[Mapping[str, Any]],
) -> dict[str, list[MissingPart]]:
    """For each env id that cannot run here, the system parts it needs that are missing.

    Args:
        env_ids: the ids a command would run.
        env_kwargs: their ``gym.make`` keyword arguments (the desktop's ``provider`` changes what it needs).
        parts: the rows of ``agentrl/_system_deps.py``'s table (``part``, ``package``, ``installed``,
            ``tiers``, ``fix``).

    >>> rows = [{"part": "chromium", "package": "chromium", "installed": False, "tiers": ["browser"],
    ...          "fix": "apt-get install -y chromium"},
    ...         {"part": "Xvfb", "package": "xvfb", "installed": True, "tiers": ["desktop"], "fix": ""}]
    >>> missing = missing_requirements(["AgentRL/FlashGame-Catch-v0", "AgentRL/OSWorld-v0"], {}, rows)
    >>> {env_id: [m.part for m in found] for env_id, found in missing.items()}
    {'AgentRL/FlashGame-Catch-v0': ['chromium']}
    """
    missing: dict[str, list[MissingPart]] = {}
    for env_id in env_ids:
        found: list[MissingPart] = []
        for requirement in SYSTEM_REQUIREMENTS:
            if not fnmatch.fnmatchcase(env_id, requirement.pattern):
                continue
            if requirement.applies is not None and not requirement.applies(env_kwargs):
                continue
            for row in parts:
                name = str(row.get("part", ""))
                if requirement.tier not in (row.get("tiers") or ()) or row.get("installed", True):
                    continue
                if name in requirement.optional or (name == "chromium" and _chromium_override()):
                    continue
                if all(m.part != name for m in found):
                    found.append(MissingPart(name, str(row.get("package", "")), str(row.get("fix", ""))))
        if fnmatch.fnmatchcase(env_id, "AgentRL/FlashGame-SWF-*"):
            ruffle = _ruffle_missing()
            if ruffle is not None:
                found.append(ruffle)
        if found:
            missing[env_id] = found
    return missing
