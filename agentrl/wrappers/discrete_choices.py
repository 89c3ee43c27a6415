"""``DiscreteChoices``: a ``Discrete(n)`` action space over text moves, for RL libraries such as SB3."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["DiscreteChoices"]


class DiscreteChoices(gym.ActionWrapper[Any, np.int64, str], gym.utils.RecordConstructorArgs):
    """Play text moves by index: the action space becomes ``Discrete(n)``.

    Two modes:

    * fixed ``choices``: action ``i`` plays ``choices[i]`` (for tic-tac-toe,
      ``[f"[{i}]" for i in range(1, 10)]``); a choice the env finds illegal is played anyway, and
      the env handles it as it handles any invalid move (a warning, then a loss);
    * ``choices=None``: action ``i`` plays the ``i``-th of the legal moves that the env proposed in
      its last ``info["legal_moves"]``. The space is padded to a fixed ``n``: **an index beyond the
      current legal moves plays the last legal move**, so every action is legal. When the env
      proposes no move, the empty string is played (the env's invalid action).

    :meth:`action_masks` tells which indices are legal now (``sb3_contrib``'s ``MaskablePPO`` reads it).
    ``info["action_text"]`` after each step is the text that was played.

    Args:
        env: a text env (``str`` actions).
        choices: the fixed moves, or ``None`` for the env's legal moves.
        n: the size of the action space with ``choices=None`` (the most legal moves at one time).

    >>> import gymnasium as gym, agentrl
    >>> env = DiscreteChoices(gym.make("AgentRL-MA/tictactoe-vs-random-v0"), choices=[f"[{i}]" for i in range(1, 10)])
    >>> env.action_space
    Discrete(9)
    >>> _ = env.reset(seed=0)
    >>> _, reward, terminated, truncated, info = env.step(4)
    >>> info["action_text"]
    '[5]'
    >>> legal = DiscreteChoices(gym.make("AgentRL-MA/tictactoe-vs-random-v0"), n=9)
    >>> _, info = legal.reset(seed=0)
    >>> legal.action(8), legal.action_masks().sum()
    ('[9]', np.int64(9))
    """

    def __init__(self, env: gym.Env[Any, str], choices: Sequence[str] | None = None, *, n: int | None = None) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, choices=choices, n=n)
        super().__init__(env)
        if choices is not None:
            if isinstance(choices, str) or not all(isinstance(c, str) for c in choices) or not choices:
                raise ValueError(f"choices must be a non-empty sequence of str, got {choices!r}")
            if n is not None and n != len(choices):
                raise ValueError(f"n={n} does not match len(choices)={len(choices)}; leave n out")
            self.choices: tuple[str, ...] | None = tuple(choices)
            n = len(self.choices)
        else:
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(
                    "with choices=None pass n= (an int >= 1, the most legal moves the env proposes at once), "
                    f"got n={n!r}"
                )
            self.choices = None
        self.n = n
        self.action_space = spaces.Discrete(n)
        self.legal_moves: list[str] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env and remember its legal moves."""
        observation, info = self.env.reset(seed=seed, options=options)
        self._remember(info)
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Play the move that index ``action`` stands for."""
        text = self.action(action)
        observation, reward, terminated, truncated, info = self.env.step(text)
        self._remember(info)
        return observation, reward, terminated, truncated, {**info, "action_text": text}

    def action(self, action: Any) -> str:
        """The text move for index ``action``."""
        index = int(np.asarray(action).reshape(()))
        if not 0 <= index < self.n:
            raise ValueError(f"action {index} is outside Discrete({self.n})")
        if self.choices is not None:
            return self.choices[index]
        if not self.legal_moves:
            return ""
        return self.legal_moves[min(index, len(self.legal_moves) - 1)]

    def action_masks(self) -> np.ndarray:
        """Which indices play a legal move now (``bool``, shape ``(n,)``); all ``True`` if the env says nothing."""
        if self.choices is None:
            mask = np.zeros(self.n, dtype=bool)
            mask[: min(len(self.legal_moves), self.n)] = True
            return mask if mask.any() else np.ones(self.n, dtype=bool)
        if not self.legal_moves:
            return np.ones(self.n, dtype=bool)
        legal = set(self.legal_moves)
        return np.array([c in legal for c in self.choices], dtype=bool)

    def _remember(self, info: dict[str, Any]) -> None:
        moves = info.get("legal_moves")
        if moves is None and self.choices is None:
            raise KeyError(
                "DiscreteChoices(choices=None) needs info['legal_moves'] from the env; pass a fixed choices= list"
            )
        self.legal_moves = [str(m) for m in (moves or [])]
