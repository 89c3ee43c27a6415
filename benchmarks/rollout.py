"""``python benchmarks/rollout.py``: async versus lockstep rollout collection, and throughput versus concurrency.

The workload has stragglers by construction: :class:`~agentrl.rollout.workloads.LatencyEnv`
episodes last 1-8 turns (drawn per episode) and every tool call takes 10-500 ms (drawn per call);
by default half of the envs make that call as a real sandboxed Python execution, the other half
sleep. The policy is a tiny local chat model (random weights, built on the spot) sampling
``--max-tokens`` tokens per turn through :class:`TransformersBackend`'s dynamic batching.

1. The same ``--trajectories`` requests (same seeds, so the same episode lengths and latencies)
   are collected with ``--num-envs`` envs in ``lockstep`` mode (all envs generate, then all step;
   a batch ends with its longest episode) and in ``async`` mode, ``--repeats`` times each,
   alternating; the report gives the median wall time of each and their ratio (target >= 2x).
2. Async collection with 1, 4, 16 and 64 concurrent envs (``--concurrency``; sleep tools only,
   so 64 envs do not mean 64 Python sandboxes on a small machine): trajectories per second.

Absolute times depend on the machine; the ratio is measured within one run.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MixedLatencyEnvs", "main", "run_benchmark"]


class MixedLatencyEnvs:
    """An env factory that alternates Python-sandbox and sleep tools (``python_every``-th env is Python).

    ``env_class``: the :class:`~agentrl.rollout.workloads.LatencyEnv` (sub)class to build (the pixel benchmark's
    :class:`~benchmarks.rollout_pixels.PixelLatencyEnv`); ``LatencyEnv`` by default.

    Example:
        >>> make = MixedLatencyEnvs(python_every=2, min_latency_s=0.0, max_latency_s=0.0)
        >>> [make().tool for _ in range(4)]
        ['python', 'sleep', 'python', 'sleep']
    """

    def __init__(self, python_every: int = 2, env_class: Any = None, **env_kwargs: Any) -> None:
        self.python_every = python_every
        self.env_class = env_class
        self.env_kwargs = env_kwargs
        self._count = itertools.count()
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        """Build the next env."""
        from agentrl.rollout.workloads import LatencyEnv

        with self._lock:
            n = next(self._count)
        python = self.python_every > 0 and n % self.python_every == 0
        return (self.env_class or LatencyEnv)(tool="python" if python else "sleep", **self.env_kwargs)


def _collect(
    backend: Any, env_fn: Callable[[], Any], mode: str, num_envs: int, trajectories: int, max_new_tokens: int
) -> tuple[float, dict[str, float], int]:
    from agentrl.rollout import RolloutConfig, RolloutEngine, RolloutRequest

    config = RolloutConfig(
        num_envs=num_envs, mode=mode, max_new_tokens=max_new_tokens, temperature=1.0, sampling_seed=0, max_turns=16
    )
    requests = [RolloutRequest(seed=seed) for seed in range(trajectories)]
    with RolloutEngine(env_fn, backend, config=config) as engine:
        started = time.perf_counter()
        done = engine.run(requests)
        elapsed = time.perf_counter() - started
        stats = dict(engine.stats)
    failed = trajectories - sum(t.ok for t in done)
    return elapsed, stats, failed


def run_benchmark(
    *,
    trajectories: int = 64,
    num_envs: int = 16,
    concurrency: Sequence[int] = (1, 4, 16, 64),
    sweep_trajectories: int = 0,
    repeats: int = 3,
    max_new_tokens: int = 16,
    min_latency_s: float = 0.01,
    max_latency_s: float = 0.5,
    min_turns: int = 1,
    max_turns: int = 8,
    python_every: int = 2,
    model_dir: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run both measurements; return the figures as a dict (also what ``--json`` writes).

    Args:
        trajectories: requests per async-versus-lockstep run.
        num_envs: concurrent envs in that comparison.
        concurrency: env counts for the throughput sweep (empty to skip it).
        sweep_trajectories: requests per sweep point (0: ``max(16, 2 * envs)``).
        repeats: runs of each mode (the median is reported).
        max_new_tokens: tokens sampled per turn.
        min_latency_s: shortest tool latency.
        max_latency_s: longest tool latency.
        min_turns: shortest episode.
        max_turns: longest episode.
        python_every: every n-th env runs its tool as sandboxed Python (0: none).
        model_dir: where the tiny model is built (a temporary folder by default).
        log: where progress lines go.
    """
    from agentrl.llm.tiny import build_tiny_model
    from agentrl.llm.transformers_backend import TransformersBackend

    folder = Path(model_dir or tempfile.mkdtemp(prefix="agentrl-rollout-bench-")) / "tiny-qwen2"
    backend = TransformersBackend(build_tiny_model(folder), max_batch_size=64, batch_wait_ms=2.0)
    env_kwargs = {
        "min_turns": min_turns,
        "max_turns": max_turns,
        "min_latency_s": min_latency_s,
        "max_latency_s": max_latency_s,
    }
    report: dict[str, Any] = {
        "workload": {**env_kwargs, "python_every": python_every, "max_new_tokens": max_new_tokens},
        "trajectories": trajectories,
        "num_envs": num_envs,
        "repeats": repeats,
    }
    try:
        times: dict[str, list[float]] = {"lockstep": [], "async": []}
        for repeat in range(repeats):
            for mode in ("lockstep", "async"):
                env_fn = MixedLatencyEnvs(python_every, **env_kwargs)
                elapsed, stats, failed = _collect(backend, env_fn, mode, num_envs, trajectories, max_new_tokens)
                if failed:
                    raise RuntimeError(f"{failed} trajectories failed in {mode} mode")
                times[mode].append(elapsed)
                log(
                    f"repeat {repeat + 1}/{repeats} {mode:>8}: {trajectories} trajectories in {elapsed:6.2f}s "
                    f"({trajectories / elapsed:5.2f}/s; {int(stats['turns'])} turns)"
                )
        lockstep, asynchronous = statistics.median(times["lockstep"]), statistics.median(times["async"])
        report["lockstep_s"], report["async_s"] = lockstep, asynchronous
        report["speedup"] = lockstep / asynchronous
        report["runs"] = times
        log(f"median: lockstep {lockstep:.2f}s, async {asynchronous:.2f}s -> async is {lockstep / asynchronous:.2f}x")

        sweep = []
        for envs in concurrency:
            n = sweep_trajectories or max(16, 2 * envs)
            env_fn = functools.partial(_sleep_env, env_kwargs)
            elapsed, _, failed = _collect(backend, env_fn, "async", envs, n, max_new_tokens)
            sweep.append(
                {"num_envs": envs, "trajectories": n, "seconds": elapsed, "per_second": (n - failed) / elapsed}
            )
            log(f"async, {envs:>3} envs: {n} trajectories in {elapsed:6.2f}s = {(n - failed) / elapsed:6.2f}/s")
        report["concurrency"] = sweep
        report["backend"] = {k: backend.stats[k] for k in ("batches", "requests", "max_batch")}
    finally:
        backend.close()
    return report


