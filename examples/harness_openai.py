r"""An agent written against the OpenAI API, trained with our GRPO: the harness is a plain ``openai`` client loop.

``run_episode(env, client, model)`` is the harness contract: play one episode of ``env``, asking the model through
``client`` (an ``openai.OpenAI`` pointed at the trainer's recording endpoint). Nothing in it knows about training:
the endpoint records the exact tokens of every call, and the trainer builds the trajectories from them::

    python examples/harness_openai.py --quick     # 2 GRPO steps on AgentRL/Letter-v0 with a tiny model (CI)
    python examples/harness_openai.py             # 30 steps: the reward rises as with the built-in loop
    agentrl train grpo --env AgentRL/Letter-v0 --model tiny --harness examples.harness_openai:run_episode \\
        --max-steps 30 --group-size 8 --prompts-per-step 4 --max-tokens 8 --learning-rate 1e-3

The same function benchmarks without training: ``agentrl bench --env AgentRL/Letter-v0 --harness
examples.harness_openai:run_episode``.
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

REQUIRES = ["openai", "torch", "transformers"]
"""pip install 'agentrl-gym[harness,train]'"""


def run_episode(env: Any, client: Any, model: str) -> None:
    """Play one episode: the observation is the user's message, the model's reply is the action."""
    observation, _info = env.reset()
    messages = [{"role": "user", "content": str(observation)}]
    done = False
    while not done:
        reply = client.chat.completions.create(model=model, messages=messages, max_tokens=64)
        text = reply.choices[0].message.content or ""
        observation, _reward, terminated, truncated, _info = env.step(text)
        done = terminated or truncated
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": str(observation)}]


def train_letter(harness: Any, argv: list[str] | None, description: str) -> list[float]:
    """GRPO on AgentRL/Letter-v0 through ``harness`` with make demo's settings; print and return the reward per step."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=30, help="GRPO steps")
    parser.add_argument("--quick", action="store_true", help="2 steps (for CI)")
    parser.add_argument("--output-dir", help="the run folder (default: a new temporary folder)")
    args = parser.parse_args(argv)

    from agentrl.train.grpo import GRPOArgs, GRPOTrainer

    settings = GRPOArgs(
        env="AgentRL/Letter-v0",
        model="tiny",
        harness=harness,  # the Python API takes the function itself
        max_steps=2 if args.quick else args.steps,
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=8,
        learning_rate=1e-3,
        num_envs=32,
        output_dir=args.output_dir or tempfile.mkdtemp(prefix="agentrl-harness-"),
    )
    with GRPOTrainer(settings) as trainer:
        history = trainer.train()
    for step, row in enumerate(history, 1):
        print(
            f"step {step:3d}  reward {row['reward/mean']:.3f}  failed episodes {row['rollout/failed']:.0f}  "
            f"trainer-vs-recorded logprob gap {row['update/logprob_mismatch']:.1e}"
        )
    if any(row["update/logprob_mismatch"] > 1e-4 for row in history):
        raise SystemExit("the trainer's logprobs differ from the recorded ones")
    if any(row["rollout/failed"] for row in history):
        raise SystemExit("some episodes failed: see the run's metrics")
    return [float(row["reward/mean"]) for row in history]


def main(argv: list[str] | None = None) -> list[float]:
    """Train with the plain client loop."""
    return train_letter(run_episode, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
