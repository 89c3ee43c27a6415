"""``nim_v0``: Nim as a text AEC env (PettingZoo naming: ``nim_v0.env()``).

Moves are ``[h n]`` (take ``n`` objects from heap ``h``); taking the last object wins.
:class:`~agentrl.envs.multiagent.nim.NimPerfectOpponent` plays it perfectly.

Example:
    >>> from agentrl.envs.multiagent import nim_v0
    >>> env = nim_v0.env()
    >>> env.reset(seed=0)
    >>> env.game.heaps, env.agent_selection
    ([3, 4, 5], 'player_0')
    >>> env.step("[3 2]")
    >>> env.game.heaps
    [3, 4, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.nim import Nim

__all__ = ["env", "raw_env"]


def raw_env(
    *,
    heaps: Sequence[int] = (3, 4, 5),
    random_heaps: bool = False,
    random_first: bool = False,
    max_turns: int = 100,
    render_mode: str | None = None,
) -> TextGameEnv:
    """The env without wrappers (``random_heaps``: 3-5 heaps of 1-7 drawn at each reset)."""
    game = Nim(heaps, random_heaps=random_heaps, random_first=random_first)
    return TextGameEnv(game, max_turns=max_turns, render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
