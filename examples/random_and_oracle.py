"""Random and oracle agents on a registered env: the floor and the ceiling of any benchmark.

The oracle reads the privileged task and always solves it; the random agent writes junk. Every
other agent lands between the two. Runs through :func:`agentrl.demo.run_demo` (what ``agentrl
demo`` does) and prints a per-agent table::

    python examples/random_and_oracle.py --quick                # 2 seeds on TIRMath-v0 (CI)
    python examples/random_and_oracle.py --env-id AgentRL/SQL-v0 --seeds 10
"""

from __future__ import annotations

import argparse
import time

REQUIRES: list[str] = []
"""Optional packages this example needs (none beyond agentrl's core)."""


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run both agents, print the table, and return each agent's mean return."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="AgentRL/TIRMath-v0", help="any id from `agentrl list`")
    parser.add_argument("--seeds", type=int, default=5, help="episodes per agent")
    parser.add_argument("--quick", action="store_true", help="2 seeds (for CI)")
    args = parser.parse_args(argv)

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)
    from agentrl.demo import run_demo

    start = time.perf_counter()
    results = run_demo(env_id=args.env_id, seeds=range(2 if args.quick else args.seeds), agents=["oracle", "random"])
    means: dict[str, float] = {}
    for name in ("oracle", "random"):
        returns = [r.episode_return for r in results if r.agent == name]
        means[name] = sum(returns) / len(returns)
    print(f"\nmean return: oracle {means['oracle']:.2f}, random {means['random']:.2f} "
          f"({time.perf_counter() - start:.1f} s)")  # fmt: skip
    if means["oracle"] <= means["random"]:
        raise SystemExit("the oracle should beat the random agent")
    return means


if __name__ == "__main__":
    main()
