"""The env lock: what produced a score, recorded with every episode, so that two runs say what moved between them.

A score means something only next to the env that gave it. The lock of an episode names:

* ``env_id`` and ``env_version`` (the ``N`` of ``-vN``);
* ``code``: a hash of the Python files of the domain package holding the env's entry point, and ``core``: of
  ``agentrl/core``, which every env runs on;
* ``package_data``: a hash of the domain package's other files (its built-in tasks, prompts, databases);
* ``data``: a hash of each ``env_kwargs`` value that names a file or a folder (a task file, a Spider folder, an
  OSWorld ``evaluation_examples`` tree, a corpus);
* ``judges``: what grades or simulates with a model (PatientConsult's judge and patient: model and prompt hash),
  from the env class's ``lock_parts(env_kwargs)`` where it has one;
* ``agent``: a hash of the agent and backend settings;
* ``libraries``: the versions of the packages that move scores (agentrl, gymnasium, math-verify, transformers,
  torch) and Python's.

:func:`lock_drift` names what differs between two locks; ``agentrl bench --compare`` refuses to compare runs whose
env parts differ unless ``--allow-drift`` is given, and a resumed run says what moved since its results were
recorded.

>>> a = {"env_id": "E-v0", "code": "1111", "data": {"kwarg:dataset": "aaaa"}, "libraries": {"gymnasium": "1.2.0"}}
>>> b = {"env_id": "E-v0", "code": "2222", "data": {"kwarg:dataset": "aaaa"}, "libraries": {"gymnasium": "1.2.1"}}
>>> lock_drift(a, b)
['code of E-v0: 1111 -> 2222', 'library gymnasium: 1.2.0 -> 1.2.1']
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentrl.core.errors import AgentRLError

__all__ = [
    "LIBRARIES", "LockDrift", "agent_lock", "entry_point_root", "env_lock", "env_version", "hash_tree", "lock_drift",
]

#: the distributions whose versions can move a score
LIBRARIES = ("agentrl-gym", "gymnasium", "math-verify", "transformers", "torch")
#: the lock's parts that are the env's (drift there makes two scores incomparable); ``agent`` is what a comparison
#: usually varies on purpose
ENV_PARTS = ("env_id", "env_version", "code", "core", "package_data", "data", "judges", "libraries")

_SKIP_DIRS = {"__pycache__", ".git", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
_MAX_FILES = 5000
_CORE = Path(__file__).resolve().parent.parent / "core"


class LockDrift(AgentRLError, ValueError):
    """Two runs' env locks differ where their scores are compared."""


def env_version(env_id: str) -> int | None:
    """The ``N`` of an id ending in ``-vN``.

    >>> env_version("AgentRL/TIRMath-v0"), env_version("Custom")
    (0, None)
    """
    match = re.search(r"-v(\d+)$", env_id)
    return int(match.group(1)) if match else None


def _hash_file(digest: Any, path: Path) -> None:
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    digest.update(b"\0")


