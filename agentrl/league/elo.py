"""Elo ratings: the expected score, the update after a game, and a small rating table.

Pure arithmetic, shared by the benchmark league (:mod:`agentrl.bench.league`) and the trainer's
league of snapshots (:mod:`agentrl.train.league`). Scores are from the first player's side: 1 a
win, 0.5 a draw, 0 a loss. A rating table can hold *fixed* players (anchors, such as the random
player at 1000): a game against one moves only the other player's rating, so the scale stays tied
to something that does not change while a learner improves.

>>> round(expected_score(1400.0, 1000.0), 3)
0.909
>>> update_ratings(1000.0, 1000.0, 1.0, k=32)
(1016.0, 984.0)
>>> table = EloTable(k=32, fixed={"random": 1000.0})
>>> table.update("learner", "random", 1.0)
(1016.0, 1000.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["SCORES", "EloTable", "expected_score", "score_of", "update_ratings"]

#: The first player's score for each game result.
SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def expected_score(rating_a: float, rating_b: float) -> float:
    """The expected score of a player rated ``rating_a`` against one rated ``rating_b``.

    ``1 / (1 + 10 ** ((R_b - R_a) / 400))``: 0.5 for equal ratings, and the two players' expected
    scores add up to 1.

    >>> expected_score(1000.0, 1000.0)
    0.5
    >>> round(expected_score(1200.0, 1000.0) + expected_score(1000.0, 1200.0), 12)
    1.0
    """
    return 1.0 / (1.0 + 10.0 ** ((float(rating_b) - float(rating_a)) / 400.0))


def score_of(result: str | float) -> float:
    """A game result as a score: ``"win"`` 1, ``"draw"`` 0.5, ``"loss"`` 0, or a number in [0, 1].

    >>> score_of("draw"), score_of(1.0)
    (0.5, 1.0)
    """
    if isinstance(result, str):
        if result not in SCORES:
            raise ValueError(f"a result is 'win', 'draw' or 'loss', got {result!r}")
        return SCORES[result]
    score = float(result)
    if not 0.0 <= score <= 1.0 or math.isnan(score):
        raise ValueError(f"a score must be in [0, 1] (1 win, 0.5 draw, 0 loss), got {result}")
    return score


def update_ratings(rating_a: float, rating_b: float, score_a: float, *, k: float = 16.0) -> tuple[float, float]:
    """Both ratings after a game in which ``a`` scored ``score_a``; zero-sum: ``a`` gains what ``b`` loses.

    >>> update_ratings(1000.0, 1000.0, 0.5)
    (1000.0, 1000.0)
    >>> update_ratings(1000.0, 1000.0, 0.0, k=32)
    (984.0, 1016.0)
    """
    delta = float(k) * (score_of(score_a) - expected_score(rating_a, rating_b))
    return float(rating_a) + delta, float(rating_b) - delta


class EloTable:
    """Ratings by name, updated game by game; players in ``fixed`` keep their rating (anchors).

    Args:
        k: the K factor (the most a rating moves in one game).
        initial: the rating of a new player.
        fixed: name -> rating of players whose rating never moves (e.g. ``{"random": 1000}``).

    >>> table = EloTable(k=32)
    >>> table.expected("a", "b")
    0.5
    >>> table.update("a", "b", "win")
    (1016.0, 984.0)
    >>> table.rating("a") > table.rating("b")
    True
    """

    def __init__(self, k: float = 16.0, initial: float = 1000.0, fixed: Mapping[str, float] | None = None) -> None:
        if not k > 0:
            raise ValueError(f"the Elo K factor must be > 0, got {k}")
        self.k = float(k)
        self.initial = float(initial)
        self.fixed: set[str] = set()
        self.ratings: dict[str, float] = {}
        for name, rating in (fixed or {}).items():
            self.set(name, rating, fixed=True)

    def rating(self, name: str) -> float:
        """The rating of ``name`` (``initial`` for a new player, who joins the table)."""
        return self.ratings.setdefault(name, self.initial)

    def set(self, name: str, rating: float, *, fixed: bool = False) -> None:
        """Give ``name`` a rating (and fix it there when ``fixed``)."""
        self.ratings[name] = float(rating)
        if fixed:
            self.fixed.add(name)
        else:
            self.fixed.discard(name)

    def remove(self, name: str) -> None:
        """Forget ``name`` (a player that left the league); unknown names are ignored."""
        self.ratings.pop(name, None)
        self.fixed.discard(name)

    def expected(self, a: str, b: str) -> float:
        """The expected score of ``a`` against ``b``."""
        return expected_score(self.rating(a), self.rating(b))

    def update(self, a: str, b: str, result_a: str | float) -> tuple[float, float]:
        """Update after a game that ended ``result_a`` for ``a`` (win/draw/loss or a score); the new ratings.

        A fixed player's rating does not move; the other's moves as usual. A player cannot play itself.
        """
        if a == b:
            raise ValueError(f"{a!r} cannot play itself; rate a snapshot under its own name")
        new_a, new_b = update_ratings(self.rating(a), self.rating(b), score_of(result_a), k=self.k)
        if a not in self.fixed:
            self.ratings[a] = new_a
        if b not in self.fixed:
            self.ratings[b] = new_b
        return self.ratings[a], self.ratings[b]

    def state_dict(self) -> dict[str, Any]:
        """The table as plain data (for checkpoints)."""
        return {"k": self.k, "initial": self.initial, "ratings": dict(self.ratings), "fixed": sorted(self.fixed)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.k = float(state["k"])
        self.initial = float(state["initial"])
        self.ratings = {str(n): float(r) for n, r in state["ratings"].items()}
        self.fixed = {str(n) for n in state["fixed"]}
