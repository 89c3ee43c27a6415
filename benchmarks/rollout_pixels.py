"""``python benchmarks/rollout_pixels.py``: async versus lockstep on a pixel env, and memory per screenshot kept.

The workload is :class:`PixelLatencyEnv`: the text benchmark's stragglers
(:mod:`benchmarks.rollout`: episodes of 1-8 turns, each step's tool call 10-500 ms, drawn from the seed,
every other env's call a real sandboxed Python run) with a new (H, W, 3) screenshot in every observation,
as a GUI or game env gives. The policy is the tiny VLM
(:func:`~agentrl.llm.tiny_vlm.build_tiny_vlm`, random weights) through
:class:`~agentrl.llm.vlm_backend.TransformersVLMBackend`'s dynamic batching.

1. The same ``--trajectories`` requests are collected with ``--num-envs`` envs in ``lockstep`` and in
   ``async`` mode, ``--repeats`` times each, alternating; the median wall times and their ratio (target
   >= 2x, as for text).
2. For each ``--keep`` k (default 1, 3, 8), fixed 8-turn episodes with ``max_images=k`` in a fresh
   subprocess: the peak resident memory while collecting (the kernel's mark reset after the model is
   loaded and warm) and its rise over idle, the largest context a generation saw (tokens), and the pixel
   bytes and tokens a trajectory holds (every window: an image kept in several windows counts in each).

Absolute figures depend on the machine; the ratio is measured within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from agentrl.rollout.workloads import LatencyEnv

#: the repository root, where ``benchmarks`` imports from (this script's run and its memory subprocesses)
ROOT = Path(__file__).resolve().parents[1]
if not __package__:  # run as `python benchmarks/rollout_pixels.py`
    sys.path.insert(0, str(ROOT))

__all__ = ["PixelLatencyEnv", "main", "memory_per_keep", "run_benchmark", "schedule_floor"]

IMAGE_SIZE = 224
"""The tiny VLM's image side here: 224 pixels make 64 image tokens (67 with the tokens around them), so a
screenshot costs several times its placeholder's tokens, as with a real VLM (hundreds to thousands)."""


