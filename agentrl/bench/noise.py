"""Run-to-run noise of a benchmark: how often a task's verdict flips between repeats, and how far a run's score moves.

An agent that samples (temperature above 0, a stochastic env) does not give a task the same verdict every time:
τ-bench measured 10-55% of tasks flipping between identical runs. Two single runs must then differ by several
points before the difference means anything. With repeats (``agentrl bench --k K`` attempts per task, or several
``--seeds``), :func:`measure_noise` says how noisy a group of episodes is:

* the **flip rate**: the share of tasks attempted more than once whose success differs across the attempts;
* the **run-to-run standard deviation**: attempt ``a`` of every task is one run, so with ``--k 3`` there are three
  runs over the same tasks, each with its success rate and mean reward; their sample standard deviation is how far
  one run's score moves on the next. With one attempt and several ``--seeds`` each seed is a run (over tasks of its
  own, so task sampling adds to the spread);
* the **within-task variance** of success, ``mean_i p_i (1 - p_i) k_i / (k_i - 1)`` over the tasks (``p_i`` the
  task's success rate over its ``k_i`` attempts): unbiased for the variance of one attempt's verdict around its
  task's rate, which :func:`tasks_needed` turns into a plan.

>>> records = [{"reset_seed": t, "attempt": a, "success": s, "reward": float(s)}
...            for t, row in enumerate([[1, 1, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0]]) for a, s in enumerate(row)]
>>> noise = measure_noise(records)
>>> noise.tasks, noise.repeats, noise.flipped, noise.flip_rate
(4, 3, 2, 0.5)
>>> round(noise.run_std, 3), round(noise.within_task_variance, 3)
(0.144, 0.167)
>>> tasks_needed(0.167, difference=0.2, repeats=1)
66
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrl.bench.stats import GroupStats

__all__ = ["Noise", "format_noise", "format_plan", "measure_noise", "task_key", "tasks_needed"]


def task_key(record: Mapping[str, Any]) -> tuple[Hashable, ...]:
    """What makes two episodes the same task: the env, its reset seed and, for a dataset sweep, the task id.

    The reset seed comes from the base seed and the episode index (``reset_seed_for``), so two runs with the same
    ``--seeds`` and ``--episodes`` play the same tasks; older records without it fall back to (seed, episode).
    """
    reset = record.get("reset_seed")
    where = ("reset", reset) if reset is not None else ("episode", record.get("seed"), record.get("episode"))
    return (str(record.get("env_id")), *where, record.get("task_id"))


@dataclass(frozen=True)
class Noise:
    """The noise of one group of episodes (see the module docstring); ``nan`` where it cannot be measured."""

    tasks: int
    """tasks attempted more than once"""
    repeats: int
    """the most attempts any task had"""
    flipped: int
    """tasks whose success differs across their attempts"""
    flip_rate: float
    run_std: float
    """sample standard deviation of the success rate across runs"""
    reward_run_std: float
    """the same for the mean reward"""
    runs: int
    """how many runs the standard deviations are over"""
    runs_are: str
    """``"attempts"`` (attempt ``a`` of every task is run ``a``) or ``"seeds"``"""
    within_task_variance: float


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else math.nan


def measure_noise(records: Sequence[Mapping[str, Any]]) -> Noise:
    """Flip rate, run-to-run standard deviations and within-task variance of one group's episode records."""
    by_task: dict[tuple[Hashable, ...], list[Mapping[str, Any]]] = {}
    for record in records:
        by_task.setdefault(task_key(record), []).append(record)
    repeated = [members for members in by_task.values() if len(members) > 1]
    flipped = sum(1 for members in repeated if len({bool(r.get("success")) for r in members}) > 1)
    variances = []
    for members in repeated:
        k = len(members)
        p = sum(1 for r in members if r.get("success")) / k
        variances.append(p * (1 - p) * k / (k - 1))
    repeats = max((len(members) for members in by_task.values()), default=0)
    if repeats > 1:
        runs_are, run_of = "attempts", (lambda r: r.get("attempt"))
    else:
        runs_are, run_of = "seeds", (lambda r: r.get("seed"))
    runs: dict[Any, list[Mapping[str, Any]]] = {}
    for record in records:
        runs.setdefault(run_of(record), []).append(record)
    success_rates = [sum(1 for r in rs if r.get("success")) / len(rs) for rs in runs.values()]
    mean_rewards = [math.fsum(float(r.get("reward", 0.0) or 0.0) for r in rs) / len(rs) for rs in runs.values()]
    return Noise(
        tasks=len(repeated), repeats=repeats, flipped=flipped,
        flip_rate=flipped / len(repeated) if repeated else math.nan,
        run_std=_std(success_rates), reward_run_std=_std(mean_rewards), runs=len(runs), runs_are=runs_are,
        within_task_variance=math.fsum(variances) / len(variances) if variances else math.nan,
    )  # fmt: skip


