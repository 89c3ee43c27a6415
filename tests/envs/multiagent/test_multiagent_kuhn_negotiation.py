"""Kuhn poker and negotiation: rules, hidden information, the env contract, and their opponents."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from agentrl.envs.multiagent import kuhn_poker_v0, negotiation_v0
from agentrl.envs.multiagent.base import IllegalMove
from agentrl.envs.multiagent.kuhn_poker import KuhnEquilibriumOpponent, KuhnPoker
from agentrl.envs.multiagent.negotiation import Negotiation, NegotiationOpponent
from agentrl.envs.multiagent.opponents import RandomOpponent
from agentrl.testing import check_multiagent_env

pytestmark = pytest.mark.timeout(300)

GAME_VALUE = -1.0 / 18.0  # the first player's expected chips at equilibrium


def play_matches(make_env: Callable[[], Any], hero: Any, villain: Any, games: int, seed: int = 0) -> list[Any]:
    """Play ``games`` games, the hero alternating seats; return each finished env's game clone and hero seat."""
    env = make_env()
    hero.bind(env)
    villain.bind(env)
    results = []
    for i in range(games):
        env.reset(seed=seed + i)
        hero_seat = env.possible_agents[i % 2]
        seats = {hero_seat: hero}
        seats.update({a: villain for a in env.possible_agents if a != hero_seat})
        for agent in seats.values():
            agent.reset({})
        for agent in env.agent_iter():
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            move = seats[agent].act(observation, info)
            assert move in env.game.legal_moves(), move
            env.step(move)
        assert env.game.is_over()
        results.append((env.game.clone(), hero_seat))
    env.close()
    return results


# -- the env contract ------------------------------------------------------------------------------
@pytest.mark.parametrize("module", [kuhn_poker_v0, negotiation_v0], ids=["kuhn_poker", "negotiation"])
def test_check_multiagent_env(module: Any) -> None:
    check_multiagent_env(module.env)


@pytest.mark.parametrize("module", [kuhn_poker_v0, negotiation_v0], ids=["kuhn_poker", "negotiation"])
def test_raw_env_render_and_bad_render_mode(module: Any) -> None:
    env = module.raw_env(render_mode="ansi")
    env.reset(seed=3)
    assert "player_0" in env.render()
    with pytest.raises(ValueError):
        module.raw_env(render_mode="rgb_array")


# -- Kuhn poker rules --------------------------------------------------------------------------------
def kuhn(cards: tuple[int, int], *moves: str) -> KuhnPoker:
    """A hand with the given cards (0=J, 1=Q, 2=K) after ``moves``."""
    game = KuhnPoker()
    game.reset(np.random.default_rng(0))
    game.cards = {"player_0": cards[0], "player_1": cards[1]}
    for move in moves:
        game.apply(game.parse_move(f"[{move}]"))
    return game


def test_kuhn_deal_is_two_different_cards_and_seeded() -> None:
    seen = set()
    for seed in range(30):
        a, b = KuhnPoker(), KuhnPoker()
        a.reset(np.random.default_rng(seed))
        b.reset(np.random.default_rng(seed))
        assert a.cards == b.cards
        assert a.cards["player_0"] != a.cards["player_1"]
        assert set(a.cards.values()) <= {0, 1, 2}
        seen.add(tuple(a.cards.values()))
    assert len(seen) == 6  # every deal occurs


def test_kuhn_legal_moves_follow_the_betting() -> None:
    game = kuhn((0, 1))
    assert game.current_player() == "player_0"
    assert game.legal_moves() == ["[check]", "[bet]"]
    for bad in ("[call]", "[fold]", "[raise]", "garbage", "[5]"):
        with pytest.raises(IllegalMove):
            game.parse_move(bad)
    game.apply(game.parse_move("I check [check]"))
    assert game.current_player() == "player_1"
    assert game.legal_moves() == ["[check]", "[bet]"]
    game.apply(game.parse_move("[BET]"))
    assert game.current_player() == "player_0"
    assert game.legal_moves() == ["[call]", "[fold]"]
    with pytest.raises(IllegalMove, match="bet to call"):
        game.parse_move("[check]")
    with pytest.raises(IllegalMove):
        game.parse_move("[bet]")
    game.apply(game.parse_move("[call]"))
    assert game.is_over() and game.legal_moves() == []


