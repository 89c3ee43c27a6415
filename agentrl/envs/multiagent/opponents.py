"""Built-in opponents for the turn-based games: random play and game-tree search.

An opponent is an agent (``reset(info)``, ``act(observation, info)``, ``bind(env)``) that may read
the game's state through the env it is bound to (``env.unwrapped.game``), which is how scripted
and perfect players see the board. It always moves for ``env.agent_selection``.

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

from agentrl.agents.base import BaseAgent

__all__ = ["GameOpponent", "MinimaxOpponent", "RandomOpponent", "negamax", "solve"]


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
