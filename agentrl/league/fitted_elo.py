"""Elo fitted to all the games at once (Bradley-Terry), with bootstrap intervals, tied to a fixed reference player.

The running Elo of :mod:`agentrl.league.elo` depends on the order of the games and its K factor, and says nothing
of its own uncertainty. For a results table the ratings are instead fitted to every game at once, as Chatbot Arena
does: the Bradley-Terry model ``P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400))``, a draw counting half a win
for each side, by maximum likelihood (Hunter's MM iteration, 2004). The scale is tied to a reference player that
does not change (the random player at 1000): ratings from two leagues that share it can be read side by side.

Each player also plays one virtual draw against the reference, a weak prior that keeps a player who won (or lost)
every game at a finite rating. The 95% interval is a percentile bootstrap over games: the games are drawn with
replacement ``resamples`` times from a fixed seed, and the ratings fitted again each time.

>>> games = [("minimax", "random", 1.0)] * 8 + [("minimax", "random", 0.5)] * 2
>>> ratings = fit_elo(games, reference="random")  # 9.5 points of 11 with the prior: 400 log10(9.5 / 1.5) = 321
>>> ratings["random"], round(ratings["minimax"])
(1000.0, 1321)
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["Game", "elo_intervals", "fit_elo"]

#: one game: the first player, the second, and the first player's score (1 win, 0.5 draw, 0 loss)
Game = tuple[str, str, float]


def fit_elo(
    games: Sequence[Game], reference: str, reference_rating: float = 1000.0, prior_draws: float = 1.0,
    tolerance: float = 1e-10, max_iterations: int = 10_000,
) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale for every player in ``games``, ``reference`` held at its rating.

    Raises:
        ValueError: a score outside [0, 1], or a player playing itself.
    """
    players = sorted({p for a, b, _ in games for p in (a, b)} | {reference})
    wins = dict.fromkeys(players, 0.0)
    meetings: dict[tuple[str, str], float] = {}
    for a, b, score in games:
        if a == b:
            raise ValueError(f"{a!r} cannot play itself")
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"expected a score in [0, 1] (1 win, 0.5 draw, 0 loss), got {score}")
        wins[a] += score
        wins[b] += 1.0 - score
        for pair in ((a, b), (b, a)):
            meetings[pair] = meetings.get(pair, 0.0) + 1.0
    for player in players:  # the prior: a virtual draw (half a win each) against the reference
        if player != reference and prior_draws > 0:
            wins[player] += 0.5 * prior_draws
            wins[reference] += 0.5 * prior_draws
            for pair in ((player, reference), (reference, player)):
                meetings[pair] = meetings.get(pair, 0.0) + prior_draws
    opponents: dict[str, list[tuple[str, float]]] = {p: [] for p in players}
    for (a, b), n in meetings.items():
        opponents[a].append((b, n))
    strength = dict.fromkeys(players, 1.0)
    for _ in range(max_iterations):
        updated = {}
        for p in players:
            denominator = sum(n / (strength[p] + strength[q]) for q, n in opponents[p])
            updated[p] = wins[p] / denominator if denominator > 0 and wins[p] > 0 else 1e-12
        scale = updated[reference]
        updated = {p: s / scale for p, s in updated.items()}
        change = max(abs(math.log(updated[p] / strength[p])) for p in players)
        strength = updated
        if change < tolerance:
            break
    return {p: reference_rating + 400.0 * math.log10(strength[p]) for p in players}


def elo_intervals(
    games: Sequence[Game], reference: str, reference_rating: float = 1000.0, confidence: float = 0.95,
    resamples: int = 1000, seed: int = 0,
) -> dict[str, tuple[float, float, float]]:
    """``{player: (rating, low, high)}``: :func:`fit_elo` and its percentile bootstrap interval over games.

    The reference's interval is its rating alone (it is held fixed). No games: only the reference.

    >>> games = [("a", "r", 1.0)] * 6 + [("a", "r", 0.0)] * 4
    >>> rating, low, high = elo_intervals(games, reference="r", resamples=300)["a"]
    >>> low < rating < high
    True
    """
    fitted = fit_elo(games, reference, reference_rating)
    if not games:
        return {p: (r, r, r) for p, r in fitted.items()}
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {p: [] for p in fitted}
    for _ in range(resamples):
        drawn = [games[rng.randrange(len(games))] for _ in games]
        refitted = fit_elo(drawn, reference, reference_rating, tolerance=1e-8)
        for p in fitted:  # a player absent from a resample keeps only the prior: the reference's rating
            samples[p].append(refitted.get(p, reference_rating))
    tail = (1.0 - confidence) / 2.0
    out = {}
    for p, rating in fitted.items():
        values = sorted(samples[p])
        low = values[math.floor(tail * (len(values) - 1))]
        high = values[math.ceil((1.0 - tail) * (len(values) - 1))]
        out[p] = (rating, low, high)
    return out
