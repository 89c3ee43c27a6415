"""Multi-agent envs (PettingZoo), one module per env, named as PettingZoo names its envs.

* ``<game>_v0.py`` (``tictactoe_v0``, ``connect_four_v0``, ``nim_v0``, ``tiny_nim_v0``, ``kuhn_poker_v0``,
  ``negotiation_v0``): the env of a turn-based game, its ``env()`` (AEC), over ``<game>.py``, the game's rules
  (and its best player where it has one);
* ``base.py``: :class:`~agentrl.envs.multiagent.base.TextGameEnv`, the AEC env every turn-based text game is, on
  the :class:`~agentrl.envs.multiagent.base.GameRules` protocol, with TextArena's invalid-move rule;
* ``debate_v0.py`` (natively parallel) over ``debate.py``, and ``cooperative_v0.py`` over ``cooperative.py``: the
  envs of several LLM agents on one task, and their rules, rewards and oracles;
* ``opponents.py``: the built-in players (random, scripted, game-tree search) and players by name;
* ``single_agent.py``: one seat of a game as a single-agent Gymnasium env (the ``AgentRL-MA/*`` ids).

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

__all__ = ["MULTIAGENT_ENVS", "SEAT_GAMES", "SEAT_OPPONENTS", "load", "register_seat_envs", "register_seat_id"]

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


#: the games whose single-seat views ``import agentrl`` registers, and their opponents
SEAT_GAMES = ("tictactoe_v0", "connect_four_v0", "nim_v0", "kuhn_poker_v0", "negotiation_v0")
SEAT_OPPONENTS = ("random", "scripted", "best")
_SEAT_V0 = "v0 reports the game's move count as info['turn'] (read info['game_turn']); use -v1"


def register_seat_id(name: str, opponent: str, version: int, **kwargs: object) -> str:
    """Register ``AgentRL-MA/<game>-vs-<opponent>-v<version>``, one learner seat of game ``name``; returns the id.

    ``kwargs`` go to :func:`~agentrl.envs.multiagent.single_agent.make_single_agent` (``learner_seat``...).
    v0 keeps the game's move count in ``info["turn"]`` (deprecated, one release); v1 has the contract's.
    Registering again is harmless.
    """
    from agentrl.core.registry import register_domain

    if isinstance(version, bool) or version not in (0, 1):
        raise ValueError(f"versions are 0 (legacy info['turn']) and 1, got {version!r}")
    what = MULTIAGENT_ENVS.get(name, ("aec", name))[1].split(";")[0]
    return register_domain(
        name.rsplit("_v", 1)[0],
        "agentrl.envs.multiagent.single_agent:make_single_agent",
        namespace="AgentRL-MA",
        variant=f"vs-{opponent.replace(':', '.')}",
        version=version,
        description=f"{what}: one learner seat against the {opponent} player; reward +1/-1/0",
        kwargs={"name": name, "opponent": opponent, **kwargs, "legacy_turn_info": version == 0},
        tags=("text", "multiagent"),
        group="multiagent",
        benchmark=False,
        deprecated=_SEAT_V0 if version == 0 else None,
        disable_env_checker=True,
    )


def register_seat_envs() -> list[str]:
    """Register the single-seat views ``import agentrl`` provides (seat alternating; v0 and v1); returns the ids."""
    return [
        register_seat_id(game, opponent, version, learner_seat="alternate")
        for game in SEAT_GAMES
        for opponent in SEAT_OPPONENTS
        for version in (0, 1)
    ]


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
