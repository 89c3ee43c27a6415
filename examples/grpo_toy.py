r"""GRPO from scratch on a toy env: a tiny random model learns to write the letter ``a``; the reward rises.

``AgentRL/Letter-v0`` (:class:`agentrl.envs.toy.LetterEnv`) rewards the share of ``a`` in the first
16 characters of a reply. A randomly initialised tiny model scores a few percent; our GRPO
(:class:`agentrl.train.grpo.GRPOTrainer`: group-relative advantages, clipped policy loss, exact
token ids and logprobs from the rollout engine) drives it up within a few dozen steps on a CPU.
The example prints the reward of each step as a text curve::

    python examples/grpo_toy.py --quick            # 25 steps (CI, about 20 s)
    python examples/grpo_toy.py --steps 40         # the full curve (a few minutes on CPU)
    python examples/grpo_toy.py --loss-type dapo   # grpo, dr_grpo, dapo, gspo or dcpo

The same from the command line (plus ``curves.png``, TensorBoard and checkpoints in the run folder)::

    agentrl train grpo --env AgentRL/Letter-v0 --model tiny --max-steps 30 --group-size 8 \
        --prompts-per-step 4 --max-tokens 8 --learning-rate 1e-3
"""

from __future__ import annotations

import argparse
import tempfile
import time

REQUIRES = ["torch", "transformers"]
"""Optional packages this example needs (``pip install 'agentrl-gym[train]'``)."""


def bar(value: float, width: int = 40) -> str:
    """A text bar for a reward in [0, 1]."""
    filled = round(max(0.0, min(1.0, value)) * width)
    return "#" * filled + "." * (width - filled)


def main(argv: list[str] | None = None) -> list[float]:
    """Train, print the reward curve, and return the reward of every step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--loss-type", default="grpo", choices=["grpo", "dr_grpo", "dapo", "gspo", "dcpo"])
    parser.add_argument("--output-dir", help="the run folder (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="25 steps (for CI)")
    args = parser.parse_args(argv)

    from agentrl.envs.toy import LetterEnv
    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    steps = 25 if args.quick else args.steps
    train_args = GRPOArgs(
        env_fn=LetterEnv,  # or env="AgentRL/Letter-v0"
        model="tiny",
        output_dir=args.output_dir or tempfile.mkdtemp(prefix="agentrl-grpo-toy-"),
        loss_type=args.loss_type,
        max_steps=steps,
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=8,
        learning_rate=1e-3,
        num_envs=32,
        seed=args.seed,
        tensorboard=False,
    )
    rewards: list[float] = []
    start = time.perf_counter()
    print(f"GRPO ({args.loss_type}) on AgentRL/Letter-v0, tiny model, {steps} steps; reward = share of 'a'\n")
    with GRPOTrainer(train_args) as trainer:
        for step in range(1, steps + 1):
            metrics = trainer.step()
            reward = float(metrics["reward/mean"])
            rewards.append(reward)
            print(f"step {step:3d}  reward {reward:.3f}  {bar(reward)}", flush=True)
    head, tail = rewards[: min(3, len(rewards))], rewards[-min(3, len(rewards)) :]
    first, last = sum(head) / len(head), sum(tail) / len(tail)
    print(f"\nmean reward: first 3 steps {first:.3f} -> last 3 steps {last:.3f} "
          f"({time.perf_counter() - start:.0f} s; run folder {train_args.output_dir})")  # fmt: skip
    if last <= first:
        print("(no rise this time: try more --steps)")
    return rewards


if __name__ == "__main__":
    main()
