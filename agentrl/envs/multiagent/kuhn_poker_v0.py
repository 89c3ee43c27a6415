"""``kuhn_poker_v0``: Kuhn poker as a text AEC env (PettingZoo naming: ``kuhn_poker_v0.env()``).

Each player sees only its own card; the reward is +1 / -1 / 0 by the sign of the chips won, and
the chips themselves are in the game (``env.game.chips()``).

Example:
    >>> from agentrl.envs.multiagent import kuhn_poker_v0
    >>> env = kuhn_poker_v0.env()
    >>> env.reset(seed=0)
    >>> env.agent_selection, env.infos["player_0"]["legal_moves"]
    ('player_0', ['[check]', '[bet]'])
    >>> env.step("[check]")
    >>> env.step("I bet. [bet]")
    >>> env.step("[fold]")
    >>> env.game.chips(), env.rewards
    ({'player_0': -1, 'player_1': 1}, {'player_0': -1.0, 'player_1': 1.0})
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.kuhn_poker import KuhnPoker

__all__ = ["env", "raw_env"]


def raw_env(*, max_turns: int = 10, render_mode: str | None = None) -> TextGameEnv:
    """The env without wrappers (a hand takes at most three moves)."""
    return TextGameEnv(KuhnPoker(), max_turns=max_turns, render_mode=render_mode)


def env(**kwargs: Any) -> TextGameEnv:
    """The env (text envs need no PettingZoo wrappers: invalid moves are handled by the env itself)."""
    return raw_env(**kwargs)
