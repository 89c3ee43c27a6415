"""The tasks and their oracles ship inside the agentrl package: no desktop action may read them.

``agentrl redteam``'s ``task-file-hunt`` probe found it on a wheel install: the desktop's jail binds
``site-packages`` (its Python imports pyautogui from there), and with it the package's OSWorld task files,
oracles included; the probe replayed a task's oracle and scored 0.5 against a floor of 0. Here a package is
planted in a folder the jail binds, as a wheel install would place it, and a jailed process must see it empty;
the Docker desktop image is built without the tasks folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentrl.envs.osworld.runtime import container
from agentrl.envs.osworld.runtime import jail as jail_module
from agentrl.envs.osworld.runtime.jail import Jail


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
def test_a_wheel_installed_package_is_empty_inside_the_jail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site-packages"
    tasks = site / "agentrl" / "envs" / "osworld" / "tasks" / "data"
    tasks.mkdir(parents=True)
    (tasks / "t.json").write_text('{"oracle": "the answer"}')
    (site / "pyautogui_stub.py").write_text("X = 1\n")
    monkeypatch.setattr(jail_module, "PACKAGE_DIR", str((site / "agentrl").resolve()))  # where a wheel puts it
    home = tmp_path / "home"
    home.mkdir()
    with Jail(home, readable=[site]) as jail:
        assert jail.sandboxed
        script = f"cat {tasks}/t.json; ls -A {site / 'agentrl'}; cat {site}/pyautogui_stub.py"
        _rc, out, _ = jail.run(["sh", "-c", script])
        assert "the answer" not in out
        assert out.strip() == "X = 1"  # the rest of the folder is still there


def test_the_desktop_image_is_built_without_the_tasks(tmp_path: Path) -> None:
    package = Path(container._PACKAGE_DIR)
    skip = shutil.ignore_patterns("__pycache__")
    dest = tmp_path / "agentrl"
    shutil.copytree(package / "envs" / "osworld", dest / "envs" / "osworld",
                    ignore=container._without_task_files(str(package), skip))
    assert not (dest / "envs" / "osworld" / "tasks").exists()
    assert (dest / "envs" / "osworld" / "server.py").exists() and (dest / "envs" / "osworld" / "runtime").is_dir()
    assert os.path.isdir(package / "envs" / "osworld" / "tasks")