class PixelLatencyEnv(LatencyEnv):
    """:class:`LatencyEnv` whose observations carry a screenshot: ``{"pixels": (size, size, 3), "text": str}``.

    Each observation's image is a different pattern drawn from the env's RNG, so no two are alike.

    Example:
        >>> env = PixelLatencyEnv(min_latency_s=0.0, max_latency_s=0.0, size=32)
        >>> obs, info = env.reset(seed=0)
        >>> obs["pixels"].shape, obs["text"].startswith("Call the tool")
        ((32, 32, 3), True)
    """

    def __init__(self, size: int = 224, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.size = int(size)
        self.observation_space = gym.spaces.Dict(
            {"pixels": gym.spaces.Box(0, 255, (self.size, self.size, 3), np.uint8), "text": self.observation_space}
        )

    def _screen(self) -> np.ndarray:
        return self.np_random.integers(0, 256, (self.size, self.size, 3), dtype=np.uint8)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """:meth:`LatencyEnv.reset` with a first screenshot."""
        text, info = super().reset(seed=seed, options=options)
        return {"pixels": self._screen(), "text": text}, info

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """:meth:`LatencyEnv.step` with a new screenshot."""
        text, reward, terminated, truncated, info = super().step(action)
        return {"pixels": self._screen(), "text": text}, reward, terminated, truncated, info


def _collect(
    backend: Any, env_kwargs: dict[str, Any], mode: str, num_envs: int, count: int, python_every: int = 0, **config: Any
) -> Any:
    from agentrl.rollout import RolloutConfig, RolloutEngine, RolloutRequest
    from benchmarks.rollout import MixedLatencyEnvs

    settings = RolloutConfig(num_envs=num_envs, mode=mode, temperature=1.0, sampling_seed=0, max_turns=16, **config)
    envs = MixedLatencyEnvs(python_every, env_class=PixelLatencyEnv, **env_kwargs)
    with RolloutEngine(envs, backend, config=settings) as engine:
        started = time.perf_counter()
        done = engine.run([RolloutRequest(seed=seed) for seed in range(count)])
        return time.perf_counter() - started, done, dict(engine.stats)


def schedule_floor(env_seconds: list[float], num_envs: int) -> float:
    """The async run's wall time if generation took no time: episodes start in request order on free envs.

    The engine cannot know an episode's length before it runs, so it starts them first come, first served;
    a long episode drawn late ends the run late whatever the policy's speed. ``lockstep_s / floor`` is the
    most async can gain over lockstep on the workload.

    >>> schedule_floor([1.0, 1.0, 3.0], num_envs=2)  # the third starts when the first env frees up
    4.0
    """
    import heapq

    free_at = [0.0] * num_envs
    for seconds in env_seconds:
        heapq.heappush(free_at, heapq.heappop(free_at) + seconds)
    return max(free_at)


def run_benchmark(
    *,
    trajectories: int = 32,
    num_envs: int = 16,
    repeats: int = 3,
    max_new_tokens: int = 8,
    size: int = 224,
    python_every: int = 2,
    model_dir: str | None = None,
    log: Any = print,
) -> dict[str, Any]:
    """Async versus lockstep on :class:`PixelLatencyEnv` with the tiny VLM; the figures as a dict.

    ``python_every``: every n-th env makes its tool call a sandboxed Python run (0: all sleep), as the text
    benchmark's default.
    """
    from agentrl.llm.tiny_vlm import build_tiny_vlm
    from agentrl.llm.vlm_backend import TransformersVLMBackend

    folder = Path(model_dir or tempfile.mkdtemp(prefix="agentrl-pixel-bench-")) / "tiny-vlm"
    backend = TransformersVLMBackend(
        build_tiny_vlm(folder, image_size=IMAGE_SIZE), max_batch_size=64, batch_wait_ms=2.0
    )
    env_kwargs = {"size": size, "min_turns": 1, "max_turns": 8, "min_latency_s": 0.01, "max_latency_s": 0.5}
    report: dict[str, Any] = {
        "workload": {**env_kwargs, "max_new_tokens": max_new_tokens, "python_every": python_every},
        "num_envs": num_envs,
    }
    try:
        times: dict[str, list[float]] = {"lockstep": [], "async": []}
        floors: list[float] = []
        drawn_floors: list[float] = []
        for repeat in range(repeats):
            for mode in ("lockstep", "async"):
                elapsed, done, stats = _collect(
                    backend, env_kwargs, mode, num_envs, trajectories, python_every, max_new_tokens=max_new_tokens
                )
                failed = sum(not t.ok for t in done)
                if failed:
                    raise RuntimeError(f"{failed} trajectories failed in {mode} mode: {done[0].failure}")
                times[mode].append(elapsed)
                if mode == "async":  # each episode's env time, in request order
                    by_seed = {t.request.seed: t.timings.get("env", 0.0) for t in done}
                    floors.append(schedule_floor([by_seed[seed] for seed in sorted(by_seed)], num_envs))
                    drawn = {t.request.seed: sum(turn.info.get("latency_s", 0.0) for turn in t.turns) for t in done}
                    drawn_floors.append(schedule_floor([drawn[seed] for seed in sorted(drawn)], num_envs))
                log(
                    f"repeat {repeat + 1}/{repeats} {mode:>8}: {trajectories} trajectories in {elapsed:6.2f}s "
                    f"({trajectories / elapsed:5.2f}/s; {int(stats['turns'])} turns)"
                )
        lockstep, asynchronous = statistics.median(times["lockstep"]), statistics.median(times["async"])
        report.update(
            trajectories=trajectories,
            repeats=repeats,
            runs=times,
            lockstep_s=lockstep,
            async_s=asynchronous,
            lockstep_per_s=trajectories / lockstep,
            async_per_s=trajectories / asynchronous,
            speedup=lockstep / asynchronous,
            async_floor_s=statistics.median(floors),
            speedup_ceiling=lockstep / statistics.median(floors),
            drawn_floor_s=statistics.median(drawn_floors),
            drawn_speedup_ceiling=lockstep / statistics.median(drawn_floors),
        )
        log(f"median: lockstep {lockstep:.2f}s, async {asynchronous:.2f}s -> async is {lockstep / asynchronous:.2f}x")
        log(
            f"the async run's floor (its episodes' env time, started in request order, generation free): "
            f"{report['async_floor_s']:.2f}s, so at most {report['speedup_ceiling']:.2f}x over this lockstep"
        )
        log(
            f"the same with the tools' drawn latencies alone (no env or engine cost at all): "
            f"{report['drawn_floor_s']:.2f}s, at most {report['drawn_speedup_ceiling']:.2f}x"
        )
    finally:
        backend.close()
    return report


def _measure_keep(keep: int, trajectories: int, size: int, model_dir: str) -> dict[str, Any]:
    """One ``max_images`` setting in this process (run it in a fresh one: peak RSS is per process)."""
    import resource

    from agentrl.llm.tiny_vlm import build_tiny_vlm
    from agentrl.llm.vlm_backend import TransformersVLMBackend

    backend = TransformersVLMBackend(
        build_tiny_vlm(Path(model_dir) / "tiny-vlm", image_size=IMAGE_SIZE), max_batch_size=64
    )
    prompts: list[int] = []
    original = backend._submit_ids

    def record(prompt_ids: Any, config: Any, images: Any = ()) -> Any:
        prompts.append(len(prompt_ids))
        return original(prompt_ids, config, images)

    backend._submit_ids = record  # type: ignore[method-assign]
    env_kwargs = {"size": size, "min_turns": 8, "max_turns": 8, "min_latency_s": 0.0, "max_latency_s": 0.0}
    try:
        _collect(backend, env_kwargs, "async", 2, 2, max_new_tokens=8, max_images=keep)  # warm up, then measure
        baseline = _reset_peak_rss()
        _, done, _ = _collect(backend, env_kwargs, "async", min(trajectories, 16), trajectories, max_new_tokens=8,
                              max_images=keep)  # fmt: skip
        peak = _status_mb("VmHWM")
    finally:
        backend.close()
    pieces = [[piece for piece in t.pieces()] for t in done if t.ok]
    return {
        "max_images": keep,
        "trajectories": len(pieces),
        "process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "collection_peak_rss_mb": peak,
        "collection_peak_above_idle_mb": peak - baseline,
        "max_context_tokens": max(prompts, default=0),
        "tokens_per_trajectory": statistics.fmean(sum(len(p.token_ids) for p in ps) for ps in pieces),
        "windows_per_trajectory": statistics.fmean(len(ps) for ps in pieces),
        "pixel_mb_per_trajectory": statistics.fmean(
            sum(image.nbytes for p in ps for image in p.images) for ps in pieces
        )
        / 2**20,
    }


def _status_mb(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> float:
    """Reset the kernel's peak-RSS mark (``VmHWM``) to the current RSS and return that, in MB (Linux)."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def memory_per_keep(
    keeps: list[int], trajectories: int = 16, size: int = 224, log: Any = print
) -> list[dict[str, Any]]:
    """:func:`_measure_keep` for each k, each in a fresh subprocess (so that each peak RSS is its own)."""
    model_dir = tempfile.mkdtemp(prefix="agentrl-pixel-mem-")
    rows = []
    for keep in keeps:
        code = (
            f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); "
            "from benchmarks.rollout_pixels import _measure_keep; "
            f"print(json.dumps(_measure_keep({keep}, {trajectories}, {size}, {model_dir!r})))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"max_images={keep}: {done.stderr[-2000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        log(
            f"max_images={keep}: peak RSS while collecting {row['collection_peak_rss_mb']:.0f} MB "
            f"(+{row['collection_peak_above_idle_mb']:.0f} MB over idle), largest context {row['max_context_tokens']} "
            f"tokens, {row['windows_per_trajectory']:.1f} windows and {row['pixel_mb_per_trajectory']:.2f} MB of "
            "pixels per trajectory"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print (and with ``--json`` write) the figures."""
    parser = argparse.ArgumentParser(prog="python benchmarks/rollout_pixels.py", description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=32)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", "--max-new-tokens", dest="max_new_tokens", type=int, default=8)
    parser.add_argument("--size", type=int, default=224, help="the screenshots' side in pixels")
    parser.add_argument("--python-every", type=int, default=2, help="every n-th env uses sandboxed Python (0: none)")
    parser.add_argument("--keep", default="1,3,8", help="max_images settings for the memory figures ('' to skip)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    report = run_benchmark(
        trajectories=args.trajectories,
        num_envs=args.num_envs,
        repeats=args.repeats,
        max_new_tokens=args.max_new_tokens,
        size=args.size,
        python_every=args.python_every,
    )
    keeps = [int(k) for k in args.keep.split(",") if k.strip()]
    if keeps:
        report["memory"] = memory_per_keep(keeps, size=args.size)
    report["command"] = "python benchmarks/rollout_pixels.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
