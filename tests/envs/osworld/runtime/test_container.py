"""AgentRL/OSWorld-v0 with ``provider="docker"``: a desktop per container, no network, read-only root.

A private Docker engine is started for the module (root and Debian's docker.io + debootstrap needed;
skipped with the reason otherwise) and the desktop image is built once: the first debootstrap of the
desktop packages takes a few minutes and is cached under ~/.cache/agentrl/docker/; later sessions
import the cached root filesystem and build in seconds. Timings are printed (run with -s to see them).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'agentrl-gym[docker]')")
pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")

import gymnasium as gym
import numpy as np

import agentrl  # noqa: F401  (registers the ids)
from agentrl.envs.osworld.runtime.container import LABEL, DesktopContainer, ensure_desktop_image

pytestmark = pytest.mark.timeout(900)

TASK_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "env"  # t-echo (xterm), t-mousepad, t-infeasible
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def daemon(desktop_docker: Any) -> Any:
    return desktop_docker[0]


@pytest.fixture(scope="module")
def client(desktop_docker: Any) -> Any:
    return desktop_docker[1]


@pytest.fixture(scope="module")
def image(desktop_docker: Any) -> str:
    tag = desktop_docker[2]
    start = time.monotonic()
    assert ensure_desktop_image(desktop_docker[1]).startswith("agentrl-desktop:")  # cached: no rebuild
    TIMINGS["image_build_cached_s"] = time.monotonic() - start
    return tag


@pytest.fixture(scope="module")
def task_dir() -> Path:
    return TASK_DIR


@pytest.fixture(scope="module")
def env(image, task_dir):
    start = time.monotonic()
    e = gym.make("AgentRL/OSWorld-v0", tasks=str(task_dir), task_id="t-echo", provider="docker", action_timeout_s=2.0)
    TIMINGS["env_make_s"] = time.monotonic() - start
    TIMINGS["container_start_to_ready_s"] = e.unwrapped._container.last_start_s
    yield e
    e.close()


def ours(client) -> list:
    return client.containers.list(all=True, filters={"label": LABEL})


def sh(env: Any, command: str) -> dict[str, Any]:
    return env.unwrapped.client.execute(command, shell=True)


def test_image_has_the_server_and_desktop(client, image) -> None:
    out = client.containers.run(
        image,
        entrypoint=[
            "python3",
            "-c",
            "import agentrl.envs.osworld.server, importlib.util as u, mss, gi, Xlib, PIL\n"
            "assert u.find_spec('pyautogui')\nprint('ok')",
        ],
        network_mode="none",
        remove=True,
        environment={"DISPLAY": ":99"},
    )
    assert out.decode().strip().endswith("ok")


def test_oracle_scores_one_and_done_scores_zero(env) -> None:
    obs, info = env.reset(seed=0)
    assert obs["screenshot"].shape == (720, 1280, 3) and obs["screenshot"].dtype == np.uint8
    assert obs["screenshot"].std() > 0  # a real, non-blank desktop
    for action in env.unwrapped.oracle_actions:
        obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["done_reason"]) == (1.0, True, False, "done")
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step("DONE")
    assert (reward, terminated) == (0.0, True)


def test_steps_per_second(env) -> None:
    env.reset(seed=0)
    n = 10
    start = time.monotonic()
    for i in range(n):
        obs, _, terminated, _, info = env.step(f"pyautogui.moveTo({100 + i}, {100 + i})")
        assert info["action_error"] is None and not terminated
    TIMINGS["steps_per_s"] = n / (time.monotonic() - start)
    assert obs["screenshot"].shape == (720, 1280, 3)


def test_accessibility_tree_of_an_app(image, task_dir) -> None:
    e = gym.make(
        "AgentRL/OSWorld-v0",
        tasks=str(task_dir),
        task_id="t-mousepad",
        provider="docker",
        obs_type="screenshot_a11y_tree",
        docker_image=image,
    )
    try:
        obs, _ = e.reset(seed=0)
        assert e.observation_space.contains(obs)
        tree = obs["accessibility_tree"]
        if "menu\tFile" not in tree:  # the app may still be starting
            time.sleep(1.0)
            tree = e.step("WAIT")[0]["accessibility_tree"]
        assert tree.startswith("tag\t") and "menu\tFile" in tree, tree  # AT-SPI works in the container
    finally:
        e.close()


def test_bad_pyautogui_is_bounded(env) -> None:
    env.reset(seed=0)
    for code, error in (
        ("raise ValueError('boom')", "boom"),
        ("while True:\n    pass", "timed out"),
        ("pyautogui.click(-50, 99999)", None),
    ):
        start = time.monotonic()
        _, reward, terminated, truncated, info = env.step(code)
        assert time.monotonic() - start < 15
        assert not terminated and not truncated and reward == 0.0
        if error is not None:
            assert info["action_error"] and error in info["action_error"], (code, info["action_error"])
    _, reward, terminated, _, _ = env.step("DONE")
    assert terminated


def test_agent_code_has_no_network_and_a_read_only_root(env) -> None:
    env.reset(seed=0)
    _, _, _, _, info = env.step(
        "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)\nraise RuntimeError('NETWORK REACHABLE')"
    )
    assert info["action_error"] and "NETWORK REACHABLE" not in info["action_error"], info["action_error"]
    for path in (
        "/etc/agentrl-owned",
        "/usr/agentrl-owned",
        "/opt/agentrl/site/agentrl/owned.py",
        "/agentrl-owned",
        "/run/agentrl/owned",  # the host folder of the socket
    ):
        _, _, _, _, info = env.step(f"open({path!r}, 'w').write('x')")
        assert info["action_error"] and ("Read-only" in info["action_error"] or "Permission" in info["action_error"])
    _, _, _, _, info = env.step("import os\nopen(os.path.expanduser('~/mine.txt'), 'w').write('x')")
    assert info["action_error"] is None
    _, _, _, _, info = env.step("open('/run/agentrl/token').read()")
    assert info["action_error"] and "Permission" in info["action_error"]
    # The same from the server's side: only the loopback interface, uid 1000, no capabilities.
    out = sh(env, "cat /proc/net/dev; id -u; grep CapEff /proc/self/status")["output"]
    interfaces = [line.split(":")[0].strip() for line in out.splitlines() if ":" in line and "|" not in line]
    assert [i for i in interfaces if not i.startswith("Cap")] == ["lo"], out
    assert "\n1000\n" in out and "CapEff:\t0000000000000000" in out, out
    env.step("DONE")


def test_dead_desktop_is_restarted_on_reset(env, client) -> None:
    env.reset(seed=0)
    old = env.unwrapped._container.container_id
    client.containers.get(old).kill()
    _, _, terminated, _, info = env.step("pyautogui.moveTo(5, 5)")
    assert terminated and info["done_reason"] == "env_error"
    start = time.monotonic()
    env.reset(seed=0)
    TIMINGS["restart_s"] = time.monotonic() - start
    assert env.unwrapped._container.container_id != old
    for action in env.unwrapped.oracle_actions:
        _, reward, *_ = env.step(action)
    assert reward == 1.0


def test_make_vec_two_containers(image, task_dir, client) -> None:
    before = {c.id for c in ours(client)}
    envs = gym.make_vec(
        "AgentRL/OSWorld-v0", num_envs=2, tasks=str(task_dir), task_id="t-echo", provider="docker", docker_image=image
    )
    try:
        obs, _ = envs.reset(seed=0)
        assert obs["screenshot"].shape == (2, 720, 1280, 3)
        assert len({c.id for c in ours(client)} - before) == 2
        _, rewards, terminated, _, _ = envs.step(["DONE"] * 2)
        assert list(terminated) == [True, True] and list(rewards) == [0.0, 0.0]
    finally:
        envs.close()
    assert {c.id for c in ours(client)} == before


def test_close_leaves_no_container_or_socket(image, client) -> None:
    box = DesktopContainer(640, 480, image=image, docker_client=client)
    cid, sock = box.container_id, box.base_url[len("unix:") :]
    assert os.path.exists(sock) and client.containers.get(cid).status == "running"
    box.close()
    box.close()
    assert cid not in {c.id for c in ours(client)}
    assert not os.path.exists(os.path.dirname(sock))


def test_container_is_removed_when_garbage_collected(image, client) -> None:
    import gc

    box = DesktopContainer(640, 480, image=image, docker_client=client)
    cid = box.container_id
    del box
    gc.collect()
    assert cid not in {c.id for c in ours(client)}
