"""Registering domains with Gymnasium under versioned ids ``AgentRL/<Domain>[-<Variant>]-v<N>``.

``import agentrl`` registers every built-in env; then ``gym.make("AgentRL/TIRMath-v0")`` works.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["DomainSpec", "describe", "env_id", "register_domain", "registered_domains"]

_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")


@dataclass(frozen=True)
class DomainSpec:
    """What ``agentrl list`` shows about a registered env id."""

    env_id: str
    entry_point: str
    description: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    nondeterministic: bool = False
    #: what kind of env it is, for suites: ``"text"`` (text-only observations), ``"pixels"``, ``"multiagent"``...
    tags: tuple[str, ...] = ()


_DOMAINS: dict[str, DomainSpec] = {}


def env_id(domain: str, version: int = 0, variant: str | None = None) -> str:
    """Build a versioned id.

    >>> env_id("TIRMath"), env_id("FlashGame", 1, variant="Snake")
    ('AgentRL/TIRMath-v0', 'AgentRL/FlashGame-Snake-v1')
    """
    for label, name in (("domain", domain), ("variant", variant)):
        if name is not None and not _NAME.match(name):
            raise ValueError(f"{label} must be CamelCase letters and digits (like 'TIRMath'), got {name!r}")
    if not isinstance(version, int) or version < 0:
        raise ValueError(f"version must be an int >= 0, got {version!r}")
    middle = f"{domain}-{variant}" if variant else domain
    return f"AgentRL/{middle}-v{version}"


def register_domain(
    domain: str,
    entry_point: str,
    *,
    description: str,
    version: int = 0,
    variant: str | None = None,
    kwargs: Mapping[str, Any] | None = None,
    nondeterministic: bool = False,
    tags: tuple[str, ...] = ("text",),
) -> str:
    """Register an env with Gymnasium and with ``agentrl list``; returns its id.

    Registering the same id again with the same entry point is a no-op (modules may be reloaded);
    with a different entry point it is an error, since that would silently change what an id means.
    Episode length is the env's own turn budget, so no ``TimeLimit`` is added. ``tags`` say what
    kind of env it is (``"text"`` for text-only observations, ``"pixels"``...), for named suites.
    """
    new_id = env_id(domain, version, variant)
    spec = DomainSpec(new_id, entry_point, description, dict(kwargs or {}), nondeterministic, tuple(tags))
    existing = _DOMAINS.get(new_id)
    if existing is not None:
        if existing.entry_point != entry_point:
            raise ValueError(
                f"{new_id} is already registered to {existing.entry_point}; bump the version to change its meaning"
            )
        return new_id
    gym.register(id=new_id, entry_point=entry_point, kwargs=dict(spec.kwargs), nondeterministic=nondeterministic)
    _DOMAINS[new_id] = spec
    return new_id


def registered_domains() -> list[DomainSpec]:
    """Every env AgentRL registered, sorted by id."""
    return [_DOMAINS[key] for key in sorted(_DOMAINS)]


def describe(env_id: str) -> DomainSpec:
    """The spec of one registered id; the error suggests close matches."""
    try:
        return _DOMAINS[env_id]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(env_id, list(_DOMAINS), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else f"; registered: {', '.join(sorted(_DOMAINS))}"
        raise gym.error.UnregisteredEnv(f"{env_id!r} is not an AgentRL env{hint}") from None
