"""Tests for agentrl.wrappers (fast: a stub embedding model except where MiniLM itself is tested)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import agentrl  # noqa: F401
from agentrl.core.errors import ResetNeeded
from agentrl.wrappers import (
    ChatHistory,
    Curriculum,
    DiscreteChoices,
    RecordTrajectory,
    TextEmbedder,
    TextToEmbedding,
    TokenBudget,
)

TTT = "AgentRL-MA/tictactoe-vs-random-v0"
CELLS = [f"[{i}]" for i in range(1, 10)]


class StubModel:
    """A deterministic stand-in for a SentenceTransformer (8-dim, from a hash of the text)."""

    def __init__(self) -> None:
        self.calls = 0

    def get_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts, **kwargs):
        self.calls += 1
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts]
        return np.array(rows, dtype=np.float32)


def ttt() -> gym.Env:
    return gym.make(TTT)


# -- ChatHistory ---------------------------------------------------------------------------------
def test_chat_history_messages_and_check_env():
    env = ChatHistory(ttt())
    chat, _ = env.reset(seed=1)
    assert chat[0]["content"] == env.unwrapped.system_prompt != ""
    assert [m["role"] for m in chat] == ["system", "user"]
    chat, *_ = env.step("[5]")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat in env.observation_space and env.messages == list(chat)
    check_env(ChatHistory(ttt()), skip_render_check=True)


def test_chat_history_without_system_prompt():
    chat, _ = ChatHistory(ttt(), system_prompt="").reset(seed=0)
    assert [m["role"] for m in chat] == ["user"]


# -- TokenBudget -----------------------------------------------------------------------------------
def test_token_budget_truncates_and_refuses_more_steps():
    env = TokenBudget(ttt(), max_tokens=3)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("[5]")
    assert not truncated and info["tokens_used"] == 1 and info["tokens_left"] == 2
    _, _, terminated, truncated, info = env.step("play [1] now")
    if not terminated:
        assert truncated and info["done_reason"] == "token_budget"
    with pytest.raises(ResetNeeded):
        env.step("[2]")
    _, info = env.reset(seed=0)
    assert info["tokens_used"] == 0


def test_token_budget_counters():
    class Tok:
        def encode(self, text):
            return list(text)

    env = TokenBudget(ttt(), max_tokens=10_000, count=Tok(), count_observations=True)
    observation, info = env.reset(seed=0)
    assert info["tokens_used"] == len(observation)
    assert TokenBudget(ttt(), 5, count="chars").count("abcdefgh") == 2
    with pytest.raises(ValueError):
        TokenBudget(ttt(), 0)
    with pytest.raises(TypeError):
        TokenBudget(ttt(), 5, count=3)
    check_env(TokenBudget(ttt(), 10**7), skip_render_check=True)


# -- TextToEmbedding -------------------------------------------------------------------------------
def test_text_to_embedding_stub_cache_and_check_env():
    model = StubModel()
    env = TextToEmbedding(ttt(), model=model, cache_size=2)
    observation, _ = env.reset(seed=0)
    assert observation.shape == (8,) and observation.dtype == np.float32
    assert observation in env.observation_space
    np.testing.assert_allclose(np.linalg.norm(observation), 1.0, rtol=1e-5)
    calls = model.calls
    again, _ = env.reset(seed=0)  # same text: from the cache
    assert model.calls == calls and np.array_equal(again, observation)
    batch = env.embed(["a", "b", "a", "c"])  # one model call for the misses, LRU keeps 2
    assert batch.shape == (4, 8) and np.array_equal(batch[0], batch[2])
    assert model.calls == calls + 1 and env.cache_info()["size"] == 2
    check_env(TextToEmbedding(ttt(), model=model), skip_render_check=True)


def test_text_to_embedding_minilm_shared_embedder():
    embedder = TextEmbedder()
    a, b = TextToEmbedding(ttt(), model=embedder), TextToEmbedding(ttt(), model=embedder)
    assert a.observation_space.shape == (384,)
    x, _ = a.reset(seed=0)
    y, _ = b.reset(seed=0)
    assert np.array_equal(x, y) and embedder.cache_info()["hits"] >= 1
    vectors = embedder.embed(["the capital of France", "Paris is France's capital", "tic-tac-toe"])
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


# -- DiscreteChoices -------------------------------------------------------------------------------
def test_discrete_choices_fixed_and_masks():
    env = DiscreteChoices(TextToEmbedding(ttt(), model=StubModel()), CELLS)
    assert env.action_space == gym.spaces.Discrete(9)
    env.reset(seed=0)
    assert env.action_masks().all()
    _, _, _, _, info = env.step(np.int64(4))
    assert info["action_text"] == "[5]"
    mask = env.action_masks()
    assert not mask[4] and mask.sum() == len(info["legal_moves"])
    with pytest.raises(ValueError):
        env.action(9)
    check_env(DiscreteChoices(TextToEmbedding(ttt(), model=StubModel()), CELLS), skip_render_check=True)


def test_discrete_choices_legal_moves_padding():
    env = DiscreteChoices(ttt(), n=9)
    _, info = env.reset(seed=0)
    _, _, _, _, info = env.step(8)
    legal = info["legal_moves"]
    assert env.action(0) == legal[0]
    assert env.action(8) == legal[-1]  # beyond the legal moves: the last legal move
    for _ in range(20):  # every index is legal: no invalid-move warnings ever
        _, _, terminated, truncated, info = env.step(8)
        assert info["invalid_moves"] == 0
        if terminated or truncated:
            break
    with pytest.raises(ValueError):
        DiscreteChoices(ttt())
    with pytest.raises(KeyError):
        DiscreteChoices(gym.make("AgentRL/Letter-v0"), n=3).reset(seed=0)


# -- RecordTrajectory ------------------------------------------------------------------------------
def test_record_trajectory(tmp_path):
    path = tmp_path / "sub" / "trace.jsonl"
    env = RecordTrajectory(ttt(), path, max_observation_chars=40)
    for episode in range(2):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(info_move(env))
            done = terminated or truncated
        assert "time" not in info
    env.close()
    env.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {x["episode"] for x in lines} == {0, 1}
    assert lines[0]["step"] == 0 and lines[0]["action"] is None and lines[0]["seed"] == 0
    assert lines[1]["step"] == 1 and isinstance(lines[1]["action"], str)
    assert all(len(x["observation"]) <= 40 and x["time"]["step_s"] >= 0 for x in lines)
    assert lines[-1]["terminated"] or lines[-1]["truncated"]
    assert len({x["run"] for x in lines}) == 1


def info_move(env: RecordTrajectory) -> str:
    board = env.unwrapped.aec
    return board.infos[board.agent_selection]["legal_moves"][0]


def test_record_trajectory_arrays(tmp_path):
    env = RecordTrajectory(DiscreteChoices(TextToEmbedding(ttt(), model=StubModel()), CELLS), tmp_path / "t.jsonl")
    env.reset(seed=0)
    env.step(np.int64(0))
    env.close()
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(lines[1]["observation"]) == 8 and lines[1]["action"] == 0


# -- Curriculum ------------------------------------------------------------------------------------
def test_curriculum_promotes_and_demotes_sql():
    env = Curriculum(gym.make("AgentRL/SQL-v0", schemas=["shop"]), levels=(1, 2, 3), window=4)
    assert env.mode == "task_source"
    _, info = env.reset(seed=0)
    assert info["curriculum_level"] == 1 and "/d1/" in info["task_id"]
    for _ in range(4):
        env.record_episode(True)
    assert env.level == 2
    _, info = env.reset(seed=1)
    assert "/d2/" in info["task_id"]
    for _ in range(4):
        env.record_episode(False)
    assert env.level == 1 and env.history == [(4, 2), (8, 1)]
    # a wrong answer ends the episode: judged by reward > 0
    _, _, terminated, _, info = env.step("<solution>SELECT 1</solution>")
    assert terminated and env.results[-1] is False and info["curriculum_level"] == 2  # the episode's level
    env.close()


def test_curriculum_tirmath_and_errors():
    env = Curriculum(gym.make("AgentRL/TIRMath-v0", families=["modular"]), levels=(1, 2, 3), start=3)
    _, info = env.reset(seed=0)
    assert info["task_id"].startswith("tirmath/modular/d3/")
    env.close()
    with pytest.raises(ValueError, match="no 'difficulty' knob"):
        Curriculum(gym.make("AgentRL/Search-v0"))
    with pytest.raises(ValueError, match="no 'difficulty' knob"):
        Curriculum(ttt())
    with pytest.raises(ValueError):
        Curriculum(ttt(), mode="reset_option", promote_at=0.1, demote_at=0.5)


def test_curriculum_reset_option_mode():
    seen = []

    class Knob(gym.Env):
        observation_space = gym.spaces.Discrete(2)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            seen.append(options["difficulty"])
            return 0, {}

        def step(self, action):
            return 0, 0.0, True, False, {"success": action == 1}

    env = Curriculum(Knob(), levels=("easy", "hard"), window=2, mode="reset_option")
    for _ in range(3):
        env.reset()
        env.step(1)
    assert seen == ["easy", "easy", "hard"]
