"""The desktop waits for the screen, not the clock: settle's rule, its process accounting, the env and the server.

The rule is tested with scripted frames and CPU counters; the accounting with a real busy child process; the
desktop part (marked ``desktop``) checks on a real Xvfb desktop that the observation after typing in xterm and
after opening mousepad's menu is the screen a one-second pause would have shown.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import chain, repeat
from typing import Any

import pytest

from agentrl.envs.osworld.runtime.settle import ProcessActivity, settle
from agentrl.envs.osworld.runtime.vm_state import GTK_SETTINGS, VMState


def _counter(values: list[int]) -> Any:
    """A CPU counter that returns ``values`` in turn, then keeps the last."""
    source = chain(values, repeat(values[-1]))
    return lambda: next(source)


def test_settle_returns_once_frame_and_cpu_have_held_still() -> None:
    frames = chain([b"before", b"drawing", b"drawing"], repeat(b"after"))
    result = settle(lambda: next(frames), _counter([0]), max_s=2.0, quiet_s=0.02, poll_s=0.002)
    assert result.settled and result.frame == b"after"
    assert 0.02 <= result.waited_s < 1.0


def test_settle_waits_while_the_apps_work_though_the_screen_has_not_changed_yet() -> None:
    # the screen never changes, but the app is on a CPU for the first polls (10 ms of CPU per poll)
    busy = [i * 10_000_000 for i in range(20)]
    result = settle(lambda: b"same", _counter(busy), max_s=2.0, quiet_s=0.02, poll_s=0.002)
    assert result.settled and result.polls >= 20


def test_settle_waits_longer_while_the_screen_is_still_the_one_from_before_the_action() -> None:
    # the app answers late with its CPU idle (LibreOffice Calc): the screen equals the one before the action
    result = settle(lambda: b"before", _counter([0]), max_s=2.0, quiet_s=0.01, poll_s=0.002, unchanged=b"before",
                    answer_s=0.12)
    assert result.settled and result.waited_s >= 0.12
    # once it has answered, the short quiet applies again
    started = time.perf_counter()
    frames = chain([b"before"] * 10, repeat(b"answered"))
    result = settle(lambda: next(frames), _counter([0]), max_s=2.0, quiet_s=0.01, poll_s=0.002, unchanged=b"before",
                    answer_s=1.0)
    assert result.settled and result.frame == b"answered" and time.perf_counter() - started < 0.9
    # with no frame from before the action (after a reset), only quiet_s counts
    result = settle(lambda: b"before", _counter([0]), max_s=2.0, quiet_s=0.01, poll_s=0.002, answer_s=1.0)
    assert result.settled and result.waited_s < 0.9


def test_settle_gives_up_at_max_s_and_says_so() -> None:
    frames = (bytes([i % 256]) for i in range(10**9))  # a new frame every poll: an animation
    result = settle(lambda: next(frames), _counter([0]), max_s=0.1, quiet_s=0.02, poll_s=0.002)
    assert not result.settled and 0.1 <= result.waited_s < 0.5


def test_process_activity_counts_a_busy_descendant() -> None:
    # a shell whose child spins: the root is the shell, the CPU time is its child's
    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'while True: pass' & wait"])
    try:
        activity = ProcessActivity(lambda: [shell.pid])
        deadline = time.monotonic() + 10
        while len(activity.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(activity.pids()) >= 2
        before = activity()
        time.sleep(0.2)
        assert activity() - before > 50_000_000  # at least a quarter of 0.2 s on (or waiting for) a CPU
    finally:
        for pid in ProcessActivity(lambda: [shell.pid]).pids()[::-1]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        shell.wait(timeout=10)


def test_process_activity_counts_a_thread_blocked_on_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    # a sleeping process spends no CPU; seen in state D (waiting for the disk) its wall time counts as work
    import agentrl.envs.osworld.runtime.settle as settle_module

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        activity = ProcessActivity(lambda: [sleeper.pid])
        before = activity()
        time.sleep(0.2)
        assert activity() - before < 50_000_000
        monkeypatch.setattr(settle_module, "thread_state", lambda stat: "D")
        before = activity()
        time.sleep(0.2)
        assert activity() - before >= 200_000_000
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)


def test_process_activity_of_gone_processes_is_zero() -> None:
    assert ProcessActivity(lambda: [None, 2**22 + 12345]).pids() == [2**22 + 12345]
    assert ProcessActivity(lambda: [None, 2**22 + 12345])() == 0


def test_the_desktop_tells_gtk_not_to_blink_the_caret(tmp_path: Any) -> None:
    state = VMState(tmp_path, 64, 48)
    for version in ("gtk-3.0", "gtk-4.0"):
        assert (state.config / version / "settings.ini").read_text() == GTK_SETTINGS
    assert "gtk-cursor-blink = false" in GTK_SETTINGS
    assert state.env()["XDG_CONFIG_DIRS"].split(":")[0] == str(state.config)
    assert state.config.is_relative_to(state.share) and state.share in state.readable  # visible in the sandbox


def test_the_env_refuses_a_settle_it_cannot_do() -> None:
    from agentrl.envs.osworld.env import OSWorldEnv

    with pytest.raises(ValueError, match="settle_s"):
        OSWorldEnv(settle_s=-1)
    with pytest.raises(ValueError, match="quiet_s"):
        OSWorldEnv(quiet_s=-0.1)
    with pytest.raises(ValueError, match="answer_s"):
        OSWorldEnv(answer_s=11)


# --- a real desktop -----------------------------------------------------------------------------------------

_desktop = pytest.mark.timeout(300)  # the desktop tier comes from tests/tiers.py


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    if shutil.which("Xvfb") is None:
        pytest.skip("no X desktop here: needs Xvfb (apt-get install xvfb)")
    if shutil.which("xterm") is None:
        pytest.skip("needs xterm (apt-get install xterm)")
    if importlib.util.find_spec("mss") is None or importlib.util.find_spec("pyautogui") is None:
        pytest.skip("mss and pyautogui are missing: pip install 'agentrl-gym[desktop]'")
    from agentrl.core.errors import SandboxUnavailable
    from agentrl.envs.osworld.env import OSWorldEnv
    from agentrl.envs.osworld.tasks.format import OSWorldTask

    tasks = [
        OSWorldTask.from_dict({"id": f"settle-{app}", "instruction": "-", "evaluator": {"func": "infeasible"},
                               "config": [{"type": "launch", "parameters": {"command": [app]}}]})
        for app in ("xterm", "mousepad")
    ]
    try:
        # settle_s: a cap well above the default 1 s. These tests check that the settle sees when the desktop
        # holds still; a dialog opening on a test machine at full load can outlast the default cap.
        made = OSWorldEnv(tasks=tasks, max_steps=20, settle_s=5.0)
        made.reset(options={"task_id": "settle-xterm"})
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    yield made
    made.close()


def _same_as_a_second_later(env: Any, observation: dict[str, Any]) -> bool:
    time.sleep(1.0)
    return bool((observation["screenshot"] == env.client.screenshot_array()).all())


@_desktop
def test_typing_in_xterm_is_observed_as_a_1s_pause_would_see_it(env: Any) -> None:
    env.reset(options={"task_id": "settle-xterm"})
    assert env.last_settle is not None and env.last_settle["settled"]
    for action in ("pyautogui.write('seq 1 300')", "pyautogui.press('enter')"):
        observation, *_ = env.step(action)
        assert env.last_settle["settled"], env.last_settle
        assert _same_as_a_second_later(env, observation), action


@_desktop
def test_an_answer_drawn_late_by_an_idle_app_is_observed(env: Any) -> None:
    # The key is not echoed; the shell sleeps (no CPU) and then prints: the screen is still the one from
    # before the action when the desktop first goes quiet, so the settle waits answer_s for an answer.
    env.reset(options={"task_id": "settle-xterm"})
    for action in ("pyautogui.write('read -s -n1; sleep 0.05; echo answered')", "pyautogui.press('enter')"):
        env.step(action)
    observation, *_ = env.step("pyautogui.press('x')")
    assert env.last_settle["settled"] and env.last_settle["waited_s"] >= 0.05, env.last_settle
    assert _same_as_a_second_later(env, observation)


@_desktop
def test_a_menu_and_a_dialog_in_mousepad_are_observed_once_drawn(env: Any) -> None:
    if shutil.which("mousepad") is None:
        pytest.skip("needs mousepad (apt-get install mousepad)")
    env.reset(options={"task_id": "settle-mousepad"})
    for action in ("pyautogui.write('hello')", "pyautogui.hotkey('alt', 'f')", "pyautogui.press('escape')",
                   "pyautogui.hotkey('ctrl', 'o')", "pyautogui.press('escape')"):
        observation, *_ = env.step(action)
        assert _same_as_a_second_later(env, observation), (action, env.last_settle)


@_desktop
def test_the_server_checks_the_settle_request(env: Any) -> None:
    import urllib.error

    for body in ({"max_s": "1"}, {"max_s": 11}, {"max_s": 0.1, "quiet_s": 0.5}, {"answer_s": "0.1"},
                 {"answer_s": -1}, {"answer_s": True}):
        with pytest.raises(urllib.error.HTTPError) as caught:
            env.client._json("POST", "/settle", body)
        assert caught.value.code == 400
    answer = env.client.settle(0.5, 0.01)
    assert answer is not None and set(answer) == {"waited_s", "settled", "polls"} and answer["waited_s"] <= 0.6


@_desktop
def test_a_server_without_settle_gets_the_fixed_pause(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    env.reset(options={"task_id": "settle-xterm"})
    monkeypatch.setattr(env.client, "_cannot_settle", True)  # as OSWorld's VM server answers (404, remembered)
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), real_sleep(s)))
    env.step("pyautogui.press('a')")
    assert env.last_settle is None and 0.1 in slept


@_desktop
def test_the_settle_benchmark_runs_small(env: Any) -> None:
    # (the env fixture checked that a desktop with xterm starts here)
    from benchmarks.desktop_settle import Episode, run_episode

    episode = Episode("xterm", ["xterm"], ["pyautogui.write('ls /')", "pyautogui.press('enter')"], "xterm")
    # The env fixture's cap (5 s, not the default 1 s) and the benchmark's own 1 s reference: in a fresh-clone make
    # test (2 cores at full load) one of the two steps once differed from the screen 0.5 s later, as a settle capped
    # at 1 s can end before xterm has drawn.
    row = run_episode(episode, {"settle_s": 5.0}, reference_s=1.0)
    assert row["steps"] == 2 and row["equal"] == 2 and row["steps_per_s"] > 0 and not row["errors"]
    assert all(r["settle"]["settled"] for r in row["rows"])
