"""Leagues for the turn-based text games: play games, rate players by Elo, sample opponents (PFSP).

* :func:`play_game` plays one AEC game (any :class:`~agentrl.envs.multiagent.base.TextGameEnv`) to
  its end with one player per seat and returns a :class:`GameRecord`. Players are agents
  (:class:`~agentrl.core.agent.Agent`); each is bound to a
  :class:`~agentrl.envs.multiagent.opponents.PlayerView` of the env, which offers what LLM agents
  read (``unwrapped.system_prompt``: the game's rules; ``metadata["stop_sequences"]``) and what
  scripted players read (``unwrapped.game``). A player that raises or returns something other than
  text makes an invalid move (the env's rule: a second invalid move in the same turn loses); the
  error is logged in the record and never crashes the game.
* :class:`Elo` keeps ratings and updates them from game scores (the arithmetic, PFSP's
  :func:`pfsp_weights` and the head-to-head tallies live in :mod:`agentrl.league`, shared with the trainer).
* :class:`League` is a pool of named players (factories, or frozen snapshots of a learner taken
  during training), with round-robin play, a results table with confidence intervals and opponent
  sampling, uniform or prioritized fictitious self-play (PFSP, as in AlphaStar: Vinyals et al.,
  "Grandmaster level in StarCraft II using multi-agent reinforcement learning", Nature 2019).

The league is benchmark machinery, so it lives in the bench layer; the players it pits against each
other stay with their games (:mod:`agentrl.envs.multiagent.opponents`: ``make_player``, the built-in
opponents, ``PlayerView``), and are re-exported here.

>>> from agentrl.envs.multiagent import tictactoe_v0
>>> from agentrl.envs.multiagent.opponents import MinimaxOpponent, RandomOpponent
>>> record = play_game(tictactoe_v0.env, {"player_0": MinimaxOpponent(seed=0), "player_1": RandomOpponent()}, seed=0)
>>> record.results["player_0"] in ("win", "draw"), record.results["player_1"] in ("loss", "draw")
(True, True)
"""

from __future__ import annotations

import copy
import math
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agentrl.bench.stats import Interval, wilson_interval
from agentrl.core.agent import Agent
from agentrl.envs.multiagent.opponents import (
    BEST_OPPONENTS,
    PLAYERS,
    BestOpponent,
    GreedyOpponent,
    PlayerView,
    game_rules_text,
    make_player,
    seed_player,
)
from agentrl.league.elo import SCORES, EloTable
from agentrl.league.pfsp import draw_weighted, pfsp_weights
from agentrl.league.tally import Tally

__all__ = [
    "BEST_OPPONENTS",
    "PLAYERS",
    "BestOpponent",
    "Elo",
    "GameRecord",
    "GreedyOpponent",
    "League",
    "PlayerView",
    "game_rules_text",
    "make_player",
    "pfsp_weights",
    "play_game",
    "seed_player",
]


