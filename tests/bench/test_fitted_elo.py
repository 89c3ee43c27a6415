"""The fitted Elo (Bradley-Terry on the Elo scale, tied to a reference) against a direct maximisation of the same
likelihood with scipy, and its bootstrap interval."""

from __future__ import annotations

import math

import pytest

from agentrl.bench.league import League
from agentrl.league.fitted_elo import elo_intervals, fit_elo

optimize = pytest.importorskip("scipy.optimize", reason="the reference needs scipy (pip install scipy)")

#: a fixed little league: (a, b, a's score)
GAMES = (
    [("minimax", "random", 1.0)] * 9 + [("minimax", "random", 0.5)] * 3
    + [("greedy", "random", 1.0)] * 7 + [("greedy", "random", 0.0)] * 3 + [("greedy", "random", 0.5)] * 2
    + [("minimax", "greedy", 1.0)] * 5 + [("minimax", "greedy", 0.5)] * 6 + [("minimax", "greedy", 0.0)] * 1
)


def _reference_fit(games, reference: str, prior_draws: float = 1.0) -> dict[str, float]:
    """Maximise the Bradley-Terry log-likelihood (a draw: half a win, half a loss) with the same virtual draws."""
    players = sorted({p for a, b, _ in games for p in (a, b)})
    free = [p for p in players if p != reference]
    terms = list(games) + [(p, reference, 0.5) for p in free for _ in range(int(prior_draws))]

    def negative_log_likelihood(x):
        rating = dict(zip(free, x, strict=True)) | {reference: 0.0}
        total = 0.0
        for a, b, score in terms:
            p = 1.0 / (1.0 + 10 ** ((rating[b] - rating[a]) / 400.0))
            total -= score * math.log(p) + (1.0 - score) * math.log(1.0 - p)
        return total

    best = optimize.minimize(negative_log_likelihood, [0.0] * len(free), method="BFGS", options={"gtol": 1e-9})
    return dict(zip(free, (1000.0 + v for v in best.x), strict=True)) | {reference: 1000.0}


def test_fit_matches_a_direct_maximum_likelihood() -> None:
    ours, reference = fit_elo(GAMES, "random"), _reference_fit(GAMES, "random")
    for player in reference:
        assert ours[player] == pytest.approx(reference[player], abs=0.05), player
    assert ours["minimax"] > ours["greedy"] > ours["random"] == 1000.0


def test_an_unbeaten_player_gets_a_finite_rating() -> None:
    ratings = fit_elo([("a", "r", 1.0)] * 20, "r")
    assert math.isfinite(ratings["a"]) and ratings["a"] == pytest.approx(1000 + 400 * math.log10(20.5 / 0.5))


def test_bootstrap_interval_holds_the_fit_and_shrinks_with_games() -> None:
    few = elo_intervals(GAMES, "random", resamples=300)
    many = elo_intervals(GAMES * 4, "random", resamples=300)
    for player in ("minimax", "greedy"):
        rating, low, high = few[player]
        assert low < rating < high
        assert (many[player][2] - many[player][1]) < (high - low)
    assert few["random"] == (1000.0, 1000.0, 1000.0)
    assert elo_intervals(GAMES, "random", resamples=300) == few  # a fixed seed: the same interval again


def test_bad_games_are_refused() -> None:
    with pytest.raises(ValueError, match="itself"):
        fit_elo([("a", "a", 1.0)], "r")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fit_elo([("a", "r", 2.0)], "r")


def test_the_league_table_carries_the_fitted_elo() -> None:
    league = League()
    for name in ("random", "greedy", "minimax"):
        league.add(name, lambda: None)
    for a, b, score in GAMES:
        league.record(a, b, {1.0: "win", 0.5: "draw", 0.0: "loss"}[score])
    rows = {row["name"]: row for row in league.table(resamples=200)}
    assert rows["random"]["elo_reference"] and not rows["minimax"]["elo_reference"]
    assert rows["minimax"]["elo_fit"].estimate == pytest.approx(fit_elo(GAMES, "random")["minimax"], abs=1e-6)
    assert rows["minimax"]["elo_fit"].low < rows["minimax"]["elo_fit"].estimate < rows["minimax"]["elo_fit"].high


def test_bench_rows_against_a_fixed_opponent_get_an_elo() -> None:
    from agentrl.bench.stats import format_summary, seat_elo, summarize

    rewards = [1.0] * 6 + [0.0] * 2 + [-1.0] * 2  # 6 wins, 2 draws, 2 losses against the random player
    records = [{"env_id": "AgentRL-MA/tictactoe-vs-random-v1", "seed": 0, "episode": i, "reward": r,
                "success": r > 0, "agent": {"name": "react"}, "env_kwargs": {}} for i, r in enumerate(rewards)]
    group = summarize(records)[0]
    opponent, elo = seat_elo(group)
    assert opponent == "random"
    games = [("agent", "random", (r + 1) / 2) for r in rewards]
    assert elo.estimate == pytest.approx(fit_elo(games, "random")["agent"])
    assert elo.low < elo.estimate < elo.high
    assert "elo against the random player (held at 1000)" in format_summary([group])
    assert seat_elo(summarize([{**records[0], "env_id": "AgentRL/Letter-v0"}])[0]) is None
