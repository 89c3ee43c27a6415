"""Leagues for the turn-based games: play_game, Elo, PFSP sampling, SingleAgentEnv, `agentrl league`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agentrl.bench.league import Elo, League, pfsp_weights, play_game
from agentrl.bench.multiagent import format_league_table, run_league
from agentrl.cli import main
from agentrl.envs.multiagent import tictactoe_v0
from agentrl.envs.multiagent.opponents import (
    GreedyOpponent,
    MinimaxOpponent,
    PlayerView,
    RandomOpponent,
    make_player,
)
from agentrl.envs.multiagent.single_agent import SingleAgentEnv, make_single_agent, register_single_agent_ids

pytestmark = pytest.mark.timeout(300)


# -- Elo -------------------------------------------------------------------------------------------
def test_elo_expected_score():
    elo = Elo(k=32)
    assert elo.expected("a", "b") == pytest.approx(0.5)
    elo.ratings.update(a=1400.0, b=1000.0)
    assert elo.expected("a", "b") == pytest.approx(1 / (1 + 10 ** (-400 / 400)))
    assert elo.expected("a", "b") + elo.expected("b", "a") == pytest.approx(1.0)


def test_elo_update_is_symmetric_and_zero_sum():
    elo = Elo(k=32)
    assert elo.update("a", "b", 1.0) == (pytest.approx(1016.0), pytest.approx(984.0))
    twin = Elo(k=32)
    twin.update("b", "a", 0.0)
    assert twin.ratings == pytest.approx(elo.ratings)
    before = sum(elo.ratings.values())
    elo.update("a", "b", 0.5)  # a is favoured now, so a draw moves points to b
    assert sum(elo.ratings.values()) == pytest.approx(before)
    assert elo.ratings["a"] < 1016.0 and elo.ratings["b"] > 984.0
    with pytest.raises(ValueError):
        elo.update("a", "b", 2.0)


# -- PFSP ------------------------------------------------------------------------------------------
def test_pfsp_weights():
    assert pfsp_weights([0.0, 0.5, 1.0]) == pytest.approx([0.8, 0.2, 0.0])
    assert pfsp_weights([1.0, 1.0]) == pytest.approx([0.5, 0.5])
    assert pfsp_weights([0.5, 0.9], weighting="variance")[0] > 0.5


def test_prioritized_sampling_prefers_opponents_the_learner_loses_to():
    league = League()
    for name in ("easy", "hard", "medium"):
        league.add(name, lambda: RandomOpponent())
    for _ in range(10):
        league.record("learner", "easy", "win")
        league.record("learner", "hard", "loss")
    for result in ("win", "loss") * 5:
        league.record("learner", "medium", result)
    rng = np.random.default_rng(0)
    picks = [league.sample_opponent("learner", "prioritized", rng) for _ in range(2000)]
    counts = {name: picks.count(name) for name in ("easy", "medium", "hard")}
    assert counts["hard"] > counts["medium"] > counts["easy"]
    uniform = [league.sample_opponent("learner", "uniform", rng) for _ in range(3000)]
    assert all(800 < uniform.count(name) < 1200 for name in ("easy", "medium", "hard"))
    assert league.sample_opponent("easy", "uniform", rng) != "easy"
    with pytest.raises(ValueError):
        league.sample_opponent("learner", "nope", rng)


def test_snapshot_is_frozen():
    league = League()
    player = MinimaxOpponent(depth=2, seed=0)
    player.bind(PlayerView(tictactoe_v0.env(), "player_0"))
    league.snapshot("learner@0", player)
    player.depth = 5  # "training" the live player
    frozen = league.player("learner@0")
    assert frozen is not player and frozen.depth == 2 and frozen.env is None
    league.add("factory", lambda: RandomOpponent())
    assert league.player("factory") is league.player("factory")  # built once, reused
    with pytest.raises(ValueError):
        league.add("factory", lambda: RandomOpponent())


# -- the Elo ordering --------------------------------------------------------------------------------
def test_round_robin_elo_orders_random_scripted_perfect():
    league = League()
    league.add("random", lambda: RandomOpponent(seed=1))
    league.add("scripted", lambda: GreedyOpponent(seed=2))
    league.add("perfect", lambda: MinimaxOpponent(seed=3))
    records = league.play_round_robin(tictactoe_v0.env, games_per_pair=20, seed=0)
    assert len(records) == 3 * 2 * 20
    elo = league.elo.ratings
    assert elo["random"] < elo["scripted"] < elo["perfect"]
    table = {row["name"]: row for row in league.table()}
    assert [row["name"] for row in league.table()] == ["perfect", "scripted", "random"]
    assert table["perfect"]["losses"] == 0 and table["random"]["games"] == 80
    rate = table["random"]["loss_rate"]
    assert rate.low <= rate.estimate <= rate.high and rate.estimate > 0.5
    # every game is seated both ways
    assert {tuple(r.seats.values()) for r in records} >= {("random", "perfect"), ("perfect", "random")}


def test_scripted_player_wins_and_blocks():
    env = tictactoe_v0.env()
    env.reset(seed=0)
    player = GreedyOpponent(seed=0)
    player.bind(PlayerView(env, "player_0"))
    for move in ("[1]", "[4]", "[2]", "[5]"):  # X: 1, 2; O: 4, 5 -> X wins at 3
        env.step(move)
    assert player.act(env.observe("player_0"), env.infos["player_0"]) == "[3]"
    env.reset(seed=0)
    for move in ("[1]", "[4]", "[9]", "[5]"):  # O threatens 6; X has no win: must block
        env.step(move)
    assert player.act(env.observe("player_0"), env.infos["player_0"]) == "[6]"


# -- play_game robustness --------------------------------------------------------------------------------
class _Raises:
    name = "raises"

    def reset(self, info):
        pass

    def act(self, observation, info):
        raise RuntimeError("model server down")


class _Returns:
    def __init__(self, value):
        self.value = value
        self.name = f"returns-{type(value).__name__}"

    def reset(self, info):
        pass

    def act(self, observation, info):
        return self.value


@pytest.mark.parametrize("bad", [_Raises(), _Returns(None), _Returns(5)])
@pytest.mark.parametrize("seat", ["player_0", "player_1"])
def test_play_game_survives_bad_players(bad, seat):
    other = "player_1" if seat == "player_0" else "player_0"
    record = play_game(tictactoe_v0.env, {seat: bad, other: RandomOpponent(seed=0)}, seed=0, transcript=True)
    assert record.results == {seat: "loss", other: "win"}
    assert record.rewards == {seat: -1.0, other: 1.0}
    assert record.invalid_moves[seat] == 2 and record.invalid_moves[other] == 0
    assert "two invalid moves" in record.reason
    if isinstance(bad, _Raises):
        assert len(record.errors) == 2 and "model server down" in record.errors[0]["error"]
        assert record.errors[0]["seat"] == seat
    else:
        assert record.errors == []
    json.dumps(record.to_dict())


def test_play_game_is_reproducible_and_checks_seats():
    def game():
        return play_game(tictactoe_v0.env, {"player_0": RandomOpponent(), "player_1": RandomOpponent()}, seed=7,
                         transcript=True)  # fmt: skip

    assert game().transcript == game().transcript
    with pytest.raises(ValueError, match="seats"):
        play_game(tictactoe_v0.env, {"player_0": RandomOpponent()}, seed=0)


def test_player_view_offers_rules_to_llm_agents():
    env = tictactoe_v0.env()
    env.reset(seed=0)
    view = PlayerView(env, "player_1")
    assert view.unwrapped is view and view.game is env.game
    assert "Tic-tac-toe" in view.unwrapped.system_prompt and "player_1" in view.system_prompt
    assert view.metadata["stop_sequences"] == () and view.agent_selection == "player_0"


# -- SingleAgentEnv ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seat", ["player_0", "player_1", "alternate", "random"])
def test_single_agent_env_passes_check_env(seat):
    env = make_single_agent("tictactoe_v0", "minimax", learner_seat=seat)
    check_env(env, skip_render_check=True)
    assert "Tic-tac-toe" in env.unwrapped.system_prompt and env.metadata["stop_sequences"] == ()


def test_random_learner_never_beats_minimax():
    env = SingleAgentEnv(tictactoe_v0.env, MinimaxOpponent(seed=0), learner_seat="alternate")
    learner = RandomOpponent(seed=1)
    seats, returns = set(), []
    for episode in range(12):
        observation, info = env.reset(seed=episode)
        learner.bind(PlayerView(env.aec, info["seat"]))
        assert info["legal_moves"] and not info["outcome"]
        total, done, steps = 0.0, False, 0
        while not done:
            observation, reward, terminated, truncated, info = env.step(learner.act(observation, info))
            total += reward
            done = terminated or truncated
            steps += 1
            assert reward == 0.0 or done
        seats.add(info["seat"])
        returns.append(total)
        assert info["outcome"] and info["result"] in ("loss", "draw")
        with pytest.raises(RuntimeError):
            env.step("[5]")
    assert seats == {"player_0", "player_1"}
    assert max(returns) <= 0.0 and min(returns) == -1.0


def test_single_agent_invalid_moves_lose():
    env = make_single_agent("tictactoe_v0", "random")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("hello")
    assert (reward, terminated, info["invalid_moves"]) == (0.0, False, 1) and "warning" in observation
    observation, reward, terminated, _, info = env.step(None)
    assert (reward, terminated, info["result"]) == (-1.0, True, "loss")


def test_single_agent_opponents_by_seat_and_registration():
    import gymnasium as gym

    env = SingleAgentEnv("tictactoe_v0", {"player_0": "minimax"}, learner_seat="player_1")
    _, info = env.reset(seed=0)
    assert info["seat"] == "player_1" and len(info["opponent_moves"]) == 1
    with pytest.raises(ValueError):
        SingleAgentEnv("tictactoe_v0", {"player_0": "minimax"}, learner_seat="alternate")
    with pytest.raises(ValueError):
        SingleAgentEnv("tictactoe_v0", "minimax", learner_seat="player_9")
    ids = register_single_agent_ids(["tictactoe_v0"], opponents=("minimax",))
    assert ids == ["AgentRL-MA/tictactoe-vs-minimax-v0"]
    made = gym.make(ids[0])
    observation, info = made.reset(seed=0)
    assert info["seat"] == "player_0" and "[5]" in observation
    made.close()


def test_make_player_names():
    assert isinstance(make_player("scripted"), GreedyOpponent)
    assert isinstance(make_player("agentrl.envs.multiagent.opponents:RandomOpponent", seed=1), RandomOpponent)
    with pytest.raises(ValueError, match="minimax"):
        make_player("minimx")


# -- the benchmark and the command ----------------------------------------------------------------------------
def test_run_league_writes_results(tmp_path):
    result = run_league("tictactoe_v0", ["random", "minimax"], games=2, seed=0, out=tmp_path)
    lines = (tmp_path / "games.jsonl").read_text().splitlines()
    assert len(lines) == len(result.records) == 4
    summary = json.loads((tmp_path / "league.json").read_text())
    assert summary["table"][0]["name"] == "minimax" and summary["games"] == 4
    assert "win [95% CI]" in format_league_table(result.table)
    with pytest.raises(ValueError, match="parallel"):
        run_league("debate_v0", ["random", "minimax"])


def test_cli_league(tmp_path, capsys):
    code = main(["league", "--env", "tictactoe_v0", "--players", "random,scripted,minimax", "--games", "3",
                 "--seed", "0", "--out", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "elo" in out and "minimax" in out and "[95% CI]" in out
    assert (tmp_path / "league.json").exists() and (tmp_path / "games.jsonl").exists()


def test_cli_league_with_an_agent(capsys):
    # any agent of the registry joins the league; an import path stands in for an LLM agent here
    code = main(["league", "--players", "random", "--games", "2", "--agent",
                 "agentrl.envs.multiagent.opponents:GreedyOpponent", "--agent-name", "mine"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "mine" in out and "random" in out


def test_cli_league_errors(capsys):
    assert main(["league", "--players", "random,nope"]) == 2
    assert "unknown player" in capsys.readouterr().err
    assert main(["league", "--players", "random"]) == 2


def test_cli_list_shows_multiagent_envs(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "AgentRL/TIRMath-v0" in out and "tictactoe_v0" in out and "parallel" in out
