"""Built-in opponents for the turn-based games: random, scripted, game-tree search; players by name.

An opponent is an agent (``reset(info)``, ``act(observation, info)``, ``bind(env)``; the protocol of
:mod:`agentrl.core.agent`) that may read the game's state through the env it is bound to
(``env.unwrapped.game``), which is how scripted and perfect players see the board. It always moves
for ``env.agent_selection``.

:func:`make_player` builds a player by name (``random``, ``scripted``, ``minimax``, ``best`` or
``module:Class``), :func:`seed_player` reseeds one, and :class:`PlayerView` is the view of one seat
that players are bound to: the single-agent view of a game
(:mod:`agentrl.envs.multiagent.single_agent`) and the league (:mod:`agentrl.bench.league`) both use them.

>>> from agentrl.envs.multiagent import tictactoe_v0
>>> env = tictactoe_v0.env()
>>> env.reset(seed=0)
>>> player = MinimaxOpponent()
>>> player.bind(env)
>>> player.act(env.observe(env.agent_selection), env.infos[env.agent_selection]) in env.game.legal_moves()
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from agentrl.core.agent import BaseAgent

__all__ = [
    "BEST_OPPONENTS",
    "PLAYERS",
    "BestOpponent",
    "GameOpponent",
    "GreedyOpponent",
    "MinimaxOpponent",
    "PlayerView",
    "RandomOpponent",
    "game_rules_text",
    "make_player",
    "negamax",
    "seed_player",
    "solve",
]


class GameOpponent(BaseAgent):
    """Base of the built-in opponents: bound to a :class:`TextGameEnv`, reads ``env.game``."""

    name = "opponent"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)

    @property
    def game(self) -> Any:
        """The rules object of the bound env."""
        if self.env is None:
            raise RuntimeError(f"{type(self).__name__} must be bound to an env first: call bind(env)")
        return self.env.unwrapped.game

    def reset(self, info: dict[str, Any]) -> None:
        """Nothing to reset (the state lives in the game)."""


class RandomOpponent(GameOpponent):
    """A uniformly random legal move."""

    name = "random"

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """One of the legal moves, at random."""
        moves = self.game.legal_moves()
        return str(moves[int(self.rng.integers(len(moves)))])


def negamax(
    game: Any,
    depth: int,
    *,
    heuristic: Callable[[Any, str], float] | None = None,
    alpha: float = -math.inf,
    beta: float = math.inf,
) -> float:
    """The value of ``game`` for the player to move (+1 win ... -1 loss), by alpha-beta negamax.

    At ``depth`` 0 (or when the game is not over and no heuristic is given) the position scores
    ``heuristic(game, player)`` (0 without one). Wins found sooner score slightly higher, so the
    search prefers quick wins and slow losses.
    """
    if game.is_over():
        return float(game.outcome()[game.current_player()])
    if depth == 0:
        return heuristic(game, game.current_player()) if heuristic is not None else 0.0
    best = -math.inf
    for text in game.legal_moves():
        child = game.clone()
        child.apply(child.parse_move(text))
        # Two-player zero-sum: the child's value is from the opponent's side, unless the same
        # player moves again (then it is ours).
        same = child.current_player() == game.current_player() and not child.is_over()
        value = negamax(child, depth - 1, heuristic=heuristic, alpha=alpha if same else -beta,
                        beta=beta if same else -alpha)  # fmt: skip
        value = value if same else -value
        if child.is_over():
            value = float(child.outcome()[game.current_player()])
        value *= 0.999  # sooner is better for wins, later for losses
        if value > best:
            best = value
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    return best


def solve(game: Any, cache: dict[Any, float]) -> float:
    """The exact value of ``game`` for the player to move, memoised on ``game.state_key()``.

    For small games whose states repeat across move orders (tic-tac-toe has 5,478 positions), a
    full search with a transposition table is fast where plain alpha-beta revisits positions.
    """
    key = game.state_key()
    if key in cache:
        return cache[key]
    if game.is_over():
        value = float(game.outcome()[game.current_player()])
    else:
        best = -math.inf
        mover = game.current_player()
        for text in game.legal_moves():
            child = game.clone()
            child.apply(child.parse_move(text))
            if child.is_over():
                child_value = float(child.outcome()[mover])
            elif child.current_player() == mover:
                child_value = solve(child, cache)
            else:
                child_value = -solve(child, cache)
            best = max(best, child_value * 0.999)
        value = best
    cache[key] = value
    return value


class MinimaxOpponent(GameOpponent):
    """Game-tree search: perfect play when ``depth`` reaches the end of the game.

    With ``depth=None`` and a game that has ``state_key()``, positions are solved exactly with a
    transposition table (kept across moves and games of this opponent).

    Args:
        depth: plies to search (``None``: to the end, perfect for small games such as tic-tac-toe).
        heuristic: scores a position for a player at the depth limit (``game, player -> [-1, 1]``).
        seed: breaks ties between equally good moves.
    """

    name = "minimax"

    def __init__(
        self, depth: int | None = None, heuristic: Callable[[Any, str], float] | None = None, seed: int | None = None
    ) -> None:
        super().__init__(seed)
        self.depth = depth
        self.heuristic = heuristic
        self._cache: dict[Any, float] = {}  # exact values by state, for games with state_key()

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The best move by search (a random one among the best)."""
        game = self.game
        player = game.current_player()
        depth = self.depth if self.depth is not None else 10**6
        exact = self.depth is None and hasattr(game, "state_key")

        def value_of(child: Any) -> float:
            if exact:
                return solve(child, self._cache)
            return negamax(child, depth - 1, heuristic=self.heuristic)

        scored = []
        for text in game.legal_moves():
            child = game.clone()
            child.apply(child.parse_move(text))
            if child.is_over():
                value = float(child.outcome()[player])
            elif child.current_player() == player:
                value = value_of(child)
            else:
                value = -value_of(child)
            scored.append((value, text))
        best = max(value for value, _ in scored)
        choices = [text for value, text in scored if value >= best - 1e-9]
        return str(choices[int(self.rng.integers(len(choices)))])


