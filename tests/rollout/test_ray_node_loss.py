"""A Ray cluster that loses a node mid-rollout loses no episode: the engine tries them again elsewhere.

Three Ray nodes on this machine (``ray.cluster_utils.Cluster``: a head with one CPU and two worker nodes with
two each); each env actor reserves one CPU, so the three envs in flight spread over the nodes (and still fit
when one worker node is gone). Once episodes
run, the node holding the most env actors is killed (not gracefully: its raylet and workers die at once). The
engine sees those actors die, marks their episodes failed, and tries each again (``retries``) on a new actor,
which Ray places on a node still alive. Every request ends ``ok`` exactly once, and the run ends well within
the test's time limit.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import time
from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray", reason="ray is missing: pip install 'agentrl-gym[ray]'")
pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ray.cluster_utils import Cluster  # noqa: E402

from agentrl.llm.tiny import build_tiny_model  # noqa: E402
from agentrl.llm.transformers_backend import TransformersBackend  # noqa: E402
from agentrl.rollout import RolloutConfig, RolloutEngine, RolloutRequest  # noqa: E402
from agentrl.rollout.ray_workers import RayWorkers  # noqa: E402
from agentrl.rollout.workloads import LatencyEnv  # noqa: E402

pytestmark = pytest.mark.timeout(420)

# each episode: 3-6 tool calls of 0.3-0.6 s, so a node is lost while episodes are on it
ENV = functools.partial(LatencyEnv, min_turns=3, max_turns=6, min_latency_s=0.3, max_latency_s=0.6)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    if ray.is_initialized():
        ray.shutdown()
    fast_failure = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_timeout_ms": 500}
    made = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "_system_config": fast_failure},
    )
    for _ in range(2):
        made.add_node(num_cpus=2)
    made.wait_for_nodes()
    ray.init(address=made.address, include_dashboard=False, log_to_driver=False)
    yield made
    ray.shutdown()
    made.shutdown()


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TransformersBackend]:
    made = TransformersBackend(build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2"), batch_wait_ms=5)
    yield made
    made.close()


def test_a_lost_node_loses_no_episode(cluster: Cluster, backend: TransformersBackend) -> None:
    workers = RayWorkers(ENV, num_cpus_per_env=1.0)
    config = RolloutConfig(num_envs=3, max_new_tokens=4, max_turns=8, retries=3, keep_failed=True, step_timeout_s=60)
    requests = [RolloutRequest(seed=seed) for seed in range(10)]
    nodes_by_id = {node.node_id: node for node in cluster.worker_nodes}
    landed: collections.Counter[str] = collections.Counter()
    killed: dict[str, object] = {}

    def kill_the_busiest_node() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            on = collections.Counter(w.node_id for w in workers.live() if w.node_id in nodes_by_id)
            landed.update(w.node_id for w in workers.live() if w.node_id)
            if on and max(on.values()) >= 1 and sum(on.values()) >= 2:
                victim, actors = on.most_common(1)[0]
                time.sleep(0.8)  # in the middle of their episodes
                cluster.remove_node(nodes_by_id[victim], allow_graceful=False)
                killed.update(node=victim, actors=actors)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_busiest_node)
    started = time.monotonic()
    try:
        with RolloutEngine(workers, backend, config=config) as engine:
            killer.start()
            trajectories = engine.run(requests)
            stats = dict(engine.stats)
    finally:
        killer.join(130)
        workers.shutdown()
    wall = time.monotonic() - started
    print(f"env actors landed on {len(landed)} node(s); killed {killed}; stats {stats}; {wall:.1f} s")
    assert killed, "no node was killed: the env actors never spread over the worker nodes"
    assert [t.status for t in trajectories] == ["ok"] * len(requests), [t.failure for t in trajectories]
    # each request once: none lost, none doubled
    assert sorted(t.request.seed for t in trajectories) == list(range(len(requests)))
    assert stats["retried"] >= 1 and stats["episodes"] == len(requests)
    assert any(t.attempts > 1 for t in trajectories)
    assert wall < 300