def _z(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def tasks_needed(
    within_task_variance: float, difference: float, repeats: int = 1, alpha: float = 0.05, power: float = 0.8
) -> int:
    """How many tasks a paired comparison needs to detect a change of ``difference`` in success rate.

    Both configurations run the same tasks, ``repeats`` attempts each; the test is on the per-task difference of
    success rates (McNemar's, at one attempt), two-sided at ``alpha`` with the given ``power``. The noise of a
    per-task difference is that of two independent means of ``repeats`` verdicts,
    ``2 * within_task_variance / repeats``, the pilot run's variance (:func:`measure_noise`) taken for both sides;
    the normal approximation, ``n = (z_{1-alpha/2} + z_power)^2 * var / difference^2``, rounded up. It is never
    below ``m / difference`` tasks, ``m`` the fewest discordant pairs with which McNemar's exact test can reach
    ``alpha`` at all (6 at 0.05): a pilot with no flips (a greedy agent) still needs that many tasks to change.

    >>> tasks_needed(0.25, difference=0.1), tasks_needed(0.25, difference=0.1, repeats=3)
    (393, 131)

    Raises:
        ValueError: ``difference`` is not in (0, 1], or the variance is not a finite number.
    """
    if not 0 < abs(difference) <= 1:
        raise ValueError(f"expected a difference in success rate in (0, 1], got {difference}")
    if not math.isfinite(within_task_variance) or within_task_variance < 0:
        raise ValueError(
            f"expected a within-task variance >= 0, got {within_task_variance}; a pilot run needs repeats: --k 3"
        )
    if repeats < 1:
        raise ValueError(f"expected repeats >= 1, got {repeats}")
    variance = 2 * within_task_variance / repeats
    z = _z(1 - alpha / 2) + _z(power)
    fewest_discordant = next(m for m in range(1, 64) if 2 / 2**m < alpha)
    floor = math.ceil(fewest_discordant / abs(difference) - 1e-9)
    return max(floor, math.ceil(z * z * variance / (difference * difference)))


def format_noise(group: str, noise: Noise) -> str:
    """One line for the bench's summary: ``flip rate 2/4 tasks (50%) over 3 attempts; run-to-run sd ...``."""
    if noise.tasks == 0 and noise.runs < 2:
        return f"noise, {group}: one attempt per task and one seed; repeat (--k 3) to measure it"
    parts = []
    if noise.tasks:
        parts.append(f"flip rate {noise.flipped}/{noise.tasks} tasks ({noise.flip_rate:.0%}) over "
                     f"{noise.repeats} attempts")
    if noise.runs > 1:
        parts.append(f"run-to-run sd of success {noise.run_std * 100:.1f}pp, of reward {noise.reward_run_std:.3f} "
                     f"({noise.runs} {noise.runs_are})")
    return f"noise, {group}: " + "; ".join(parts)


#: the attempts per task ``--plan`` prices
PLAN_REPEATS = (1, 3, 5)


def format_plan(groups: Sequence[GroupStats], difference: float) -> str:
    """What ``agentrl bench --plan PILOT --difference D`` prints, per group of the pilot run.

    Its noise, and the tasks a paired comparison needs at 1, 3 and 5 attempts per task (:func:`tasks_needed`), with
    the episodes that costs.

    Raises:
        ValueError: no group of the pilot has a task attempted twice (nothing to measure the noise from).
    """
    lines = [f"tasks needed to detect a change of {difference * 100:.0f} points in success rate (paired, alpha 0.05, "
             f"power 0.8), from the pilot's within-task variance:"]
    measured = 0
    for group in groups:
        noise = measure_noise(group.records)
        if not noise.tasks:
            lines.append(f"  {group.group_id}: no task attempted twice; run the pilot with --k 3")
            continue
        measured += 1
        options = ", ".join(
            f"{tasks_needed(noise.within_task_variance, difference, r)} tasks x {r} "
            f"({tasks_needed(noise.within_task_variance, difference, r) * r} episodes per side)"
            for r in PLAN_REPEATS
        )
        lines.append(f"  {group.group_id}: flip rate {noise.flip_rate:.0%} over {noise.tasks} tasks, within-task "
                     f"variance {noise.within_task_variance:.3f}: {options}")
    if not measured:
        raise ValueError("the pilot run has no task attempted more than once: run it with --k 3 (or more)")
    return "\n".join(lines)