# -- a scripted middle player ------------------------------------------------------------------
class GreedyOpponent(GameOpponent):
    """Win now if a move wins; else avoid moves after which the opponent can win at once; else random.

    A two-ply, game-independent scripted player (it only uses the rules' ``clone``/``apply``), so it
    sits between :class:`RandomOpponent` and a perfect :class:`MinimaxOpponent` (in tic-tac-toe:
    "win, else block, else random").
    """

    name = "scripted"

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """A winning move, else a move that leaves no immediate win to the opponent, else any move."""
        game = self.game
        me = game.current_player()
        moves = [str(m) for m in game.legal_moves()]
        safe: list[str] = []
        for text in moves:
            child = game.clone()
            child.apply(child.parse_move(text))
            if child.is_over():
                if child.outcome()[me] > 0:
                    return text
                if child.outcome()[me] == 0:
                    safe.append(text)
                continue
            if child.current_player() == me or not _opponent_wins_at_once(child, me):
                safe.append(text)
        pool = safe or moves
        return pool[int(self.rng.integers(len(pool)))]


def _opponent_wins_at_once(game: Any, me: str) -> bool:
    for text in game.legal_moves():
        child = game.clone()
        child.apply(child.parse_move(text))
        if child.is_over() and child.outcome()[me] < 0:
            return True
    return False


#: Built-in players by name (``make_player(name, seed)``); ``"module:Class"`` names any other.
#: The strongest built-in player of each competitive game (``make_player("best")``).
BEST_OPPONENTS: dict[str, str] = {
    "tictactoe": "agentrl.envs.multiagent.opponents:MinimaxOpponent",
    "connect_four": "agentrl.envs.multiagent.connect_four:ConnectFourOpponent",
    "nim": "agentrl.envs.multiagent.nim:NimPerfectOpponent",
    "kuhn_poker": "agentrl.envs.multiagent.kuhn_poker:KuhnEquilibriumOpponent",
    "negotiation": "agentrl.envs.multiagent.negotiation:NegotiationOpponent",
}


