"""Paired comparison of two runs over the same tasks: a paired bootstrap for rewards, McNemar's exact test for success.

Two runs that played the same tasks with the same seeds are not independent samples: a hard task is hard for both.
Pairing each episode of run A with the episode of run B that played the same task (the env, its reset seed, the
task id of a sweep) and the same attempt removes the task-to-task spread from the comparison, so a real difference
shows with far fewer tasks than two independent intervals need.

* **Reward**: the difference ``B - A`` of each pair, averaged per task (the attempts of one task are not independent
  of each other), then a percentile bootstrap over tasks: tasks are drawn with replacement ``resamples`` times from a
  fixed seed, so the same runs always give the same interval.
* **Success**: McNemar's exact test on the discordant pairs (A succeeded and B failed, or the reverse): under "no
  difference" each discordant pair goes either way with probability 1/2, so the two-sided p-value is twice the
  binomial tail of the smaller count. It treats pairs as independent: with several attempts per task
  (``--k``) the bootstrap interval of the success difference, which draws whole tasks, is the one that decides.

>>> mcnemar_exact(1, 9) < 0.05 < mcnemar_exact(2, 8)
True
>>> interval = paired_bootstrap([[0.0], [1.0], [1.0], [0.5]], resamples=2000)
>>> interval.estimate, 0 < interval.low < interval.estimate < interval.high <= 1
(0.625, True)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrl.bench.noise import task_key
from agentrl.bench.stats import Interval

__all__ = ["PairedComparison", "mcnemar_exact", "pair_episodes", "paired_bootstrap", "paired_comparison"]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided p-value of McNemar's exact test: ``a_only`` pairs where only A succeeded, ``b_only`` only B.

    ``min(1, 2 * P(X <= min(a_only, b_only)))`` for ``X ~ Binomial(a_only + b_only, 1/2)``, in exact integer
    arithmetic (no overflow at thousands of pairs). No discordant pair at all: 1.0.

    >>> mcnemar_exact(0, 0), mcnemar_exact(0, 5), round(mcnemar_exact(3, 12), 4)
    (1.0, 0.0625, 0.0352)
    """
    if a_only < 0 or b_only < 0:
        raise ValueError(f"expected counts of discordant pairs >= 0, got {a_only} and {b_only}")
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return min(1.0, 2 * tail / 2**n)


def paired_bootstrap(
    differences: Sequence[Sequence[float]], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Interval:
    """Percentile bootstrap interval of the mean per-task difference; ``differences[i]``: task ``i``'s pairs.

    Each task counts once (the mean of its pairs); tasks are drawn with replacement. One task: the estimate with a
    ``nan`` interval; no task: all ``nan``.
    """
    import numpy as np

    per_task = np.array([math.fsum(d) / len(d) for d in differences if len(d)], dtype=float)
    if per_task.size == 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    estimate = float(per_task.mean())
    if per_task.size == 1:
        return Interval(estimate, math.nan, math.nan, confidence)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 1000):  # bounded memory at any number of tasks
        stop = min(resamples, start + 1000)
        means[start:stop] = per_task[rng.integers(0, per_task.size, size=(stop - start, per_task.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(estimate, float(low), float(high), confidence)


def _pair_key(record: Mapping[str, Any]) -> tuple[Hashable, ...]:
    return (*task_key(record), record.get("attempt", 0))


def pair_episodes(
    records_a: Sequence[Mapping[str, Any]], records_b: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """The episodes of A and B that played the same task and attempt, in A's order.

    A key seen twice in a run (a retried episode) pairs its last record.
    """
    last_b = {_pair_key(r): r for r in records_b}
    last_a = {_pair_key(r): r for r in records_a}
    return [(record, last_b[key]) for key, record in last_a.items() if key in last_b]


@dataclass(frozen=True)
class PairedComparison:
    """B against A over the episodes they share (see the module docstring)."""

    pairs: int
    tasks: int
    reward_diff: Interval
    """mean per-task ``reward B - reward A``, paired bootstrap over tasks"""
    success_diff: Interval
    """mean per-task ``success B - success A``, paired bootstrap over tasks"""
    a_only: int
    """pairs where A succeeded and B failed"""
    b_only: int
    mcnemar_p: float
    attempts: int
    """the most attempts of one task among the pairs"""

    @property
    def success_significant(self) -> bool:
        """McNemar's test at 0.05 with one attempt per task; the task-level bootstrap interval with several."""
        if self.attempts > 1:
            return self.success_diff.excludes_zero
        return self.mcnemar_p < 0.05

    @property
    def mcnemar_text(self) -> str:
        """McNemar's p with the discordant pairs, as the comparison's table and page show it: ``0.0312 (6:0)``."""
        return f"{self.mcnemar_p:.3g} ({self.a_only}:{self.b_only})"

    @property
    def test(self) -> str:
        """Which tests decided, in words, for the printed table."""
        success = "McNemar exact" if self.attempts <= 1 else "paired bootstrap over tasks (McNemar shown)"
        return f"reward: paired bootstrap over {self.tasks} tasks; success: {success}"


def paired_comparison(
    records_a: Sequence[Mapping[str, Any]],
    records_b: Sequence[Mapping[str, Any]],
    confidence: float = 0.95,
    resamples: int = 10_000,
) -> PairedComparison | None:
    """Compare B with A over their shared episodes; ``None`` when no episode pairs (different seeds or tasks)."""
    pairs = pair_episodes(records_a, records_b)
    if not pairs:
        return None
    rewards: dict[tuple[Hashable, ...], list[float]] = {}
    successes: dict[tuple[Hashable, ...], list[float]] = {}
    a_only = b_only = 0
    for a, b in pairs:
        key = task_key(a)
        rewards.setdefault(key, []).append(float(b.get("reward", 0.0) or 0.0) - float(a.get("reward", 0.0) or 0.0))
        won_a, won_b = bool(a.get("success")), bool(b.get("success"))
        successes.setdefault(key, []).append(float(won_b) - float(won_a))
        a_only += won_a and not won_b
        b_only += won_b and not won_a
    return PairedComparison(
        pairs=len(pairs), tasks=len(rewards),
        reward_diff=paired_bootstrap(list(rewards.values()), confidence, resamples),
        success_diff=paired_bootstrap(list(successes.values()), confidence, resamples),
        a_only=a_only, b_only=b_only, mcnemar_p=mcnemar_exact(a_only, b_only),
        attempts=max(len(v) for v in rewards.values()),
    )  # fmt: skip