# -- one game ----------------------------------------------------------------------------------
@dataclass
class GameRecord:
    """What happened in one game.

    Attributes:
        game: the env's name (``metadata["name"]``).
        seed: the seed of the game.
        seats: seat -> player name.
        rewards: seat -> final reward (+1 win, -1 loss, 0 draw).
        results: seat -> ``"win"``, ``"loss"`` or ``"draw"``.
        invalid_moves: seat -> invalid moves made.
        moves: legal moves played.
        actions: actions submitted (legal or not).
        reason: why the game ended (the env's ``info["outcome"]["reason"]``).
        truncated: whether the turn budget ended the game.
        errors: ``{"seat", "player", "action_index", "error"}`` for each exception a player raised.
        transcript: ``(seat, action text)`` of every action, when asked for.
        wall_s: seconds the game took.
    """

    game: str
    seed: int | None
    seats: dict[str, str]
    rewards: dict[str, float] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)
    invalid_moves: dict[str, int] = field(default_factory=dict)
    moves: int = 0
    actions: int = 0
    reason: str = ""
    truncated: bool = False
    errors: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[tuple[str, str]] = field(default_factory=list)
    wall_s: float = 0.0

    def result_of(self, player: str) -> str:
        """The result of the player named ``player`` (by its name in ``seats``)."""
        for seat, name in self.seats.items():
            if name == player:
                return self.results[seat]
        raise KeyError(f"{player!r} did not play in this game (seats: {self.seats})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        data = asdict(self)
        data["transcript"] = [list(pair) for pair in self.transcript]
        return data


def _result(value: float) -> str:
    return "win" if value > 0 else "loss" if value < 0 else "draw"


def _player_name(player: Any, seat: str) -> str:
    return str(getattr(player, "name", None) or type(player).__name__ or seat)


def play_game(
    env_fn: Callable[[], Any] | Any,
    players: Mapping[str, Agent | Any],
    seed: int | None = None,
    *,
    names: Mapping[str, str] | None = None,
    max_actions: int = 10_000,
    transcript: bool = False,
) -> GameRecord:
    """Play one game of an AEC text env to its end.

    Each player is reseeded from ``seed`` (:func:`seed_player`), bound to a :class:`PlayerView` of
    its seat and reset with its seat's info; then players act in turn (``env.agent_selection``). An
    exception in ``act`` is logged in ``record.errors`` and passed to the env as the move ``None``
    (an invalid move); a non-string action is invalid by the env's own rule.

    Args:
        env_fn: makes the AEC env (``tictactoe_v0.env``), or an env to reuse.
        players: seat (``"player_0"``, ...) -> player; every seat of the env needs one.
        seed: seeds the env's reset and the players.
        names: seat -> player name for the record (default: each player's ``name``).
        max_actions: a safety cap on actions (the env's ``max_turns`` normally ends games first).
        transcript: keep every action's text in ``record.transcript``.
    """
    env = env_fn() if callable(env_fn) else env_fn
    started = time.perf_counter()
    env.reset(seed=seed)
    seats = list(env.possible_agents)
    missing = [s for s in seats if s not in players]
    extra = [s for s in players if s not in seats]
    if missing or extra:
        raise ValueError(f"players must cover the seats {seats} exactly; missing {missing}, unknown {extra}")
    labels = {s: (names or {}).get(s) or _player_name(players[s], s) for s in seats}
    record = GameRecord(game=str(env.metadata.get("name", "")), seed=seed, seats=labels)
    for index, seat in enumerate(seats):
        player = players[seat]
        seed_player(player, None if seed is None else seed * 7919 + index + 1)
        bind = getattr(player, "bind", None)
        if callable(bind):
            bind(PlayerView(env, seat))
        reset = getattr(player, "reset", None)
        if callable(reset):
            reset(dict(env.infos.get(seat, {})))
    final_info: dict[str, dict[str, Any]] = {}
    for seat in env.agent_iter(max_iter=max_actions):
        observation, reward, termination, truncation, info = env.last()
        if termination or truncation:
            record.rewards[seat] = float(reward)
            final_info[seat] = dict(info)
            record.truncated = record.truncated or (bool(truncation) and not termination)
            env.step(None)
            continue
        try:
            action = players[seat].act(observation, info)
        except Exception as exc:  # the player's bug is its invalid move, not the league's crash
            record.errors.append(
                {
                    "seat": seat,
                    "player": labels[seat],
                    "action_index": record.actions,
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(limit=3),
                }
            )
            action = None
        record.actions += 1
        if transcript:
            record.transcript.append((seat, action if isinstance(action, str) else repr(action)))
        env.step(action)
    for seat in seats:
        info = final_info.get(seat) or env.infos.get(seat, {})
        record.invalid_moves[seat] = int(info.get("invalid_moves", 0))
        record.rewards.setdefault(seat, float(getattr(env, "_cumulative_rewards", {}).get(seat, 0.0)))
        outcome = info.get("outcome") or {}
        record.results[seat] = (outcome.get("result") or {}).get(seat) or _result(record.rewards[seat])
        record.reason = record.reason or str(outcome.get("reason", ""))
        record.moves = max(record.moves, int(info.get("turn", 0)))
    if not record.reason:
        record.reason = f"stopped after {max_actions} actions" if record.actions >= max_actions else "game over"
    record.wall_s = time.perf_counter() - started
    return record


# -- ratings -----------------------------------------------------------------------------------
class Elo(EloTable):
    """Elo ratings: ``expected(a, b)`` and ``update(a, b, score_a)`` (1 win, 0.5 draw, 0 loss).

    The arithmetic is :class:`agentrl.league.elo.EloTable`'s (shared with the trainer's league);
    this is its benchmark face, with no fixed players.

    Args:
        k: the K factor (the most a rating moves per game).
        initial: the rating of a new player.

    >>> elo = Elo(k=32)
    >>> elo.expected("a", "b")
    0.5
    >>> elo.update("a", "b", 1.0)
    (1016.0, 984.0)
    """

    def __init__(self, k: float = 16.0, initial: float = 1000.0) -> None:
        super().__init__(k=k, initial=initial)


# -- the league ----------------------------------------------------------------------------------
@dataclass
class _Entry:
    name: str
    factory: Callable[[], Any]
    player: Any = None
    frozen: bool = False

    def get(self) -> Any:
        if self.player is None:
            self.player = self.factory()
        return self.player


class League:
    """A pool of named players with Elo ratings and head-to-head results.

    Players enter by factory (``add(name, factory)``: the player is built once, on first use, and
    reused, so search caches persist) or as a frozen snapshot of a learner (``snapshot(name,
    player)``: a deep copy, so later training does not change it). Results are kept per ordered pair
    of names, so :meth:`sample_opponent` can prioritise the opponents a learner loses to.

    Args:
        k: the Elo K factor.
        initial_elo: the rating of a new player.

    >>> from agentrl.envs.multiagent import tictactoe_v0
    >>> league = League()
    >>> league.add("random", lambda: make_player("random", seed=0))
    >>> league.add("minimax", lambda: make_player("minimax", seed=0))
    >>> records = league.play_round_robin(tictactoe_v0.env, games_per_pair=2, seed=0)
    >>> len(records), league.elo.rating("minimax") > league.elo.rating("random")
    (4, True)
    """

    def __init__(self, *, k: float = 16.0, initial_elo: float = 1000.0) -> None:
        self.elo = Elo(k=k, initial=initial_elo)
        self.entries: dict[str, _Entry] = {}
        self.pairs: dict[tuple[str, str], Tally] = {}
        self.records: list[GameRecord] = []

    # -- membership ----------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """The players' names, in the order they joined."""
        return list(self.entries)

    def add(self, name: str, player_factory: Callable[[], Any], *, elo: float | None = None) -> None:
        """Add a player built by ``player_factory()`` (called once, on first use)."""
        if name in self.entries:
            raise ValueError(f"the league already has a player named {name!r}")
        if not callable(player_factory):
            raise TypeError("player_factory must be callable (a class or a function returning a player)")
        self.entries[name] = _Entry(name, player_factory)
        self.elo.ratings[name] = self.elo.initial if elo is None else float(elo)

    def snapshot(self, name: str, player: Any, *, elo: float | None = None) -> None:
        """Add a frozen copy of ``player`` (a deep copy; its bound env is not copied).

        Pass a factory to :meth:`add` instead for players that cannot be deep-copied (ones holding a
        model server connection). The snapshot starts at ``elo`` (default: the rating of the player
        it was copied from when ``player.name`` is in the league, else the initial rating).
        """
        memo: dict[int, Any] = {}
        env = getattr(player, "env", None)
        if env is not None:
            memo[id(env)] = None
        try:
            frozen = copy.deepcopy(player, memo)
        except Exception as exc:
            raise TypeError(
                f"cannot deep-copy {type(player).__name__} for a snapshot ({exc}); use add(name, factory)"
            ) from exc
        if elo is None:
            elo = self.elo.ratings.get(str(getattr(player, "name", "")), self.elo.initial)
        self.add(name, lambda: frozen, elo=elo)
        self.entries[name].player = frozen
        self.entries[name].frozen = True

    def player(self, name: str) -> Any:
        """The player named ``name`` (built on first use)."""
        if name not in self.entries:
            raise KeyError(f"no player named {name!r}; the league has {self.names}")
        return self.entries[name].get()

    # -- results ---------------------------------------------------------------------------------
    def record(self, a: str, b: str, result_a: str) -> None:
        """Count a game between ``a`` and ``b`` that ended ``result_a`` for ``a``; update Elo."""
        flip = {"win": "loss", "loss": "win", "draw": "draw"}
        if result_a not in flip:
            raise ValueError(f"result must be win, draw or loss, got {result_a!r}")
        self.pairs.setdefault((a, b), Tally()).add(result_a)
        self.pairs.setdefault((b, a), Tally()).add(flip[result_a])
        self.elo.update(a, b, SCORES[result_a])

    def add_record(self, record: GameRecord) -> None:
        """Count a two-player :class:`GameRecord` whose seat names are league names."""
        (seat_a, a), (_, b) = list(record.seats.items())[:2]
        self.record(a, b, record.results[seat_a])
        self.records.append(record)

    def head_to_head(self, a: str, b: str) -> tuple[int, int, int]:
        """``(wins, draws, losses)`` of ``a`` against ``b``."""
        tally = self.pairs.get((a, b), Tally())
        return tally.wins, tally.draws, tally.losses

    def win_rate(self, a: str, b: str, *, prior: float = 0.5, prior_games: float = 1.0) -> float:
        """``a``'s score against ``b`` (draws count half), shrunk toward ``prior`` by ``prior_games`` games."""
        return self.pairs.get((a, b), Tally()).win_rate(prior=prior, prior_games=prior_games)

    # -- sampling --------------------------------------------------------------------------------
    def sample_opponent(
        self,
        for_player: str,
        strategy: str = "uniform",
        rng: np.random.Generator | None = None,
        *,
        weighting: str = "hard",
        power: float = 2.0,
    ) -> str:
        """An opponent for ``for_player`` (any name; it need not be in the league).

        ``"uniform"`` picks any other player with equal chance; ``"prioritized"`` is PFSP
        (AlphaStar): each opponent is weighted by :func:`pfsp_weights` of ``for_player``'s win rate
        against it, so opponents it loses to are chosen most (unplayed opponents count as 50%).
        """
        rng = rng if rng is not None else np.random.default_rng()
        candidates = [name for name in self.entries if name != for_player]
        if not candidates:
            raise ValueError(f"no opponent for {for_player!r}: the league has no other player")
        if strategy == "uniform":
            weights = [1.0 / len(candidates)] * len(candidates)
        elif strategy == "prioritized":
            rates = [self.win_rate(for_player, name) for name in candidates]
            weights = pfsp_weights(rates, weighting=weighting, power=power)
        else:
            raise ValueError(f"strategy must be 'uniform' or 'prioritized', got {strategy!r}")
        return draw_weighted(dict(zip(candidates, weights, strict=True)), rng)

    # -- play ------------------------------------------------------------------------------------
    def play_match(
        self, env_fn: Callable[[], Any], a: str, b: str, seed: int | None = None, **kwargs: Any
    ) -> GameRecord:
        """One game, ``a`` in the first seat and ``b`` in the second; counted in the league."""
        env = env_fn()
        seats = list(env.possible_agents)
        if len(seats) != 2:
            raise ValueError(f"league games are two-player; this env has seats {seats}")
        if a == b:
            raise ValueError("a player cannot play itself in a league game (snapshot it under another name)")
        players = {seats[0]: self.player(a), seats[1]: self.player(b)}
        record = play_game(env, players, seed, names={seats[0]: a, seats[1]: b}, **kwargs)
        self.add_record(record)
        return record

    def play_round_robin(
        self,
        env_fn: Callable[[], Any],
        games_per_pair: int,
        seed: int = 0,
        *,
        on_game: Callable[[GameRecord], Any] | None = None,
        **kwargs: Any,
    ) -> list[GameRecord]:
        """Every pair plays ``games_per_pair`` games in each seat order; Elo is updated after each game.

        Games are interleaved across pairs (round by round) so that online Elo does not depend on
        which pair happened to be played first. Game ``i`` gets seed ``seed + i``.
        """
        names = self.names
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        records = []
        index = 0
        for _ in range(games_per_pair):
            for a, b in pairs:
                for first, second in ((a, b), (b, a)):
                    record = self.play_match(env_fn, first, second, seed + index, **kwargs)
                    index += 1
                    records.append(record)
                    if on_game is not None:
                        on_game(record)
        return records

    def games(self) -> list[tuple[str, str, float]]:
        """Every game counted, as ``(a, b, a's score)`` (from the head-to-head tallies, each game once)."""
        out: list[tuple[str, str, float]] = []
        for (a, b), tally in self.pairs.items():
            if a < b:
                out += [(a, b, 1.0)] * tally.wins + [(a, b, 0.5)] * tally.draws + [(a, b, 0.0)] * tally.losses
        return out

    def reference(self) -> str | None:
        """The player the fitted Elo is tied to: ``random`` when it plays, else the first player to join."""
        if "random" in self.entries:
            return "random"
        return next(iter(self.entries), None)

    def table(self, confidence: float = 0.95, resamples: int = 1000) -> list[dict[str, Any]]:
        r"""One row per player, best Elo first.

        Keys: ``name``, ``elo`` (the running Elo), ``elo_fit`` (an :class:`Interval`: the Bradley-Terry Elo
        fitted to all games, tied to :meth:`reference` at the initial rating, with a bootstrap interval over
        games: :mod:`agentrl.league.fitted_elo`), ``elo_reference`` (whether it is that player), ``games``,
        ``wins``, ``draws``, ``losses``, ``score`` (draws half) and ``win_rate``/``draw_rate``/``loss_rate`` as
        Wilson :class:`Interval`\\ s.
        """
        from agentrl.league.fitted_elo import elo_intervals

        reference = self.reference()
        fitted = (elo_intervals(self.games(), reference, self.elo.initial, confidence, resamples)
                  if reference is not None else {})
        rows = []
        for name in self.entries:
            tally = Tally()
            for (a, _b), t in self.pairs.items():
                if a == name:
                    tally.merge(t)
            n = tally.games
            rows.append(
                {
                    "name": name,
                    "elo": self.elo.rating(name),
                    "elo_fit": Interval(*fitted[name], confidence) if name in fitted
                    else Interval(math.nan, math.nan, math.nan, confidence),
                    "elo_reference": name == reference,
                    "games": n,
                    "wins": tally.wins,
                    "draws": tally.draws,
                    "losses": tally.losses,
                    "score": (tally.wins + 0.5 * tally.draws) / n if n else math.nan,
                    "win_rate": _rate(tally.wins, n, confidence),
                    "draw_rate": _rate(tally.draws, n, confidence),
                    "loss_rate": _rate(tally.losses, n, confidence),
                }
            )
        rows.sort(key=lambda row: -row["elo"])
        return rows


def _rate(k: int, n: int, confidence: float) -> Interval:
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, confidence)
    return wilson_interval(k, n, confidence)
