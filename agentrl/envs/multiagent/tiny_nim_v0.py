"""``tiny_nim_v0``: one-heap Nim with a take limit as a text AEC env (the multi-agent trainer's test game).

Example:
    >>> from agentrl.envs.multiagent import tiny_nim_v0
    >>> env = tiny_nim_v0.env()
    >>> env.reset(seed=0)
    >>> env.step("[9]")
    >>> env.rewards
    {'player_0': 1.0, 'player_1': -1.0}
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.tiny_nim import TinyNim

__all__ = ["env", "raw_env"]


def raw_env(
    *,
    heap: int = 9,
    max_take: int = 9,
    random_heap: bool = False,
    random_first: bool = False,
    max_turns: int = 40,
    render_mode: str | None = None,
) -> TextGameEnv:
    """The env without wrappers (see :class:`~agentrl.envs.multiagent.tiny_nim.TinyNim` for the arguments)."""
    game = TinyNim(heap, max_take, random_heap=random_heap, random_first=random_first)
    return TextGameEnv(game, max_turns=max_turns, render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
