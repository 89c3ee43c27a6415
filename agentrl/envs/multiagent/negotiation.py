"""Negotiation ("Deal or no deal"): the rules for :class:`~agentrl.envs.multiagent.base.TextGameEnv`.

A pool of items (books, hats, balls; 1-4 of each, drawn from the rng) is to be split between two
players. Each player has private integer values per item type, drawn so that the whole pool is
worth 10 to each. ``player_0`` starts; players alternate:

* ``[propose a b c]``: I get ``a`` books, ``b`` hats, ``c`` balls; the other gets the rest;
* ``[accept]``: take the other player's last proposal (a deal; the game ends);
* ``[walk]``: leave without a deal (the game ends, a draw).

After ``max_rounds`` proposals the player facing the last one may only accept or walk. With a
deal each player's utility is the value of its share to it; with none both get 0. The reward is
competitive: the higher utility wins (+1 / -1), equal utilities or no deal are a draw (0).
:meth:`Negotiation.utilities` gives the utilities (reported in ``info`` through
:meth:`Negotiation.extra_info`).

Example:
    >>> game = Negotiation()
    >>> game.reset(np.random.default_rng(1))
    >>> game.counts, game.values["player_0"]
    ((2, 3, 4), (3, 0, 1))
    >>> game.apply(game.parse_move("I keep the books: [propose 2 0 3]"))
    >>> game.apply(game.parse_move("[accept]"))
    >>> game.is_over(), game.utilities(), game.outcome()
    (True, {'player_0': 9, 'player_1': 7}, {'player_0': 1.0, 'player_1': -1.0})
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import numpy as np

from agentrl.envs.multiagent.base import IllegalMove, parse_bracketed
from agentrl.envs.multiagent.opponents import GameOpponent

__all__ = ["ITEM_TYPES", "Negotiation", "NegotiationOpponent"]

#: The item types, plural (as counted) and singular.
ITEM_TYPES = (("books", "book"), ("hats", "hat"), ("balls", "ball"))


def _value_vectors(counts: tuple[int, ...], total: int) -> list[tuple[int, ...]]:
    """Every non-negative integer value vector that makes the pool worth ``total``, valuing 2+ types."""
    ranges = [range(total // c + 1) for c in counts]
    return [
        v
        for v in itertools.product(*ranges)
        if sum(c * x for c, x in zip(counts, v, strict=True)) == total and sum(x > 0 for x in v) >= 2
    ]


class Negotiation:
    """Two-player split-the-pool negotiation with private values.

    Args:
        max_rounds: proposals allowed in all (the answer to the last is accept or walk).
        max_count: the most items of one type in the pool (counts are drawn from 1..max_count).
        total_value: what the whole pool is worth to each player.
    """

    name = "negotiation"
    players = ("player_0", "player_1")

    def __init__(self, max_rounds: int = 6, max_count: int = 4, total_value: int = 10) -> None:
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        if max_count < 1:
            raise ValueError(f"max_count must be at least 1, got {max_count}")
        self.max_rounds = max_rounds
        self.max_count = max_count
        self.total_value = total_value
        self.counts: tuple[int, ...] = (1, 1, 1)
        self.values: dict[str, tuple[int, ...]] = {}
        self.proposals: list[tuple[str, tuple[int, ...]]] = []  # (proposer, what the proposer gets)
        self.to_move = 0
        self.ended: str | None = None  # "deal" or "walk"

    # -- GameRules -----------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator) -> None:
        """Draw the pool and both players' private values; ``player_0`` moves first."""
        for _ in range(1000):
            counts = tuple(int(c) for c in rng.integers(1, self.max_count + 1, size=len(ITEM_TYPES)))
            options = _value_vectors(counts, self.total_value)
            if len(options) < 2:
                continue
            first = options[int(rng.integers(len(options)))]
            second = options[int(rng.integers(len(options)))]
            # Every item is worth something to someone, and the players do not value alike.
            if first != second and all(a + b > 0 for a, b in zip(first, second, strict=True)):
                break
        else:  # pragma: no cover - the draw above succeeds at once in practice
            raise RuntimeError("could not draw a negotiation pool")
        self.counts = counts
        self.values = {"player_0": first, "player_1": second}
        self.proposals = []
        self.to_move = 0
        self.ended = None

    def current_player(self) -> str:
        """Whose turn it is."""
        return self.players[self.to_move]

    def other(self, player: str) -> str:
        """The other player."""
        return self.players[1] if player == self.players[0] else self.players[0]

    def rounds_left(self) -> int:
        """Proposals that may still be made."""
        return self.max_rounds - len(self.proposals)

    def pending(self) -> tuple[int, ...] | None:
        """The share the current player would get by accepting the other's last proposal."""
        if not self.proposals or self.proposals[-1][0] == self.current_player():
            return None
        return tuple(c - x for c, x in zip(self.counts, self.proposals[-1][1], strict=True))

    def all_splits(self) -> list[tuple[int, ...]]:
        """Every share a player may propose for itself."""
        return list(itertools.product(*(range(c + 1) for c in self.counts)))

    def legal_moves(self) -> list[str]:
        """``[accept]`` facing a proposal, every ``[propose a b c]`` while rounds are left, and ``[walk]``."""
        if self.is_over():
            return []
        moves = ["[accept]"] if self.pending() is not None else []
        if self.rounds_left() > 0:
            moves += [f"[propose {' '.join(map(str, s))}]" for s in self.all_splits()]
        return [*moves, "[walk]"]

    def parse_move(self, text: str) -> tuple[str, tuple[int, ...] | None]:
        """``("accept", None)``, ``("walk", None)`` or ``("propose", share)``; :class:`IllegalMove` otherwise."""
        token = parse_bracketed(text)
        words = token.replace(",", " ").split()
        example = f"[propose {' '.join('1' for _ in self.counts)}]"
        if words == ["accept"]:
            if self.pending() is None:
                raise IllegalMove("there is no proposal from the other player to accept; make one, like " + example)
            return ("accept", None)
        if words == ["walk"]:
            return ("walk", None)
        if words and words[0] == "propose":
            if self.rounds_left() <= 0:
                raise IllegalMove("no proposals are left: [accept] the last one or [walk]")
            numbers = words[1:]
            if len(numbers) != len(self.counts) or not all(n.isdigit() for n in numbers):
                raise IllegalMove(
                    f"a proposal names how many {', '.join(t[0] for t in ITEM_TYPES)} you get, like {example}"
                )
            share = tuple(int(n) for n in numbers)
            if any(x > c for x, c in zip(share, self.counts, strict=True)):
                raise IllegalMove(f"the pool has only {self._describe(self.counts)}")
            return ("propose", share)
        raise IllegalMove(
            f"write [propose a b c] (what you get), [accept] or [walk], like {example}; got {token[:40]!r}"
        )

    def apply(self, move: Any) -> None:
        """Play a parsed move for the current player."""
        kind, share = move
        if kind == "accept":
            self.ended = "deal"
            return
        if kind == "walk":
            self.ended = "walk"
            return
        self.proposals.append((self.current_player(), tuple(share)))
        self.to_move = 1 - self.to_move

    def is_over(self) -> bool:
        """A proposal was accepted, or a player walked away."""
        return self.ended is not None

    def shares(self) -> dict[str, tuple[int, ...]] | None:
        """Each player's items under the deal (``None`` without one)."""
        if self.ended != "deal":
            return None
        proposer, share = self.proposals[-1]
        rest = tuple(c - x for c, x in zip(self.counts, share, strict=True))
        return {proposer: share, self.other(proposer): rest}

    def value(self, player: str, share: tuple[int, ...]) -> int:
        """What ``share`` is worth to ``player``."""
        return int(sum(x * v for x, v in zip(share, self.values[player], strict=True)))

    def utilities(self) -> dict[str, int]:
        """Each player's utility: the value of its share under a deal, 0 without one (or before the end)."""
        shares = self.shares()
        if shares is None:
            return dict.fromkeys(self.players, 0)
        return {p: self.value(p, shares[p]) for p in self.players}

    def outcome(self) -> dict[str, float]:
        """+1 for the higher utility, -1 for the lower; 0 each for equal utilities or no deal."""
        u = self.utilities()
        a, b = self.players
        sign = float(np.sign(u[a] - u[b]))
        return {a: sign, b: -sign}

    def extra_info(self, player: str) -> dict[str, Any]:
        """What ``info`` reports beyond the outcome: the utility and whether there was a deal, at the end."""
        if not self.is_over():
            return {}
        return {"utility": self.utilities()[player], "deal": self.ended == "deal"}

    def _describe(self, share: tuple[int, ...]) -> str:
        return ", ".join(
            f"{n} {plural if n != 1 else single}" for n, (plural, single) in zip(share, ITEM_TYPES, strict=True)
        )

    def observation(self, player: str) -> str:
        """The pool, the player's own values (never the other's), the last proposal and rounds left."""
        own = self.values[player]
        values = ", ".join(f"{single} {v}" for (_, single), v in zip(ITEM_TYPES, own, strict=True))
        lines = [
            f"You are {player}. Pool: {self._describe(self.counts)}.",
            f"Your values per item: {values} (the whole pool is worth {self.value(player, self.counts)} to you).",
        ]
        if self.proposals:
            proposer, share = self.proposals[-1]
            rest = tuple(c - x for c, x in zip(self.counts, share, strict=True))
            mine = share if proposer == player else rest
            who = "You" if proposer == player else proposer
            lines.append(
                f"Last proposal, by {who}: {proposer} gets {self._describe(share)}; the other gets "
                f"{self._describe(rest)} (your part is worth {self.value(player, mine)} to you)."
            )
        else:
            lines.append("No proposals yet.")
        if self.is_over():
            if self.ended == "deal":
                u = self.utilities()
                lines.append(f"Deal. Utilities: {', '.join(f'{p} {u[p]}' for p in self.players)}.")
            else:
                lines.append(f"{self.current_player()} walked away: no deal, both get 0.")
        elif self.rounds_left() > 0:
            lines.append(f"Proposals left: {self.rounds_left()} of {self.max_rounds}.")
        else:
            lines.append("No proposals left: the last one can only be accepted, or you walk away.")
        return "\n".join(lines)

    def rules_text(self) -> str:
        """What a player is told at the start."""
        return (
            "Negotiation. Split a pool of books, hats and balls with the other player. You each value the "
            f"items privately; the whole pool is worth {self.total_value} to each of you. Take turns: "
            "[propose a b c] offers that YOU get a books, b hats and c balls and the other gets the rest; "
            "[accept] takes the other's last proposal; [walk] ends the game with no deal. "
            f"At most {self.max_rounds} proposals; after the last one only [accept] or [walk] remain. "
            "With a deal each gets the value of their share; the higher value wins, equal values or no deal "
            "are a draw."
        )

    def clone(self) -> Negotiation:
        """An independent copy."""
        return copy.deepcopy(self)


