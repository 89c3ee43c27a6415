"""HealthBench scoring as openai/simple-evals computes it (``healthbench_eval.py``).

``calculate_score``: met points over total positive points, per example, unclipped (negative allowed);
``_compute_clipped_stats``: the mean over examples clipped to [0, 1], and the standard deviation of
1000 bootstrap means; 0-point rubric items are accepted.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from agentrl.envs.consult.datasets import load_healthbench_rubrics
from agentrl.envs.consult.rubric import (
    ConsultRecord,
    Criterion,
    RuleGrader,
    healthbench_aggregate,
    healthbench_score,
    healthbench_tag_scores,
)


def test_per_example_score_is_unclipped() -> None:
    """simple-evals: achieved / total positive; a harmful answer goes below 0."""
    assert healthbench_score([10, 5, -9], [0, 0, 1]) == pytest.approx(-9 / 15)
    assert healthbench_score([10, 5, -9], [1, 1, 0]) == 1.0
    assert healthbench_score([10, 5, -9], [1, 0, 1]) == pytest.approx(1 / 15)
    assert healthbench_score([-5], [1]) is None  # no positive points: no score (simple-evals returns None)


def test_zero_point_items_are_accepted(tmp_path: Path) -> None:
    """A 0-point item loads and counts for nothing whether met or not."""
    assert Criterion("z", "neutral", 0, "judge").points == 0
    assert healthbench_score([4, 0], [1, 1]) == healthbench_score([4, 0], [1, 0]) == 1.0
    row = {"prompt_id": "p1", "rubrics": [{"criterion": "Greets.", "points": 0, "tags": []},
                                          {"criterion": "Advises rest.", "points": 3, "tags": ["axis:accuracy"]}]}
    path = tmp_path / "hb.jsonl"
    path.write_text(json.dumps(row) + "\n")
    rubric = load_healthbench_rubrics(path)["p1"]
    assert [c.points for c in rubric] == [0.0, 3.0]
    with pytest.raises(ValueError, match=r"\[-10, 10\]"):
        Criterion("x", "too much", 11, "judge")


def test_rule_grader_reward_clipped_breakdown_unclipped() -> None:
    """The env's reward stays in [0, 1]; ``healthbench_score`` carries the negative per-example score."""
    rubric = [Criterion("dx", "Right diagnosis.", 5, "diagnosis"),
              Criterion("harm", "Recommends aspirin.", -8, "harm", ("aspirin",))]
    record = ConsultRecord(asked=frozenset(), tests=(), doctor_turns=(),
                           final_message="DIAGNOSIS: tension headache\nPLAN: aspirin every hour")
    score = RuleGrader().grade(rubric, record, names=("migraine",), differential=())
    assert score.value == 0.0
    assert score.breakdown["healthbench_score"] == pytest.approx(-8 / 5)
    assert json.loads(score.detail)["healthbench_score"] == pytest.approx(-1.6)


def test_tag_scores() -> None:
    """Rubric-level tags: the same formula over the criteria with that tag; tags without positive points dropped."""
    rubric = [Criterion("a", "x", 6, "judge", tags=("axis:completeness",)),
              Criterion("b", "y", 4, "judge", tags=("axis:accuracy",)),
              Criterion("c", "z", -4, "judge", tags=("axis:accuracy", "axis:harm"))]
    assert healthbench_tag_scores(rubric, [1, 0, 1]) == {"axis:completeness": 1.0, "axis:accuracy": -1.0}


def test_aggregate_clips_only_the_mean() -> None:
    """clip(mean) differs from mean(clip): negative examples pull the overall score down."""
    scores = [-1.0, 0.5, 1.0, 0.5]
    agg = healthbench_aggregate(scores)
    assert agg.score == pytest.approx(0.25)  # mean of the clipped scores would be 0.5
    assert agg.n_samples == 4
    assert healthbench_aggregate([-0.5, -0.1]).score == 0.0
    assert healthbench_aggregate([1.0, 1.0]).score == 1.0
    assert healthbench_aggregate([0.2, None, 0.4]).n_samples == 2  # None (no positive points) skipped
    empty = healthbench_aggregate([])
    assert empty.n_samples == 0 and math.isnan(empty.score)


