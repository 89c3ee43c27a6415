"""The learner's opponents in multi-agent training: Elo over training, and a league of snapshots sampled by PFSP.

:class:`TrainingLeague` rates the learner by Elo against the players it meets (built-in players
such as ``random`` or ``minimax``, and frozen snapshots of itself) and, for seats played by
``league``, picks each step's opponent by prioritized fictitious self-play
(:func:`agentrl.league.pfsp.pfsp_weights`: ``hard`` weights an opponent by ``(1 - p)^2``, ``p`` the
learner's win rate against it, as AlphaStar does; ``even`` by ``p (1 - p)``; ``uniform``).

The scale is anchored: the first built-in player (``random`` by default) is fixed at 1000, so the
learner's rating is comparable across steps and runs. Snapshots enter at the learner's rating of
the moment they are taken; the league keeps the newest ``size`` snapshots. Every game a learner
seat plays is one Elo update (K = ``k``), in the order the games come back.

Example:
    >>> league = TrainingLeague(["random"], size=2, pfsp="hard")
    >>> league.record({"random": ["win", "win", "draw"]})["elo/learner"] > 1000
    True
    >>> league.add_snapshot("snapshot@1", {})
    []
    >>> sorted(league.weights())
    ['random', 'snapshot@1']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agentrl.league.elo import EloTable
from agentrl.league.pfsp import PFSP_WEIGHTINGS, draw_weighted, pfsp_weights
from agentrl.league.tally import RESULTS, Tally, shrunk_win_rate

__all__ = ["LEAGUE", "LEARNER_NAME", "TrainingLeague", "game_results"]

#: The seat name (``--seats learner,league`` or ``--opponent league``) of an opponent drawn from the league.
LEAGUE = "league"
#: The learner's name in the rating table.
LEARNER_NAME = "learner"
_ANCHOR_RATING = 1000.0


class TrainingLeague:
    """Built-in players and learner snapshots, the learner's Elo and its results against each.

    Args:
        players: built-in players in the league (names ``make_player`` knows); the first is the
            anchor, fixed at 1000. May be empty when only snapshots are played (the scale is then
            anchored at the first snapshot, the initial policy, fixed at 1000).
        size: the most snapshots kept (the oldest leaves first; an anchor snapshot stays on top); 0 keeps none.
        pfsp: how opponents are weighted: ``hard``, ``even`` (``variance``) or ``uniform``.
        k: the Elo K factor.
        window: PFSP reads the learner's win rate over its last ``window`` games against each
            opponent (old losses to a player it now beats should not keep drawing that player).
    """

    def __init__(
        self,
        players: Sequence[str] = ("random",),
        *,
        size: int = 8,
        pfsp: str = "hard",
        k: float = 16.0,
        window: int = 64,
    ) -> None:
        if pfsp not in PFSP_WEIGHTINGS:
            raise ValueError(f"--pfsp must be one of {', '.join(PFSP_WEIGHTINGS)}, got {pfsp!r}")
        if size < 0:
            raise ValueError(f"--league-size must be >= 0, got {size}")
        self.players = [p for p in players if p]
        self.size = int(size)
        self.pfsp = pfsp
        self.elo = EloTable(k=k, initial=_ANCHOR_RATING)
        if self.players:
            self.elo.set(self.players[0], _ANCHOR_RATING, fixed=True)
            for name in self.players[1:]:
                self.elo.set(name, _ANCHOR_RATING)
        self.elo.set(LEARNER_NAME, _ANCHOR_RATING)
        #: snapshot name -> its weights (CPU tensors), oldest first.
        self.snapshots: dict[str, Any] = {}
        #: opponent -> the learner's wins, draws and losses against it, over the whole run.
        self.tally: dict[str, Tally] = {}
        #: opponent -> the learner's latest ``window`` results against it (what PFSP reads).
        self.recent: dict[str, list[str]] = {}
        self.window = max(1, int(window))

    # ------------------------------------------------------------------ membership

    @property
    def opponents(self) -> list[str]:
        """The league's players: built-in ones, then snapshots, oldest first."""
        return self.players + list(self.snapshots)

    def add_snapshot(self, name: str, weights: Any) -> list[str]:
        """Add a frozen snapshot at the learner's current rating; returns the names of snapshots dropped.

        The first snapshot of a league without built-in players becomes its anchor (fixed at its rating).
        """
        if name in self.snapshots or name in self.players or name == LEARNER_NAME:
            raise ValueError(f"the league already has a player named {name!r}")
        anchored = not self.players and not self.elo.fixed
        self.snapshots[name] = weights
        self.elo.set(name, self.elo.rating(LEARNER_NAME), fixed=anchored)
        dropped = []
        movable = [n for n in self.snapshots if n not in self.elo.fixed]  # the anchor never leaves
        while len(movable) > self.size:
            old = movable.pop(0)
            del self.snapshots[old]
            self.tally.pop(old, None)
            self.recent.pop(old, None)
            self.elo.remove(old)
            dropped.append(old)
        return dropped

    # ------------------------------------------------------------------ results

    def win_rate(self, opponent: str) -> float:
        """The learner's recent win rate (draws count half) against ``opponent``, shrunk toward 0.5 by one game."""
        recent = self.recent.get(opponent, [])
        return shrunk_win_rate(recent.count("win"), recent.count("draw"), len(recent))

    def weights(self) -> dict[str, float]:
        """PFSP sampling probabilities of the league's opponents."""
        names = self.opponents
        return dict(zip(names, pfsp_weights([self.win_rate(n) for n in names], self.pfsp), strict=True))

    def sample(self, rng: np.random.Generator) -> str:
        """An opponent drawn by PFSP."""
        weights = self.weights()
        if not weights:
            raise ValueError("the league has no opponent: name built-in players (--league-players) or snapshot it")
        return draw_weighted(weights, rng)

    def record(self, results: Mapping[str, Sequence[str]]) -> dict[str, float]:
        """Count the learner's games (``opponent -> ["win" | "draw" | "loss", ...]``), update Elo; the step's metrics.

        Keys: ``elo/learner``, ``elo/<opponent>`` and ``league/win_rate/<opponent>`` (this step's
        wins over games) for each opponent played, ``league/games``.
        """
        metrics: dict[str, float] = {}
        games = 0
        for opponent, outcomes in results.items():
            tally = self.tally.setdefault(opponent, Tally())
            recent = self.recent.setdefault(opponent, [])
            for result in outcomes:
                if result not in RESULTS:
                    raise ValueError(f"a game result is one of {', '.join(RESULTS)}, got {result!r}")
                self.elo.update(LEARNER_NAME, opponent, result)
                tally.add(result)
                recent.append(result)
            del recent[: -self.window]
            if outcomes:
                games += len(outcomes)
                metrics[f"league/win_rate/{opponent}"] = list(outcomes).count("win") / len(outcomes)
                metrics[f"elo/{opponent}"] = self.elo.rating(opponent)
        metrics["elo/learner"] = self.elo.rating(LEARNER_NAME)
        metrics["league/games"] = float(games)
        return metrics

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs (the snapshots' weights included)."""
        return {
            "players": list(self.players),
            "size": self.size,
            "pfsp": self.pfsp,
            "elo": self.elo.state_dict(),
            "snapshots": dict(self.snapshots),
            "tally": {n: t.as_list() for n, t in self.tally.items()},
            "recent": {n: list(r) for n, r in self.recent.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.elo.load_state_dict(state["elo"])
        self.snapshots = dict(state["snapshots"])
        self.tally = {str(n): Tally.from_list(t) for n, t in state["tally"].items()}
        self.recent = {str(n): [str(x) for x in r] for n, r in state.get("recent", {}).items()}


def game_results(trajectories: Sequence[Any], labels: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """The learner's result against each opponent it met: ``opponent -> [win|draw|loss, ...]``.

    One entry per ok learner-seat trajectory and per non-learner seat of its game (a two-player
    game: one). Opponents are named by ``reset_info["seats"]`` with ``labels`` applied (the
    ``snapshot`` seat of this step -> the snapshot's league name). The result is the game's
    ``outcome`` for the seat, or, for a seat the game ended on before it moved, the sign of its
    return. Games of learner against learner and games without a result are left out.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> turn = NS(info={"outcome": {"result": {"player_0": "win"}}})
        >>> t = NS(ok=True, turns=[turn], reset_info={"seat": "player_0",
        ...        "seats": {"player_0": "learner", "player_1": "snapshot"}, "seat_return": 1.0})
        >>> game_results([t], {"snapshot": "snapshot@3"})
        {'snapshot@3': ['win']}
    """
    out: dict[str, list[str]] = {}
    for t in trajectories:
        if not t.ok:
            continue
        seat = t.reset_info.get("seat")
        seats = t.reset_info.get("seats") or {}
        result = _seat_result(t, str(seat))
        if seat is None or result is None:
            continue
        for other, who in seats.items():
            if other == seat or who == LEARNER_NAME:
                continue
            out.setdefault((labels or {}).get(who, who), []).append(result)
    return out


def _seat_result(trajectory: Any, seat: str) -> str | None:
    if trajectory.turns:
        outcome = trajectory.turns[-1].info.get("outcome") or {}
        result = (outcome.get("result") or {}).get(seat) if isinstance(outcome, dict) else None
        return str(result) if result in ("win", "loss", "draw") else None
    value = trajectory.reset_info.get("seat_return")
    if value is None:
        return None
    return "win" if value > 0 else "loss" if value < 0 else "draw"
