"""Multi-agent envs (PettingZoo), one module per env, named as PettingZoo names its envs.

>>> from agentrl.envs.multiagent import tictactoe_v0
>>> env = tictactoe_v0.env()          # AEC: agents take turns (every module's env() is AEC)
>>> env.reset(seed=0)
>>> sorted(MULTIAGENT_ENVS)[:3]
['connect_four_v0', 'cooperative_v0', 'debate_v0']

Modules are imported on first use, so listing them costs nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MULTIAGENT_ENVS", "load"]

#: ``name -> (kind, one-line description)``; ``kind`` is the game's native form, ``"aec"`` (turns) or
#: ``"parallel"``. PettingZoo's convention holds for every module: ``env()`` is an ``AECEnv`` (a parallel
#: game through ``parallel_to_aec``) and a ``"parallel"`` game also has ``parallel_env()``.
MULTIAGENT_ENVS: dict[str, tuple[str, str]] = {
    "debate_v0": ("parallel", "N agents answer a task, read each other's answers for R rounds, answer again (MAPoRL)"),
    "cooperative_v0": ("aec", "a solver and a checker with a Python sandbox produce one answer for a joint reward"),
    "tictactoe_v0": ("aec", "tic-tac-toe, moves as [cell]; minimax opponent"),
    "connect_four_v0": ("aec", "Connect Four on 6x7, moves as [column]; search opponent"),
    "nim_v0": ("aec", "Nim with several heaps, moves as [heap count]; perfect (nim-sum) opponent"),
    "tiny_nim_v0": ("aec", "one heap, take 1-9, the last object wins; a game a tiny model learns in a CPU test"),
    "kuhn_poker_v0": ("aec", "Kuhn poker, private cards; equilibrium opponent"),
    "negotiation_v0": ("aec", "split a pool of items with private values by offers and acceptance"),
}


def load(name: str) -> ModuleType:
    """The module of a multi-agent env (``load("tictactoe_v0").env()``)."""
    if name not in MULTIAGENT_ENVS:
        from agentrl.core.choices import did_you_mean

        hint = did_you_mean(name, list(MULTIAGENT_ENVS))
        raise ValueError(f"unknown multi-agent env {name!r}; choose from {sorted(MULTIAGENT_ENVS)}{hint}")
    return importlib.import_module(f"agentrl.envs.multiagent.{name}")


def __getattr__(name: str) -> ModuleType:
    if name in MULTIAGENT_ENVS:
        return load(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