def test_aggregate_bootstrap_std_of_clipped_means() -> None:
    """The spread is the std of 1000 bootstrap means (each clipped), like simple-evals' ``:bootstrap_std``."""
    rng = np.random.default_rng(1)
    scores = list(rng.uniform(-0.2, 1.0, size=200))
    agg = healthbench_aggregate(scores)
    # the bootstrap std of a mean is close to the standard error sd / sqrt(n)
    assert agg.bootstrap_std == pytest.approx(np.std(scores) / math.sqrt(len(scores)), rel=0.15)
    assert agg.ci_low == pytest.approx(max(0.0, agg.score - 1.959964 * agg.bootstrap_std))
    assert agg.ci_high == pytest.approx(min(1.0, agg.score + 1.959964 * agg.bootstrap_std))
    assert healthbench_aggregate(scores) == agg  # seeded: reproducible
    assert healthbench_aggregate([0.7] * 10).bootstrap_std == pytest.approx(0.0, abs=1e-12)
    # resamples whose mean is below 0 are clipped before the std is taken
    low = healthbench_aggregate([-1.0, 0.1, 0.1, 0.1], n_bootstrap=2000)
    means = np.clip(np.random.default_rng(0).choice([-1.0, 0.1, 0.1, 0.1], size=(2000, 4)).mean(axis=1), 0, 1)
    assert low.bootstrap_std == pytest.approx(float(means.std()), rel=0.2)


def _simple_evals_bootstrap_std(values: list[float], seed: int) -> float:
    """simple-evals' ``_compute_clipped_stats(values, "bootstrap_std")``, rewritten from its rule.

    1000 resamples of ``len(values)`` drawn one after another by ``np.random.choice`` (the legacy
    global generator, seeded here as ``np.random.seed(seed)`` would), each mean clipped to [0, 1],
    then ``np.std`` (ddof=0) of those clipped means.
    """
    draws = np.random.RandomState(seed)
    clipped = []
    for _ in range(1000):
        resample = draws.choice(values, len(values))
        clipped.append(min(1.0, max(0.0, sum(resample.tolist()) / len(values))))
    mean = sum(clipped) / len(clipped)
    return math.sqrt(sum((c - mean) ** 2 for c in clipped) / len(clipped))


def test_bootstrap_std_is_zero_where_simple_evals_gets_zero() -> None:
    """24 mostly negative scores: every resample's clipped mean is 0 in simple-evals' draws, so the std is 0.0.

    The old draw (one ``default_rng(0)`` matrix) put one resample above 0 and reported 0.0008.
    """
    scores = [-0.6] * 20 + [1.0] * 3 + [0.0]
    assert _simple_evals_bootstrap_std(scores, seed=0) == 0.0
    agg = healthbench_aggregate(scores)
    assert agg.bootstrap_std == 0.0
    assert (agg.score, agg.ci_low, agg.ci_high, agg.n_samples) == (0.0, 0.0, 0.0, 24)


def test_bootstrap_std_matches_simple_evals_rule_when_non_zero() -> None:
    """Where some resamples clear 0, the std equals the rule's, seed for seed (not just roughly)."""
    scores = [-0.5] * 19 + [1.0] * 5
    for seed in (0, 7):
        expected = _simple_evals_bootstrap_std(scores, seed)
        assert expected > 0.01
        assert healthbench_aggregate(scores, seed=seed).bootstrap_std == pytest.approx(expected, rel=1e-12)


def test_bootstrap_std_by_hand_clips_each_resample_then_takes_the_population_std() -> None:
    """Four resamples worked by hand: clip each resample's mean, then std with ddof=0.

    ``RandomState(0).choice([-1, 0.5, 1], 3)`` four times draws [-1, 0.5, -1], [0.5, 0.5, 1],
    [-1, 1, -1], [-1, -1, 1]: means -1/2, 2/3, -1/3, -1/3, clipped 0, 2/3, 0, 0; their mean is 1/6 and
    their population std sqrt((3 * (1/6)**2 + (1/2)**2) / 4) = sqrt(1/12). (Unclipped means would give
    0.462, ddof=1 would give 1/3.)
    """
    draws = np.random.RandomState(0)
    assert [draws.choice([-1.0, 0.5, 1.0], 3).tolist() for _ in range(4)] == [
        [-1.0, 0.5, -1.0], [0.5, 0.5, 1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]
    agg = healthbench_aggregate([-1.0, 0.5, 1.0], n_bootstrap=4, seed=0)
    assert agg.bootstrap_std == pytest.approx(math.sqrt(1 / 12), abs=1e-12)
    assert agg.score == pytest.approx(1 / 6)
