r"""TRL's GRPOTrainer on AgentRL's tool-integrated math env, through ``agentrl.integrations.trl``.

The policy writes Python that runs in a sandbox, reads the output, and answers in ``\boxed{}``
(``AgentRL/TIRMath-v0``); TRL's ``GRPOTrainer`` does the optimisation, AgentRL plays the multi-turn
episodes (:class:`~agentrl.integrations.trl.AgentRLRollout` as TRL's ``rollout_func``) and the
env's replies are masked out of the loss (``env_mask``). The script prints the rewards TRL logs
at each step::

    python examples/trl_tirmath.py --quick                     # tiny random model, 2 steps (< 1 min)
    python examples/trl_tirmath.py --model PATH --steps 200    # a real instruct model (a GPU helps)

With the tiny random model the env reward stays 0 (it never solves a problem); with a real
instruct model (Qwen2.5-0.5B-Instruct or larger) it rises.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

REQUIRES = ["torch", "transformers", "datasets", "trl"]
"""Optional packages this example needs (``pip install 'agentrl-gym[train]' trl``)."""


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """Train, print the logged rewards of every step, and return TRL's log history."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="a model folder, or 'tiny' for a tiny random one")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-tokens", "--max-new-tokens", dest="max_new_tokens", type=int, default=128)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--output-dir", help="the run folder (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="tiny model, 2 steps, short turns (for CI)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL

    from trl import GRPOConfig, GRPOTrainer

    from agentrl.integrations.trl import AgentRLRollout, env_reward

    output_dir = args.output_dir or tempfile.mkdtemp(prefix="agentrl-trl-tirmath-")
    if args.quick:
        args.model, args.steps, args.max_turns, args.max_new_tokens, args.num_generations = "tiny", 2, 2, 16, 2
    model = args.model
    if model == "tiny":
        from agentrl.llm.tiny import build_tiny_model

        model = str(build_tiny_model(os.path.join(output_dir, "tiny-qwen2"), family="qwen2"))

    rollout = AgentRLRollout(
        "AgentRL/TIRMath-v0",
        model,
        num_envs=16,
        max_new_tokens=args.max_new_tokens,
        env_kwargs={"max_turns": args.max_turns, "difficulty": 1},
    )
    prompts_per_step = 2
    config = GRPOConfig(
        output_dir=output_dir,
        max_steps=args.steps,
        num_generations=args.num_generations,
        per_device_train_batch_size=prompts_per_step * args.num_generations,
        # Room for every policy turn and every env reply (longer completions are cut, with a log line).
        max_completion_length=args.max_turns * (args.max_new_tokens + 256),
        learning_rate=1e-5 if args.model != "tiny" else 1e-3,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=args.quick,
        bf16=False,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=env_reward,
        args=config,
        train_dataset=rollout.dataset(prompts_per_step * args.steps),
        rollout_func=rollout,
    )
    start = time.perf_counter()
    print(f"TRL GRPO on AgentRL/TIRMath-v0 ({args.model}), {args.steps} steps, up to {args.max_turns} turns\n")
    try:
        trainer.train()
    finally:
        rollout.close()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    for h in logs:
        print(
            f"step {int(h['step']):3d}  reward {h['reward']:.3f}  env_reward {h['rewards/env_reward/mean']:.3f}  "
            f"turns {h.get('env/turns', float('nan')):.1f}  "
            f"policy tokens {h['completions/mean_length']:.0f}  env tokens {h.get('env/env_tokens', float('nan')):.0f}"
        )
    print(f"\n{rollout.stats['episodes']} episodes, {rollout.stats['failed']} failed, "
          f"{rollout.stats['cut']} cut to max_completion_length; {time.perf_counter() - start:.0f} s")  # fmt: skip
    if len(logs) != args.steps or not all(h.get("env/turns", 0) >= 1 for h in logs):
        raise SystemExit(f"expected {args.steps} logged steps with env turns, got {len(logs)}")
    return logs


if __name__ == "__main__":
    main()
