"""Kuhn poker: the rules for :class:`~agentrl.envs.multiagent.base.TextGameEnv`, and its equilibrium player.

Three cards, J < Q < K. Each player antes 1 chip and is dealt one card (the third is unseen);
``player_0`` acts first. Moves are ``[check]`` and ``[bet]`` (a bet is 1 chip) while no bet is
open, ``[call]`` and ``[fold]`` once one is. Both check, or a bet is called: showdown, the higher
card takes the pot. A fold gives the pot to the bettor (the cards are not shown).

The env's reward is the sign of the chips won (+1 / -1 / 0); :meth:`KuhnPoker.chips` gives the
chips themselves (reported in ``info`` through :meth:`KuhnPoker.extra_info`).

Example:
    >>> game = KuhnPoker()
    >>> game.reset(np.random.default_rng(0))
    >>> game.cards = {"player_0": 2, "player_1": 0}  # K against J
    >>> for text in ("[bet]", "[call]"):
    ...     game.apply(game.parse_move(text))
    >>> game.is_over(), game.chips(), game.outcome()
    (True, {'player_0': 2, 'player_1': -2}, {'player_0': 1.0, 'player_1': -1.0})
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed
from agentrl.envs.multiagent.opponents import GameOpponent

__all__ = ["CARD_NAMES", "MOVES", "KuhnEquilibriumOpponent", "KuhnPoker"]

#: Card ranks 0, 1, 2 as shown to players.
CARD_NAMES = ("J", "Q", "K")
#: Every move of the game.
MOVES = ("check", "bet", "call", "fold")

# Action sequences that end the hand.
_TERMINAL = {("check", "check"), ("bet", "call"), ("bet", "fold"), ("check", "bet", "call"), ("check", "bet", "fold")}


class KuhnPoker:
    """Two-player Kuhn poker rules and state (one hand per game)."""

    name = "kuhn_poker"
    players = ("player_0", "player_1")

    def __init__(self) -> None:
        self.cards: dict[str, int] = {"player_0": 0, "player_1": 1}
        self.history: list[str] = []

    # -- GameRules -----------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator) -> None:
        """Deal one card to each player from the shuffled three; clear the betting."""
        deck = rng.permutation(3)
        self.cards = {"player_0": int(deck[0]), "player_1": int(deck[1])}
        self.history = []

    def current_player(self) -> str:
        """``player_0`` on even moves, ``player_1`` on odd ones."""
        return self.players[len(self.history) % 2]

    def bet_open(self) -> bool:
        """Whether the last move was a bet (the player to move must call or fold)."""
        return bool(self.history) and self.history[-1] == "bet"

    def legal_moves(self) -> list[str]:
        """``[check]``/``[bet]`` with no bet open, ``[call]``/``[fold]`` facing one; none once over."""
        if self.is_over():
            return []
        return ["[call]", "[fold]"] if self.bet_open() else ["[check]", "[bet]"]

    def parse_move(self, text: str) -> str:
        """The move (``"check"``, ``"bet"``, ``"call"``, ``"fold"``) ``text`` names, if legal now."""
        token = parse_bracketed(text)
        legal = [m.strip("[]") for m in self.legal_moves()]
        if token not in MOVES:
            raise IllegalMove(f"write one of {', '.join(self.legal_moves())}; got {token[:40]!r}")
        if token not in legal:
            why = "there is a bet to call or fold" if self.bet_open() else "there is no bet to call or fold"
            raise IllegalMove(f"[{token}] is not allowed now ({why}); write one of {', '.join(self.legal_moves())}")
        return token

    def apply(self, move: Any) -> None:
        """Play a legal move for the current player."""
        self.history.append(str(move))

    def is_over(self) -> bool:
        """A fold, two checks, or a called bet."""
        return tuple(self.history) in _TERMINAL

    def contributions(self) -> dict[str, int]:
        """Chips each player has put in the pot (ante included)."""
        put = dict.fromkeys(self.players, 1)
        for i, move in enumerate(self.history):
            if move in ("bet", "call"):
                put[self.players[i % 2]] += 1
        return put

    def pot(self) -> int:
        """Chips in the pot."""
        return sum(self.contributions().values())

    def folded(self) -> str | None:
        """The player who folded, if one did."""
        if self.history and self.history[-1] == "fold":
            return self.players[(len(self.history) - 1) % 2]
        return None

    def winner(self) -> str | None:
        """Who takes the pot (``None`` while the hand is on)."""
        if not self.is_over():
            return None
        folder = self.folded()
        if folder is not None:
            return self.players[1] if folder == self.players[0] else self.players[0]
        return max(self.players, key=lambda p: self.cards[p])

    def chips(self) -> dict[str, int]:
        """Net chips each player won (+2, +1, -1, -2); zeros while the hand is on."""
        winner = self.winner()
        if winner is None:
            return dict.fromkeys(self.players, 0)
        put = self.contributions()
        return {p: (self.pot() - put[p] if p == winner else -put[p]) for p in self.players}

    def outcome(self) -> dict[str, float]:
        """+1 for the player who won chips, -1 for the other."""
        return {p: float(np.sign(c)) for p, c in self.chips().items()}

    def extra_info(self, player: str) -> dict[str, Any]:
        """What ``info`` reports beyond the outcome: the chips won, once the hand is over."""
        if not self.is_over():
            return {}
        return {"chips": self.chips()[player]}

    def observation(self, player: str) -> str:
        """The player's own card, the pot and the betting; both cards only at a showdown."""
        lines = [f"You are {player}. Your card: {CARD_NAMES[self.cards[player]]}.", f"Pot: {self.pot()} chips."]
        if self.history:
            moves = ", ".join(f"{self.players[i % 2]}: {m}" for i, m in enumerate(self.history))
            lines.append(f"Actions so far: {moves}.")
        else:
            lines.append("No actions yet.")
        if self.is_over():
            winner = self.winner()
            if self.folded() is None:
                shown = ", ".join(f"{p} has {CARD_NAMES[self.cards[p]]}" for p in self.players)
                lines.append(f"Showdown: {shown}.")
            won = self.chips()[winner] if winner else 0
            lines.append(f"{winner} wins {won} chip{'s' if won != 1 else ''}.")
        return "\n".join(lines)

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            "Kuhn poker. The deck has three cards, J < Q < K. Each player antes 1 chip and gets one card; "
            "player_0 acts first. With no bet open you may [check] or [bet] (1 chip); facing a bet you may "
            "[call] (1 chip) or [fold]. Two checks or a called bet go to showdown: the higher card takes the "
            "pot. A fold gives the pot to the bettor. Write your move in brackets, like [bet]."
        )

    def clone(self) -> KuhnPoker:
        """An independent copy."""
        return copy.deepcopy(self)


