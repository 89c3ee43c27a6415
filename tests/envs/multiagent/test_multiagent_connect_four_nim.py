"""Connect Four and Nim: rules, the text envs, and the built-in opponents."""

from __future__ import annotations

import numpy as np
import pytest

from agentrl.envs.multiagent import connect_four_v0, nim_v0
from agentrl.envs.multiagent.base import IllegalMove
from agentrl.envs.multiagent.connect_four import ConnectFour, ConnectFourOpponent, connect_four_heuristic
from agentrl.envs.multiagent.nim import Nim, NimPerfectOpponent, nim_sum
from agentrl.envs.multiagent.opponents import MinimaxOpponent, RandomOpponent
from agentrl.testing import check_multiagent_env

pytestmark = pytest.mark.timeout(300)


def _c4(*columns: int, random_first: bool = False) -> ConnectFour:
    game = ConnectFour(random_first=random_first)
    game.reset(np.random.default_rng(0))
    for column in columns:
        game.apply(game.parse_move(f"[{column}]"))
    return game


def _nim(heaps=(3, 4, 5), *moves: str) -> Nim:
    game = Nim(heaps)
    game.reset(np.random.default_rng(0))
    for move in moves:
        game.apply(game.parse_move(move))
    return game


def _play(env, players: dict, seed: int) -> dict[str, float]:
    """One game with ``players[agent]`` moving for each agent; the final rewards."""
    for player in players.values():
        player.bind(env)
    env.reset(seed=seed)
    rewards = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        rewards[agent] += reward
        env.step(None if terminated or truncated else players[agent].act(observation, info))
    return rewards


# -- the envs pass the common checks ------------------------------------------------------------


@pytest.mark.parametrize("module", [connect_four_v0, nim_v0], ids=["connect_four", "nim"])
def test_check_multiagent_env(module):
    check_multiagent_env(module.env)


def test_nim_random_heaps_env_passes_checks_and_draws_heaps():
    check_multiagent_env(lambda: nim_v0.env(random_heaps=True, random_first=True))
    sizes = set()
    for seed in range(20):
        env = nim_v0.env(random_heaps=True)
        env.reset(seed=seed)
        heaps = env.game.heaps
        assert 3 <= len(heaps) <= 5 and all(1 <= h <= 7 for h in heaps)
        sizes.add(tuple(heaps))
    assert len(sizes) > 1


def test_metadata_names_and_render():
    env = connect_four_v0.env(render_mode="ansi")
    env.reset(seed=0)
    assert env.metadata["name"] == "connect_four_v0"
    assert env.render().splitlines()[-1] == "1 2 3 4 5 6 7"
    assert nim_v0.env().metadata["name"] == "nim_v0"


# -- Connect Four rules -------------------------------------------------------------------------


def test_c4_vertical_win():
    game = _c4(1, 2, 1, 2, 1, 2)
    assert not game.is_over()
    game.apply(game.parse_move("[1]"))
    assert game.is_over() and game.outcome() == {"player_0": 1.0, "player_1": -1.0}


def test_c4_horizontal_win_for_second_player():
    game = _c4(1, 4, 1, 5, 2, 6, 1)
    assert not game.is_over()
    game.apply(game.parse_move("[7]"))
    assert game.outcome() == {"player_0": -1.0, "player_1": 1.0}


def test_c4_rising_diagonal_win():
    # X on (col1,row0), (2,1), (3,2), (4,3)
    game = _c4(1, 2, 2, 3, 3, 4, 3, 4, 4, 7)
    assert not game.is_over()
    game.apply(game.parse_move("[4]"))
    assert game.is_over() and game.outcome()["player_0"] == 1.0


def test_c4_falling_diagonal_win():
    # mirror image of the rising diagonal: X on (7,0), (6,1), (5,2), (4,3)
    game = _c4(7, 6, 6, 5, 5, 4, 5, 4, 4, 1)
    assert not game.is_over()
    game.apply(game.parse_move("[4]"))
    assert game.is_over() and game.outcome()["player_0"] == 1.0


