"""The paired comparison against reference implementations: scipy's exact binomial test (McNemar's exact test is
the two-sided binomial test of the discordant pairs at 1/2) and scipy's paired percentile bootstrap."""

from __future__ import annotations

import math

import pytest

from agentrl.bench.paired import mcnemar_exact, pair_episodes, paired_bootstrap, paired_comparison

scipy_stats = pytest.importorskip("scipy.stats", reason="the reference needs scipy (pip install scipy)")


@pytest.mark.parametrize(("a_only", "b_only"), [(0, 1), (1, 9), (2, 8), (3, 12), (7, 7), (40, 61), (0, 30),
                                                 (310, 402)])
def test_mcnemar_matches_scipys_binomial_test(a_only: int, b_only: int) -> None:
    reference = scipy_stats.binomtest(min(a_only, b_only), a_only + b_only, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(reference, rel=1e-9, abs=1e-300)
    assert mcnemar_exact(a_only, b_only) == mcnemar_exact(b_only, a_only)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_exact(-1, 3)


#: fixed per-task rewards of two configurations over the same 24 tasks
REWARDS_A = [0.0, 0.2, 1.0, 0.5, 0.0, 0.0, 1.0, 0.7, 0.3, 0.0, 1.0, 0.9, 0.1, 0.0, 0.6, 0.4, 1.0, 0.0, 0.2, 0.8,
             0.0, 0.5, 1.0, 0.3]
REWARDS_B = [0.4, 0.2, 1.0, 0.9, 0.1, 0.6, 1.0, 0.7, 0.8, 0.0, 1.0, 1.0, 0.5, 0.3, 0.6, 0.9, 1.0, 0.2, 0.2, 0.8,
             0.4, 0.5, 1.0, 0.6]


def test_paired_bootstrap_agrees_with_scipys() -> None:
    differences = [[b - a] for a, b in zip(REWARDS_A, REWARDS_B, strict=True)]
    ours = paired_bootstrap(differences, resamples=40_000)
    reference = scipy_stats.bootstrap(
        (REWARDS_A, REWARDS_B), lambda a, b, axis=-1: (b - a).mean(axis=axis), paired=True, vectorized=True,
        n_resamples=40_000, method="percentile", random_state=1,
    ).confidence_interval  # fmt: skip
    assert ours.estimate == pytest.approx(sum(b - a for a, b in zip(REWARDS_A, REWARDS_B, strict=True)) / 24)
    # two Monte Carlo estimates of the same percentiles: they agree to well under the interval's width (0.17)
    assert ours.low == pytest.approx(reference.low, abs=0.006)
    assert ours.high == pytest.approx(reference.high, abs=0.006)
    assert ours.excludes_zero


def test_paired_bootstrap_is_repeatable_and_handles_small_inputs() -> None:
    differences = [[d] for d in (0.1, -0.2, 0.3, 0.0, 0.5)]
    assert paired_bootstrap(differences) == paired_bootstrap(differences)
    assert math.isnan(paired_bootstrap([]).estimate)
    one = paired_bootstrap([[0.5, 0.1]])
    assert one.estimate == pytest.approx(0.3) and math.isnan(one.low)


def _record(reset: int, attempt: int, success: bool, reward: float | None = None, **extra: object) -> dict:
    return {"env_id": "E", "reset_seed": reset, "attempt": attempt, "task_id": None, "success": success,
            "reward": float(success) if reward is None else reward, **extra}


def test_pairs_share_task_and_attempt_and_count_each_task_once() -> None:
    a = [_record(t, k, success=t % 2 == 0) for t in range(6) for k in range(3)]
    b = [_record(t, k, success=True) for t in range(6) for k in range(3)] + [_record(99, 0, True)]
    assert len(pair_episodes(a, b)) == 18
    result = paired_comparison(a, b)
    assert result is not None
    assert (result.pairs, result.tasks, result.attempts, result.a_only, result.b_only) == (18, 6, 3, 0, 9)
    assert result.success_diff.estimate == pytest.approx(0.5)
    assert result.mcnemar_p == pytest.approx(2 / 2**9)
    # three attempts per task are not nine independent pairs: the task-level bootstrap decides
    assert "bootstrap over tasks" in result.test and result.success_significant == result.success_diff.excludes_zero


def test_nothing_pairs_across_other_tasks() -> None:
    assert paired_comparison([_record(1, 0, True)], [_record(2, 0, True)]) is None
    assert paired_comparison([_record(1, 0, True)], [_record(1, 1, True)]) is None  # another attempt


def test_a_retried_episode_pairs_its_last_record() -> None:
    a = [_record(1, 0, False, error="env died"), _record(1, 0, True)]
    result = paired_comparison(a, [_record(1, 0, True)])
    assert result is not None and result.pairs == 1 and result.a_only == result.b_only == 0
