"""AgentRL/OSWorld-v0 on a real desktop: the Gymnasium API, observations, actions, bad input, crashes.

Each test runs against the local provider, against ``agentrl serve-desktop`` started as a separate
process (``provider="remote"``) and in a container (``provider="docker"``, on a private engine):
one env code path, three places for the desktop.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.timeout(600)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if not shutil.which("Xvfb") or not shutil.which("xterm"):
    pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)", allow_module_level=True)

import agentrl  # noqa: E402,F401  (registers the ids)
from agentrl.core.errors import ResetNeeded  # noqa: E402
from agentrl.envs.osworld.env import OSWorldEnv  # noqa: E402
from agentrl.envs.osworld.runtime.startup import x_lock_pid  # noqa: E402

TASK_DIR = Path(__file__).parent / "fixtures" / "env"  # t-echo (xterm), t-infeasible, t-mousepad


@pytest.fixture(scope="module")
def task_dir() -> Path:
    return TASK_DIR


@pytest.fixture(scope="module")
def desktop_server() -> Any:
    """``agentrl serve-desktop`` in its own process; yields (url, token, process)."""
    token = "test-token-123"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrl.cli", "serve-desktop", "--port", "0", "--token", token],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    if not match:
        proc.kill()
        pytest.fail(f"serve-desktop did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    yield match.group(1), token, proc
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("serve-desktop did not stop on SIGTERM")


@pytest.fixture(params=["local", "remote", "docker"])
def make(request: pytest.FixtureRequest, task_dir: Path) -> Any:
    """Build the env on each provider: this machine, a separate server process, a container."""
    made: list[Any] = []

    def build(**kwargs: Any) -> Any:
        kwargs.setdefault("tasks", str(task_dir))
        if request.param == "remote":
            url, token, _ = request.getfixturevalue("desktop_server")
            kwargs.update(provider="remote", server_url=url, token=token)
        elif request.param == "docker":
            _, _, image = request.getfixturevalue("desktop_docker")
            kwargs.update(provider="docker", docker_image=image)
        env = gym.make("AgentRL/OSWorld-v0", **kwargs)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


def _pids(env: Any) -> list[int]:
    session = env.unwrapped._session
    return list(session.pids) if session is not None else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_oracle_scores_one_and_noop_zero(make: Any) -> None:
    env = make(task_id="t-echo")
    obs, info = env.reset(seed=0)
    assert obs["screenshot"].shape == (720, 1280, 3) and obs["screenshot"].dtype == np.uint8
    assert obs["instruction"].startswith("Create hello.txt")
    assert info["task_id"] == "t-echo" and info["done_reason"] is None
    for action in env.unwrapped.oracle_actions:
        obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["done_reason"]) == (1.0, True, False, "done")
    assert info["eval_details"] == [{"func": "exact_match", "score": 1.0, "error": None}]
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("DONE")
    assert (reward, terminated) == (0.0, True)


def test_infeasible_task_scores_by_fail(make: Any) -> None:
    env = make(task_id="t-infeasible")
    env.reset(seed=0)
    assert env.step("FAIL")[1] == 1.0
    env.reset(seed=0)
    assert env.step("DONE")[1] == 0.0


@pytest.mark.parametrize("obs_type", ["a11y_tree", "screenshot_a11y_tree", "som"])
def test_observation_types(make: Any, obs_type: str) -> None:
    env = make(task_id="t-echo", obs_type=obs_type)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert (
        obs["accessibility_tree"].startswith("tag\t" if obs_type != "som" else "index\t")
        or obs["accessibility_tree"] == ""
    )
    if obs_type == "a11y_tree":
        assert "screenshot" not in obs
    else:
        assert obs["screenshot"].shape == (720, 1280, 3)


def test_computer_13_actions(make: Any) -> None:
    env = make(task_id="t-echo", action_space="computer_13")
    env.reset(seed=0)
    assert isinstance(env.action_space, gym.spaces.Dict)
    _, _, _, _, info = env.step('{"action_type": "CLICK", "parameters": {"x": 640, "y": 360}}')
    assert info["action_error"] is None
    _, _, _, _, info = env.step('{"action_type": "TYPING", "parameters": {"text": "echo hi > hello.txt\\n"}}')
    assert info["action_error"] is None and info["parsed_action"]["structured"]["action_type"] == "TYPING"
    _, _, terminated, _, info = env.step('{"action_type": "CLICK", "parameters": {"x": 5000, "y": 1}}')
    assert not terminated and "x" in info["action_error"]
    _, _, terminated, _, info = env.step("{not json")
    assert not terminated and info["action_error"]
    from agentrl.envs.osworld.actions import ACTION_TYPES

    sample = env.action_space.sample()
    sample["action_type"] = ACTION_TYPES.index("MOVE_TO")
    _, _, terminated, _, info = env.step(sample)  # a space sample converts or is an error, never a crash
    assert not terminated and info["parsed_action"]["structured"]["action_type"] == "MOVE_TO"
    time.sleep(0.3)
    _, reward, terminated, _, info = env.step({"action_type": "DONE"})
    assert terminated and reward == 1.0


def test_bad_pyautogui_input_is_bounded_and_reset_restores(make: Any) -> None:
    env = make(task_id="t-echo", action_timeout_s=2.0)
    env.reset(seed=0)
    steps = [
        ("raise ValueError('boom')", "boom"),
        ("while True:\n    pass", "timed out"),
        ("for _ in range(10**9):\n    pyautogui.press('a')", "timed out"),
        ("pyautogui.click(-50, 99999)", None),
        ("pyautogui.write('x' * (1024 * 1024))", "timed out"),
        ("pyautogui.write('" + "x" * 1_000_000 + "')", "limited to"),
        ("import os, shutil\nshutil.rmtree(os.path.expanduser('~'), ignore_errors=True)", None),
        ("open('/etc/agentrl-owned', 'w').write('x')", "Read-only"),
    ]
    for code, error in steps:
        start = time.monotonic()
        _, reward, terminated, truncated, info = env.step(code)
        assert time.monotonic() - start < 15
        assert not terminated and not truncated and reward == 0.0
        if error is not None:
            assert info["action_error"] and error in info["action_error"], (code, info["action_error"])
    assert not Path("/etc/agentrl-owned").exists()
    _obs, info = env.reset(seed=0)  # a clean desktop again: the setup's file is back
    assert env.unwrapped.client.read_file("~/keep.txt") == b"keep me\n"
    _, _, _, _, info = env.step("DONE")
    with pytest.raises(ResetNeeded):
        env.step("DONE")


def test_step_budget_truncates_and_scores(make: Any) -> None:
    env = make(task_id="t-echo", max_steps=3)
    env.reset(seed=0)
    # The task's end state is written through the client, not typed by the GUI oracle: this test is about the
    # budget and the score at truncation (test_oracle_scores_one_and_noop_zero plays the oracle). Typed into an
    # xterm that was still mapping on a loaded machine, the oracle's keys once went nowhere (fresh clone, 2026-12-07).
    env.unwrapped.client.upload_file("~/hello.txt", b"hi\n")
    env.step("WAIT")
    env.step("WAIT")
    _, reward, terminated, truncated, info = env.step("pyautogui.moveTo(10, 10)")
    assert (terminated, truncated, info["done_reason"]) == (False, True, "max_steps")
    assert reward == 1.0 and info["eval_details"][0]["score"] == 1.0


def test_crashed_display_and_app_end_the_episode_and_reset_recovers() -> None:
    env = OSWorldEnv(tasks=[_task("t-echo")], task_id="t-echo")
    try:
        env.reset(seed=0)
        app = next(p for p in env._session.apps if Path(str(p.args[0])).name == "xterm")
        app.send_signal(signal.SIGSEGV)  # app.pid is the sandbox's pid, not this machine's
        app.wait(5)
        _, reward, terminated, _, info = env.step("pyautogui.moveTo(5, 5)")
        assert (terminated, info["done_reason"], reward) == (True, "env_error", 0.0)
        assert "xterm" in info["action_error"]
        env.reset(seed=0)
        env._session._state.xvfb.kill()
        env._session._state.xvfb.wait(5)
        _, _, terminated, _, info = env.step("pyautogui.moveTo(5, 5)")
        assert terminated and info["done_reason"] == "env_error"
        _obs, _ = env.reset(seed=0)  # a new desktop
        for action in env.oracle_actions:
            _, reward, *_ = env.step(action)
        assert reward == 1.0
    finally:
        env.close()


def _task(task_id: str) -> Any:
    from agentrl.envs.osworld.tasks.format import load_task

    return load_task(TASK_DIR / f"{task_id}.json")


def test_close_leaves_no_process_or_display() -> None:
    env = OSWorldEnv(tasks=[_task("t-echo")], task_id="t-echo")
    env.reset(seed=0)
    env.step("pyautogui.moveTo(3, 3)")
    display = env._session.display_number
    pids = _pids(env)
    assert pids
    env.close()
    env.close()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]
    # Our Xvfb released its display: its lock file is gone, or (the other test worker starting a desktop at once
    # may take the freed number) the lock now names another server's pid.
    holder = x_lock_pid(display)
    assert holder is None or holder not in pids, f"/tmp/.X{display}-lock still names our X server ({holder})"


def test_make_vec_runs_four_desktops(task_dir: Path) -> None:
    envs = gym.make_vec("AgentRL/OSWorld-v0", num_envs=4, tasks=str(task_dir), task_id="t-echo")
    try:
        obs, _ = envs.reset(seed=0)
        assert obs["screenshot"].shape == (4, 720, 1280, 3)
        displays = {env.unwrapped._session.display for env in envs.envs}
        assert len(displays) == 4
        obs, rewards, terminated, _truncated, _infos = envs.step(["DONE"] * 4)
        assert list(terminated) == [True] * 4 and list(rewards) == [0.0] * 4
    finally:
        pids = [pid for env in envs.envs for pid in _pids(env)]
        envs.close()
    time.sleep(0.5)
    assert not [pid for pid in pids if _alive(pid)]


def test_remote_server_refuses_a_wrong_token(desktop_server: Any, task_dir: Path) -> None:
    url, _, _ = desktop_server
    with pytest.raises(Exception, match="401"):
        gym.make("AgentRL/OSWorld-v0", tasks=str(task_dir), provider="remote", server_url=url, token="wrong")


def test_unknown_task_and_bad_options_are_clear_errors(task_dir: Path) -> None:
    with pytest.raises(ValueError, match="obs_type"):
        OSWorldEnv(tasks=str(task_dir), obs_type="screenshots")
    with pytest.raises(ValueError, match="server_url"):
        OSWorldEnv(tasks=str(task_dir), provider="remote")
    with pytest.raises(KeyError) as info:
        OSWorldEnv(tasks=str(task_dir), task_id="t-ecko")
    assert str(info.value) == "unknown task 't-ecko'; did you mean 't-echo'? (3 tasks are loaded)"


def test_gui_agent_solves_a_task_on_the_real_desktop(task_dir: Path) -> None:
    """The reference GUI agent end to end: screenshot in as an image part, a UI-TARS reply out."""
    from agentrl.agents.gui_agent import GUIAgent
    from agentrl.llm.base import Generation

    class Scripted:
        name = "scripted-vlm"

        def __init__(self) -> None:
            self.replies = [
                "Thought: type the command into the terminal.\nAction: ```python\n"
                "pyautogui.click(640, 360)\npyautogui.write('echo hi > hello.txt\\n', interval=0.01)\n"
                "time.sleep(0.3)\n```",
                "Thought: the file exists now.\nAction: DONE",
            ]
            self.messages: list[Any] = []

        def generate(self, messages: Any, config: Any) -> Generation:
            self.messages.append(messages)
            return Generation(self.replies.pop(0))

        def count_tokens(self, messages: Any) -> int:
            return 0

        def close(self) -> None:
            pass

    env = gym.make("AgentRL/OSWorld-v0", tasks=str(task_dir), task_id="t-echo", obs_type="screenshot_a11y_tree")
    backend = Scripted()
    agent = GUIAgent(backend)
    try:
        agent.bind(env)
        obs, info = env.reset(seed=0)
        agent.reset(info)
        reward, terminated = 0.0, False
        while not terminated:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            assert not truncated
        assert reward == 1.0 and agent.parse_failures == 0
        parts = backend.messages[0][-1]["content"]
        assert any(part.get("type") == "image_url" for part in parts)
    finally:
        env.close()
