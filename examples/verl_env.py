"""AgentRL episodes in verl's multi-turn rollout: verl's own AgentLoopWorker plays them with the ``agentrl`` loop.

One rollout step as verl's trainer makes it (``AgentLoopWorker.generate_sequences``), on this machine: verl's
config, its LLM server client and load balancer (Ray actors), a tiny random model behind verl's server interface
on CPU, and rows whose ``extra_info["agentrl"]`` name the env id and seed. Prints what verl's trainer receives
per row: the env's return (as ``rm_scores``), the turns, and how many response tokens are the model's (mask 1)
and the env's (mask 0)::

    python examples/verl_env.py --quick        # 4 rows of AgentRL/Letter-v0, 2 turns each (CI)
    python examples/verl_env.py --rows 16

On GPUs the same rows train with verl's PPO/GRPO: ``actor_rollout_ref.rollout.agent.default_agent_loop=agentrl``,
``agentrl.integrations.verl`` imported by the workers, and the envs served by ``agentrl serve-env`` (README:
"verl").
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

REQUIRES = ["verl", "ray", "hydra"]
"""pip install 'agentrl-gym[verl]' && pip install --no-deps verl==0.9.1"""
SLOW = True  # starts Ray


def main(argv: list[str] | None = None) -> list[float]:
    """Run one rollout step; print and return each row's return."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="rows (seeds) in the step")
    parser.add_argument("--quick", action="store_true", help="4 rows (for CI)")
    args = parser.parse_args(argv)

    import ray

    import agentrl  # noqa: F401
    from agentrl.integrations.verl import dataset_rows, local_rollout_worker, rows_to_batch
    from agentrl.llm.tiny import build_tiny_model

    rows = dataset_rows(
        "AgentRL/Letter-v0",
        range(4 if args.quick else args.rows),
        system_prompt="Reply with the letter you are asked for.",
        make_kwargs={"turns": 2},
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            model = build_tiny_model(f"{folder}/tiny")
            worker = local_rollout_worker(str(model), prompt_length=256, response_length=192, max_new_tokens=48)
            out = asyncio.run(worker.generate_sequences(rows_to_batch(rows)))
    finally:
        ray.shutdown()
    returns = out.batch["rm_scores"].sum(dim=1).tolist()
    mask, attention = out.batch["response_mask"], out.batch["attention_mask"][:, 256:]
    for i, row in enumerate(rows):
        spec = row["extra_info"]["agentrl"]
        print(
            f"{spec['env_id']} seed {spec['seed']}: return {returns[i]:.2f}, "
            f"{int(mask[i].sum())} model tokens, {int((attention[i] - mask[i]).sum())} env tokens"
        )
    if not all(0.0 <= r <= 2.0 for r in returns) or int(mask.sum()) == 0:
        raise SystemExit("expected returns in [0, 2] and some sampled tokens")
    return returns


if __name__ == "__main__":
    main()