@pytest.mark.parametrize(
    ("cards", "moves", "chips"),
    [
        ((2, 0), ("check", "check"), 1),
        ((0, 2), ("check", "check"), -1),
        ((2, 1), ("bet", "call"), 2),
        ((1, 2), ("bet", "call"), -2),
        ((0, 2), ("bet", "fold"), 1),
        ((2, 0), ("check", "bet", "fold"), -1),
        ((1, 0), ("check", "bet", "call"), 2),
        ((0, 1), ("check", "bet", "call"), -2),
    ],
)
def test_kuhn_chips_and_outcome(cards: tuple[int, int], moves: tuple[str, ...], chips: int) -> None:
    game = kuhn(cards, *moves)
    assert game.is_over()
    assert game.chips() == {"player_0": chips, "player_1": -chips}
    assert game.outcome() == {"player_0": float(np.sign(chips)), "player_1": -float(np.sign(chips))}
    assert game.extra_info("player_1") == {"chips": -chips}
    assert game.pot() == (4 if "call" in moves else 3 if "fold" in moves else 2)


def test_kuhn_not_over_mid_hand() -> None:
    for moves in ((), ("check",), ("bet",), ("check", "bet")):
        game = kuhn((0, 1), *moves)
        assert not game.is_over()
        assert game.chips() == {"player_0": 0, "player_1": 0}
        assert game.extra_info("player_0") == {}


def test_kuhn_observation_hides_the_opponents_card() -> None:
    env = kuhn_poker_v0.env()
    for seed in range(6):
        env.reset(seed=seed)
        game = env.game
        for viewer in game.players:
            other = game.players[1 - game.players.index(viewer)]
            before = str(env.observe(viewer))
            assert f"Your card: {'JQK'[game.cards[viewer]]}." in before
            unused = ({0, 1, 2} - set(game.cards.values())).pop()
            original = game.cards[other]
            game.cards[other] = unused  # whatever the other holds, the viewer sees the same
            assert str(env.observe(viewer)) == before
            game.cards[other] = original
    # A fold shows no cards; a showdown shows both.
    folded = kuhn((0, 2), "bet", "fold")
    assert "Showdown" not in folded.observation("player_0")
    assert "player_1 has" not in folded.observation("player_0")
    shown = kuhn((0, 2), "check", "check").observation("player_0")
    assert "player_0 has J" in shown and "player_1 has K" in shown and "player_1 wins 1 chip." in shown


def test_kuhn_env_rewards_and_invalid_move_rule() -> None:
    env = kuhn_poker_v0.env()
    env.reset(seed=0)
    env.step("[call]")  # nothing to call: a warning, and player_0 moves again
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["invalid_moves"] == 1
    assert "invalid move" in env.infos["player_0"]["warning"]
    assert "[warning]" in str(env.observe("player_0"))
    env.step("[bet]")  # a valid move clears the count for the turn
    assert env.agent_selection == "player_1" and env.infos["player_0"]["warning"] is None
    env.step("[check]")  # invalid facing a bet
    env.step("[raise]")  # second invalid move in the same turn: player_1 loses
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.infos["player_1"]["outcome"]["result"] == {"player_0": "win", "player_1": "loss"}

    env.reset(seed=0)
    env.game.cards = {"player_0": 2, "player_1": 1}
    for move in ("[check]", "[bet]", "[call]"):
        env.step(move)
    assert env.game.chips() == {"player_0": 2, "player_1": -2}
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


# -- the equilibrium player, exactly ----------------------------------------------------------------------
Policy = Callable[[int, int, tuple[str, ...]], dict[str, float]]


def _ev(cards: tuple[int, int], history: tuple[str, ...], policies: tuple[Policy, Policy]) -> float:
    """Player_0's expected chips from ``history`` on, with both players' behaviour policies."""
    game = kuhn(cards, *history)
    if game.is_over():
        return float(game.chips()["player_0"])
    seat = len(history) % 2
    probs = policies[seat](seat, cards[seat], history)
    return sum(p * _ev(cards, (*history, move), policies) for move, p in probs.items() if p > 0)


def expected_chips(policies: tuple[Policy, Policy]) -> float:
    """Player_0's expected chips over the six deals."""
    deals = list(itertools.permutations(range(3), 2))
    return sum(_ev(deal, (), policies) for deal in deals) / len(deals)


def best_response_chips(policy: Policy, seat: int) -> float:
    """The most chips a player in ``seat`` can expect against ``policy`` in the other seat."""
    decisions = [(), ("check", "bet")] if seat == 0 else [("bet",), ("check",)]
    total = 0.0
    for card in range(3):
        best = -np.inf
        for plan in itertools.product(*[KuhnPoker().legal_moves() if not h or h[-1] != "bet" else ["[call]", "[fold]"]
                                         for h in decisions]):  # fmt: skip
            chosen = dict(zip(decisions, (m.strip("[]") for m in plan), strict=True))

            def pure(s: int, c: int, h: tuple[str, ...], chosen: dict = chosen) -> dict[str, float]:
                return {chosen[h]: 1.0}

            policies = (pure, policy) if seat == 0 else (policy, pure)
            sign = 1.0 if seat == 0 else -1.0
            others = [c for c in range(3) if c != card]
            value = np.mean([sign * _ev((card, o) if seat == 0 else (o, card), (), policies) for o in others])
            best = max(best, value)
        total += best / 3
    return total


