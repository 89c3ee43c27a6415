"""Multi-agent debate (``debate_v0``, after MAPoRL) on TIRMath: per-round accuracy and consensus.

Three agents answer the same math task, then read each other's answers and answer again for two
more rounds; the verifier scores every answer of every round. Two teams play, by default:

* ``oracle``: :class:`~agentrl.envs.multiagent.debate.DebateOracle` agents, always right (the
  ceiling: accuracy 1.0 in every round, full consensus);
* ``noisy``: agents right with probability ``--p-right`` alone in round 0 that, in each discussion
  round, adopt the majority answer of the round before: accuracy and consensus move towards the
  majority's, which is what debate training tries to make *right* more often.

With ``--smollm2`` a third team is the embedded SmolLM2-135M-Instruct, all agents batched through
one :class:`~agentrl.llm.TransformersBackend` (slow on CPU; a small model is mostly
wrong)::

    python examples/multiagent_debate.py --quick              # 5 tasks (CI)
    python examples/multiagent_debate.py --tasks 50 --p-right 0.6
    python examples/multiagent_debate.py --smollm2 --tasks 3
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

REQUIRES = ["pettingzoo"]
"""Optional packages this example needs (``pip install 'agentrl-gym[multiagent,math]'``)."""

Policy = Callable[[str, Any, Mapping[str, Any]], str]


def noisy_majority_policy(env: Any, p_right: float, rng: Any) -> Policy:
    """Right with probability ``p_right`` in round 0; afterwards the previous round's majority answer."""
    domain = env.domain

    def act(agent: str, observation: Any, info: Mapping[str, Any]) -> str:
        if env.round == 0:
            gold = domain.gold(env.task)
            answer = gold if rng.random() < p_right else f"{int(rng.integers(1, 1000))}"
            return f"My first guess. {domain.format_answer(answer)}"
        votes = Counter(a for a in env.answers[-1] if a)
        if not votes:
            return "I have no idea."
        majority = votes.most_common(1)[0][0]
        return f"I go with the majority. {domain.format_answer(majority)}"

    return act


def llm_team(env: Any, backend: Any, max_tokens: int) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    """All agents' responses for one round from one batched call to ``backend``."""
    from agentrl.llm import GenerationConfig

    config = GenerationConfig(max_tokens=max_tokens, temperature=0.7, seed=0)

    def act_all(observations: Mapping[str, Any]) -> dict[str, str]:
        agents = list(env.agents)
        conversations = [[{"role": "user", "content": str(observations[a])}] for a in agents]
        generations = backend.generate_batch(conversations, config)
        return {a: g.text for a, g in zip(agents, generations, strict=True)}

    return act_all


def run_team(name: str, tasks: int, rounds: int, agents: int, make_policy: Callable[[Any], Any]) -> dict[str, Any]:
    """Play ``tasks`` debates; return the mean accuracy per round and the mean final consensus."""
    from agentrl.envs.multiagent import debate_v0
    from agentrl.envs.multiagent.debate import run_debate

    env = debate_v0.parallel_env(domain="tirmath", num_agents=agents, rounds=rounds)
    accuracy = [0.0] * (rounds + 1)
    consensus = majority_right = 0.0
    start = time.perf_counter()
    try:
        for seed in range(tasks):
            observations, infos = env.reset(seed=seed)
            policy = make_policy(env)
            if getattr(policy, "batched", False):  # one call for all agents per round
                while env.agents:
                    observations, _, _, _, infos = env.step(policy(observations))
                metrics = infos[env.possible_agents[0]]["metrics"]
            else:
                metrics = run_debate(env, policy)[env.possible_agents[0]]["metrics"]
            for t, value in enumerate(metrics["accuracy_per_round"]):
                accuracy[t] += value / tasks
            consensus += metrics["consensus"] / tasks
            majority_right += float(metrics["majority_correct"]) / tasks
    finally:
        env.close()
    per_round = "  ".join(f"{a:.2f}" for a in accuracy)
    print(f"{name:<8} {per_round:<{6 * (rounds + 1)}}  {consensus:9.2f}  {majority_right:14.2f}  "
          f"{time.perf_counter() - start:5.1f} s")  # fmt: skip
    return {"accuracy_per_round": accuracy, "consensus": consensus, "majority_correct": majority_right}


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Run the teams and print one row each; returns their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="debates per team")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="discussion rounds after the first answer")
    parser.add_argument("--p-right", type=float, default=0.5, help="the noisy agents' round-0 accuracy")
    parser.add_argument("--smollm2", action="store_true", help="add a team of SmolLM2-135M-Instruct agents")
    parser.add_argument("--max-tokens", type=int, default=128, help="SmolLM2's tokens per response")
    parser.add_argument("--quick", action="store_true", help="5 tasks (for CI)")
    args = parser.parse_args(argv)

    import numpy as np

    from agentrl.envs.multiagent.debate import DebateOracle

    tasks = 5 if args.quick else args.tasks
    rng = np.random.default_rng(0)
    print(f"debate_v0 on TIRMath: {args.agents} agents, {args.rounds} discussion rounds, {tasks} tasks per team\n")
    rounds_header = "  ".join(f"r{t:<3}" for t in range(args.rounds + 1))
    print(f"{'team':<8} {rounds_header:<{6 * (args.rounds + 1)}}  consensus  majority right   time")
    print("         (accuracy per round)")
    results = {
        "oracle": run_team("oracle", tasks, args.rounds, args.agents, lambda env: DebateOracle(env).act),
        "noisy": run_team(
            "noisy", tasks, args.rounds, args.agents, lambda env: noisy_majority_policy(env, args.p_right, rng)
        ),
    }
    if args.smollm2:
        from agentrl.llm import smollm2_backend

        with smollm2_backend(max_batch_size=args.agents) as backend:

            def make(env: Any) -> Any:
                policy = llm_team(env, backend, args.max_tokens)
                policy.batched = True  # type: ignore[attr-defined]
                return policy

            results["smollm2"] = run_team("smollm2", tasks, args.rounds, args.agents, make)
    if results["oracle"]["accuracy_per_round"][-1] < 1.0:
        raise SystemExit("the oracle team should be right in every round")
    return results


if __name__ == "__main__":
    main()
