"""The learner's Elo over training and its league of snapshots: Elo math, PFSP, the league, a CLI run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from agentrl.league.elo import EloTable, expected_score, score_of, update_ratings
from agentrl.league.pfsp import pfsp_weights
from agentrl.train.league import TrainingLeague, game_results
from tests import warm_python
from tests.paths import ROOT

pytestmark = pytest.mark.timeout(300)


# ---------------------------------------------------------------------- Elo


def test_expected_score_is_symmetric_and_follows_the_400_point_scale() -> None:
    assert expected_score(1000, 1000) == 0.5
    for a, b in ((1200, 1000), (900, 1500), (1000, 1001)):
        assert expected_score(a, b) + expected_score(b, a) == pytest.approx(1.0)
    assert expected_score(1400, 1000) == pytest.approx(10 / 11)  # 400 points: odds of 10 to 1
    assert expected_score(1100, 1000) > 0.5 > expected_score(1000, 1100)


def test_a_win_raises_the_rating_a_loss_lowers_it_and_the_update_is_zero_sum() -> None:
    up, down = update_ratings(1000, 1000, 1.0, k=32)
    assert (up, down) == (1016.0, 984.0)
    assert update_ratings(1000, 1000, 0.0, k=32) == (984.0, 1016.0)  # the mirror game
    fav, dog = update_ratings(1200, 1000, 0.5, k=32)  # a draw moves points to the weaker player
    assert fav < 1200 and dog > 1000 and fav + dog == pytest.approx(2200)
    small, _ = update_ratings(1400, 1000, 1.0, k=32)  # an expected win gains little
    assert 1400 < small < 1400 + 32 * 0.1
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        update_ratings(1000, 1000, 1.5)
    with pytest.raises(ValueError, match="'win', 'draw' or 'loss'"):
        score_of("won")


def test_fixed_players_anchor_the_table_and_it_round_trips() -> None:
    table = EloTable(k=16, fixed={"random": 1000.0})
    for _ in range(5):
        table.update("learner", "random", "win")
    assert table.rating("random") == 1000.0 and table.rating("learner") > 1030
    rating = table.rating("learner")
    table.update("random", "learner", "win")  # the anchor wins: only the learner moves
    assert table.rating("random") == 1000.0 and table.rating("learner") < rating
    with pytest.raises(ValueError, match="cannot play itself"):
        table.update("learner", "learner", "draw")
    twin = EloTable()
    twin.load_state_dict(json.loads(json.dumps(table.state_dict())))
    assert twin.ratings == table.ratings and twin.fixed == {"random"}


# ---------------------------------------------------------------------- PFSP


def test_pfsp_weights_hard_even_and_uniform() -> None:
    assert pfsp_weights([0.0, 0.5, 1.0], "hard") == pytest.approx([0.8, 0.2, 0.0])
    assert pfsp_weights([0.1, 0.5, 0.9], "even") == pytest.approx([0.09 / 0.43, 0.25 / 0.43, 0.09 / 0.43])
    assert pfsp_weights([0.1, 0.9], "uniform") == [0.5, 0.5]
    assert pfsp_weights([1.0, 1.0], "hard") == [0.5, 0.5]  # all beaten: uniform, never all-zero
    assert pfsp_weights([], "hard") == []
    with pytest.raises(ValueError, match="hard"):
        pfsp_weights([0.5], "hardest")
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        pfsp_weights([1.5])


def test_the_league_draws_the_opponents_the_learner_loses_to_most() -> None:
    league = TrainingLeague(["random", "minimax"], size=4, pfsp="hard")
    league.record({"random": ["win"] * 9 + ["loss"], "minimax": ["loss"] * 8 + ["draw", "draw"]})
    rng = np.random.default_rng(0)
    draws = [league.sample(rng) for _ in range(400)]
    assert draws.count("minimax") > 0.9 * len(draws)
    uniform = TrainingLeague(["random", "minimax"], pfsp="uniform")
    uniform.recent = dict(league.recent)
    assert 150 < [uniform.sample(rng) for _ in range(400)].count("minimax") < 250
    # PFSP reads recent games: once the learner beats minimax for a window of games, it is rarely drawn.
    short = TrainingLeague(["random", "minimax"], pfsp="hard", window=10)
    short.record({"minimax": ["loss"] * 50 + ["win"] * 10, "random": ["loss"] * 2})
    assert short.tally["minimax"].as_list() == [10, 0, 50] and short.win_rate("minimax") > 0.9
    assert short.weights()["minimax"] < 0.05


def test_league_elo_is_anchored_and_snapshots_enter_at_the_learners_rating() -> None:
    league = TrainingLeague(["random"], size=2)
    metrics = league.record({"random": ["win", "win", "win"]})
    assert metrics["elo/random"] == 1000.0 and metrics["elo/learner"] > 1000
    assert metrics["league/win_rate/random"] == 1.0 and metrics["league/games"] == 3
    league.add_snapshot("snapshot@1", {})
    assert league.elo.rating("snapshot@1") == metrics["elo/learner"]
    league.add_snapshot("snapshot@2", {})
    assert league.add_snapshot("snapshot@3", {}) == ["snapshot@1"]  # the oldest leaves
    assert league.opponents == ["random", "snapshot@2", "snapshot@3"]
    with pytest.raises(ValueError, match="already has"):
        league.add_snapshot("snapshot@3", {})
    # Without built-in players the first snapshot (the initial policy) is the anchor and stays.
    selfplay = TrainingLeague([], size=1)
    selfplay.add_snapshot("snapshot@0", {})
    selfplay.add_snapshot("snapshot@1", {})
    assert selfplay.add_snapshot("snapshot@2", {}) == ["snapshot@1"]
    assert "snapshot@0" in selfplay.elo.fixed and selfplay.opponents == ["snapshot@0", "snapshot@2"]
    with pytest.raises(ValueError, match="--pfsp"):
        TrainingLeague(pfsp="greedy")


def test_game_results_name_the_opponent_and_skip_learner_against_learner() -> None:
    def game(seat: str, seats: dict[str, str], result: str | None, seat_return: float = 0.0) -> NS:
        turns = [NS(info={"outcome": {"result": {seat: result}}})] if result else []
        return NS(ok=True, turns=turns, reset_info={"seat": seat, "seats": seats, "seat_return": seat_return})

    vs_snapshot = {"player_0": "learner", "player_1": "snapshot"}
    games = [
        game("player_0", vs_snapshot, "win"),
        game("player_0", vs_snapshot, None, seat_return=-1.0),  # lost before it moved
        game("player_1", {"player_0": "random", "player_1": "learner"}, "draw"),
        game("player_0", {"player_0": "learner", "player_1": "learner"}, "win"),
        NS(ok=False, turns=[], reset_info={}),
    ]
    assert game_results(games, {"snapshot": "snapshot@4"}) == {"snapshot@4": ["win", "loss"], "random": ["draw"]}


# ---------------------------------------------------------------------- a CLI run


def _train_argv(out: Path, *extra: str) -> list[str]:
    """The ``agentrl`` arguments of a short GRPO run on Tiny Nim into ``out``."""
    return [
        "train", "grpo", "--env", "agentrl.envs.multiagent.tiny_nim_v0", "--model", "tiny", "--output-dir", str(out),
        "--max-new-tokens", "4", "--group-size", "2", "--prompts-per-step", "2", "--tensorboard", "false", *extra,
    ]  # fmt: skip


def _train(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentrl.cli", *_train_argv(out, *extra)]
    return warm_python.run(command, timeout=240, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_cli_self_play_against_a_league_of_snapshots_records_an_elo_series(tmp_path: Path) -> None:
    out = tmp_path / "run"
    options = (
        "--max-steps", "3", "--seats", "learner,league", "--league-players", "random",
        "--snapshot-every", "1", "--league-size", "2", "--pfsp", "hard", "--save-every", "1",
    )  # fmt: skip
    done = _train(out, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "learner Elo by step: 1:" in done.stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]
    for row in rows:
        assert row["rollout/failed"] == 0 and row["league/games"] == 4  # every game rated
        opponent = row["league/opponent"]
        assert f"league/win_rate/{opponent}" in row and isinstance(row["elo/learner"], float)
        assert sum(v for k, v in row.items() if k.startswith("league/pfsp/")) == pytest.approx(1.0)
        if opponent == "random":
            assert row["elo/random"] == 1000.0  # the anchor
    # The league: random and the initial policy, then a snapshot after every step, capped at 2 snapshots.
    assert [row["league/size"] for row in rows] == [2.0, 3.0, 3.0]
    assert set(k for k in rows[-1] if k.startswith("league/pfsp/")) == {
        "league/pfsp/random", "league/pfsp/snapshot@1", "league/pfsp/snapshot@2",
    }  # fmt: skip
    assert (out / "curves.png").stat().st_size > 1000
    # Tiny Nim has no draws, so every game moves the learner's rating.
    assert len({row["elo/learner"] for row in rows}) == 3
    # A resumed run restores the league (snapshots, ratings, results) and replays step 3 exactly.
    shutil.rmtree(out / "checkpoints" / "step-00000003")
    done = _train(out, *options, "--resume", "true")
    assert done.returncode == 0, done.stderr[-3000:]
    again = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    keys = ("elo/learner", "league/opponent", "league/size")
    assert [[row[k] for k in keys] for row in again] == [[row[k] for k in keys] for row in rows]


def test_league_options_that_cannot_work_are_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentrl.cli import main

    both = ("--max-steps", "1", "--seats", "learner,snapshot", "--opponent", "league")
    assert main(_train_argv(tmp_path / "a", *both)) == 2
    assert "league or by the snapshot, not both" in capsys.readouterr().err
    typo = ("--max-steps", "1", "--seats", "learner,league", "--league-players", "randon")
    assert main(_train_argv(tmp_path / "b", *typo)) == 2
    assert "unknown player 'randon'" in capsys.readouterr().err
