"""Reference agents and the agent registry (the LLM backends have their own tests)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from agentrl.agents import OracleAgent, RandomAgent
from agentrl.agents.react import ReActAgent
from agentrl.agents.registry import AgentSpec
from agentrl.llm.base import ChatMessage, Generation, GenerationConfig


class ScriptedBackend:
    """Replies from a list and records what it was asked (a stand-in for an LLM in unit tests)."""

    name = "scripted"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[ChatMessage], GenerationConfig]] = []

    def generate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        self.requests.append((list(messages), config))
        text = self.replies.pop(0)
        return Generation(text, usage={"prompt_tokens": self.count_tokens(messages), "completion_tokens": 5})

    async def agenerate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        await asyncio.sleep(0)
        return self.generate(messages, config)

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        return sum(len(m["content"]) // 4 + 4 for m in messages)

    def close(self) -> None:
        pass


@pytest.fixture
def env():
    environment = gym.make("AgentRL/TIRMath-v0")
    yield environment
    environment.close()


def play(env, agent, seed=0, use_async=False):
    agent.bind(env)
    observation, info = env.reset(seed=seed)
    agent.reset(info)
    total = 0.0
    while True:
        if use_async:
            action = asyncio.run(agent.aact(observation, info))
        else:
            action = agent.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return total, info


@pytest.mark.parametrize("use_async", [False, True])
def test_react_agent_solves_with_a_backend_that_knows_the_answer(env, use_async):
    env.reset(seed=0)
    oracle = env.unwrapped.task.oracle_actions
    backend = ScriptedBackend(list(oracle))
    agent = ReActAgent(backend, seed=1)
    total, info = play(env, agent, seed=0, use_async=use_async)
    assert total == 1.0 and info["turn"] == 2
    messages, config = backend.requests[0]
    assert messages[0]["role"] == "system" and "run_python(code)" in messages[0]["content"]
    assert "expert mathematician" in messages[0]["content"]
    assert config.stop == ("```output",) and config.max_tokens == 384
    second, _ = backend.requests[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[-1]["content"].startswith("```output")
    assert agent.usage["completion_tokens"] == 10 and len(agent.generations) == 2


def test_react_seeds_differ_per_turn_and_episode(env):
    backend = ScriptedBackend(["x"] * 4)
    agent = ReActAgent(backend, seed=7)
    agent.bind(env)
    seeds = []
    for episode in range(2):
        observation, info = env.reset(seed=episode)
        agent.reset(info)
        for _ in range(2):
            agent.act(observation, info)
            seeds.append(backend.requests[-1][1].seed)
    assert len(set(seeds)) == 4


def test_react_trims_history_to_the_budget(env):
    backend = ScriptedBackend(["```python\nprint('" + "y" * 400 + "')\n```"] * 12)
    agent = ReActAgent(backend, history_token_budget=900, max_tokens=100)
    _, info = play(env, agent)
    assert info["done_reason"] == "max_turns"
    last, _ = backend.requests[-1]
    assert backend.count_tokens(last) + 100 <= 900
    assert [m["role"] for m in last][:2] == ["system", "user"]
    assert "earlier messages were left out" in last[1]["content"]
    roles = [m["role"] for m in last[1:]]
    assert all(a != b for a, b in itertools.pairwise(roles))  # strictly alternating
    assert last[-1]["content"].startswith("```output")


def test_oracle_and_random_agents(env):
    assert play(env, OracleAgent())[0] == 1.0
    total, info = play(env, RandomAgent(seed=0))
    assert total == 0.0 and info["done_reason"] == "max_turns"
    with pytest.raises(RuntimeError, match="bind"):
        OracleAgent().reset({})


def test_agent_spec_errors_and_suggestions():
    with pytest.raises(ValueError, match="did you mean 'oracle'"):
        AgentSpec("oracel")
    with pytest.raises(ValueError, match="did you mean 'openai'"):
        AgentSpec("react", backend="opnai")
    with pytest.raises(ValueError, match="uses no LLM"):
        AgentSpec("oracle", backend="smollm2")
    with pytest.raises(ValueError, match="has no 'Nope'"):
        AgentSpec("agentrl.agents.simple:Nope").build()
    with pytest.raises(ValueError, match="--model-path"):
        AgentSpec("react", backend="transformers")


def test_agent_spec_builds_import_paths_with_seed_and_options():
    spec = AgentSpec("agentrl.agents.simple:RandomAgent")
    agent = spec.build()(seed=3)
    assert isinstance(agent, RandomAgent)
    assert AgentSpec("react").config() == {
        "agent": "react",
        "agent_options": {},
        "backend": "smollm2",
        "backend_options": {},
    }
    with pytest.raises(ValueError, match="constructor takes"):
        AgentSpec("oracle", agent_options={"temperature": 1.0}).build()(seed=0)
