"""agentrl.bench.stats against values computed by hand (and tables)."""

from __future__ import annotations

import math
from itertools import combinations

import pytest

from agentrl.bench.stats import (
    difference_of_means,
    difference_of_proportions,
    format_summary,
    mean_interval,
    mean_pass_at_k,
    pass_at_k,
    summarize,
    t_quantile,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452), (120, 1.9799), (1e6, 1.9600)],
)
def test_t_quantile_matches_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def test_mean_interval_by_hand():
    # rewards 1, 0, 1, 1: mean 0.75, sd 0.5, se 0.25, t(0.975, 3) = 3.182446
    iv = mean_interval([1.0, 0.0, 1.0, 1.0])
    assert iv.estimate == 0.75
    assert iv.low == pytest.approx(0.75 - 3.182446 * 0.25, abs=1e-5)
    assert iv.high == pytest.approx(0.75 + 3.182446 * 0.25, abs=1e-5)
    same = mean_interval([1.0] * 5)
    assert (same.low, same.high) == (1.0, 1.0)
    single = mean_interval([0.3])
    assert single.estimate == 0.3 and math.isnan(single.low)
    assert math.isnan(mean_interval([]).estimate)


def test_wilson_by_hand():
    # 8/10, z = 1.959964: centre = (0.8 + z²/20) / (1 + z²/10); half = z sqrt(0.016 + z²/400) / (1 + z²/10)
    z = 1.959964
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    iv = wilson_interval(8, 10)
    assert iv.low == pytest.approx(centre - half, abs=1e-6) and iv.high == pytest.approx(centre + half, abs=1e-6)
    assert iv.low == pytest.approx(0.4902, abs=1e-4) and iv.high == pytest.approx(0.9433, abs=1e-4)
    zero, full = wilson_interval(0, 10), wilson_interval(10, 10)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.2775, abs=1e-4)
    assert full.high == 1.0 and full.low == pytest.approx(0.7225, abs=1e-4)


def _pass_at_k_by_enumeration(n, c, k):
    """Probability that a random k-subset of n attempts (c of them correct) holds a correct one."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(attempts[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize(
    ("n", "c", "k"), [(5, 2, 2), (5, 0, 3), (5, 5, 1), (10, 3, 1), (10, 3, 5), (8, 1, 7), (6, 2, 5)]
)
def test_pass_at_k_is_the_unbiased_estimator(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_enumeration(n, c, k), abs=1e-12)


def test_pass_at_k_known_values_and_errors():
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(200, 0, 10) == 0.0 and pass_at_k(200, 195, 10) == 1.0
    assert mean_pass_at_k([(5, 2), (5, 0), (2, 2)], 2) == pytest.approx((0.7 + 0.0 + 1.0) / 3)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_difference_intervals():
    # Welch by hand: a = [1, 0, 1, 1] (var 0.25), b = [0, 0, 1, 0, 0] (var 0.2)
    iv = difference_of_means([1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0, 0.0])
    se2 = 0.25 / 4 + 0.2 / 5
    df = se2**2 / ((0.25 / 4) ** 2 / 3 + (0.2 / 5) ** 2 / 4)
    half = t_quantile(0.975, df) * math.sqrt(se2)
    assert iv.estimate == pytest.approx(-0.55)
    assert iv.low == pytest.approx(-0.55 - half) and iv.high == pytest.approx(-0.55 + half)
    assert iv.low == pytest.approx(-1.328115, abs=1e-5) and not iv.excludes_zero
    # Newcombe (1998), hybrid score interval: 56/70 vs 48/80 -> 0.2000 [0.0524, 0.3339]
    p = difference_of_proportions(48, 80, 56, 70)
    assert p.estimate == pytest.approx(0.2) and p.excludes_zero
    assert p.low == pytest.approx(0.0524, abs=1e-4) and p.high == pytest.approx(0.3339, abs=1e-4)
    constant = difference_of_means([0.0] * 4, [1.0] * 4)
    assert (constant.low, constant.high) == (1.0, 1.0) and constant.excludes_zero


def _record(seed, episode, attempt, success, agent="oracle", reward=None):
    return {"key": f"{agent}{seed}{episode}{attempt}", "env_id": "E-v0", "env_fingerprint": "f", "env_kwargs": {},
            "agent": {"agent": agent}, "seed": seed, "episode": episode, "attempt": attempt, "success": success,
            "reward": float(success) if reward is None else reward, "turns": 2, "tokens": 10, "error": None}


def test_summarize_groups_and_pass_at_k():
    # two tasks x 3 attempts: task 0 has 1 success, task 1 has 3
    records = [_record(0, 0, a, a == 0) for a in range(3)] + [_record(0, 1, a, True) for a in range(3)]
    records += [_record(0, 0, 0, False, agent="random")]
    groups = summarize(records)
    assert [(g.agent, g.episodes) for g in groups] == [("oracle", 6), ("random", 1)]
    oracle = groups[0]
    assert oracle.k == 3 and oracle.successes == 4
    assert oracle.pass_at[1] == pytest.approx((1 / 3 + 1) / 2)
    assert oracle.pass_at[3] == pytest.approx(1.0)
    table = format_summary(groups)
    assert "pass@k" in table and "@3=1.000" in table and "random" in table


def test_healthbench_groups_report_the_clipped_mean_of_unclipped_scores() -> None:
    from agentrl.bench.stats import format_summary, summarize

    def record(score: float, reward: float) -> dict:
        return {"env_id": "AgentRL/PatientConsult-v0", "agent": {"name": "doctor"}, "reward": reward,
                "success": reward > 0.5, "reward_components": {"healthbench_score": score}}

    groups = summarize([record(-0.5, 0.0), record(0.2, 0.2), record(0.9, 0.9), record(1.0, 1.0)])
    hb = groups[0].aggregates["healthbench_score"]
    assert hb is not None and hb.n_samples == 4 and abs(hb.score - 0.4) < 1e-9  # not the clipped rewards' 0.525
    assert abs(groups[0].reward.estimate - 0.525) < 1e-9
    assert "HealthBench score" in format_summary(groups) and "0.400" in format_summary(groups)
    assert summarize([{"env_id": "AgentRL/TIRMath-v0", "reward": 1.0}])[0].aggregates == {}
