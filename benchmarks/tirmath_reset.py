r"""How long a TIRMath episode waits for its sandbox: fork-server sessions against fresh interpreters.

Run ``python benchmarks/tirmath_reset.py [--episodes 20] [--think 0.05]``. For each sandbox mode
(``zygote``: sessions forked from the pre-imported template, where bubblewrap and root allow it;
``fresh``: one new isolated interpreter per worker, which imports numpy and sympy) it plays
``--episodes`` episodes of ``AgentRL/TIRMath-v0`` whose first action is a trivial code block, and
reports the medians of

* ``reset``: ``env.reset()`` alone;
* ``first call``: the episode's first code step, after the agent "thought" for ``--think`` seconds
  (as an LLM would, while the sandbox gets the new episode's interpreter ready);
* ``reset + first call``: both, without the think time: how long the episode waited for its sandbox.

``--think 0`` plays the episodes back to back, the worst case for a pool of warm workers. A warm call
(the second step of an episode) is printed for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

FIRST_ACTION = "Let me check.\n```python\nprint(6 * 7)\n```"


def measure(zygote: bool, episodes: int, think: float) -> tuple[list[float], list[float], list[float], str]:
    """Seconds of ``reset``, of the first and of the second code step per episode, and the isolation."""
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the envs)

    env = gym.make("AgentRL/TIRMath-v0", sandbox="process", sandbox_options={"zygote": zygote})
    resets: list[float] = []
    firsts: list[float] = []
    seconds: list[float] = []
    try:
        env.reset(seed=0)
        env.step(FIRST_ACTION)  # start the sandbox: not an episode reset
        time.sleep(1.0)
        for episode in range(episodes):
            start = time.perf_counter()
            env.reset(seed=episode + 1)
            resets.append(time.perf_counter() - start)
            time.sleep(think)
            start = time.perf_counter()
            observation = env.step(FIRST_ACTION)[0]
            firsts.append(time.perf_counter() - start)
            if "42" not in str(observation):
                raise RuntimeError(f"the first call failed: {observation!r}")
            start = time.perf_counter()
            env.step(FIRST_ACTION)
            seconds.append(time.perf_counter() - start)
        isolation = env.unwrapped.sandbox.isolation
    finally:
        env.close()
    return resets, firsts, seconds, isolation


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both modes and print the medians (ms)."""
    parser = argparse.ArgumentParser(prog="python benchmarks/tirmath_reset.py", description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--think", type=float, default=0.05, help="seconds between episodes (0: back to back)")
    parser.add_argument("--modes", nargs="+", default=["zygote", "fresh"], choices=["zygote", "fresh"])
    args = parser.parse_args(argv)
    for mode in args.modes:
        try:
            resets, firsts, seconds, isolation = measure(mode == "zygote", args.episodes, args.think)
        except Exception as exc:  # e.g. no fork server without root: say so, measure the other mode
            print(f"{mode}: not measured ({exc})")
            continue
        both = [r + f for r, f in zip(resets, firsts, strict=True)]
        print(f"{mode}: {isolation.split(':')[0]} ({args.episodes} episodes, {args.think:g} s think time)")
        for name, values in (("reset", resets), ("first call", firsts), ("reset + first call", both),
                             ("warm call", seconds)):
            print(f"  {name:<18} median {statistics.median(values) * 1e3:8.2f} ms  (max {max(values) * 1e3:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
