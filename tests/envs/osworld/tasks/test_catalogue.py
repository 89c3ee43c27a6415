"""The shipped OSWorld tasks: well-formed, GUI-only oracles that score 1, no-ops that score 0."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentrl.envs.osworld.env import BUILTIN_TASKS, builtin_tasks
from agentrl.envs.osworld.runtime.apps import APP_PACKAGES
from agentrl.envs.osworld.tasks.format import validate

ALL_TASKS = builtin_tasks(installed=list(APP_PACKAGES))
# Oracles drive the GUI: no file system, processes or network behind the desktop's back.
_SHORTCUTS = re.compile(r"\b(import\s+(os|shutil|subprocess|socket|pathlib)|subprocess|open\(|os\.)")


def test_at_least_forty_tasks_across_the_apps() -> None:
    assert len(ALL_TASKS) >= 40
    assert len({task.id for task in ALL_TASKS}) == len(ALL_TASKS)
    domains = Counter(Path(task.file).parent.name for task in ALL_TASKS)
    assert set(domains) >= {"os", "file_manager", "text_editor", "calculator", "chrome", "multi_app", "infeasible"}
    assert domains["infeasible"] >= 3
    apps = {app for task in ALL_TASKS for app in task.related_apps}
    assert apps >= {"xterm", "mousepad", "thunar", "galculator", "chromium"}


@pytest.mark.parametrize("task", ALL_TASKS, ids=lambda task: task.id)
def test_task_is_valid_with_a_gui_oracle(task: Any) -> None:
    assert validate(task) == []
    oracle = task.oracle_actions
    assert oracle and oracle[-1] in ("DONE", "FAIL") and len(oracle) <= 15
    if task.evaluator.infeasible:
        assert oracle == ("FAIL",)
    for action in oracle[:-1]:
        assert ("pyautogui." in action or "time.sleep(" in action) and not _SHORTCUTS.search(action), action
    for step in task.config:
        if step.type == "upload_file":
            for entry in step.parameters["files"]:
                assert (Path(task.file).parent / entry["local_path"]).is_file(), entry
    assert Path(task.file).is_relative_to(BUILTIN_TASKS)


# -------------------------------------------------------------------------------------- on a desktop


@pytest.fixture(scope="module")
def env() -> Any:
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    if not shutil.which("Xvfb"):
        pytest.skip("needs Xvfb (make test installs it: apt-get install -y xvfb)")
    from agentrl.envs.osworld.env import OSWorldEnv

    made = OSWorldEnv()
    yield made
    made.close()


def _installed_or_skip(env: Any, task: Any) -> None:
    missing = [app for app in task.related_apps if not shutil.which(app)]
    if missing or task.id not in env._by_id:
        pytest.skip(f"{task.id} needs {missing} (apt-get install -y {' '.join(APP_PACKAGES[a] for a in missing)})")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("task", ALL_TASKS, ids=lambda task: task.id)
def test_oracle_scores_one_through_the_gui(env: Any, task: Any) -> None:
    _installed_or_skip(env, task)
    env.reset(options={"task_id": task.id})
    reward, info, terminated = 0.0, {}, False
    for action in task.oracle_actions:
        _, reward, terminated, truncated, info = env.step(action)
        assert info["action_error"] is None, info["action_error"]
        if terminated or truncated:
            break
    assert terminated and reward == 1.0, info.get("eval_details")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("task", ALL_TASKS, ids=lambda task: task.id)
def test_noop_scores_zero(env: Any, task: Any) -> None:
    _installed_or_skip(env, task)
    env.reset(options={"task_id": task.id})
    _, reward, terminated, _, info = env.step("DONE")
    assert terminated and reward == 0.0, info.get("eval_details")
