"""Every env closes every connection it opened (issue 30).

For every registered AgentRL id (``AgentRL/...`` and the multi-agent views ``AgentRL-MA/...``, deprecated
versions included) and every multi-agent module (``env()`` and ``parallel_env()``): ``reset(seed=0)``, one step
with a valid action (the env's oracle move, else a sample of its action space), ``close()``, ``gc.collect()``.

A socket or file left open shows as a ``ResourceWarning`` only when the garbage collector finds it, and raised
from ``__del__`` or a finalizer that warning is printed ("Exception ignored in ..."), never raised, so pytest's
warning capture misses it. The episodes therefore run in a child Python with ``-X dev -W error::ResourceWarning``,
one child per domain package, and the child's stderr must carry no ``ResourceWarning``, ``unclosed`` or
``Exception ignored``. The child also runs each id twice and counts its open file descriptors after each episode:
a connection the env keeps referenced (a cache, a global pool that grows) never reaches the garbage collector and
never warns, but the second episode would leave more descriptors open than the first (a shared pool that the
first episode starts, such as the games' one Chromium, is counted in both). Two planted leaks prove both checks
fail when they should.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable

import gymnasium as gym
import pytest

import agentrl  # registers the ids

CHILD = textwrap.dedent(
    r"""
    import gc, os, socket, sys, time
    import gymnasium as gym
    import agentrl  # registers the ids

    KEPT = []  # where the "kept" plant hides its socket from the garbage collector


    def open_fds():
        gc.collect()
        return len(os.listdir("/proc/self/fd"))


    def plant(env, how):
        if how == "none":
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if how == "gc":  # the env forgets a socket: closed only by its finalizer (a ResourceWarning)
            env.unwrapped.__dict__["_planted_socket"] = sock
        elif how == "kept":  # the env leaves a socket in a module-level pool: never collected, never warns
            KEPT.append(sock)


    def gym_episode(env_id, how):
        env = gym.make(env_id)
        env.reset(seed=0)
        try:
            action = env.unwrapped.oracle_action()
        except (AttributeError, NotImplementedError, ValueError):
            action = env.action_space.sample()
        env.step(action)
        plant(env, how)
        env.close()
        del env


    def multiagent_episode(name, how):
        from agentrl.envs.multiagent import load

        module = load(name)
        if hasattr(module, "parallel_env"):
            env = module.parallel_env()
            _, infos = env.reset(seed=0)
            env.step({a: (infos[a].get("legal_moves") or [env.action_space(a).sample()])[0] for a in env.agents})
            env.close()
            del env
        env = module.env()
        env.reset(seed=0)
        agent = env.agent_selection
        info = env.last()[4]
        env.step((info.get("legal_moves") or [env.action_space(agent).sample()])[0])
        plant(env, how)
        env.close()
        del env


    kind, how, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    episode = gym_episode if kind == "gym" else multiagent_episode
    for name in names:
        start = time.monotonic()
        episode(name, how)
        first = open_fds()
        episode(name, how)
        second = open_fds()
        for _ in range(20):  # a child process or a browser page may take a moment to go
            if second <= first:
                break
            time.sleep(0.1)
            second = open_fds()
        print(f"{name}: {time.monotonic() - start:.1f}s, fds {first} -> {second}", flush=True)
        if second > first:
            sys.exit(f"LEAK: {name} left {second - first} more file descriptor(s) open after its second episode")
    for _ in range(3):
        gc.collect()
    print("CLOSED", flush=True)
    """
)

# stderr lines that mean something was left open (or a finalizer failed): warnings raised in __del__ are printed
LEAK_SIGNS = ("ResourceWarning", "unclosed", "Exception ignored")


def run_child(kind: str, names: list[str], plant: str = "none", timeout: float = 280) -> subprocess.CompletedProcess:
    """Run ``names``' episodes in a child Python under ``-X dev -W error::ResourceWarning``."""
    return subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", CHILD, kind, plant, *names],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_closed(proc: subprocess.CompletedProcess) -> None:
    """The child finished and nothing in its stderr says a connection was left open."""
    report = f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0 and "CLOSED" in proc.stdout, report
    for sign in LEAK_SIGNS:
        assert sign not in proc.stderr, report


