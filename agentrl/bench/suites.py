"""Named sets of env ids for ``agentrl bench --suite NAME``.

* ``all``: every registered AgentRL id.
* ``text``: the ids whose observations are text only (no screenshots, no game frames).
* ``quick``: one cheap text env, for smoke tests of an agent.

Suites are computed from the registry when asked for, so domains registered later (or by plugins
imported before the call) are included.

>>> "AgentRL/TIRMath-v0" in suite_env_ids("all")
True
>>> suite_env_ids("quick")
['AgentRL/TIRMath-v0']
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["SUITES", "resolve_env_ids", "suite_env_ids"]

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
