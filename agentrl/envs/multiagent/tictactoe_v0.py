"""``tictactoe_v0``: tic-tac-toe as a text AEC env (PettingZoo naming: ``tictactoe_v0.env()``).

Example:
    >>> from agentrl.envs.multiagent import tictactoe_v0
    >>> env = tictactoe_v0.env()
    >>> env.reset(seed=0)
    >>> env.agent_selection
    'player_0'
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.tictactoe import TicTacToe

__all__ = ["env", "raw_env"]


def raw_env(*, random_first: bool = False, max_turns: int = 20, render_mode: str | None = None) -> TextGameEnv:
    """The env without wrappers."""
    return TextGameEnv(TicTacToe(random_first=random_first), max_turns=max_turns, render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
