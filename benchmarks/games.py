"""Game-env speed and baselines: ``python benchmarks/games.py``.

Speed (one run, medians over repeats): steps per second of one env at 84x84 and at 512x512
observations, steps per second over 4 envs stepped from 4 threads (one Chromium, one page each),
and reset time. ``--baselines`` plays the random agent and the scripted expert on every game and
writes their mean scores to ``agentrl/envs/games/assets/baselines.json``, which
``info["normalized_score"]`` uses (0 = random, 1 = expert).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["measure_baselines", "measure_speed"]


def _steps_per_second(env: Any, steps: int, rng: np.random.Generator) -> float:
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        if terminated or truncated:
            env.reset(seed=int(rng.integers(1000)))
    return steps / (time.perf_counter() - start)


def measure_speed(game: str = "g2048", steps: int = 200, repeats: int = 3) -> dict[str, Any]:
    """Steps/s at 84x84, at 512x512, with 4 threaded envs, and reset seconds (medians of ``repeats``)."""
    from agentrl.envs.games.env import BrowserGameEnv

    rng = np.random.default_rng(0)
    result: dict[str, Any] = {"game": game, "steps": steps, "repeats": repeats}
    for size in (84, 512):
        env = BrowserGameEnv(game, obs_size=(size, size))
        rates = [_steps_per_second(env, steps, rng) for _ in range(repeats)]
        resets = []
        for seed in range(repeats * 3):
            start = time.perf_counter()
            env.reset(seed=seed)
            resets.append(time.perf_counter() - start)
        env.close()
        result[f"steps_per_s_{size}"] = statistics.median(rates)
        result[f"reset_s_{size}"] = statistics.median(resets)
    envs = [BrowserGameEnv(game, obs_size=(84, 84)) for _ in range(4)]
    rates = []

    def run(index: int) -> None:
        _steps_per_second(envs[index], steps, np.random.default_rng(index))

    for _ in range(repeats):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(envs))]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        rates.append(steps * len(envs) / (time.perf_counter() - start))
    for env in envs:
        env.close()
    result["steps_per_s_4_envs_total"] = statistics.median(rates)
    return result


def measure_baselines(games: Sequence[str] | None = None, seeds: int = 5) -> dict[str, dict[str, float]]:
    """Mean final score of the random agent and of the scripted expert per game."""
    from agentrl.envs.games.env import GAMES, BrowserGameEnv

    out: dict[str, dict[str, float]] = {}
    for name in games or sorted(GAMES):
        env = BrowserGameEnv(name)
        scores: dict[str, list[float]] = {"random": [], "expert": []}
        for seed in range(seeds):
            for who in ("random", "expert"):
                env.reset(seed=seed)
                env.action_space.seed(seed)
                terminated = truncated = False
                info: dict[str, Any] = {"score": 0.0}
                while not (terminated or truncated):
                    action = env.oracle_action() if who == "expert" else env.action_space.sample()
                    _, _, terminated, truncated, info = env.step(action)
                scores[who].append(float(info["score"]))
        env.close()
        out[name] = {who: statistics.mean(values) for who, values in scores.items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the speed table; with ``--baselines``, record the baselines too."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="g2048")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baselines", action="store_true", help="record random/expert baselines of every game")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per game for --baselines")
    args = parser.parse_args(argv)
    if args.baselines:
        from agentrl.envs.games.browser import ASSETS

        baselines = measure_baselines(seeds=args.seeds)
        path = ASSETS / "baselines.json"
        Path(path).write_text(json.dumps(baselines, indent=2, sort_keys=True) + "\n")
        print(json.dumps(baselines, indent=2, sort_keys=True))
        print(f"wrote {path}")
    print(json.dumps(measure_speed(args.game, args.steps, args.repeats), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