def _files(root: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        files += [Path(dirpath) / name for name in filenames if not name.endswith((".pyc", ".pyo"))]
    return sorted(files)[:_MAX_FILES]


def hash_tree(digest: Any, root: Path, label: str, *, python: bool | None = None) -> None:
    """Feed ``root`` (a file, or a folder's files by relative path, at most 5000) into ``digest``.

    ``python``: only ``.py`` files (True), only the others (False), or all (None).
    """
    if root.is_file():  # the bytes env fingerprints have always hashed: old results keep their keys
        if python is None or (root.suffix == ".py") == python:
            digest.update(f"{label}\0".encode())
            _hash_file(digest, root)
        return
    for path in _files(root):
        if python is not None and (path.suffix == ".py") != python:
            continue
        digest.update(f"{label}/{path.relative_to(root).as_posix()}\0".encode())
        _hash_file(digest, path)


def _tree_hash(root: Path, *, python: bool | None = None) -> str:
    digest = hashlib.sha256()
    hash_tree(digest, root, "", python=python)
    return digest.hexdigest()[:16]


def entry_point_root(env_id: str) -> Path | None:
    """The package folder holding an env's entry point (or the file, for a top-level module); None if not found."""
    import gymnasium as gym

    entry = gym.spec(env_id).entry_point
    module = entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", None)
    if not module:
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not os.path.exists(spec.origin):
        return None
    origin = Path(spec.origin)
    if spec.submodule_search_locations is not None or "." in module:
        return origin.parent
    return origin


def _entry_point_class(env_id: str) -> Any:
    import gymnasium as gym

    entry = gym.spec(env_id).entry_point
    if not isinstance(entry, str):
        return entry
    module, _, name = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _libraries() -> dict[str, str | None]:
    return {**{name: _version(name) for name in LIBRARIES}, "python": platform.python_version()}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def agent_lock(agent_config: Any) -> str:
    """A hash of the agent and backend settings (the agent config a result records)."""
    return hashlib.sha256(_canonical(agent_config).encode()).hexdigest()[:16]


def env_lock(env_id: str, env_kwargs: Mapping[str, Any] | None = None, agent_config: Any = None) -> dict[str, Any]:
    """The lock of an env as it is here now (see the module docstring).

    >>> import agentrl
    >>> lock = env_lock("AgentRL/Letter-v0")
    >>> lock["env_version"], sorted(lock)[:4], len(lock["code"])
    (0, ['agent', 'code', 'core', 'data'], 16)
    """
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the built-in ids)

    gym.spec(env_id)  # a clear error for an unknown id
    kwargs = dict(env_kwargs or {})
    root = entry_point_root(env_id)
    data = {}
    for name, value in sorted(kwargs.items()):
        if isinstance(value, (str, os.PathLike)) and str(value) and os.path.exists(value):
            data[f"kwarg:{name}"] = _tree_hash(Path(value))
    judges: dict[str, str] = {}
    cls = _entry_point_class(env_id)
    lock_parts = getattr(cls, "lock_parts", None)
    if callable(lock_parts):
        judges = {str(k): str(v) for k, v in lock_parts(kwargs).items()}
    return {
        "env_id": env_id,
        "env_version": env_version(env_id),
        "code": _tree_hash(root, python=True) if root is not None else None,
        "package_data": _tree_hash(root, python=False) if root is not None and root.is_dir() else None,
        "core": _tree_hash(_CORE, python=True),
        "data": data,
        "judges": judges,
        "agent": agent_lock(agent_config),
        "libraries": _libraries(),
    }


def _short(value: Any) -> str:
    return "none" if value is None else str(value)


def lock_drift(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, *, agent: bool = False) -> list[str]:
    """What differs between two locks, one phrase each; the env's parts only unless ``agent``.

    A missing lock (a result recorded before locks existed) is a drift of its own: nothing can be vouched for.
    """
    if not a or not b:
        return [] if not a and not b else ["one of the runs has no env lock (recorded before locks existed)"]
    env = b.get("env_id") or a.get("env_id")
    out = []
    for part in ENV_PARTS + (("agent",) if agent else ()):
        old, new = a.get(part), b.get(part)
        if old == new:
            continue
        if isinstance(old, Mapping) or isinstance(new, Mapping):
            old_map, new_map = dict(old or {}), dict(new or {})
            what = {"data": "data", "judges": "judge", "libraries": "library"}.get(part, part)
            for key in sorted(set(old_map) | set(new_map)):
                if old_map.get(key) != new_map.get(key):
                    out.append(f"{what} {key}: {_short(old_map.get(key))} -> {_short(new_map.get(key))}")
        elif part in ("env_id", "env_version"):
            out.append(f"{part}: {_short(old)} -> {_short(new)}")
        else:
            out.append(f"{part.replace('_', ' ')} of {env}: {_short(old)} -> {_short(new)}")
    return out
