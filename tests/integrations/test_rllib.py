"""The numeric wrapper of the text games, and the games under RLlib (PPO, a slow test)."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test

from agentrl.integrations.rllib import (
    RLLIB_GAMES,
    NumericGameWrapper,
    game_moves,
    hashed_text_features,
    make_numeric_env,
)


def _random_game(env: NumericGameWrapper, seed: int) -> tuple[dict[str, float], int]:
    """Play one game with uniformly drawn legal actions; the returns and the number of steps."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    returns: dict[str, float] = {}
    steps = 0
    for agent in env.agent_iter(1000):
        obs, reward, terminated, truncated, _ = env.last()
        assert env.observation_space(agent).contains(obs), (agent, obs)
        returns[agent] = returns.get(agent, 0.0) + float(reward)
        action = None if terminated or truncated else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        steps += 1
    return returns, steps


@pytest.mark.parametrize("name", RLLIB_GAMES)
def test_every_game_plays_to_the_end_with_masked_actions(name: str) -> None:
    """Legal actions only: every game ends with zero-sum (+1/-1 or 0/0) returns and no invalid move."""
    env = make_numeric_env(name, action_mask=True)
    for seed in range(3):
        returns, steps = _random_game(env, seed)
        assert steps > 2
        assert sorted(returns) == ["player_0", "player_1"]
        assert sum(returns.values()) == 0.0
        assert all(v in (-1.0, 0.0, 1.0) for v in returns.values())


@pytest.mark.parametrize("name", ["tictactoe_v0", "nim_v0", "kuhn_poker_v0"])
def test_pettingzoo_api_test_passes(name: str) -> None:
    """PettingZoo's own AEC API test accepts the wrapped env (plain and with the mask)."""
    api_test(make_numeric_env(name), num_cycles=20)
    api_test(make_numeric_env(name, action_mask=True), num_cycles=20)


def test_tictactoe_encoding_is_seat_relative_and_actions_are_cells() -> None:
    """Each player sees its own marks in the first plane; action i plays cell i+1."""
    env = make_numeric_env("tictactoe_v0")
    env.reset(seed=0)
    assert env.moves == [f"[{i}]" for i in range(1, 10)]
    env.step(4)  # player_0 (X) takes the centre
    env.step(0)  # player_1 (O) takes cell 1
    x_view, o_view = env.observe("player_0"), env.observe("player_1")
    assert x_view[4] == 1.0 and x_view[9 + 0] == 1.0
    assert o_view[0] == 1.0 and o_view[9 + 4] == 1.0
    assert x_view.sum() == o_view.sum() == 2.0


def test_illegal_action_goes_to_the_game_rule() -> None:
    """Without a mask, a taken cell is an invalid move: a warning first, then the loss."""
    env = make_numeric_env("tictactoe_v0")
    env.reset(seed=0)
    env.step(4)
    env.step(4)  # player_1 repeats the taken centre
    assert env.infos["player_1"]["invalid_moves"] == 1 and env.agent_selection == "player_1"
    env.step(4)
    assert env.terminations["player_1"] and env.rewards["player_1"] == -1.0


def test_nim_and_connect_four_encodings() -> None:
    """Nim: scaled sizes plus binary digits; Connect Four: 2 x 42 planes, 7 columns."""
    nim = make_numeric_env("nim_v0")
    nim.reset(seed=0)
    assert game_moves(nim.unwrapped.game)[:2] == ["[1 1]", "[1 2]"]
    assert len(nim.moves) == 3 * 5
    obs = nim.observe("player_0")
    np.testing.assert_allclose(obs[:3], np.array([3, 4, 5]) / 5)
    assert obs[3:6].tolist() == [1.0, 1.0, 0.0]  # 3 = 0b011, least significant digit first
    four = make_numeric_env("connect_four_v0")
    four.reset(seed=0)
    assert four.action_space("player_0").n == 7 and four.observe("player_0").shape == (84,)


def test_free_text_games_are_refused_and_custom_moves_work() -> None:
    """debate/cooperative have no move list; a caller's moves and features are honoured."""
    with pytest.raises(ValueError, match="free-text"):
        make_numeric_env("debate_v0")
    from agentrl.envs.multiagent import tictactoe_v0

    env = NumericGameWrapper(
        tictactoe_v0.env(), moves=["[5]", "[1]"], features=lambda e, a: hashed_text_features(e.observe(a))
    )
    env.reset(seed=0)
    assert env.action_space("player_0").n == 2 and env.observe("player_0").shape == (256,)
    env.step(0)
    assert env.unwrapped.game.board[4] == "X"
    with pytest.raises(ValueError, match="outside"):
        env.step(5)


def test_make_rllib_env_is_a_multi_agent_env() -> None:
    """RLlib's PettingZooEnv wraps the numeric env: turn-by-turn obs dicts, rewards at the end."""
    pytest.importorskip("ray.rllib", reason="RLlib is not installed (pip install 'agentrl-gym[rllib]')")
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    from agentrl.integrations.rllib import make_rllib_env

    env = make_rllib_env("tictactoe_v0", action_mask=True)
    assert isinstance(env, MultiAgentEnv)
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["player_0"] and obs["player_0"]["action_mask"].sum() == 9
    for cell in (0, 3, 1, 4):  # X: 1, 2; O: 4, 5
        agent = next(iter(obs))
        obs, rewards, terminated, _, _ = env.step({agent: cell})
        assert not terminated["__all__"]
    obs, rewards, terminated, _, _ = env.step({"player_0": 2})  # X completes the top row
    assert terminated["__all__"] and rewards == {"player_0": 1.0, "player_1": -1.0}


@pytest.mark.timeout(240)
def test_ppo_trains_on_tictactoe() -> None:
    """Two PPO iterations (shared masked policy, CPU, tiny batch) complete and report episode returns."""
    pytest.importorskip("ray.rllib", reason="RLlib is not installed (pip install 'agentrl-gym[rllib]')")
    import ray

    from agentrl.integrations.rllib import episode_return_mean, tiny_ppo_config

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    algo = None
    try:
        algo = tiny_ppo_config("tictactoe_v0", train_batch_size=128, minibatch_size=64, hidden=(16,)).build_algo()
        for _ in range(2):
            start = time.perf_counter()
            result = algo.train()
            assert time.perf_counter() - start < 60
            returns = episode_return_mean(result)
            assert result["env_runners"]["num_episodes"] > 0
            assert {"all", "player_0", "player_1", "shared"} <= set(returns)
            assert returns["player_0"] == pytest.approx(-returns["player_1"])  # self-play is zero-sum
            assert -1.0 <= returns["player_0"] <= 1.0
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()
