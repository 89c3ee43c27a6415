"""``python -m agentrl.bench.train_overlap``: GRPO steps per second, collecting in step vs overlapped.

With ``overlap_rollouts`` the next step's batch is collected (env tool calls, generation) while the
current step updates, so a step costs about ``max(collect, update)`` instead of their sum. The
workload: :class:`~agentrl.rollout.workloads.LatencyEnv` episodes of 2-4 turns whose tool calls
take 20-120 ms, a tiny local model, ``--updates`` optimizer passes per batch (to give the update a
realistic share of the step). Both modes run the same number of steps, alternating, ``--repeats``
times; the report is the median seconds per step of each and their ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from typing import Any

__all__ = ["main", "run"]


def _steps_per_run(overlap: bool, steps: int, updates: int, out: str) -> float:
    from agentrl.rollout.workloads import LatencyEnv
    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    env_fn = functools.partial(LatencyEnv, min_turns=2, max_turns=4, min_latency_s=0.02, max_latency_s=0.12)
    args = GRPOArgs(
        env_fn=env_fn, model="tiny", output_dir=out, max_steps=steps, group_size=4, prompts_per_step=4,
        max_new_tokens=16, learning_rate=1e-4, updates_per_step=updates, overlap_rollouts=overlap,
        tensorboard=False, num_envs=16,
    )  # fmt: skip
    with GRPOTrainer(args) as trainer:
        trainer.step()  # warm-up: builds envs and sandboxes, first batch
        started = time.perf_counter()
        for _ in range(steps - 1):
            trainer.step()
        return (time.perf_counter() - started) / (steps - 1)


def run(steps: int = 8, updates: int = 4, repeats: int = 3, log: Any = print) -> dict[str, float]:
    """Median seconds per step in both modes and their ratio."""
    root = tempfile.mkdtemp(prefix="agentrl-overlap-")
    times: dict[str, list[float]] = {"in_step": [], "overlapped": []}
    for repeat in range(repeats):
        for mode in ("in_step", "overlapped"):
            seconds = _steps_per_run(mode == "overlapped", steps, updates, f"{root}/{mode}-{repeat}")
            times[mode].append(seconds)
            log(f"repeat {repeat + 1}/{repeats} {mode:>10}: {seconds * 1000:7.1f} ms/step")
    in_step, overlapped = statistics.median(times["in_step"]), statistics.median(times["overlapped"])
    log(
        f"median: in step {in_step * 1000:.1f} ms, overlapped {overlapped * 1000:.1f} ms -> {in_step / overlapped:.2f}x"
    )
    return {"in_step_s": in_step, "overlapped_s": overlapped, "speedup": in_step / overlapped}


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
