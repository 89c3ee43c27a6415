"""The engine over process and Ray workers: same trajectories as in-process envs; hung envs killed."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gymnasium as gym

from agentrl.llm.tiny import build_tiny_model
from agentrl.llm.transformers_backend import TransformersBackend
from agentrl.rollout import RolloutConfig, RolloutEngine, RolloutRequest
from agentrl.rollout.process_workers import ProcessWorkers
from agentrl.rollout.workloads import FaultyEnv, LatencyEnv

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersBackend]:
    made = TransformersBackend(build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2"), batch_wait_ms=5)
    yield made
    made.close()


GREEDY = RolloutConfig(num_envs=3, max_new_tokens=8, temperature=0.0, max_turns=4)
REQUESTS = [RolloutRequest(seed=s) for s in range(4)]
LATENCY_ENV = functools.partial(LatencyEnv, min_turns=1, max_turns=4, min_latency_s=0.0, max_latency_s=0.01)


def token_ids(envs, backend: TransformersBackend) -> list[list[int]]:
    with RolloutEngine(envs, backend, config=GREEDY) as engine:
        trajectories = engine.run(REQUESTS)
    assert all(t.ok for t in trajectories), [t.failure for t in trajectories]
    for trajectory in trajectories:
        trajectory.validate()
    return [t.token_ids for t in trajectories]


def test_process_workers_give_the_same_trajectories_and_kill_a_hung_env(backend) -> None:
    in_process = token_ids(LATENCY_ENV, backend)
    workers = ProcessWorkers(LATENCY_ENV)
    try:
        assert token_ids(workers, backend) == in_process
    finally:
        workers.shutdown()

    hang = functools.partial(FaultyEnv, fault="hang", hang_s=60.0, turns=2, only_seeds=(1,))
    workers = ProcessWorkers(hang)
    config = RolloutConfig(num_envs=2, max_new_tokens=4, step_timeout_s=1.0, keep_failed=True)
    try:
        with RolloutEngine(workers, backend, config=config) as engine:
            trajectories = engine.run([RolloutRequest(seed=s) for s in range(3)])
        assert [t.status for t in trajectories] == ["ok", "failed", "ok"]
        assert "timed out" in (trajectories[1].failure or "")
    finally:
        workers.shutdown()


def test_process_workers_run_a_real_sandboxed_env(backend) -> None:
    workers = ProcessWorkers(functools.partial(gym.make, "AgentRL/TIRMath-v0"))
    try:
        with RolloutEngine(workers, backend, config=GREEDY) as engine:
            trajectories = engine.run(REQUESTS[:2])
        assert all(t.ok and t.task_id for t in trajectories)
    finally:
        workers.shutdown()


def test_ray_workers_give_the_same_trajectories(backend) -> None:
    pytest.importorskip("ray")
    from agentrl.rollout.ray_workers import RayWorkers

    in_process = token_ids(LATENCY_ENV, backend)
    workers = RayWorkers(LATENCY_ENV, ray_init_kwargs={"num_cpus": 2})
    try:
        assert token_ids(workers, backend) == in_process
        crash = functools.partial(FaultyEnv, fault="exit", turns=2, only_seeds=(2,))
        config = RolloutConfig(num_envs=2, max_new_tokens=4, keep_failed=True)
        crashing = RayWorkers(crash)
        with RolloutEngine(crashing, backend, config=config) as engine:
            trajectories = engine.run([RolloutRequest(seed=s) for s in range(4)])
        crashing.shutdown()
        assert [t.status for t in trajectories] == ["ok", "ok", "failed", "ok"]
        assert "died" in (trajectories[2].failure or "")
    finally:
        workers.shutdown()
