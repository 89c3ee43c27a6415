"""``connect_four_v0``: Connect Four as a text AEC env (PettingZoo naming: ``connect_four_v0.env()``).

Moves are column numbers in brackets (``[4]``); :class:`~agentrl.envs.multiagent.connect_four.ConnectFourOpponent`
is a search opponent for it.

Example:
    >>> from agentrl.envs.multiagent import connect_four_v0
    >>> env = connect_four_v0.env()
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'player_0'
    >>> env.step("[4]")
    >>> print(env.game.board_text().splitlines()[-2])
    . . . X . . .
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.connect_four import ConnectFour

__all__ = ["env", "raw_env"]


def raw_env(*, random_first: bool = False, max_turns: int = 50, render_mode: str | None = None) -> TextGameEnv:
    """The env without wrappers (a game lasts at most 42 moves)."""
    return TextGameEnv(ConnectFour(random_first=random_first), max_turns=max_turns, render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
