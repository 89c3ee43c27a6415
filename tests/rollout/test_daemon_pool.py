"""The env threads' pool: a hung call of an abandoned env does not keep the process from exiting.

With :class:`concurrent.futures.ThreadPoolExecutor` the interpreter joins every pool thread at exit, so one
hung ``step`` or ``close`` kept a finished training run alive until CI killed it. The exit tests run in a
child interpreter and would hang (and time out) with that pool.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agentrl.rollout.daemon_pool import DaemonThreadPool

pytestmark = pytest.mark.timeout(120)


def _exit_time(script: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60)
    return time.monotonic() - started, done


def test_a_hung_step_of_an_abandoned_env_does_not_block_the_exit() -> None:
    took, done = _exit_time(
        """
        import asyncio, functools
        from agentrl.rollout import daemon_pool
        from agentrl.rollout.workers import ThreadWorkers
        from agentrl.rollout.workloads import FaultyEnv

        daemon_pool.EXIT_GRACE_S = 1.0

        async def main():
            factory = ThreadWorkers(functools.partial(FaultyEnv, fault="hang", at_turn=1))
            worker = factory.make()
            await worker.start()
            await worker.reset(0, None)
            try:
                await asyncio.wait_for(worker.step("x"), 0.5)
            except asyncio.TimeoutError:
                pass
            worker.abandon()
            factory.shutdown()

        asyncio.run(main())
        print("main done", flush=True)
        """
    )
    assert done.returncode == 0 and done.stdout.strip() == "main done", done.stderr[-2000:]
    assert took < 30, f"the exit waited {took:.0f}s for a hung step"


def test_an_abandoned_envs_close_still_finishes_at_exit(tmp_path: Path) -> None:
    marker = tmp_path / "closed"
    _, done = _exit_time(
        f"""
        import asyncio, time
        import gymnasium as gym
        from agentrl.rollout.workers import ThreadWorkers

        class SlowClose(gym.Env):
            observation_space = action_space = gym.spaces.Text(16)

            def reset(self, *, seed=None, options=None):
                return "x", {{}}

            def step(self, action):
                return "x", 0.0, True, False, {{}}

            def close(self):
                time.sleep(0.5)  # a sandbox being cleaned up
                open({str(marker)!r}, "w").close()

        async def main():
            factory = ThreadWorkers(SlowClose)
            worker = factory.make()
            await worker.start()
            worker.abandon()  # its close runs in the pool, nobody waits for it
            await asyncio.sleep(0.1)
            factory.shutdown()

        asyncio.run(main())
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert marker.exists(), "the close that was running at exit was cut off"


def test_results_errors_reuse_and_shutdown() -> None:
    pool = DaemonThreadPool(2, thread_name_prefix="t")
    assert [pool.submit(pow, 2, n).result(timeout=5) for n in range(5)] == [1, 2, 4, 8, 16]
    assert len(pool._threads) == 1  # one call at a time: the idle thread is reused
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=5)
    names = set()
    gate = threading.Event()

    def held() -> None:
        names.add(threading.current_thread().name)
        gate.wait(5)

    running = [pool.submit(held) for _ in range(2)]
    queued = pool.submit(held)
    time.sleep(0.2)
    assert len(pool._threads) == 2 and all(t.daemon for t in pool._threads)
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(print)
    gate.set()
    for future in running:
        future.result(timeout=5)
    pool.shutdown(wait=True)
    assert names == {"t_0", "t_1"} and not any(t.is_alive() for t in pool._threads)
    with pytest.raises(ValueError, match="at least 1"):
        DaemonThreadPool(0)