def _entry_module(env_id: str) -> str:
    entry = gym.registry[env_id].entry_point
    return entry.split(":")[0] if isinstance(entry, str) else str(getattr(entry, "__module__", ""))


def _group(env_id: str) -> str:
    """The domain package an id's entry point lives in (``agentrl.envs.<package>``): one child each."""
    parts = _entry_module(env_id).split(".")
    return parts[2] if len(parts) > 2 else ".".join(parts)


# the ids `import agentrl` registers (not those a test registers for itself in this process)
AGENTRL_IDS = sorted(
    env_id
    for env_id in gym.registry
    if env_id.split("/")[0] in ("AgentRL", "AgentRL-MA") and _entry_module(env_id).startswith("agentrl.envs.")
)
GROUPS: dict[str, list[str]] = {}
for _id in AGENTRL_IDS:
    GROUPS.setdefault(_group(_id), []).append(_id)


def _needs_chromium() -> None:
    pytest.importorskip("playwright", reason="playwright is missing: pip install 'agentrl-gym[browser]'")
    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.envs.games.browser import find_chromium

    try:
        find_chromium()
    except DependencyNotInstalled:
        pytest.skip("Chromium is not installed (apt-get install chromium)")


def _needs_desktop() -> None:
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    if not shutil.which("Xvfb") or not shutil.which("xterm"):
        pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)")


# the system parts a group needs: its marker (make test runs browser tests in their own phase) and its check
SYSTEM_PARTS: dict[str, tuple[pytest.MarkDecorator, Callable[[], None]]] = {
    "games": (pytest.mark.browser, _needs_chromium),
    "osworld": (pytest.mark.desktop, _needs_desktop),
}
SLOW_GROUPS = {"consult"}  # the simulated patient loads its MiniLM matcher (10-20 s)


def _marks(group: str) -> list[pytest.MarkDecorator]:
    marks = [SYSTEM_PARTS[group][0]] if group in SYSTEM_PARTS else []
    return [*marks, pytest.mark.slow] if group in SLOW_GROUPS else marks


def test_every_id_is_covered() -> None:
    """All the domains, the multi-agent views (old versions too) and the toy envs are in a group below."""
    assert len(AGENTRL_IDS) >= 47, AGENTRL_IDS
    assert {"tirmath", "search", "sql", "consult", "osworld", "games", "toy", "multiagent"} <= set(GROUPS)
    assert {spec.env_id for spec in agentrl.registered_domains()} <= set(AGENTRL_IDS)
    assert "AgentRL-MA/tictactoe-vs-best-v0" in GROUPS["multiagent"]


@pytest.mark.parametrize(
    "group",
    [pytest.param(name, marks=_marks(name)) for name in sorted(GROUPS)],
)
@pytest.mark.timeout(300)
def test_reset_step_close_leaves_nothing_open(group: str) -> None:
    """Reset, one valid step and close of every id of the group: no ResourceWarning, no descriptor left."""
    if group in SYSTEM_PARTS:
        SYSTEM_PARTS[group][1]()
    assert_closed(run_child("gym", GROUPS[group]))


def test_multiagent_modules_leave_nothing_open() -> None:
    """``parallel_env()`` (where a module has one) and ``env()`` of every multi-agent module."""
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    assert_closed(run_child("multiagent", sorted(MULTIAGENT_ENVS)))


def test_a_socket_left_to_the_garbage_collector_fails_the_check() -> None:
    """A planted socket that only a finalizer closes shows in stderr, so the check above would fail."""
    proc = run_child("gym", ["AgentRL/Letter-v0"], plant="gc", timeout=60)
    assert "ResourceWarning" in proc.stderr and "unclosed <socket.socket" in proc.stderr, proc.stderr[-2000:]
    with pytest.raises(AssertionError):
        assert_closed(proc)


def test_a_socket_kept_open_fails_the_check() -> None:
    """A planted socket that the env keeps referenced never warns, but the descriptor count catches it."""
    proc = run_child("multiagent", ["tictactoe_v0"], plant="kept", timeout=60)
    assert proc.returncode != 0 and "LEAK: tictactoe_v0 left 1 more file descriptor(s) open" in proc.stderr, (
        proc.stderr[-2000:]
    )
    with pytest.raises(AssertionError):
        assert_closed(proc)
