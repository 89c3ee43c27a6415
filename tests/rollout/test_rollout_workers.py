"""The three worker factories (thread, process, Ray) behave alike; process and Ray ones can kill a bad env."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import subprocess
import sys
import time
import types

import pytest

from agentrl.core.errors import DependencyNotInstalled
from agentrl.rollout.errors import EnvWorkerError
from agentrl.rollout.process_workers import ProcessWorker, ProcessWorkers
from agentrl.rollout.ray_workers import RayWorkers
from agentrl.rollout.workers import EnvWorker, ThreadWorkers, WorkerFactory
from agentrl.rollout.workloads import FaultyEnv, LatencyEnv

pytestmark = pytest.mark.timeout(120)

FAST_LATENCY = functools.partial(LatencyEnv, min_latency_s=0.0, max_latency_s=0.01)
SYSTEM_PROMPT = "You call a tool until it says you are done."


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray for the whole module (RayWorkers then joins it instead of starting its own)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture
def make_factory(request):
    """``make_factory(kind, env_fn)``; every factory made is shut down after the test."""
    made: list[WorkerFactory] = []

    def make(kind: str, env_fn) -> WorkerFactory:
        if kind == "thread":
            factory: WorkerFactory = ThreadWorkers(env_fn, max_threads=4)
        elif kind == "process":
            factory = ProcessWorkers(env_fn)
        else:
            request.getfixturevalue("ray_cluster")
            factory = RayWorkers(env_fn)
        made.append(factory)
        return factory

    yield make
    for factory in made:
        factory.shutdown()


def _pid_gone(pid: int, within_s: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie: killed, not yet reaped by its parent) within the time."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.02)
    return False


def _reference_episode(seed: int) -> list:
    env = FAST_LATENCY()
    transcript: list = [env.reset(seed=seed)]
    done = False
    while not done:
        step = env.step("ab")
        transcript.append(step)
        done = step[2] or step[3]
    env.close()
    return transcript


ALL_KINDS = ["thread", "process", "ray"]
REMOTE_KINDS = ["process", "ray"]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_start_describe_and_seeded_round_trip_match_the_env_in_process(kind, make_factory):
    factory = make_factory(kind, FAST_LATENCY)
    assert isinstance(factory, WorkerFactory)

    async def episode() -> list:
        worker = factory.make()
        assert isinstance(worker, EnvWorker)
        await worker.start()
        assert worker.system_prompt == SYSTEM_PROMPT
        assert worker.stop_sequences == ()
        transcript: list = [await worker.reset(11, None)]
        done = False
        while not done:
            step = await worker.step("ab")
            transcript.append(step)
            done = step[2] or step[3]
        await worker.close()
        return transcript

    assert asyncio.run(episode()) == _reference_episode(11)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_env_exception_propagates_and_the_worker_stays_usable(kind, make_factory):
    factory = make_factory(kind, functools.partial(FaultyEnv, fault="step_raises", only_seeds=(1,)))

    async def run() -> None:
        worker = factory.make()
        await worker.start()
        await worker.reset(1, None)
        expected = RuntimeError if kind == "thread" else EnvWorkerError
        with pytest.raises(expected, match="injected fault in step") as caught:
            await worker.step("x")
        if kind != "thread":
            assert "RuntimeError: FaultyEnv: injected fault in step" in str(caught.value)
            assert "FaultyEnv" in caught.value.remote_traceback
        # The env survived its exception: a new (unarmed) episode runs.
        assert (await worker.reset(2, None))[0] == "Say anything."
        assert (await worker.step("x"))[0] == "ok 1"
        await worker.close()
        await worker.close()  # idempotent

    asyncio.run(run())


@pytest.mark.parametrize("kind", REMOTE_KINDS)
def test_env_constructor_exception_raises_env_worker_error_on_start(kind, make_factory):
    factory = make_factory(kind, functools.partial(FaultyEnv, fault="construct_raises"))

    async def run() -> None:
        worker = factory.make()
        with pytest.raises(EnvWorkerError, match="RuntimeError: FaultyEnv: injected fault while constructing"):
            await worker.start()
        await worker.close()

    asyncio.run(run())


@pytest.mark.parametrize("kind", REMOTE_KINDS)
def test_env_process_exit_raises_env_worker_error_not_a_hang(kind, make_factory):
    factory = make_factory(kind, functools.partial(FaultyEnv, fault="exit"))

    async def run() -> None:
        worker = factory.make()
        await worker.start()
        await worker.reset(0, None)
        with pytest.raises(EnvWorkerError, match="exit code 17" if kind == "process" else "actor .*died"):
            await asyncio.wait_for(worker.step("x"), 30.0)
        await worker.close()

    asyncio.run(run())


@pytest.mark.parametrize("kind", REMOTE_KINDS)
def test_hung_env_times_out_then_abandon_kills_it(kind, make_factory):
    factory = make_factory(kind, functools.partial(FaultyEnv, fault="hang"))

    async def run() -> int:
        worker = factory.make()
        await worker.start()
        await worker.reset(0, None)
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(worker.step("x"), 1.0)
        assert time.monotonic() - started < 3.0
        pid = worker.pid
        worker.abandon()
        worker.abandon()  # idempotent
        with pytest.raises(EnvWorkerError, match="closed or abandoned"):
            await worker.step("x")
        await worker.close()  # after abandon: nothing to do
        assert pid is not None
        if isinstance(worker, ProcessWorker):
            deadline = time.monotonic() + 2.0
            while worker.process.is_alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert not worker.process.is_alive()
            assert worker.process.exitcode == -9
        return pid

    pid = asyncio.run(run())
    assert _pid_gone(pid, within_s=3.0)


def test_close_of_a_hung_process_worker_kills_it_without_waiting_for_the_close_timeout(make_factory):
    factory = make_factory("process", functools.partial(FaultyEnv, fault="hang"))

    async def run() -> ProcessWorker:
        worker = factory.make()
        await worker.start()
        await worker.reset(0, None)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(worker.step("x"), 0.5)
        started = time.monotonic()
        await worker.close()
        assert time.monotonic() - started < 2.0
        return worker

    worker = asyncio.run(run())
    assert not worker.process.is_alive()


def test_process_workers_shutdown_leaves_no_child_alive(make_factory):
    hang = make_factory("process", functools.partial(FaultyEnv, fault="hang"))
    fine = make_factory("process", FAST_LATENCY)

    async def run() -> list[ProcessWorker]:
        busy, idle, never_started = hang.make(), fine.make(), fine.make()
        await busy.start()
        await idle.start()
        await busy.reset(0, None)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(busy.step("x"), 0.3)
        return [busy, idle, never_started]

    busy, idle, never_started = asyncio.run(run())
    hang.shutdown()
    fine.shutdown()
    fine.shutdown()  # idempotent
    assert not busy.process.is_alive() and not idle.process.is_alive()
    assert never_started.process is None
    assert not [p for p in multiprocessing.active_children() if p.name == "agentrl-env"]


@pytest.mark.parametrize("delay_s", [0.0, 0.05])
def test_abandon_while_starting_leaves_no_child(delay_s, make_factory):
    factory = make_factory("process", FAST_LATENCY)

    async def run() -> ProcessWorker:
        worker = factory.make()
        task = asyncio.ensure_future(worker.start())
        await asyncio.sleep(delay_s)
        task.cancel()
        worker.abandon()
        with pytest.raises((asyncio.CancelledError, EnvWorkerError)):
            await task
        return worker

    worker = asyncio.run(run())
    if worker.pid is not None:  # it got started before the abandon: it must be killed
        assert _pid_gone(worker.pid, within_s=3.0)


def test_process_workers_refuse_an_unpicklable_env_fn_and_name_the_fix():
    with pytest.raises(TypeError, match=r"functools\.partial"):
        ProcessWorkers(lambda: LatencyEnv())
    ProcessWorkers(lambda: LatencyEnv(), start_method="fork").shutdown()  # fork does not pickle
    with pytest.raises(TypeError, match="callable"):
        ProcessWorkers("AgentRL/SQL-v0")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", REMOTE_KINDS)
def test_calls_before_start_raise(kind, make_factory):
    worker = make_factory(kind, FAST_LATENCY).make()
    with pytest.raises(EnvWorkerError, match="not started"):
        asyncio.run(worker.step("x"))


def test_ray_workers_join_a_running_ray_and_shutdown_kills_their_actors(make_factory, ray_cluster):
    factory = make_factory("ray", functools.partial(FaultyEnv, fault="hang"))
    assert factory.started_ray is False  # the module's Ray was already up

    async def run():
        worker = factory.make()
        await worker.start()
        await worker.reset(0, None)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(worker.step("x"), 0.3)
        return worker.pid, worker.node_id

    pid, node_id = asyncio.run(run())
    assert node_id == ray_cluster.get_runtime_context().get_node_id()
    factory.shutdown()
    assert ray_cluster.is_initialized()  # not ours to stop
    assert _pid_gone(pid, within_s=3.0)


def _fake_ray(initialized: bool) -> types.SimpleNamespace:
    calls: list = []

    def init(**kwargs):
        calls.append(("init", kwargs))
        fake.initialized = True

    def shutdown():
        calls.append(("shutdown",))
        fake.initialized = False

    fake = types.SimpleNamespace(initialized=initialized, calls=calls, init=init, shutdown=shutdown)
    fake.is_initialized = lambda: fake.initialized
    return fake


def test_ray_workers_start_ray_only_when_needed_and_stop_only_what_they_started(monkeypatch):
    fake = _fake_ray(initialized=False)
    monkeypatch.setitem(sys.modules, "ray", fake)
    factory = RayWorkers(FAST_LATENCY, ray_init_kwargs={"num_cpus": 2})
    assert factory.started_ray
    assert fake.calls == [("init", {"include_dashboard": False, "log_to_driver": False, "num_cpus": 2})]
    factory.shutdown()
    factory.shutdown()
    assert fake.calls[1:] == [("shutdown",)]

    running = _fake_ray(initialized=True)
    monkeypatch.setitem(sys.modules, "ray", running)
    joined = RayWorkers(FAST_LATENCY, ray_init_kwargs={"address": "auto"})
    joined.shutdown()
    assert not joined.started_ray and running.calls == []


def test_ray_workers_without_ray_name_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(DependencyNotInstalled, match=r"agentrl-gym\[ray\]"):
        RayWorkers(FAST_LATENCY)


def test_no_env_child_processes_are_left(make_factory):
    """Runs last in file order: every process worker of the module was reaped."""
    assert not [p for p in multiprocessing.active_children() if p.name == "agentrl-env"]


_SPAWNY_ENV = '''
import multiprocessing
import os

import gymnasium as gym


def _noop():
    pass


class SpawnyEnv(gym.Env):
    """Starts a daemonic process of its own, like the SQLite sandbox does."""

    metadata = {"render_modes": []}

    def __init__(self):
        process = multiprocessing.get_context("spawn").Process(target=_noop, daemon=True)
        process.start()
        process.join()
        self.code = process.exitcode

    def reset(self, *, seed=None, options=None):
        return f"child exit code {self.code}", {}
'''

_EXIT_WITHOUT_SHUTDOWN = """
import asyncio, functools
from agentrl.rollout.process_workers import ProcessWorkers
from agentrl.rollout.workloads import FaultyEnv
from spawny import SpawnyEnv

async def main():
    spawny = ProcessWorkers(SpawnyEnv).make()
    await spawny.start()
    print((await spawny.reset(0, None))[0], flush=True)
    hung = ProcessWorkers(functools.partial(FaultyEnv, fault="hang")).make()
    await hung.start()
    await hung.reset(0, None)
    try:
        await asyncio.wait_for(hung.step("x"), 0.3)
    except asyncio.TimeoutError:
        print(spawny.pid, hung.pid, flush=True)  # neither closed nor shut down

asyncio.run(main())
"""


def test_env_may_start_processes_and_exit_kills_forgotten_hung_children(tmp_path):
    (tmp_path / "spawny.py").write_text(_SPAWNY_ENV)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_WITHOUT_SHUTDOWN], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30  # the interpreter did not wait on the hung child
    first, second = done.stdout.splitlines()
    assert first == "child exit code 0"  # the env's own child ran: env processes are not daemonic
    for pid in map(int, second.split()):
        assert _pid_gone(pid, within_s=3.0)
