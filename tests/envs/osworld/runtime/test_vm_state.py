"""The desktop starts each episode in OSWorld's VM's state: doing nothing scores 0 where it does there.

Three tasks in OSWorld's format (``tests/envs/osworld/fixtures/vm_state``, written here; they check what three
of OSWorld's ``os`` tasks check) would score 1.0 for an agent that does nothing on a desktop in
GNOME's and the server's defaults: GNOME's ``lock-enabled`` is true, the server's Python has lxml,
and Mahjongg is not installed. :mod:`agentrl.envs.osworld.runtime.vm_state` gives the desktop the VM's
values instead; the solutions still score 1.0, and a reset undoes them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrl.envs.osworld.runtime.jail import write_python_shim
from agentrl.envs.osworld.runtime.vm_state import HIDDEN_PYTHON_MODULES, VM_GSETTINGS, override_text

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "vm_state"


def test_the_override_holds_the_vm_defaults_and_the_wallpaper() -> None:
    text = override_text("/w/a b.png")
    assert "[org.gnome.desktop.screensaver]\nlock-enabled=false\n" in text
    assert "picture-uri='file:///w/a%20b.png'" in text and "picture-uri-dark='file:///w/a%20b.png'" in text
    assert VM_GSETTINGS["org.gnome.desktop.screensaver"]["lock-enabled"] == "false"


def test_the_shims_python_hides_the_servers_lxml_but_not_one_put_elsewhere(tmp_path: Path) -> None:
    pytest.importorskip("lxml", reason="the server's environment has no lxml to hide")
    write_python_shim(tmp_path / "bin", hidden_modules=HIDDEN_PYTHON_MODULES)
    python = str(tmp_path / "bin" / "python3")

    def run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
        environ = {"PATH": "/usr/bin:/bin", **env}
        argv = [python, "-c", code]
        return subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=60, check=False)

    hidden = run("import lxml")
    assert hidden.returncode == 1 and "ModuleNotFoundError: No module named 'lxml'" in hidden.stderr
    assert run("import lxml.etree").returncode == 1
    assert run("import PIL, Xlib, numpy; print('ok')").stdout.strip() == "ok"  # the rest of the packages
    own = tmp_path / "own"
    (own / "lxml").mkdir(parents=True)
    (own / "lxml" / "__init__.py").write_text("WHERE = 'own'\n")
    mine = run("import lxml; print(lxml.WHERE)", PYTHONPATH=str(own))  # an lxml the user installed elsewhere
    assert mine.returncode == 0 and mine.stdout.strip() == "own", mine.stderr
    plain = subprocess.run([sys.executable, "-c", "import lxml"], capture_output=True, timeout=60, check=False)
    assert plain.returncode == 0  # the server's own interpreter is untouched


def desktop(test: Any) -> Any:
    """The tests that start a desktop: the desktop tier comes from tests/tiers.py."""
    return pytest.mark.timeout(300)(test)


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    if shutil.which("Xvfb") is None or shutil.which("xterm") is None:
        pytest.skip("needs Xvfb and xterm (apt-get install xvfb xterm)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    from agentrl.envs.osworld.env import OSWorldEnv

    made = OSWorldEnv(tasks=str(TASKS))
    try:
        yield made
    finally:
        made.close()


def episode(env: Any, task_id: str, actions: tuple[str, ...] | None = None) -> float:
    """Reset on ``task_id``, play ``actions`` (the task's oracle by default) until the end; the reward."""
    env.reset(options={"task_id": task_id})
    reward, info = 0.0, {}
    for action in actions if actions is not None else env.oracle_plan():
        _, reward, terminated, truncated, info = env.step(action)
        assert info["action_error"] is None, info["action_error"]
        if terminated or truncated:
            break
    assert info["done_reason"] == "done", info
    return float(reward)


@desktop
@pytest.mark.parametrize("task_id", ["vm-screen-lock", "vm-remove-mahjongg"])
def test_noop_scores_zero_the_solution_one_and_a_reset_undoes_it(env: Any, task_id: str) -> None:
    assert episode(env, task_id, ("DONE",)) == 0.0  # the VM's state: not already done
    assert episode(env, task_id) == 1.0
    assert episode(env, task_id, ("DONE",)) == 0.0  # the reset put the VM's state back


@desktop
def test_noop_of_installing_lxml_scores_zero(env: Any) -> None:
    assert episode(env, "vm-python-lxml", ("DONE",)) == 0.0
    answer = env.client.execute(["python3", "-c", "import pyautogui, PIL; print('ok')"])
    # OSWorld's actions (python -c "import pyautogui; ...") still run
    assert (answer["returncode"], answer["output"].strip()) == (0, "ok")


@desktop
def test_the_wallpaper_and_package_database_are_the_vms(env: Any) -> None:
    env.reset(options={"task_id": "vm-screen-lock"})
    client = env.client
    listed = client.execute("dpkg -l | grep -c '^ii'", shell=True)["output"].strip()
    assert int(listed) > 100  # the host's packages are listed, as the VM's are, and Mahjongg with them
    assert "gnome-mahjongg" in client.execute("dpkg -l gnome-mahjongg", shell=True)["output"]
    wallpaper = client.execute("gsettings get org.gnome.desktop.background picture-uri", shell=True)["output"]
    assert wallpaper.startswith("'file:///") and wallpaper.strip().endswith(".png'")
    path = wallpaper.strip().strip("'")[len("file://") :]
    assert client.read_file(path)[:8] == b"\x89PNG\r\n\x1a\n"
    # Read-only there, as the VM's /usr/share/backgrounds: the agent changes the setting, not the file.
    assert client.execute(["sh", "-c", f"echo x > {path}"])["returncode"] != 0
