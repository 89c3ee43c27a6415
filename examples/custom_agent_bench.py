"""Benchmark your own agent class with ``agentrl bench``: resumable results, a summary table, a report.

Any class with ``name``, ``reset(info)``, ``act(observation, info)`` (and optionally ``aact`` and
``bind(env)``) is an agent (see :mod:`agentrl.agents.base`). ``agentrl bench --agent
package.module:Class`` imports it; here the class lives in this very file, so the example runs the
benchmark in-process through the Python API (the same :class:`~agentrl.bench.runner.BenchConfig`
the CLI builds), naming the agent ``__main__:CheatSheetAgent``. The CLI equivalent, with the class
in an importable module::

    agentrl bench --env AgentRL/TIRMath-v0 --agent mypackage.agents:CheatSheetAgent --episodes 5

Run it::

    python examples/custom_agent_bench.py --quick      # 3 episodes (CI)
    python examples/custom_agent_bench.py --episodes 20 --out my-bench
"""

from __future__ import annotations

import argparse
import re
import tempfile
from typing import Any

from agentrl.agents.base import BaseAgent

REQUIRES: list[str] = []
"""Optional packages this example needs (none beyond agentrl's core)."""


class CheatSheetAgent(BaseAgent):
    r"""A hand-written TIRMath agent: evaluates the arithmetic it finds, else answers ``\boxed{0}``.

    It shows the protocol, not a good strategy: ``bind`` receives the env (its ``unwrapped`` holds
    the system prompt and tool schemas), ``reset`` starts an episode, ``act`` returns text.
    """

    name = "cheat-sheet"

    def __init__(self, seed: int | None = None, guess: int = 0) -> None:
        """Keep the fallback ``guess``; ``seed`` is accepted (the runner passes one) but unused."""
        super().__init__()
        self.guess = guess
        self.turns = 0

    def reset(self, info: dict[str, Any]) -> None:
        """Start an episode."""
        self.turns = 0

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Answer the first ``a op b`` found in the observation, or the fallback guess."""
        self.turns += 1
        match = re.search(r"(-?\d+)\s*([+\-*])\s*(-?\d+)", str(observation))
        if match:
            a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
            value = a + b if op == "+" else a - b if op == "-" else a * b
            return f"The expression evaluates to \\boxed{{{value}}}."
        return f"I am not sure. \\boxed{{{self.guess}}}"


def main(argv: list[str] | None = None) -> Any:
    """Benchmark :class:`CheatSheetAgent` next to the random agent and print both summaries."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="AgentRL/TIRMath-v0")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", help="output directory (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="3 episodes (for CI)")
    args = parser.parse_args(argv)

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)
    from agentrl.agents.registry import AgentSpec
    from agentrl.bench.runner import BenchConfig, run_bench
    from agentrl.bench.stats import format_summary, summarize

    out = args.out or tempfile.mkdtemp(prefix="agentrl-custom-agent-")
    episodes = 3 if args.quick else args.episodes
    records = []
    for agent in (f"{__name__}:CheatSheetAgent", "random"):
        # The spec's agent options go to the constructor, as --agent-option guess=7 would.
        options = {"guess": 7} if agent.endswith("CheatSheetAgent") else {}
        config = BenchConfig(
            env_ids=[args.env],
            agent=AgentSpec(agent, agent_options=options),
            out=f"{out}/{agent.rsplit(':', 1)[-1]}",
            episodes=episodes,
            env_kwargs={"max_turns": 3},
            progress=False,
        )
        outcome = run_bench(config)
        records.extend(outcome.records)
        print(f"{agent}: {outcome.ran} episode(s) in {outcome.wall_s:.1f} s -> {outcome.out / 'results.jsonl'}")
    print()
    print(format_summary(summarize(records)))
    return records


if __name__ == "__main__":
    main()
