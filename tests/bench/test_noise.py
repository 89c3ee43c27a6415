"""Flip rates, run-to-run spread and the plan of a paired comparison (agentrl.bench.noise)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from agentrl.bench.noise import format_plan, measure_noise, tasks_needed
from agentrl.bench.stats import summarize


def _records(table: list[list[int]], seed: int = 0) -> list[dict]:
    return [{"env_id": "E", "seed": seed, "episode": t, "reset_seed": 1000 * seed + t, "attempt": a,
             "success": bool(s), "reward": float(s), "agent": {"name": "x"}, "env_kwargs": {}}
            for t, row in enumerate(table) for a, s in enumerate(row)]


def test_flip_rate_and_run_spread_by_hand() -> None:
    table = [[1, 1, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 0]]
    noise = measure_noise(_records(table))
    assert (noise.tasks, noise.repeats, noise.flipped) == (5, 3, 3)
    assert noise.flip_rate == pytest.approx(0.6)
    runs = [statistics.mean(row[a] for row in table) for a in range(3)]  # attempt a of every task is run a
    assert noise.run_std == pytest.approx(statistics.stdev(runs)) and noise.runs_are == "attempts"
    per_task = [statistics.mean(row) for row in table]
    assert noise.within_task_variance == pytest.approx(statistics.mean(p * (1 - p) * 3 / 2 for p in per_task))


def test_seeds_are_runs_when_each_task_is_played_once() -> None:
    records = _records([[1], [0], [1], [1]], seed=0) + _records([[0], [0], [1], [0]], seed=1)
    noise = measure_noise(records)
    assert noise.tasks == 0 and math.isnan(noise.flip_rate)
    assert noise.runs_are == "seeds" and noise.run_std == pytest.approx(statistics.stdev([0.75, 0.25]))


def test_within_task_variance_is_unbiased() -> None:
    """Tasks with success probabilities p_i, k attempts each: the estimate's mean is mean p_i (1 - p_i)."""
    rng = random.Random(0)
    probabilities = [0.1, 0.5, 0.8, 0.95, 0.3]
    truth = statistics.mean(p * (1 - p) for p in probabilities)
    estimates = []
    for _ in range(400):
        table = [[int(rng.random() < p) for _ in range(3)] for p in probabilities]
        estimates.append(measure_noise(_records(table)).within_task_variance)
    assert statistics.mean(estimates) == pytest.approx(truth, abs=0.01)


def test_tasks_needed_follows_the_normal_approximation() -> None:
    # (1.95996 + 0.84162)^2 * 2 * 0.2 / 0.1^2 = 313.96
    assert tasks_needed(0.2, 0.1) == 314
    assert tasks_needed(0.2, 0.1, repeats=2) == 157
    assert tasks_needed(0.0, 0.1) == 60  # no flips: McNemar still needs 6 discordant pairs, 10% of the tasks
    assert tasks_needed(0.0, 0.5) == 12
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        tasks_needed(0.2, 0.0)
    with pytest.raises(ValueError, match="--k 3"):
        tasks_needed(math.nan, 0.1)


def test_plan_needs_repeats_and_prices_each_option() -> None:
    with pytest.raises(ValueError, match="--k 3"):
        format_plan(summarize(_records([[1], [0]])), 0.1)
    text = format_plan(summarize(_records([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 1]])), 0.2)
    assert "20 points" in text and "flip rate 50%" in text
    assert "tasks x 1" in text and "tasks x 3" in text and "tasks x 5" in text
