"""``negotiation_v0``: split a pool of items by offers, as a text AEC env (``negotiation_v0.env()``).

Each player sees the pool and its own values only; the reward is competitive (+1 for the higher
utility, -1 for the lower, 0 for a tie or no deal), and the utilities are in the game
(``env.game.utilities()``).

Example:
    >>> from agentrl.envs.multiagent import negotiation_v0
    >>> env = negotiation_v0.env()
    >>> env.reset(seed=1)
    >>> env.game.counts
    (2, 3, 4)
    >>> env.step("[propose 2 0 3]")
    >>> env.agent_selection
    'player_1'
    >>> env.step("[accept]")
    >>> env.game.utilities(), env.rewards
    ({'player_0': 9, 'player_1': 7}, {'player_0': 1.0, 'player_1': -1.0})
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.negotiation import Negotiation

__all__ = ["env", "raw_env"]


def raw_env(
    *, max_rounds: int = 6, max_count: int = 4, max_turns: int = 20, render_mode: str | None = None
) -> TextGameEnv:
    """The env without wrappers (a game takes at most ``max_rounds + 1`` moves)."""
    game = Negotiation(max_rounds=max_rounds, max_count=max_count)
    return TextGameEnv(game, max_turns=max(max_turns, max_rounds + 1), render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