def uniform(seat: int, card: int, history: tuple[str, ...]) -> dict[str, float]:
    """The random opponent's policy."""
    moves = [m.strip("[]") for m in kuhn((0, 1), *history).legal_moves()]
    return dict.fromkeys(moves, 1.0 / len(moves))


@pytest.mark.parametrize("alpha", [0.0, 1.0 / 6.0, 1.0 / 3.0])
def test_kuhn_equilibrium_is_exact(alpha: float) -> None:
    eq = KuhnEquilibriumOpponent(alpha=alpha).policy
    assert expected_chips((eq, eq)) == pytest.approx(GAME_VALUE, abs=1e-12)
    # Neither seat can be exploited: a best response does no better than the game value.
    assert best_response_chips(eq, seat=1) == pytest.approx(-GAME_VALUE, abs=1e-12)
    assert best_response_chips(eq, seat=0) == pytest.approx(GAME_VALUE, abs=1e-12)
    # And it wins chips against random play in either seat: 1/18 + alpha/3 first, 1/6 second.
    first, second = expected_chips((eq, uniform)), -expected_chips((uniform, eq))
    assert first == pytest.approx(1.0 / 18.0 + alpha / 3.0) and second == pytest.approx(1.0 / 6.0)
    assert (first + second) / 2 > 0.1


def test_kuhn_equilibrium_alpha_bounds_and_draws() -> None:
    with pytest.raises(ValueError):
        KuhnEquilibriumOpponent(alpha=0.5)
    player = KuhnEquilibriumOpponent(seed=0)
    alphas = set()
    for _ in range(5):
        player.reset({})
        assert 0.0 <= player.alpha <= 1.0 / 3.0
        alphas.add(player.alpha)
    assert len(alphas) == 5
    with pytest.raises(RuntimeError, match="bind"):
        player.act("", {})


def test_kuhn_equilibrium_beats_random_over_2000_hands() -> None:
    results = play_matches(kuhn_poker_v0.env, KuhnEquilibriumOpponent(seed=1), RandomOpponent(seed=2), 2000)
    mean = np.mean([game.chips()[seat] for game, seat in results])
    assert mean > 0.1


def test_kuhn_equilibrium_self_play_near_game_value() -> None:
    results = play_matches(kuhn_poker_v0.env, KuhnEquilibriumOpponent(seed=3), KuhnEquilibriumOpponent(seed=4), 2000)
    first = np.mean([game.chips()["player_0"] for game, _ in results])
    assert first == pytest.approx(GAME_VALUE, abs=0.1)  # standard error is about 0.03


# -- negotiation rules ----------------------------------------------------------------------------------------
def negotiation(seed: int = 1, **kwargs: Any) -> Negotiation:
    """A fresh game drawn with ``seed``."""
    game = Negotiation(**kwargs)
    game.reset(np.random.default_rng(seed))
    return game


def test_negotiation_draw_pool_and_private_values() -> None:
    for seed in range(50):
        game, twin = negotiation(seed), negotiation(seed)
        assert (game.counts, game.values) == (twin.counts, twin.values)
        assert all(1 <= c <= 4 for c in game.counts)
        for player in game.players:
            assert game.value(player, game.counts) == 10
            assert all(isinstance(v, int) and v >= 0 for v in game.values[player])
        assert game.values["player_0"] != game.values["player_1"]
        assert all(a + b > 0 for a, b in zip(game.values["player_0"], game.values["player_1"], strict=True))


def test_negotiation_legal_moves_and_parsing() -> None:
    game = negotiation(1)  # pool (2, 3, 4)
    assert game.current_player() == "player_0"
    moves = game.legal_moves()
    assert "[accept]" not in moves and moves[-1] == "[walk]"
    assert len(moves) == 3 * 4 * 5 + 1
    with pytest.raises(IllegalMove, match="no proposal"):
        game.parse_move("[accept]")
    for bad in ("[propose 3 0 0]", "[propose 1 1]", "[propose a b c]", "[propose -1 0 0]", "[give up]", ""):
        with pytest.raises(IllegalMove):
            game.parse_move(bad)
    assert game.parse_move("I want [Propose 1, 2, 3]") == ("propose", (1, 2, 3))
    game.apply(game.parse_move("[propose 1 2 3]"))
    assert game.current_player() == "player_1"
    assert game.pending() == (1, 1, 1)
    assert game.legal_moves()[0] == "[accept]"
    game.apply(game.parse_move("[propose 0 0 0]"))  # a counter-proposal replaces the offer
    assert game.pending() == (2, 3, 4)


