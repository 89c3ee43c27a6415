"""Turn-based text games as PettingZoo ``AECEnv``s, with TextArena's invalid-move rule.

A game is its rules (:class:`GameRules`: state, legal moves, parsing, outcome, what each player
sees) and nothing else; :class:`TextGameEnv` turns any rules object into a PettingZoo AEC env
with text observations and text actions, so every game shares one tested turn loop:

* the agent whose turn it is (``env.agent_selection``) writes its move as text; the game parses it
  (moves are written in brackets, ``[4]``; the last bracketed token counts);
* an illegal or unparsable move gets a warning observation and the same agent moves again; a
  second invalid move in the same turn loses the game (-1 for that agent, +1 for the other, as
  TextArena does); ``info["invalid_moves"]`` and ``info["warning"]`` say what happened;
* anything that is not a string (``None``, a number, an exception object) counts as an invalid move;
* at the end every agent gets +1 (win), -1 (loss) or 0 (draw); ``info["outcome"]`` says which and why;
* a turn budget (``max_turns``) truncates a game that does not end (a draw).

``env.step_for(agent, action)`` is a guard for callers that do not track whose turn it is: an
action from an agent that is not due is logged in that agent's ``info["ignored_actions"]`` and
changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from pettingzoo import AECEnv

from agentrl.core.errors import AgentRLError
from agentrl.core.spaces import TextObservation, UnicodeText

__all__ = ["GameRules", "IllegalMove", "TextGameEnv", "parse_bracketed"]

_BRACKETED = re.compile(r"\[([^\[\]]{1,64})\]")


class IllegalMove(AgentRLError, ValueError):
    """A move the rules refuse; the message tells the player what is allowed."""


def parse_bracketed(text: str) -> str:
    """The last ``[...]`` token of a move, stripped and lower-cased (the whole text when it has none).

    Example:
        >>> parse_bracketed("I think the centre is best: [5]")
        '5'
        >>> parse_bracketed("  Bet ")
        'bet'
    """
    found = _BRACKETED.findall(text)
    return (found[-1] if found else text).strip().lower()


class GameRules(Protocol):
    """The rules and state of one turn-based game; :class:`TextGameEnv` drives it.

    Implementations keep all randomness in the ``rng`` given to :meth:`reset` (deals, first player),
    so a seeded reset replays exactly.
    """

    @property
    def players(self) -> tuple[str, ...]:
        """The players, in seat order (PettingZoo agent names such as ``"player_0"``)."""
        ...

    @property
    def name(self) -> str:
        """The game's name, e.g. ``"tictactoe"``."""
        ...

    def reset(self, rng: np.random.Generator) -> None:
        """Start a new game."""
        ...

    def current_player(self) -> str:
        """Whose turn it is."""
        ...

    def legal_moves(self) -> list[str]:
        """The current player's legal moves, written as they would be played (``"[4]"``)."""
        ...

    def parse_move(self, text: str) -> Any:
        """The move ``text`` means, or :class:`IllegalMove` saying why it cannot be played."""
        ...

    def apply(self, move: Any) -> None:
        """Play a parsed legal move for the current player."""
        ...

    def is_over(self) -> bool:
        """Whether the game has ended."""
        ...

    def outcome(self) -> dict[str, float]:
        """Each player's result after the end: +1 win, -1 loss, 0 draw."""
        ...

    def observation(self, player: str) -> str:
        """What ``player`` sees now (the board, its private cards; never another's private information)."""
        ...

    def rules_text(self) -> str:
        """The rules and the move format, as a player is told them at the start."""
        ...

    def clone(self) -> GameRules:
        """An independent copy (for search-based opponents)."""
        ...

    # Optional: ``extra_info(player) -> dict`` adds game-specific figures to the player's info
    # (Kuhn poker's chips, negotiation's utility); ``state_key()`` makes positions hashable for
    # MinimaxOpponent's transposition table.


