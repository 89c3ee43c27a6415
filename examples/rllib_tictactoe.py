"""Train PPO (RLlib) on tic-tac-toe: both seats share one small policy and play each other.

The text game is made numeric by :class:`agentrl.integrations.rllib.NumericGameWrapper` (board
planes in, ``Discrete(9)`` cells out, illegal cells masked) and handed to RLlib through its
PettingZoo wrapper. Needs ``pip install 'agentrl-gym[rllib]'``.

    python examples/rllib_tictactoe.py --quick          # 1 small iteration (CI)
    python examples/rllib_tictactoe.py --iterations 20  # watch the returns move

In self-play each game gives +1 to one seat and -1 to the other (0 each for a draw), so the mean
return over both seats is 0; the per-seat means and the episode length show the learning.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

#: Packages this example needs (tests/artifacts/test_examples.py skips it, saying which, when one is missing).
REQUIRES = ["ray", "pettingzoo", "torch"]
#: RLlib starts a local Ray instance: several seconds even for one iteration.
SLOW = True


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    """Train and print one line per iteration; returns each iteration's figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small iteration (for CI)")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--batch", type=int, default=512, help="env steps per iteration")
    parser.add_argument("--separate-policies", action="store_true", help="one policy per seat instead of a shared one")
    parser.add_argument("--no-mask", action="store_true", help="no action mask: illegal moves hit the game's rule")
    args = parser.parse_args(argv)
    iterations, batch = (1, 128) if args.quick else (args.iterations, args.batch)
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.rllib") is None:
        print("SKIP: RLlib is not installed (pip install 'agentrl-gym[rllib]')")
        return []

    import ray

    from agentrl.integrations.rllib import episode_return_mean, tiny_ppo_config

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    history = []
    algo = None
    try:
        config = tiny_ppo_config(
            "tictactoe_v0",
            shared_policy=not args.separate_policies,
            action_mask=not args.no_mask,
            train_batch_size=batch,
            minibatch_size=min(64, batch),
        )
        algo = config.build_algo()
        for iteration in range(1, iterations + 1):
            start = time.perf_counter()
            result = algo.train()
            seconds = time.perf_counter() - start
            returns = episode_return_mean(result)
            runners = result.get("env_runners", {})
            figures = {
                "iteration": iteration,
                "seconds": seconds,
                "episodes": float(runners.get("num_episodes", 0)),
                "episode_len_mean": float(runners.get("episode_len_mean", float("nan"))),
                **{f"return/{k}": v for k, v in returns.items()},
            }
            history.append(figures)
            shown = "  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
            print(shown, flush=True)
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()
    return history


if __name__ == "__main__":
    main()