class KuhnEquilibriumOpponent(GameOpponent):
    """A Nash-equilibrium Kuhn poker player (it cannot be beaten on average in either seat).

    The equilibrium family found by Kuhn (1950), as given by Wikipedia's "Kuhn poker" article
    (https://en.wikipedia.org/wiki/Kuhn_poker, section "Optimal strategy"), with J, Q, K as cards:

    * first player (``player_0``): with J bet with probability ``alpha`` (in [0, 1/3]), otherwise
      check and fold to a bet; with Q always check, and call a bet with probability ``alpha + 1/3``;
      with K bet with probability ``3 * alpha``, otherwise check and call a bet;
    * second player (``player_1``), unique: with K always bet or call; with Q check after a check and
      call a bet with probability 1/3; with J bet after a check with probability 1/3 and fold to a bet.

    The first player's expected result at equilibrium is -1/18 chip per hand.

    Args:
        alpha: the first player's bluffing parameter in [0, 1/3]; ``None`` draws one uniformly at
            construction and at every :meth:`reset`.
        seed: for the mixed moves (and ``alpha`` when drawn).
    """

    name = "kuhn_equilibrium"

    def __init__(self, alpha: float | None = None, seed: int | None = None) -> None:
        super().__init__(seed)
        if alpha is not None and not 0.0 <= alpha <= 1.0 / 3.0:
            raise ValueError(f"alpha must be in [0, 1/3], got {alpha}")
        self.fixed_alpha = alpha
        self.alpha = alpha if alpha is not None else float(self.rng.uniform(0.0, 1.0 / 3.0))

    def reset(self, info: dict[str, Any]) -> None:
        """Draw a new ``alpha`` when it is not fixed."""
        if self.fixed_alpha is None:
            self.alpha = float(self.rng.uniform(0.0, 1.0 / 3.0))

    def policy(self, seat: int, card: int, history: tuple[str, ...] | list[str]) -> dict[str, float]:
        """The equilibrium's move probabilities for ``seat`` (0 acts first) holding ``card`` (0=J, 1=Q, 2=K)."""
        a, history = self.alpha, tuple(history)
        if seat == 0 and history == ():
            bet = (a, 0.0, 3 * a)[card]
            return {"check": 1.0 - bet, "bet": bet}
        if seat == 0 and history == ("check", "bet"):
            call = (0.0, a + 1.0 / 3.0, 1.0)[card]
            return {"call": call, "fold": 1.0 - call}
        if seat == 1 and history == ("bet",):
            call = (0.0, 1.0 / 3.0, 1.0)[card]
            return {"call": call, "fold": 1.0 - call}
        if seat == 1 and history == ("check",):
            bet = (1.0 / 3.0, 0.0, 1.0)[card]
            return {"check": 1.0 - bet, "bet": bet}
        raise ValueError(f"no decision for seat {seat} after {list(history)}")

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """A move drawn from the equilibrium for the player whose turn it is."""
        game = self.game
        player = game.current_player()
        probs = self.policy(game.players.index(player), game.cards[player], game.history)
        moves = list(probs)
        p = np.array([probs[m] for m in moves], dtype=float)
        return f"[{moves[int(self.rng.choice(len(moves), p=p / p.sum()))]}]"
