"""The one episode contract (issue 19): every registered single-agent id is an EpisodeEnv."""

from __future__ import annotations

import importlib
import typing

import gymnasium as gym
import pytest

import agentrl
from agentrl.agents import OracleAgent
from agentrl.agents.base import bind_agent
from agentrl.core.episode import INFO_KEYS, EpisodeEnv, Turn
from agentrl.core.errors import ResetNeeded
from agentrl.core.verify import Score
from agentrl.testing import check_domain

#: every single-agent id AgentRL registers (the domains of `agentrl list`, the seats of the
#: multi-agent games and the trainer's toy env)
assert agentrl  # importing it registers every id
SINGLE_AGENT_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith(("AgentRL/", "AgentRL-MA/")))
SEAT_IDS = [env_id for env_id in SINGLE_AGENT_IDS if env_id.startswith("AgentRL-MA/")]


def _entry_class(env_id: str) -> type:
    """The class an id's entry point builds: the class itself, or a factory's return annotation."""
    module_name, _, attr = gym.spec(env_id).entry_point.partition(":")
    target = getattr(importlib.import_module(module_name), attr)
    if isinstance(target, type):
        return target
    return typing.get_type_hints(target)["return"]


def test_there_are_ids_of_every_kind():
    kinds = {_entry_class(env_id).episode_kind for env_id in SINGLE_AGENT_IDS}
    assert kinds == {"text", "pixels", "desktop", "seat"}
    assert len(SEAT_IDS) == 30 and "AgentRL/OSWorld-v0" in SINGLE_AGENT_IDS


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_every_registered_single_agent_id_is_an_episode_env(env_id):
    cls = _entry_class(env_id)
    assert issubclass(cls, EpisodeEnv)
    # no domain writes its own step loop
    assert cls.step is EpisodeEnv.step and cls.reset is EpisodeEnv.reset and cls.close is EpisodeEnv.close


@pytest.mark.parametrize(
    "env_id",
    [i for i in SINGLE_AGENT_IDS if _entry_class(i).episode_kind in ("text", "seat")],
)
def test_made_envs_are_episode_envs_with_the_info_keys(env_id):
    env = gym.make(env_id)
    try:
        assert isinstance(env.unwrapped, EpisodeEnv)
        _, info = env.reset(seed=0)
        assert set(INFO_KEYS) <= set(info) and info["turns_left"] == env.unwrapped.max_turns
        _, _, _, _, info = env.step(env.unwrapped.oracle_action())
        assert set(INFO_KEYS) <= set(info) and info["turns_left"] == env.unwrapped.max_turns - 1
    finally:
        env.close()


@pytest.mark.parametrize("env_id", SEAT_IDS)
def test_seat_ids_pass_check_domain(env_id):
    check_domain(env_id, seeds=(0, 1))


def test_seat_v1_counts_the_learners_turns_and_v0_keeps_the_games_count():
    new, old = gym.make("AgentRL-MA/tictactoe-vs-random-v1"), gym.make("AgentRL-MA/tictactoe-vs-random-v0")
    for env in (new, old):
        env.reset(seed=1)  # seat player_1: the opponent has moved
    _, _, _, _, info_new = new.step(new.unwrapped.oracle_action())
    _, _, _, _, info_old = old.step(old.unwrapped.oracle_action())
    assert info_new["turn"] == 1 and info_new["game_turn"] == 3
    assert info_old["turn"] == 3 and info_old["game_turn"] == 3 and "turn" in old.unwrapped.deprecated_info
    new.close()
    old.close()


def test_oracle_agent_plays_every_kind_through_one_call():
    """OracleAgent has no per-domain branch: a text task and a game seat, both through oracle_action()."""
    for env_id in ("AgentRL/TIRMath-v0", "AgentRL-MA/nim-vs-random-v1"):
        env = gym.make(env_id)
        agent = OracleAgent()
        bind_agent(agent, env)
        observation, info = env.reset(seed=0)
        agent.reset(info)
        for _ in range(env.unwrapped.max_turns):
            observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            if terminated or truncated:
                break
        assert terminated and info["action_error"] is None
        env.close()
    import inspect

    from agentrl.agents import simple

    source = inspect.getsource(simple.OracleAgent)
    assert "getattr" not in source and "hasattr" not in source


class Countdown(EpisodeEnv[int, int]):
    """A fake domain: say 1, 2, 3; a 3 ends the episode with a score; every step pays 0.1."""

    def __init__(self, max_turns: int = 4) -> None:
        super().__init__(max_turns=max_turns)
        self.observation_space = gym.spaces.Discrete(10)
        self.action_space = gym.spaces.Discrete(10)
        self.released = 0

    def begin_episode(self, options):
        return 0, {"extra": True}

    def act(self, turn: Turn[int]) -> None:
        turn.observation = int(turn.action)
        if turn.action == 9:
            turn.action_error = "nine is not a number here"
        if turn.action == 3:
            turn.terminated, turn.done_reason = True, "answered"

    def step_reward(self, turn):
        return 0.1

    def score_at_end(self, turn):
        return Score(1.0, {"right": 1.0}) if turn.done_reason == "answered" else None

    def oracle_plan(self):
        return (1, 2, 3)

    def current_task_id(self):
        return "count"

    def release(self):
        self.released += 1


def test_the_contract_owns_guards_budget_info_oracle_and_rewards():
    env = Countdown()
    with pytest.raises(ResetNeeded):
        env.step(1)
    with pytest.raises(ResetNeeded):
        env.oracle_action()
    _, info = env.reset(seed=0)
    assert info == {"task_id": "count", "turn": 0, "turns_left": 4, "action_error": None, "tool_error": None,
                    "void_turn": False, "done_reason": None, "reward_components": {}, "extra": True}
    assert [env.oracle_action() for _ in range(1)] == [1]
    rewards = []
    while env.episode_active:
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        rewards.append(reward)
    assert rewards == [0.1, 0.1, 1.1] and terminated and not truncated
    assert info["done_reason"] == "answered" and info["reward_components"] == {"right": 1.0} and info["turn"] == 3
    with pytest.raises(ResetNeeded):
        env.step(1)
    env.reset(seed=0)
    for turn in range(1, 5):
        _, reward, terminated, truncated, info = env.step(9)
        assert info["action_error"] and info["turn"] == turn
    assert truncated and not terminated and info["done_reason"] == "max_turns" and info["turns_left"] == 0
    assert reward == pytest.approx(0.1)
    env.close()
    env.close()
    assert env.released == 1
    with pytest.raises(ResetNeeded):
        env.reset()
    with pytest.raises(ValueError):
        Countdown(max_turns=0)


def test_patient_consult_has_no_step_or_private_overrides():
    from agentrl.core.env import AgentEnv
    from agentrl.envs.consult.env import PatientConsultEnv

    own = set(vars(PatientConsultEnv))
    assert "step" not in own and not {name for name in own if name.startswith("_score")}
    assert not {name for name in vars(AgentEnv) if name in ("step", "reset", "close")}
