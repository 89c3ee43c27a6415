"""Training several agents: multi-agent rollouts (learner, snapshot and fixed seats) and GRPO on them.

The learning test trains the tiny local model at tiny Nim against a random opponent and checks,
on 64 fresh games before and after, that its win rate rose far beyond what chance allows.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from agentrl.llm.tiny import build_tiny_model
from agentrl.llm.transformers_backend import TransformersBackend
from agentrl.rollout import RolloutConfig, group_requests
from agentrl.rollout.errors import RolloutConfigError
from agentrl.rollout.multiagent import MultiAgentRollout, multiagent_env_fn, multiagent_env_name
from agentrl.train.grpo import GRPOArgs, GRPOTrainer
from agentrl.train.metrics import multiagent_metrics

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def backend():
    policy = TransformersBackend(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    yield policy
    policy.close()


def _rollout(backend, name: str, seats: str, **kwargs) -> MultiAgentRollout:
    env_kwargs = kwargs.pop("env_kwargs", {})
    config = RolloutConfig(num_envs=8, max_new_tokens=6, sampling_seed=0, keep_failed=True)
    return MultiAgentRollout(multiagent_env_fn(name, **env_kwargs), backend, seats=seats, config=config, **kwargs)


# ---------------------------------------------------------------------- rollouts


def test_self_play_gives_each_learner_seat_its_own_trajectory(backend) -> None:
    with _rollout(backend, "tiny_nim_v0", "learner,learner") as rollout:
        trajectories = rollout.run(group_requests([3, 4], group_size=2))
    assert [t.reset_info["seat"] for t in trajectories] == ["player_0", "player_1"] * 4
    assert [t.request.group_id for t in trajectories[:4]] == ["0/player_0", "0/player_1"] * 2
    for first, second in zip(trajectories[::2], trajectories[1::2], strict=True):
        for t in (first, second):
            assert t.ok, t.failure
            t.validate()  # loss mask exactly on the seat's own completions
        if not second.turns:  # player_0 won at once or lost by two invalid moves: player_1 never moved
            assert second.reset_info["moved"] is False
            assert second.reset_info["seat_return"] == -first.total_reward and abs(first.total_reward) == 1.0
            continue
        assert first.turns[-1].terminated and second.turns[-1].terminated
        # Zero-sum: the two seats of one game end with opposite returns (tiny Nim has no draws).
        assert first.total_reward == -second.total_reward and abs(first.total_reward) == 1.0
        # The seats' trajectories hold their own completions only: different actions, different tokens.
        assert first.token_ids != second.token_ids


def test_group_members_start_from_the_same_state_and_replay_under_a_seed(backend) -> None:
    with _rollout(backend, "tictactoe_v0", "learner,random") as rollout:
        first = rollout.run(group_requests([11], group_size=3))
        again = rollout.run(group_requests([11], group_size=3))
    prompts = {tuple(t.token_ids[: t.prompt_length]) for t in first}
    assert len(prompts) == 1  # one start state per group
    assert [t.token_ids for t in first] == [t.token_ids for t in again]  # seeded sampling and opponent


def test_parallel_debate_collects_every_learner_seat(backend) -> None:
    env_kwargs = {"num_agents": 3, "rounds": 1}
    with _rollout(backend, "debate_v0", "learner,learner,random", env_kwargs=env_kwargs) as rollout:
        trajectories = rollout.run(group_requests([0], group_size=2))
    assert len(trajectories) == 4 and all(t.ok for t in trajectories), [t.failure for t in trajectories]
    for t in trajectories:
        t.validate()
        assert len(t.turns) == 2 and t.turns[-1].terminated  # rounds + 1 answering rounds
        assert "The responses of the previous round" in t.messages[2]["content"]  # it read the others' answers
    # the trainer's metrics carry the debate's accuracy per round (answer round, then one discussion round)
    metrics = multiagent_metrics(trajectories)
    rows = [t.turns[-1].info["metrics"]["accuracy_per_round"] for t in trajectories]
    assert all(len(row) == 2 for row in rows)
    for r in range(2):
        assert metrics[f"debate/accuracy/round_{r}"] == pytest.approx(sum(row[r] for row in rows) / len(rows))


def test_team_reward_gives_every_learner_seat_the_mean_return(backend) -> None:
    with _rollout(backend, "tiny_nim_v0", "learner,random", team_reward=True) as rollout:
        trajectories = rollout.run(group_requests([0, 1], group_size=2))
    for t in trajectories:
        last = t.turns[-1]
        assert t.total_reward == 0.0  # a zero-sum game's team return
        assert last.info["own_return"] in (1.0, -1.0) and last.info["team_return"] == 0.0


def test_alternate_seats_puts_the_learner_first_in_every_other_group(backend) -> None:
    with _rollout(backend, "tiny_nim_v0", "learner,random", alternate_seats=True) as rollout:
        trajectories = rollout.run(group_requests([5, 6, 7, 8], group_size=2))
    # one trajectory per request, the learner's; group k sits shifted k seats along
    assert [t.reset_info["seat"] for t in trajectories] == ["player_0"] * 2 + ["player_1"] * 2 + ["player_0"] * 2 + [
        "player_1"
    ] * 2
    assert trajectories[2].reset_info["seats"] == {"player_0": "random", "player_1": "learner"}
    for t in trajectories:
        assert t.ok, t.failure
        if t.turns:
            t.validate()
    with _rollout(backend, "tiny_nim_v0", "learner,random") as fixed:
        assert {t.reset_info["seat"] for t in fixed.run(group_requests([5, 6], group_size=1))} == {"player_0"}


def test_snapshot_seat_plays_with_its_own_policy_and_yields_nothing(backend) -> None:
    with _rollout(backend, "tiny_nim_v0", "snapshot,learner", snapshot_policy=backend) as rollout:
        trajectories = rollout.run(group_requests([0], group_size=2))
    assert [t.reset_info["seat"] for t in trajectories] == ["player_1", "player_1"]
    assert all(t.ok for t in trajectories)


def test_bad_seats_and_names_are_refused_with_the_fix(backend) -> None:
    with pytest.raises(RolloutConfigError, match=r"give one per seat, e\.g\. --seats learner,random"):
        _rollout(backend, "tictactoe_v0", "learner")
    with pytest.raises(RolloutConfigError, match="name at least one seat 'learner'"):
        _rollout(backend, "tictactoe_v0", "random,random")
    with pytest.raises(RolloutConfigError, match="no snapshot_policy"):
        _rollout(backend, "tictactoe_v0", "learner,snapshot")
    with pytest.raises(ValueError, match=r"unknown player 'randon'.*random"):
        _rollout(backend, "tictactoe_v0", "learner,randon")
    with pytest.raises(ValueError, match=r"unknown multi-agent env.*tictactoe_v0"):
        multiagent_env_name("agentrl.envs.multiagent.tictactoe_v9")
    assert multiagent_env_name("AgentRL/Letter-v0") is None


# ---------------------------------------------------------------------- learning


def _win_rate(trainer: GRPOTrainer, seeds: range) -> float:
    trajectories = trainer.run.collect(group_requests(list(seeds), group_size=1), step=10_000)
    results = [t.turns[-1].info["outcome"]["result"]["player_0"] for t in trajectories if t.ok and t.turns]
    assert len(results) == len(seeds)
    return results.count("win") / len(results)


def test_grpo_learns_to_beat_a_random_opponent_at_tiny_nim(tmp_path: Path) -> None:
    args = GRPOArgs(
        env="agentrl.envs.multiagent.tiny_nim_v0",
        seats="learner,random",
        model="tiny",
        output_dir=str(tmp_path / "run"),
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=4,
        learning_rate=1e-3,
        num_envs=32,
        tensorboard=False,
        max_steps=8,
        seed=0,
    )
    evaluation = range(50_000, 50_064)  # 64 games the training never saw, sampled at temperature 1
    with GRPOTrainer(args) as trainer:
        before = _win_rate(trainer, evaluation)
        history = trainer.train()
        after = _win_rate(trainer, evaluation)
    # The random tiny model rarely writes a number at all (a few % of games won); training makes it
    # take the whole heap. With 64 games each, a rise of 0.4 is more than 6 standard errors.
    assert after >= before + 0.4 and after >= 0.6, (before, after, [h["multiagent/win_rate"] for h in history])
    assert all(h["rollout/failed"] == 0 for h in history)
    assert {"seat/player_0/return", "seat/player_0/win_rate"} <= set(history[-1])


# ---------------------------------------------------------------------- the command line


# The command line on multi-agent envs (every rollout collected, each seat's metrics, Elo against a fixed player,
# a snapshot opponent refreshed each step) is checked on the multi-agent guide's own lines, as written, by
# tests/artifacts/test_readme_training.py (check_multiagent_rows): the same runs were made twice before.
