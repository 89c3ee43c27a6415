"""``make demo``: run reference agents on an env over a few seeds and print a table.

>>> results = run_demo("AgentRL/TIRMath-v0", seeds=range(2), agents=["oracle"], out=None)
>>> [r.episode_return for r in results]
[1.0, 1.0]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import gymnasium as gym

from agentrl.agents import OracleAgent, RandomAgent
from agentrl.agents.base import bind_agent

__all__ = ["EpisodeResult", "run_demo", "run_episode"]

_AGENTS = {"oracle": OracleAgent, "random": RandomAgent}


@dataclass(frozen=True)
class EpisodeResult:
    """The outcome of one episode."""

    agent: str
    seed: int
    task_id: str
    episode_return: float
    turns: int
    done_reason: str | None
    seconds: float


def run_episode(env: gym.Env, agent: Any, seed: int) -> EpisodeResult:
    """Play one episode of ``agent`` in ``env`` from ``reset(seed=seed)``."""
    start = time.perf_counter()
    bind_agent(agent, env)
    observation, info = env.reset(seed=seed)
    agent.reset(info)
    total, task_id = 0.0, info["task_id"]
    while True:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total += float(reward)
        if terminated or truncated:
            break
    return EpisodeResult(agent.name, seed, task_id, total, info["turn"], info["done_reason"],
                         time.perf_counter() - start)


def run_demo(
    env_id: str = "AgentRL/TIRMath-v0",
    seeds: Iterable[int] = range(5),
    agents: Sequence[str] = ("oracle", "random"),
    out: TextIO | None = sys.stdout,
) -> list[EpisodeResult]:
    """Run each agent on ``env_id`` once per seed; print a per-agent table to ``out``."""
    results: list[EpisodeResult] = []
    env = gym.make(env_id)
    try:
        for name in agents:
            agent = _AGENTS[name]() if name != "random" else RandomAgent(seed=0)
            for seed in seeds:
                results.append(run_episode(env, agent, seed))
        sandbox = env.unwrapped.sandbox
        isolation = getattr(sandbox, "isolation", "none")
    finally:
        env.close()
    if out is not None:
        _print_table(env_id, results, isolation, out)
    return results


def _print_table(env_id: str, results: list[EpisodeResult], isolation: str, out: TextIO) -> None:
    out.write(f"\n{env_id}  (sandbox isolation: {isolation})\n\n")
    width = max([len("task"), *(len(r.task_id) for r in results)])
    out.write(f"{'agent':<8} {'seed':>4}  {'task':<{width}} {'return':>6} {'turns':>5}  {'end':<10} {'secs':>5}\n")
    for r in results:
        out.write(f"{r.agent:<8} {r.seed:>4}  {r.task_id:<{width}} {r.episode_return:>6.2f} {r.turns:>5}  "
                  f"{r.done_reason or '-':<10} {r.seconds:>5.2f}\n")
    out.write("\n" + f"{'agent':<8} {'episodes':>8} {'mean return':>12} {'success':>8} {'mean turns':>11}\n")
    for name in dict.fromkeys(r.agent for r in results):
        mine = [r for r in results if r.agent == name]
        success = sum(r.episode_return >= 1.0 for r in mine) / len(mine)
        out.write(f"{name:<8} {len(mine):>8} {statistics.mean(r.episode_return for r in mine):>12.2f} "
                  f"{success:>8.0%} {statistics.mean(r.turns for r in mine):>11.1f}\n")
    out.flush()