def _sleep_env(env_kwargs: dict[str, Any]) -> Any:
    from agentrl.rollout.workloads import LatencyEnv

    return LatencyEnv(tool="sleep", **env_kwargs)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=64)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--concurrency", default="1,4,16,64", help="comma-separated env counts ('' to skip)")
    parser.add_argument("--sweep-trajectories", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", "--max-new-tokens", dest="max_new_tokens", type=int, default=16)
    parser.add_argument("--min-latency", type=float, default=0.01)
    parser.add_argument("--max-latency", type=float, default=0.5)
    parser.add_argument("--min-turns", type=int, default=1)
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--python-every", type=int, default=2, help="every n-th env uses sandboxed Python (0: none)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    concurrency = [int(x) for x in args.concurrency.split(",") if x.strip()]
    report = run_benchmark(
        trajectories=args.trajectories,
        num_envs=args.num_envs,
        concurrency=concurrency,
        sweep_trajectories=args.sweep_trajectories,
        repeats=args.repeats,
        max_new_tokens=args.max_new_tokens,
        min_latency_s=args.min_latency,
        max_latency_s=args.max_latency,
        min_turns=args.min_turns,
        max_turns=args.max_turns,
        python_every=args.python_every,
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(f"async/lockstep speedup: {report['speedup']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