def test_c4_full_board_draw():
    # Columns filled in the order 1,2,1,2,... in pairs, shifted by a column pair each block of
    # three rows, so no four in a row ever appears.
    order = []
    for pair in ((1, 2), (3, 4), (5, 6)):
        order += [pair[0], pair[1]] * 3
        order += [pair[1], pair[0]] * 3
    order += [7] * 6
    game = ConnectFour()
    game.reset(np.random.default_rng(0))
    for i, column in enumerate(order):
        assert not game.is_over(), f"game ended early at move {i}:\n{game.board_text()}"
        game.apply(game.parse_move(f"[{column}]"))
    assert game.is_over() and game.winner is None
    assert game.outcome() == {"player_0": 0.0, "player_1": 0.0}
    assert game.legal_moves() == []


def test_c4_illegal_moves():
    game = _c4(3, 3, 3, 3, 3, 3)
    assert "[3]" not in game.legal_moves() and len(game.legal_moves()) == 6
    with pytest.raises(IllegalMove, match="full"):
        game.parse_move("[3]")
    for bad in ("[0]", "[8]", "[-1]", "[x]", "", "[1.5]"):
        with pytest.raises(IllegalMove):
            game.parse_move(bad)
    assert game.parse_move("I will play [7]") == 6


def test_c4_observation_clone_state_key():
    game = _c4(4, 4)
    text = game.observation("player_0")
    assert text.startswith("You play X.")
    lines = text.splitlines()
    assert lines[-1] == "1 2 3 4 5 6 7"
    assert lines[-2] == ". . . X . . ." and lines[-3] == ". . . O . . ."
    assert game.observation("player_1").startswith("You play O.")
    twin = game.clone()
    assert twin.state_key() == game.state_key()
    twin.apply(twin.parse_move("[1]"))
    assert twin.state_key() != game.state_key() and game.heights[0] == 0
    assert -1.0 < connect_four_heuristic(game, "player_0") < 1.0


def test_c4_random_first_uses_the_seed():
    starters = set()
    for seed in range(10):
        env = connect_four_v0.env(random_first=True)
        env.reset(seed=seed)
        starters.add(env.agent_selection)
    assert starters == {"player_0", "player_1"}


# -- Nim rules -----------------------------------------------------------------------------------


def test_nim_parse_forms():
    game = _nim()
    assert game.parse_move("[2 3]") == (1, 3)
    assert game.parse_move("[2, 3]") == (1, 3)
    assert game.parse_move("[heap 2 take 3]") == (1, 3)
    assert game.parse_move("I [take 3 from heap 2]") == (1, 3)


def test_nim_illegal_moves():
    game = _nim((3, 4, 5), "[1 3]")
    with pytest.raises(IllegalMove, match="empty"):
        game.parse_move("[1 1]")
    with pytest.raises(IllegalMove, match="1 to 4"):
        game.parse_move("[2 5]")
    for bad in ("[2 0]", "[2 -1]", "[4 1]", "[0 1]", "[2]", "[1 2 3]", "garbage"):
        with pytest.raises(IllegalMove):
            game.parse_move(bad)
    assert "[1 1]" not in game.legal_moves() and "[2 4]" in game.legal_moves()


def test_nim_last_object_wins():
    game = _nim((1, 2), "[2 2]")
    assert not game.is_over() and game.current_player() == "player_1"
    game.apply(game.parse_move("[1 1]"))
    assert game.is_over() and game.outcome() == {"player_0": -1.0, "player_1": 1.0}


