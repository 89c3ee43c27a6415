"""Every multi-agent env passes check_multiagent_env; the shared text-game loop keeps its rules."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from agentrl.envs import multiagent
from agentrl.envs.multiagent import MULTIAGENT_ENVS, tictactoe_v0
from agentrl.envs.multiagent.base import TextGameEnv
from agentrl.envs.multiagent.opponents import MinimaxOpponent, RandomOpponent
from agentrl.testing import DomainCheckError, check_multiagent_env

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("name", sorted(MULTIAGENT_ENVS))
def test_check_multiagent_env(name: str) -> None:
    module = multiagent.load(name)
    env_fn = getattr(module, "parallel_env", None) if MULTIAGENT_ENVS[name][0] == "parallel" else module.env
    check_multiagent_env(env_fn or module.env)


def test_unknown_env_names_the_choices() -> None:
    with pytest.raises(ValueError, match="did you mean 'tictactoe_v0'"):
        multiagent.load("tictactoe_v1")


def test_invalid_move_rule_warns_once_then_loses() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step("[5]")  # player_0
    env.step("[5]")  # player_1: taken -> warning, same player again
    assert env.agent_selection == "player_1"
    assert "cell 5 is taken" in env.infos["player_1"]["warning"]
    assert "[warning]" in env.observe("player_1")
    env.step("centre please")  # second invalid move in a row: player_1 loses
    assert env.terminations == {"player_0": True, "player_1": True}
    assert env._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.infos["player_1"]["outcome"]["result"] == {"player_0": "win", "player_1": "loss"}
    assert "two invalid moves" in env.infos["player_0"]["outcome"]["reason"]


def test_a_valid_move_resets_the_invalid_count() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step("nonsense")  # player_0 warned
    env.step("[1]")  # then plays
    env.step("[1]")  # player_1 warned
    env.step("[2]")
    env.step("nonsense again")  # player_0's first invalid move of this turn: only a warning
    assert not env.terminations["player_0"] and env.agent_selection == "player_0"


def test_actions_from_an_agent_not_due_are_ignored_and_logged() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    assert env.step_for("player_1", "[5]") is False
    assert env.infos["player_1"]["ignored_actions"][0]["reason"] == "not this agent's turn"
    assert env.game.legal_moves() == [f"[{i}]" for i in range(1, 10)]
    assert env.step_for("player_0", "[5]") is True


def test_perfect_play_never_loses_to_random_over_200_games() -> None:
    perfect = MinimaxOpponent(seed=0)  # one player for all games: its solved positions are cached
    losses = 0
    for game in range(200):
        env = tictactoe_v0.env(random_first=True)
        env.reset(seed=game)
        seat = "player_0" if game % 2 == 0 else "player_1"
        players = {seat: perfect, ("player_1" if seat == "player_0" else "player_0"): RandomOpponent(seed=game)}
        for player in players.values():
            player.bind(env)
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                losses += agent == seat and reward < 0
                env.step(None)
            else:
                env.step(players[agent].act(observation, info))
    assert losses == 0


def test_check_multiagent_env_catches_a_broken_env() -> None:
    class Crashes(TextGameEnv):
        def step(self, action: object) -> None:
            if action is None and not self._done(self.agent_selection):
                raise RuntimeError("boom")
            super().step(action)

    from agentrl.envs.multiagent.tictactoe import TicTacToe

    with pytest.raises(DomainCheckError, match="crashed the env"):
        check_multiagent_env(lambda: Crashes(TicTacToe()))


GAMES = ("tictactoe", "connect_four", "nim", "kuhn_poker", "negotiation")


@pytest.mark.parametrize("game", GAMES)
def test_single_agent_views_are_registered_gymnasium_envs(game: str) -> None:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    import agentrl  # noqa: F401  (registers the ids)

    for opponent in ("random", "scripted", "best"):
        env = gym.make(f"AgentRL-MA/{game}-vs-{opponent}-v0")
        try:
            check_env(env.unwrapped, skip_render_check=True)
            assert env.unwrapped.system_prompt  # the rules, for LLM agents
        finally:
            env.close()


def test_bench_runs_on_a_single_agent_view(tmp_path) -> None:
    from agentrl.cli import main

    code = main(["bench", "--env", "AgentRL-MA/tictactoe-vs-best-v0", "--agent", "random", "--episodes", "3",
                 "--out", str(tmp_path), "--no-progress"])  # fmt: skip
    assert code == 0
    import json

    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(row["reward"] == -1.0 for row in rows)  # garbage loses

