"""Registering envs with Gymnasium under versioned ids ``AgentRL/<Domain>[-<Variant>]-v<N>``.

``import agentrl`` registers every built-in env; then ``gym.make("AgentRL/TIRMath-v0")`` works.
Every id goes through :func:`register_domain` (one path), which also records it for ``agentrl
list``: the benchmark domains, the single-seat views of the multi-agent games (``AgentRL-MA/...``),
the trainer's toy envs and the deprecated versions kept one more release. Only the benchmark domains
(``spec.benchmark``) are :func:`registered_domains`, the ids the bench suites and ``check_domain``'s
tests run over; :func:`registered_envs` is every id.

Version rule (as Gymnasium's): bump ``-vN`` when the reward or the dynamics change; a new ``info``
key alone does not bump it. The previous version stays registered one more release, marked
``deprecated`` (Gymnasium warns on ``gym.make`` of an id whose newer version exists).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentrl.core.errors import RegistrationError, UnknownEnvId

__all__ = ["DomainSpec", "describe", "env_id", "register_domain", "registered_domains", "registered_envs"]

#: the namespace of the benchmark domains, whose names are CamelCase
NAMESPACE = "AgentRL"
_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
#: other namespaces start with ``AgentRL-`` (``AgentRL-MA``); their names follow Gymnasium's rule
_NAMESPACE = re.compile(r"^AgentRL(-[A-Za-z0-9]+)?$")
_GYM_NAME = re.compile(r"^[A-Za-z0-9][\w.:-]*$")


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
    #: the heading ``agentrl list`` shows it under (the domain, ``"multiagent"``, ``"toy"``)
    group: str = ""
    #: a benchmark domain: in :func:`registered_domains`, the bench suites and ``check_domain``'s tests
    benchmark: bool = True
    #: for a version kept one more release: what changed and what to use instead (``None``: current)
    deprecated: str | None = None


_DOMAINS: dict[str, DomainSpec] = {}


def env_id(domain: str, version: int = 0, variant: str | None = None, *, namespace: str = NAMESPACE) -> str:
    """Build a versioned id.

    In the ``AgentRL`` namespace the domain and the variant are CamelCase; other namespaces
    (``AgentRL-MA``) take any name Gymnasium does.

    >>> env_id("TIRMath"), env_id("FlashGame", 1, variant="Snake")
    ('AgentRL/TIRMath-v0', 'AgentRL/FlashGame-Snake-v1')
    >>> env_id("tictactoe", 1, variant="vs-random", namespace="AgentRL-MA")
    'AgentRL-MA/tictactoe-vs-random-v1'
    """
    if not _NAMESPACE.match(namespace):
        raise RegistrationError(f"namespace must be 'AgentRL' or 'AgentRL-<Name>', got {namespace!r}")
    if namespace == NAMESPACE:
        rule, words = _NAME, "CamelCase letters and digits (like 'TIRMath')"
    else:
        rule, words = _GYM_NAME, "letters, digits and _ . : - (no '/')"
    for label, name in (("domain", domain), ("variant", variant)):
        if name is not None and not rule.match(name):
            raise RegistrationError(f"{label} must be {words}, got {name!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise RegistrationError(f"version must be an int >= 0, got {version!r}")
    middle = f"{domain}-{variant}" if variant else domain
    return f"{namespace}/{middle}-v{version}"


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
    namespace: str = NAMESPACE,
    group: str | None = None,
    benchmark: bool = True,
    deprecated: str | None = None,
    disable_env_checker: bool = False,
) -> str:
    """Register an env with Gymnasium and with ``agentrl list``; returns its id.

    Registering the same id again with the same entry point is a no-op (modules may be reloaded);
    with a different entry point it is an error, since that would silently change what an id means.
    Episode length is the env's own turn budget, so no ``TimeLimit`` is added. ``tags`` say what
    kind of env it is (``"text"`` for text-only observations, ``"pixels"``...), for named suites.

    Args:
        domain: the domain's name (``TIRMath``); the id is :func:`env_id` of it.
        entry_point: ``"module:attr"``, the env class or a factory.
        description: the line ``agentrl list`` shows.
        version: the ``-vN``; bump it when the reward or the dynamics change.
        variant: the part after the domain (``FlashGame-<Variant>``).
        kwargs: the ``gym.make`` keyword arguments the id stands for.
        nondeterministic: Gymnasium's flag.
        tags: the kinds of env it is (bench suites pick by tag).
        namespace: ``"AgentRL"``, or ``"AgentRL-<Name>"`` for ids outside the domains' naming.
        group: the ``agentrl list`` heading (default: ``domain``).
        benchmark: ``False`` keeps it out of :func:`registered_domains`, the bench suites and the
            domain checks (the trainer's toy envs, the multi-agent seats); ``agentrl list`` shows it.
        deprecated: for an older version kept one release: what to use instead (also keeps it out of
            the suites).
        disable_env_checker: Gymnasium's flag (no ``PassiveEnvChecker`` wrapper).
    """
    new_id = env_id(domain, version, variant, namespace=namespace)
    spec = DomainSpec(
        new_id,
        entry_point,
        description,
        dict(kwargs or {}),
        nondeterministic,
        tuple(tags),
        group=group or domain,
        benchmark=benchmark and deprecated is None,
        deprecated=deprecated,
    )
    existing = _DOMAINS.get(new_id)
    if existing is not None:
        if existing.entry_point != entry_point:
            raise RegistrationError(
                f"{new_id} is already registered to {existing.entry_point}; bump the version to change its meaning"
            )
        return new_id
    gym.register(
        id=new_id,
        entry_point=entry_point,
        kwargs=dict(spec.kwargs),
        nondeterministic=nondeterministic,
        disable_env_checker=disable_env_checker,
    )
    _DOMAINS[new_id] = spec
    return new_id


def registered_domains() -> list[DomainSpec]:
    """The benchmark domains AgentRL registered (``spec.benchmark``), sorted by id.

    These are what the bench suites and the domain checks run over: :func:`registered_envs` less the
    trainer's toy envs, the single-seat views of the multi-agent games and the deprecated versions.
    """
    return [spec for spec in registered_envs() if spec.benchmark]


def registered_envs() -> list[DomainSpec]:
    """Every env id AgentRL registered (what ``agentrl list`` shows), sorted by id."""
    return [_DOMAINS[key] for key in sorted(_DOMAINS)]


def describe(env_id: str) -> DomainSpec:
    """The spec of one registered id; the error suggests close matches."""
    try:
        return _DOMAINS[env_id]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(env_id, list(_DOMAINS), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else f"; registered: {', '.join(sorted(_DOMAINS))}"
        raise UnknownEnvId(f"{env_id!r} is not an AgentRL env{hint}") from None
