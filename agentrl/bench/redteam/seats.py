"""Multi-agent targets: one probed seat of a PettingZoo game, and the probes of a seat that stalls or floods.

:class:`SeatedGame` plays a PettingZoo env (``agentrl.envs.multiagent.<name>``, turn-based or parallel) with
the probe (or the random floor) in its first seat and every other seat playing a uniformly random *legal*
move (from the game's rules when it has them, else from ``info["legal_moves"]``); the reward is the
probed seat's, summed as PettingZoo's ``last()`` reports it. The single-seat ids ``AgentRL-MA/*`` are
Gymnasium envs already and are probed directly.

The probes check what a seat can do to the game by misbehaving: stall (an empty or invalid move every
turn) or flood (a megabyte of text per turn). Neither may win by the opponent's forfeit, nor crash the
env: TextArena's rule (two invalid moves in a row lose) must hold for the misbehaving seat itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from agentrl.bench.redteam.probe import Probe, ProbePolicy

__all__ = ["SEAT_PROBES", "SeatedGame"]

_MEGABYTE = 1_000_000


class SeatedGame:
    """A PettingZoo game with one probed seat, stepped like a single-agent env (``reset``/``step``/``close``).

    Args:
        name: a name of ``agentrl.envs.multiagent.MULTIAGENT_ENVS`` (``tictactoe_v0``).
        seat: the probed seat (default: the first of ``possible_agents``).
        **kwargs: the game's ``env()`` arguments.

    >>> game = SeatedGame("tictactoe_v0")
    >>> observation, info = game.reset(seed=0)
    >>> _, reward, terminated, _, _ = game.step("")
    >>> _, reward, terminated, _, _ = game.step("")  # a second invalid move in a row loses
    >>> reward, terminated
    (-1.0, True)
    """

    episode_kind = "pettingzoo"
    metadata: dict[str, Any] = {}

    def __init__(self, name: str, seat: str | None = None, **kwargs: Any) -> None:
        from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

        if name not in MULTIAGENT_ENVS:
            raise ValueError(f"unknown multi-agent env {name!r}; choose from {', '.join(sorted(MULTIAGENT_ENVS))}")
        self.name = name
        self.aec = load(name).env(**kwargs)
        self.seat = seat or self.aec.possible_agents[0]
        self.action_space = self.aec.action_space(self.seat)
        self.observation_space = self.aec.observation_space(self.seat)
        self.unwrapped = self
        self._rng = np.random.default_rng(0)
        self._players: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """A new game; the other seats move until it is the probed seat's turn."""
        from agentrl.envs.multiagent.opponents import PlayerView, make_player

        self.aec.reset(seed=seed)
        self._rng = np.random.default_rng(seed)
        self._players = {}
        if getattr(self.aec.unwrapped, "game", None) is not None and hasattr(self.aec.unwrapped.game, "legal_moves"):
            for index, seat in enumerate(self.aec.possible_agents):
                if seat != self.seat:
                    player = make_player("random", seed=None if seed is None else seed + index + 1)
                    player.bind(PlayerView(self.aec, seat))
                    player.reset(dict(self.aec.infos.get(seat, {})))
                    self._players[seat] = player
        _, _, observation, info = self._advance()
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Play the probed seat's move, then the others' until its turn comes back or the game ends."""
        self.aec.step(action)
        gained, over, observation, info = self._advance()
        return observation, gained, over, False, info

    def close(self) -> None:
        """Close the game."""
        self.aec.close()

    def _other_move(self, seat: str, info: Mapping[str, Any]) -> Any:
        player = self._players.get(seat)
        if player is not None:
            return player.act(self.aec.observe(seat), dict(info))
        moves = list(info.get("legal_moves") or [])
        if moves:
            return str(moves[int(self._rng.integers(len(moves)))])
        return self.aec.action_space(seat).sample()

    def _advance(self) -> tuple[float, bool, Any, dict[str, Any]]:
        """``(the probed seat's reward meanwhile, game over, its observation, its info)``."""
        gained = 0.0
        observation: Any = ""
        info: dict[str, Any] = {}
        while self.aec.agents:
            agent = self.aec.agent_selection
            seen, reward, terminated, truncated, agent_info = self.aec.last()
            if agent == self.seat:
                gained += float(reward)
                observation, info = seen, dict(agent_info)
                if not (terminated or truncated):
                    return gained, False, observation, info
                self.aec.step(None)
                continue
            self.aec.step(None if terminated or truncated else self._other_move(agent, agent_info))
        return gained, True, observation, info


class _Stall(ProbePolicy):
    """An empty move, then invalid ones, every turn."""

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        return "" if self.turn % 2 == 0 else "[redteam-stall]"


class _Flood(ProbePolicy):
    """A megabyte of text per turn, ending in a bracketed token no game accepts."""

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        return ("flood " * (_MEGABYTE // 6)) + "[redteam-flood]"


SEAT_PROBES: tuple[Probe, ...] = (
    Probe(
        "seat-stall",
        "a seat that stalls: an empty or invalid move every turn (must lose by TextArena's rule, not win by forfeit)",
        ("AgentRL-MA/*", "pettingzoo:*"),
        _Stall,
    ),
    Probe(
        "seat-flood",
        "a seat that floods: 1 MB of text per turn (must be an invalid move, not a crash or a win)",
        ("AgentRL-MA/*", "pettingzoo:*"),
        _Flood,
    ),
)