class NegotiationOpponent(GameOpponent):
    """A scripted negotiator: greedy proposals with a concession schedule.

    It guesses the other player's value of a share as its fraction of the pool's items times the
    pool's worth (values are private). Its proposal keeps at least a target utility (8 of 10 at
    first, conceding towards 6 as proposals run out) while leaving the most to the other, and never
    proposes a split it guesses it would lose. It accepts an offer worth at least its next
    proposal's utility minus a concession that grows as proposals run out, when it guesses it wins
    by it; facing the last proposal it accepts any offer it guesses it wins, and walks otherwise.

    Args:
        seed: breaks ties between equally good proposals.
    """

    name = "negotiation_scripted"

    def _guess_other(self, game: Negotiation, other_share: tuple[int, ...]) -> float:
        return game.total_value * sum(other_share) / max(1, sum(game.counts))

    def proposal(self, game: Negotiation, player: str) -> tuple[int, ...]:
        """The share it would propose for itself now."""
        progress = len(game.proposals) / max(1, game.max_rounds)
        target = 0.8 * game.total_value - 0.2 * game.total_value * progress
        options = []
        for share in game.all_splits():
            rest = tuple(c - x for c, x in zip(game.counts, share, strict=True))
            mine = game.value(player, share)
            if sum(rest) > 0:
                good = mine >= target and mine > self._guess_other(game, rest)
                # Good splits first, the most left to the other; failing those, the most for itself.
                options.append(((good, sum(rest), mine) if good else (good, mine, -sum(rest)), share))
        best = max(key for key, _ in options)
        ties = [share for key, share in options if key == best]
        return ties[int(self.rng.integers(len(ties)))]

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Accept a good enough offer, else propose (or walk when no proposals are left)."""
        game: Negotiation = self.game
        player = game.current_player()
        offer = game.pending()
        if offer is not None:
            mine = game.value(player, offer)
            rest = tuple(c - x for c, x in zip(game.counts, offer, strict=True))
            wins = mine > self._guess_other(game, rest)
            if game.rounds_left() <= 0:
                return "[accept]" if wins and mine > 0 else "[walk]"
            concession = 0.3 * game.total_value * (1 - game.rounds_left() / game.max_rounds)
            if wins and mine >= game.value(player, self.proposal(game, player)) - concession:
                return "[accept]"
        return f"[propose {' '.join(map(str, self.proposal(game, player)))}]"