class TextGameEnv(AECEnv):
    """A PettingZoo AEC env for any :class:`GameRules`.

    Args:
        game: the rules object (a fresh one per env).
        max_turns: moves after which the game is truncated as a draw.
        render_mode: ``"ansi"`` (``render()`` returns the text) or ``"human"`` (prints it).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "is_parallelizable": False, "name": "text_game"}

    def __init__(self, game: GameRules, *, max_turns: int = 200, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.game = game
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": f"{game.name}_v0"}
        self.possible_agents = list(game.players)
        self._observation_space = UnicodeText(max_length=16384)
        self._action_space = UnicodeText(max_length=65536)
        self.np_random = np.random.default_rng()
        self.agents: list[str] = []
        self._turns = 0
        self._invalid_this_turn = 0
        self._warnings: dict[str, str | None] = {}
        self._outcome: dict[str, Any] | None = None

    # -- spaces ------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> UnicodeText:
        """Text, for every agent."""
        return self._observation_space

    def action_space(self, agent: str) -> UnicodeText:
        """Text, for every agent."""
        return self._action_space

    # -- the AEC API ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game; the seed fixes every random draw of the game."""
        if seed is not None or not hasattr(self, "_seeded"):
            self.np_random = np.random.default_rng(seed)
            self._seeded = True
        self.game.reset(self.np_random)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._warnings = dict.fromkeys(self.agents, None)
        self.infos = {agent: self._info(agent) for agent in self.agents}
        self._turns = 0
        self._invalid_this_turn = 0
        self._outcome = None
        self.agent_selection = self.game.current_player()
        self._refresh_infos()

    def observe(self, agent: str) -> TextObservation:
        """The agent's view: the rules (first turn), the game state, its legal moves, any warning."""
        parts = [self.game.observation(agent)]
        if agent == getattr(self, "agent_selection", None) and not self._done(agent):
            parts.append("Your legal moves: " + ", ".join(self.game.legal_moves()))
        warning = self._warnings.get(agent)
        if warning:
            parts.append(f"[warning] {warning}")
        if self._turns == 0:
            parts.insert(0, self.game.rules_text())
        return TextObservation("\n\n".join(p for p in parts if p))

    def step(self, action: Any) -> None:
        """Play ``action`` (text) for ``agent_selection``."""
        agent = self.agent_selection
        if self._done(agent):
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        try:
            if not isinstance(action, str):
                raise IllegalMove(f"a move must be text, got {type(action).__name__}")
            move = self.game.parse_move(action)
        except IllegalMove as exc:
            self._invalid(agent, str(exc))
            self._accumulate_rewards()
            return
        self._warnings[agent] = None
        self._invalid_this_turn = 0
        self.game.apply(move)
        self._turns += 1
        if self.game.is_over():
            self._finish(self.game.outcome(), reason="game over")
        elif self._turns >= self.max_turns:
            for a in self.agents:
                self.truncations[a] = True
            self._set_outcome(dict.fromkeys(self.agents, 0.0), reason=f"turn budget of {self.max_turns} spent")
        else:
            self.agent_selection = self.game.current_player()
        self._refresh_infos()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def step_for(self, agent: str, action: Any) -> bool:
        """Step only if it is ``agent``'s turn; otherwise log the action in its info. Returns whether it ran."""
        if agent != self.agent_selection:
            info = self.infos.setdefault(agent, {})
            info.setdefault("ignored_actions", []).append(
                {"action": action if isinstance(action, str) else repr(action), "reason": "not this agent's turn"}
            )
            return False
        self.step(action)
        return True

    def render(self) -> str | None:
        """The game as text (``ansi``), printed for ``human``."""
        text = self.game.observation(self.possible_agents[0]) if self.agents or self._turns else ""
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; safe to call twice."""

    def state(self) -> str:
        """A global text description (for debugging; includes no hidden move history)."""
        return self.game.observation(self.possible_agents[0])

    # -- internals -------------------------------------------------------------------------------
    def _done(self, agent: str) -> bool:
        return agent not in self.terminations or self.terminations[agent] or self.truncations[agent]

    def _invalid(self, agent: str, reason: str) -> None:
        self._invalid_this_turn += 1
        self.infos[agent]["invalid_moves"] = self.infos[agent].get("invalid_moves", 0) + 1
        if self._invalid_this_turn >= 2:
            outcome = {a: (-1.0 if a == agent else 1.0) for a in self.agents}
            self._warnings[agent] = f"invalid move again ({reason}); you lose"
            self._finish(outcome, reason=f"{agent} made two invalid moves in a row: {reason}")
            self._refresh_infos()
            return
        self._warnings[agent] = f"invalid move: {reason}. Try again; a second invalid move loses the game."
        self._refresh_infos()

    def _finish(self, outcome: dict[str, float], reason: str) -> None:
        for a in self.agents:
            self.terminations[a] = True
        self._set_outcome(outcome, reason)

    def _set_outcome(self, outcome: dict[str, float], reason: str) -> None:
        self.rewards = {a: float(outcome.get(a, 0.0)) for a in self.agents}
        self._outcome = {"result": {a: _result(v) for a, v in self.rewards.items()}, "reason": reason}

    def _info(self, agent: str) -> dict[str, Any]:
        return {"invalid_moves": 0, "warning": None, "legal_moves": [], "turn": 0}

    def _refresh_infos(self) -> None:
        legal = self.game.legal_moves() if not self.game.is_over() else []
        for a in self.agents:
            info = self.infos.setdefault(a, self._info(a))
            info["turn"] = self._turns
            info["warning"] = self._warnings.get(a)
            info["legal_moves"] = legal if a == self.agent_selection and not self._done(a) else []
            if self._outcome is not None:
                info["outcome"] = self._outcome
            extra = getattr(self.game, "extra_info", None)  # game-specific figures (chips, utility)
            if extra is not None:
                info.update(extra(a))


def _result(value: float) -> str:
    return "win" if value > 0 else "loss" if value < 0 else "draw"


def other_player(players: Sequence[str], player: str) -> str:
    """The other seat of a two-player game."""
    return players[1] if player == players[0] else players[0]
