"""Every error class AgentRL defines is an ``AgentRLError``; where Gymnasium has the same error, its class catches ours.

The walk imports every module of the package in a child process (no import side effect reaches the
other tests) and reports, per module, the exception classes it defines that are not ``AgentRLError``s.
A module whose optional dependency is missing here is skipped, naming the dependency.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentrl
from agentrl.core import errors

ROOT = Path(agentrl.__file__).parent

#: exception classes that cannot derive from AgentRLError, and why
EXEMPT = {
    "agentrl.envs.osworld.runtime.cdp.CDPError": "cdp.py is sent as source into the desktop's sandbox: it "
    "imports nothing from agentrl",
}


def _module_names() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


MODULES = _module_names()

# Run in a child: import each module; an ImportError for a module outside agentrl (or DependencyNotInstalled)
# is a missing optional dependency; then every Exception subclass whose __module__ is that module.
_WALK = r"""
import importlib, json, sys, traceback
from agentrl.core.errors import AgentRLError, DependencyNotInstalled

report = {}
for name in json.loads(sys.argv[1]):
    entry = report[name] = {}
    try:
        importlib.import_module(name)
    except DependencyNotInstalled as exc:
        entry["missing"] = str(exc)
        continue
    except ImportError as exc:
        if exc.name and not exc.name.startswith("agentrl"):
            entry["missing"] = f"{exc.name} is not installed ({exc})"
        else:
            entry["error"] = traceback.format_exc()
        continue
    except BaseException:
        entry["error"] = traceback.format_exc()
        continue

found = {}
stack = [Exception]
seen = set()
while stack:
    cls = stack.pop()
    for sub in type.__subclasses__(cls):
        if sub not in seen:
            seen.add(sub)
            stack.append(sub)
            if sub.__module__ in report:
                found.setdefault(sub.__module__, []).append(
                    [sub.__qualname__, issubclass(sub, AgentRLError), [base.__name__ for base in sub.__mro__[1:]]]
                )
for name, classes in found.items():
    report[name]["classes"] = sorted(classes)
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def walk() -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", _WALK, json.dumps(MODULES)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_walk_finds_the_package() -> None:
    assert len(MODULES) > 100
    assert {"agentrl.core.errors", "agentrl.envs.consult.env", "agentrl.train.cli"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_exception_class_is_an_agentrl_error(module: str, walk: dict[str, Any]) -> None:
    entry = walk[module]
    assert "error" not in entry, f"importing {module} failed:\n{entry.get('error')}"
    if "missing" in entry:
        pytest.skip(f"{module}: optional dependency missing: {entry['missing']}")
    offenders = [
        f"{module}.{qualname} (bases: {', '.join(bases)})"
        for qualname, ours, bases in entry.get("classes", [])
        if not ours and f"{module}.{qualname}" not in EXEMPT
    ]
    assert not offenders, "derive these from agentrl.core.errors.AgentRLError (keep their builtin base): " + "; ".join(
        offenders
    )


def test_the_walk_sees_every_kind_of_error(walk: dict[str, Any]) -> None:
    """The walk reaches errors of every layer (a walk that imported nothing would pass vacuously)."""
    seen = {f"{module}.{cls[0]}" for module, entry in walk.items() for cls in entry.get("classes", [])}
    for name in ("core.errors.ResetNeeded", "sandboxes.pool.ChannelCorrupt", "testing.DomainCheckError"):
        assert f"agentrl.{name}" in seen


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (errors.ResetNeeded, gym.error.ResetNeeded),
        (errors.EnvClosed, gym.error.ClosedEnvironmentError),
        (errors.DependencyNotInstalled, gym.error.DependencyNotInstalled),
        (errors.InvalidActionType, gym.error.InvalidAction),
        (errors.UnknownEnvId, gym.error.UnregisteredEnv),
        (errors.RegistrationError, gym.error.RegistrationError),
    ],
)
def test_gymnasium_catches_ours(ours: type[Exception], theirs: type[Exception]) -> None:
    assert issubclass(ours, errors.AgentRLError) and issubclass(ours, theirs)


def test_builtin_bases_still_catch() -> None:
    assert issubclass(errors.ResetNeeded, RuntimeError) and issubclass(errors.DependencyNotInstalled, ImportError)
    assert issubclass(errors.InvalidActionType, TypeError) and issubclass(errors.RegistrationError, ValueError)


def test_a_real_env_raises_what_gymnasium_expects() -> None:
    from tests.core.test_core import make_env

    env = make_env()  # an AgentEnv, unwrapped: our guards, not Gymnasium's OrderEnforcing
    with pytest.raises(gym.error.ResetNeeded):
        env.step("a")
    env.reset(seed=0)
    with pytest.raises(gym.error.InvalidAction):
        env.step(7)  # type: ignore[arg-type]
    env.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.reset(seed=0)
    with pytest.raises(errors.ResetNeeded, match="closed"):
        env.step("a")
    with pytest.raises(gym.error.DependencyNotInstalled, match="pip install"):
        raise errors.DependencyNotInstalled("math-verify", extra="math")
