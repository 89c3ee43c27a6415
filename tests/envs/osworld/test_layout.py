"""The OSWorld package's parts find their files where the layout puts them (a moved module fails here, not in Docker).

The desktop image copies the agentrl package from a path computed from ``runtime/container.py``'s own place, the env
reads its 47 tasks from ``tasks/data/`` and the wheel ships both through ``pyproject.toml``'s package data: each is
checked here without starting anything.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import tomllib

import agentrl
from agentrl.envs.osworld import env
from agentrl.envs.osworld.runtime import container
from tests.paths import ROOT


def test_the_desktop_image_copies_the_agentrl_package_itself() -> None:
    assert os.path.samefile(container._PACKAGE_DIR, os.path.dirname(agentrl.__file__))
    assert os.path.isfile(os.path.join(container._IMAGE_DIR, "Dockerfile"))
    assert os.path.isfile(os.path.join(container._IMAGE_DIR, "Dockerfile.public"))


def test_the_builtin_tasks_are_in_tasks_data() -> None:
    tasks = [p for p in env.BUILTIN_TASKS.rglob("*.json") if "files" not in p.relative_to(env.BUILTIN_TASKS).parts]
    assert len(tasks) == 47, len(tasks)


def test_the_wheel_ships_the_osworld_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["agentrl"]
    package = Path(agentrl.__file__).parent
    found = (Path(f) for g in globs for f in glob.glob(str(package / g), recursive=True))
    shipped = {f.resolve() for f in found if f.is_file()}
    assert (package / "envs/osworld/runtime/docker_image/Dockerfile").resolve() in shipped
    assert {p.resolve() for p in env.BUILTIN_TASKS.rglob("*.json")} <= shipped
    for sub in ("runtime", "evaluators", "tasks"):  # setuptools' find (not find_namespace) needs each __init__.py
        assert (package / "envs/osworld" / sub / "__init__.py").is_file(), sub