def test_nim_state_key_clone_and_minimax():
    game = _nim((1, 2, 3))
    twin = game.clone()
    twin.apply((0, 1))
    assert game.heaps == [1, 2, 3] and twin.state_key() == ((0, 2, 3), 1)
    # (1, 2, 3) has nim-sum 0: the exact solver agrees it is lost for the player to move.
    assert nim_sum(game.heaps) == 0
    env = nim_v0.env(heaps=(1, 2, 4))
    results = [
        _play(env, {"player_0": MinimaxOpponent(seed=s), "player_1": RandomOpponent(seed=s)}, s) for s in range(5)
    ]
    assert all(r["player_0"] == 1.0 for r in results)


# -- the env's invalid-move rule (TextArena) ---------------------------------------------------


def test_invalid_move_rule_connect_four():
    env = connect_four_v0.env()
    env.reset(seed=0)
    env.step("[9]")
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["invalid_moves"] == 1
    assert "invalid move" in env.infos["player_0"]["warning"]
    assert "[warning]" in str(env.observe("player_0"))
    assert not any(env.terminations.values())
    env.step("[4]")  # a valid move clears the warning and passes the turn
    assert env.agent_selection == "player_1" and env.infos["player_0"]["warning"] is None
    env.step("hmm")
    assert env.agent_selection == "player_1"
    env.step("[0]")
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.infos["player_1"]["outcome"]["result"] == {"player_0": "win", "player_1": "loss"}


def test_invalid_move_rule_nim():
    env = nim_v0.env()
    env.reset(seed=0)
    env.step("[1 4]")  # heap 1 holds 3
    assert env.agent_selection == "player_0" and not any(env.terminations.values())
    env.step("[4 1]")
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}


# -- opponents -----------------------------------------------------------------------------------


def test_c4_opponent_takes_win_and_blocks():
    game = _c4(1, 7, 1, 7, 1)  # X threatens column 1; O to move must block
    assert ConnectFourOpponent(seed=0).choose(game) == 0
    game = _c4(1, 7, 1, 7, 2, 7, 3)  # O to move: winning in column 7 beats blocking column 4
    assert ConnectFourOpponent(seed=0).choose(game) == 6
    game = _c4(2, 7, 3, 7)  # X to move: column 4 makes an open three, a double threat
    assert ConnectFourOpponent(seed=0).choose(game) == 3


def test_c4_opponent_never_loses_to_random():
    env = connect_four_v0.env()
    losses, wins = 0, 0
    for game in range(200):
        strong, weak = env.possible_agents[game % 2], env.possible_agents[1 - game % 2]
        players = {strong: ConnectFourOpponent(seed=game), weak: RandomOpponent(seed=10_000 + game)}
        rewards = _play(env, players, seed=game)
        losses += rewards[strong] < 0
        wins += rewards[strong] > 0
    assert losses == 0
    assert wins >= 195


def test_nim_perfect_never_loses_to_random_when_moving_first():
    env = nim_v0.env(random_heaps=True)
    played = 0
    for game in range(400):
        env.reset(seed=game)
        start = list(env.game.heaps)
        if nim_sum(start) == 0:
            continue  # a lost start for the first player
        players = {"player_0": NimPerfectOpponent(seed=game), "player_1": RandomOpponent(seed=10_000 + game)}
        rewards = _play(env, players, seed=game)
        assert rewards["player_0"] == 1.0, f"lost from {start} (seed {game})"
        played += 1
        if played == 200:
            break
    assert played == 200
    # the fixed (3, 4, 5) start too, with the perfect player first
    fixed = nim_v0.env()
    for game in range(50):
        players = {"player_0": NimPerfectOpponent(seed=game), "player_1": RandomOpponent(seed=game)}
        assert _play(fixed, players, seed=game)["player_0"] == 1.0


def test_nim_perfect_moves_to_zero_nim_sum():
    player = NimPerfectOpponent(seed=0)
    heap, count = player.choose([3, 4, 5])
    after = [3, 4, 5]
    after[heap] -= count
    assert nim_sum(after) == 0
    heap, count = player.choose([1, 2, 3])  # lost: take one from a non-empty heap
    assert count == 1
    with pytest.raises(ValueError):
        player.choose([0, 0])