class BestOpponent(GameOpponent):
    """The strongest built-in player of whatever game it is bound to (see :data:`BEST_OPPONENTS`).

    Perfect play for tic-tac-toe and Nim, depth-4 search for Connect Four, the equilibrium for
    Kuhn poker, the scripted negotiator for negotiation; it picks when :meth:`bind` shows the game.
    """

    name = "best"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self._seed = seed
        self.delegate: Any = None

    def bind(self, env: Any) -> None:
        """Build the game's best player and bind it."""
        super().bind(env)
        game = self.game.name
        if game not in BEST_OPPONENTS:
            raise ValueError(f"no built-in best player for {game!r}; games with one: {sorted(BEST_OPPONENTS)}")
        if self.delegate is None or getattr(self, "_game", None) != game:
            module_name, _, class_name = BEST_OPPONENTS[game].partition(":")
            import importlib

            self.delegate = getattr(importlib.import_module(module_name), class_name)(seed=self._seed)
            self._game = game
        self.delegate.bind(env)

    def seed(self, seed: int | None) -> None:
        """Reseed this player and its delegate (``seed_player`` calls this before a seeded game)."""
        self._seed = seed
        self.rng = np.random.default_rng(seed)
        if self.delegate is not None:
            seed_player(self.delegate, seed)

    def reset(self, info: dict[str, Any]) -> None:
        """Reset the delegate."""
        if self.delegate is not None:
            self.delegate.reset(info)

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The delegate's move."""
        if self.delegate is None:
            raise RuntimeError("BestOpponent must be bound to an env first: call bind(env)")
        return str(self.delegate.act(observation, info))


PLAYERS: dict[str, Callable[..., Any]] = {
    "random": RandomOpponent,
    "scripted": GreedyOpponent,
    "greedy": GreedyOpponent,
    "minimax": MinimaxOpponent,
    "best": BestOpponent,
}


def make_player(name: str, seed: int | None = None, **options: Any) -> Any:
    """A fresh player by name: ``random``, ``scripted`` (``greedy``), ``minimax``, ``best`` or ``module:Class``.

    ``seed`` is passed to constructors that take one; ``options`` go to the constructor.

    >>> make_player("minimax", seed=0).name
    'minimax'
    """
    if ":" in name:
        import importlib

        module_name, _, class_name = name.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
    elif name in PLAYERS:
        cls = PLAYERS[name]
    else:
        from agentrl.core.choices import did_you_mean

        raise ValueError(
            f"unknown player {name!r}; choose from {', '.join(sorted(PLAYERS))} or 'package.module:Class'"
            f"{did_you_mean(name, list(PLAYERS))}"
        )
    try:
        return cls(seed=seed, **options)
    except TypeError:
        return cls(**options)


def seed_player(player: Any, seed: int | None) -> None:
    """Reseed a player's randomness so that a seeded game replays exactly.

    Calls ``player.seed(seed)`` when the player has such a method, else replaces a NumPy generator
    stored as ``player.rng`` (the built-in opponents); players with neither are left alone.
    """
    if seed is None:
        return
    method = getattr(player, "seed", None)
    if callable(method):
        method(seed)
    elif isinstance(getattr(player, "rng", None), np.random.Generator):
        player.rng = np.random.default_rng(seed)


# -- what a player is bound to ----------------------------------------------------------------
class PlayerView:
    """The env as one seat's player sees it (what ``play_game`` binds players to).

    Attribute reads fall through to the AEC env (``agent_selection``, ``infos``, ``game``, ...);
    on top it offers ``seat``, ``system_prompt`` (the game's rules) and
    ``metadata["stop_sequences"]`` (none: a move is free text). ``unwrapped`` is the view itself so
    that agents reading ``env.unwrapped.system_prompt`` or ``env.unwrapped.game`` both work.
    """

    def __init__(self, env: Any, seat: str) -> None:
        self.env = env
        self.seat = seat
        self.metadata = {**getattr(env, "metadata", {}), "stop_sequences": ()}

    @property
    def unwrapped(self) -> PlayerView:
        """The view itself (it carries the prompt and the game)."""
        return self

    @property
    def game(self) -> Any:
        """The rules object of the env."""
        return self.env.unwrapped.game

    @property
    def system_prompt(self) -> str:
        """The game's rules, and the seat this player plays."""
        return f"{game_rules_text(self.env)}\n\nYou are {self.seat}."

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not set yet (during unpickling or deepcopy)
            raise AttributeError(name)
        return getattr(self.env, name)


def game_rules_text(env: Any) -> str:
    """The rules of the game behind an AEC text env (empty when it has none)."""
    game = getattr(getattr(env, "unwrapped", env), "game", None)
    rules = getattr(game, "rules_text", None)
    return str(rules()) if callable(rules) else ""