def test_negotiation_rounds_run_out() -> None:
    game = negotiation(1, max_rounds=3)
    for _ in range(3):
        assert game.rounds_left() > 0
        game.apply(game.parse_move("[propose 1 1 1]"))
    assert game.rounds_left() == 0
    assert game.legal_moves() == ["[accept]", "[walk]"]
    with pytest.raises(IllegalMove, match="no proposals are left"):
        game.parse_move("[propose 1 1 1]")
    assert "No proposals left" in game.observation(game.current_player())


def test_negotiation_deal_walk_and_outcomes() -> None:
    game = negotiation(1)  # player_0 values (3, 0, 1); player_1 values (0, 2, 1)
    game.apply(game.parse_move("[propose 2 0 3]"))
    game.apply(game.parse_move("[accept]"))
    assert game.is_over() and game.legal_moves() == []
    assert game.shares() == {"player_0": (2, 0, 3), "player_1": (0, 3, 1)}
    assert game.utilities() == {"player_0": 9, "player_1": 7}
    assert game.outcome() == {"player_0": 1.0, "player_1": -1.0}
    assert game.extra_info("player_1") == {"utility": 7, "deal": True}

    tie = negotiation(1)
    tie.apply(tie.parse_move("[propose 2 0 2]"))  # 8 for each
    tie.apply(tie.parse_move("[accept]"))
    assert tie.utilities() == {"player_0": 8, "player_1": 8}
    assert tie.outcome() == {"player_0": 0.0, "player_1": 0.0}

    walked = negotiation(1)
    walked.apply(walked.parse_move("[propose 2 3 4]"))
    walked.apply(walked.parse_move("[walk]"))
    assert walked.is_over() and walked.shares() is None
    assert walked.utilities() == {"player_0": 0, "player_1": 0}
    assert walked.outcome() == {"player_0": 0.0, "player_1": 0.0}
    assert walked.extra_info("player_0") == {"utility": 0, "deal": False}
    assert "walked away" in walked.observation("player_0")
    assert negotiation(1).extra_info("player_0") == {}


def test_negotiation_observation_hides_the_other_values() -> None:
    env = negotiation_v0.env()
    for seed in range(10):
        env.reset(seed=seed)
        env.step("[propose 1 1 1]")
        game = env.game
        for viewer in game.players:
            other = game.other(viewer)
            text = str(env.observe(viewer))
            assert "Your values per item:" in text and "Proposals left: 5 of 6." in text
            original = game.values[other]
            game.values[other] = tuple(reversed(original))  # whatever the other values, the viewer sees the same
            assert str(env.observe(viewer)) == text
            game.values[other] = original


def test_negotiation_env_rewards() -> None:
    env = negotiation_v0.env()
    env.reset(seed=1)
    env.step("[accept]")  # nothing to accept yet: invalid
    assert env.infos["player_0"]["invalid_moves"] == 1 and env.agent_selection == "player_0"
    env.step("[propose 2 0 3]")
    env.step("[accept]")
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}


# -- the scripted negotiator ------------------------------------------------------------------------------
def test_negotiation_opponent_beats_random() -> None:
    results = play_matches(negotiation_v0.env, NegotiationOpponent(seed=1), RandomOpponent(seed=2), 200)
    outcomes = [game.outcome()[seat] for game, seat in results]
    wins, losses = outcomes.count(1.0), outcomes.count(-1.0)
    assert wins > 2 * losses and wins - losses >= 40, (wins, losses)


def test_negotiation_opponent_proposals_and_acceptance() -> None:
    env = negotiation_v0.env()
    env.reset(seed=1)
    player = NegotiationOpponent(seed=0)
    player.bind(env)
    game = env.game
    share = player.proposal(game, "player_0")
    rest = tuple(c - x for c, x in zip(game.counts, share, strict=True))
    assert game.value("player_0", share) >= 8 and sum(rest) > 0  # keeps most, leaves something
    assert player.act("", {}) == f"[propose {' '.join(map(str, share))}]"
    env.step("[propose 0 0 0]")  # player_0 gives everything away: player_1 accepts
    assert player.act("", {}) == "[accept]"
    env.reset(seed=1)
    env.step("[propose 2 3 4]")  # player_0 keeps everything: player_1 counters
    assert player.act("", {}).startswith("[propose")
