"""``python benchmarks/train_overlap.py``: GRPO steps per second, collecting in step vs overlapped.

With ``overlap_rollouts`` the next step's batch is collected (env tool calls, generation) while the
current step updates, so a step costs about ``max(collect, update)`` instead of their sum. The
workload: :class:`~agentrl.rollout.workloads.LatencyEnv` episodes of 2-4 turns whose tool calls
take 20-120 ms, a tiny local model, ``--updates`` optimizer passes per batch (to give the update a
realistic share of the step). Both modes run the same number of steps, alternating, ``--repeats``
times; the report is the median seconds per step of each and their ratio, measured in one run.

The report also says whether the overlap happened at all: every collection and every update is
timed, and ``*_concurrent_s`` is the time per step during which a collection and an update ran at
once (exactly 0 when collecting in step; above 0 when the prefetch ran during the update).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["main", "run"]


class _Spans:
    """The ``(start, end)`` times of every call of the methods it wraps, per kind (thread-safe)."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[float, float]]] = {"collect": [], "update": []}
        self._lock = threading.Lock()

    def wrap(self, kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
        """``method``, recording when each call started and ended under ``kind``."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                with self._lock:
                    self.spans[kind].append((started, time.perf_counter()))

        return timed

    def concurrent_s(self) -> float:
        """Seconds during which a collection and an update ran at the same time."""
        with self._lock:
            return sum(
                max(0.0, min(c_end, u_end) - max(c_start, u_start))
                for c_start, c_end in self.spans["collect"]
                for u_start, u_end in self.spans["update"]
            )


def _steps_per_run(overlap: bool, steps: int, updates: int, out: str) -> tuple[float, float]:
    """Seconds per step after a warm-up step, and seconds per step of collection running during an update."""
    from agentrl.rollout.workloads import LatencyEnv
    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    env_fn = functools.partial(LatencyEnv, min_turns=2, max_turns=4, min_latency_s=0.02, max_latency_s=0.12)
    args = GRPOArgs(
        env_fn=env_fn, model="tiny", output_dir=out, max_steps=steps, group_size=4, prompts_per_step=4,
        max_new_tokens=16, learning_rate=1e-4, updates_per_step=updates, overlap_rollouts=overlap,
        tensorboard=False, num_envs=16,
    )  # fmt: skip
    spans = _Spans()
    with GRPOTrainer(args) as trainer:
        # instance attributes: the step (and the background prefetch) look the methods up on the objects
        trainer.run.collect = spans.wrap("collect", trainer.run.collect)
        trainer.update = spans.wrap("update", trainer.update)
        trainer.step()  # warm-up: builds envs and sandboxes, first batch
        started = time.perf_counter()
        for _ in range(steps - 1):
            trainer.step()
        seconds = (time.perf_counter() - started) / (steps - 1)
    return seconds, spans.concurrent_s() / steps


def run(steps: int = 8, updates: int = 4, repeats: int = 3, log: Any = print) -> dict[str, float]:
    """Median seconds per step in both modes, their ratio, and the median concurrent seconds per step of each."""
    root = tempfile.mkdtemp(prefix="agentrl-overlap-")
    times: dict[str, list[float]] = {"in_step": [], "overlapped": []}
    concurrent: dict[str, list[float]] = {"in_step": [], "overlapped": []}
    for repeat in range(repeats):
        for mode in ("in_step", "overlapped"):
            seconds, together = _steps_per_run(mode == "overlapped", steps, updates, f"{root}/{mode}-{repeat}")
            times[mode].append(seconds)
            concurrent[mode].append(together)
            log(
                f"repeat {repeat + 1}/{repeats} {mode:>10}: {seconds * 1000:7.1f} ms/step, "
                f"{together * 1000:6.1f} ms/step collecting during the update"
            )
    in_step, overlapped = statistics.median(times["in_step"]), statistics.median(times["overlapped"])
    log(
        f"median: in step {in_step * 1000:.1f} ms, overlapped {overlapped * 1000:.1f} ms -> {in_step / overlapped:.2f}x"
    )
    return {
        "in_step_s": in_step,
        "overlapped_s": overlapped,
        "speedup": in_step / overlapped,
        "in_step_concurrent_s": statistics.median(concurrent["in_step"]),
        "overlapped_concurrent_s": statistics.median(concurrent["overlapped"]),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--updates", type=int, default=4, help="optimizer passes per batch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    run(args.steps, args.updates, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
