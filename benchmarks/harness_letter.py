r"""Does GRPO through an agent harness learn as the built-in loop does? The same run both ways, reward per step.

Run ``python benchmarks/harness_letter.py [--steps 30] [--seed 0]`` from the repository root. Two GRPO runs with
``make demo``'s settings (``AgentRL/Letter-v0``, the tiny model, 8 rollouts x 4 tasks per step, 8 new tokens per
reply, learning rate 1e-3), the same seed:
one with the built-in rollout engine, one with ``--harness examples.harness_openai:run_episode`` (a plain
``openai`` client loop against the recording endpoint). Printed and written to
``benchmarks/results/harness_letter.json``: each run's mean reward per step, the mean of the first and last five
steps, the largest trainer-vs-sampler logprob gap of each run, failed episodes, and the wall time.

The two loops build the same first prompt (the observation as a user message); they differ in what follows a
reply: the built-in loop appends the env's next message to the sampled tokens, the harness sends its history as
chat messages, which the tiny model's random replies do not re-tokenise to (so its calls train as windows).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "harness_letter.json"
HARNESS = "examples.harness_openai:run_episode"
#: make demo's GRPO settings on Letter-v0 (the README's curve), for both runs.
SETTINGS = {"group_size": 8, "prompts_per_step": 4, "max_new_tokens": 8, "learning_rate": 1e-3, "num_envs": 32}

__all__ = ["main", "run"]


def _train(harness: str | None, steps: int, seed: int) -> dict[str, Any]:
    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentrl-harness-bench-") as folder:
        settings = GRPOArgs(
            env="AgentRL/Letter-v0",
            model="tiny",
            harness=harness,
            max_steps=steps,
            seed=seed,
            output_dir=folder,
            **SETTINGS,  # type: ignore[arg-type]
        )
        with GRPOTrainer(settings) as trainer:
            history = trainer.train()
    rewards = [round(float(row["reward/mean"]), 4) for row in history]
    return {
        "harness": harness,
        "reward_per_step": rewards,
        "first_5_mean": round(statistics.fmean(rewards[:5]), 4),
        "last_5_mean": round(statistics.fmean(rewards[-5:]), 4),
        "max_logprob_gap": max(float(row["update/logprob_mismatch"]) for row in history),
        "failed_episodes": int(sum(float(row["rollout/failed"]) for row in history)),
        "wall_s": round(time.perf_counter() - started, 1),
    }


def run(steps: int = 30, seed: int = 0) -> dict[str, Any]:
    """Both runs; returns the result dict (also written to the results file by :func:`main`)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the harness is examples/harness_openai.py
    return {
        "command": f"python benchmarks/harness_letter.py --steps {steps} --seed {seed}",
        "settings": {"env": "AgentRL/Letter-v0", "model": "tiny", "steps": steps, "seed": seed, **SETTINGS},
        "builtin": _train(None, steps, seed),
        "harness": _train(HARNESS, steps, seed),
    }


def main(argv: list[str] | None = None) -> int:
    """Run both, print the comparison and write the results file; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    result = run(args.steps, args.seed)
    for name in ("builtin", "harness"):
        r = result[name]
        print(
            f"{name:8s} reward first 5 steps {r['first_5_mean']:.3f} -> last 5 {r['last_5_mean']:.3f}; "
            f"max logprob gap {r['max_logprob_gap']:.1e}; failed episodes {r['failed_episodes']}; {r['wall_s']} s"
        )
        print("         per step: " + " ".join(f"{x:.2f}" for x in r["reward_per_step"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
