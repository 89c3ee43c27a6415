"""PettingZoo's naming convention, checked by PettingZoo's own tests on every multi-agent module.

``<game>_vN.env()`` is an ``AECEnv`` (a natively parallel game goes through ``parallel_to_aec``) and
passes ``pettingzoo.test.api_test``; ``<game>_vN.parallel_env()``, where the module has one, is a
``ParallelEnv`` and passes ``parallel_api_test``. The modules are discovered from the package, so a
new ``agentrl/envs/multiagent/<game>_vN.py`` is covered without editing this file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from types import ModuleType

import pytest

pytest.importorskip("pettingzoo")

from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.test import api_test, parallel_api_test

from agentrl.envs import multiagent
from agentrl.envs.multiagent import MULTIAGENT_ENVS

pytestmark = pytest.mark.timeout(300)

_VERSIONED = re.compile(r"^[a-z][a-z0-9_]*_v\d+$")


def discover_env_modules() -> list[str]:
    """The names of the ``<game>_vN`` modules in ``agentrl.envs.multiagent`` (PettingZoo's env naming)."""
    return sorted(info.name for info in pkgutil.iter_modules(multiagent.__path__) if _VERSIONED.match(info.name))


ENV_MODULES = discover_env_modules()


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"{multiagent.__name__}.{name}")


def test_discovery_finds_every_registered_module() -> None:
    """Discovery works (an empty list would make the parametrized tests below vacuous) and matches the registry."""
    assert ENV_MODULES, f"no <game>_vN modules found under {list(multiagent.__path__)}"
    assert set(ENV_MODULES) == set(MULTIAGENT_ENVS), (
        "agentrl/envs/multiagent/__init__.py's MULTIAGENT_ENVS and the <game>_vN modules differ: "
        f"modules without an entry {sorted(set(ENV_MODULES) - set(MULTIAGENT_ENVS))}, "
        f"entries without a module {sorted(set(MULTIAGENT_ENVS) - set(ENV_MODULES))}"
    )


@pytest.mark.parametrize("name", ENV_MODULES)
def test_env_is_an_aec_env_that_passes_api_test(name: str) -> None:
    """``env()`` follows PettingZoo's convention: an ``AECEnv``, whatever the game's native form."""
    env = _load(name).env()
    try:
        assert isinstance(env, AECEnv), (
            f"{name}.env() returned {type(env).__name__}; PettingZoo's env() is an AECEnv "
            "(wrap a parallel game with pettingzoo.utils.conversions.parallel_to_aec, keep it as parallel_env())"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # text observations are not Box/Discrete: expected
            api_test(env, num_cycles=20)
    finally:
        env.close()


@pytest.mark.parametrize("name", ENV_MODULES)
def test_parallel_env_is_a_parallel_env_that_passes_parallel_api_test(name: str) -> None:
    """``parallel_env()`` (required of a game registered as ``"parallel"``) passes ``parallel_api_test``."""
    module = _load(name)
    factory = getattr(module, "parallel_env", None)
    if factory is None:
        if MULTIAGENT_ENVS.get(name, ("aec", ""))[0] == "parallel":
            pytest.fail(f"{name} is registered as a parallel game but has no parallel_env()")
        pytest.skip(f"{name} is turn-based: it has no parallel form")
    env = factory()
    try:
        assert isinstance(env, ParallelEnv), f"{name}.parallel_env() returned {type(env).__name__}, not a ParallelEnv"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            parallel_api_test(env, num_cycles=20)
    finally:
        env.close()
