"""A player's results against another: wins, draws, losses, and the win rate PFSP reads.

>>> tally = Tally()
>>> for result in ("win", "win", "draw", "loss"):
...     tally.add(result)
>>> tally.games, tally.score
(4, 2.5)
>>> round(tally.win_rate(prior=0.5, prior_games=1.0), 3)  # (2.5 + 0.5) / 5
0.6
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["RESULTS", "Tally", "shrunk_win_rate"]

RESULTS = ("win", "draw", "loss")
"""The results of a game from one player's side."""


def shrunk_win_rate(wins: float, draws: float, games: float, *, prior: float = 0.5, prior_games: float = 1.0) -> float:
    """The score rate (draws count half) over ``games``, shrunk toward ``prior`` by ``prior_games`` games.

    An opponent never played has the prior's rate (0.5: as likely to win as to lose), and a single game
    cannot make a rate of exactly 0 or 1.

    >>> shrunk_win_rate(0, 0, 0), shrunk_win_rate(1, 0, 1)
    (0.5, 0.75)
    """
    return (wins + 0.5 * draws + prior * prior_games) / (games + prior_games)


@dataclass
class Tally:
    """Wins, draws and losses of one player against another."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        """Games counted."""
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points: a win 1, a draw 0.5."""
        return self.wins + 0.5 * self.draws

    def add(self, result: str) -> None:
        """Count one result (``win``, ``draw`` or ``loss``)."""
        if result not in RESULTS:
            raise ValueError(f"a result is one of {', '.join(RESULTS)}, got {result!r}")
        if result == "win":
            self.wins += 1
        elif result == "loss":
            self.losses += 1
        else:
            self.draws += 1

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts to these."""
        self.wins += other.wins
        self.draws += other.draws
        self.losses += other.losses

    def win_rate(self, *, prior: float = 0.5, prior_games: float = 1.0) -> float:
        """:func:`shrunk_win_rate` of these counts."""
        return shrunk_win_rate(self.wins, self.draws, self.games, prior=prior, prior_games=prior_games)

    def as_list(self) -> list[int]:
        """``[wins, draws, losses]`` (the trainer's checkpoint form)."""
        return [self.wins, self.draws, self.losses]

    @classmethod
    def of(cls, results: Iterable[str]) -> Tally:
        """The tally of a sequence of results.

        >>> Tally.of(["win", "loss", "loss"]).as_list()
        [1, 0, 2]
        """
        tally = cls()
        for result in results:
            tally.add(result)
        return tally

    @classmethod
    def from_list(cls, counts: Sequence[int]) -> Tally:
        """The inverse of :meth:`as_list`."""
        wins, draws, losses = (int(x) for x in counts)
        return cls(wins, draws, losses)
