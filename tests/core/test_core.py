"""The core abstractions, tested on the tiny echo domain of ``examples/custom_domain.py`` (its sandbox runs nothing)."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agentrl.core import (
    INFO_KEYS,
    InvalidActionType,
    JsonlTaskSource,
    ResetNeeded,
    Task,
    TaskFormatError,
    UnicodeText,
    UnknownTask,
)
from agentrl.core.registry import describe, env_id, register_domain
from examples.custom_domain import make_env


def test_unicode_text_space_accepts_any_bounded_str_and_samples():
    space = UnicodeText(50)
    assert space.contains("naïve ∑ — \ud800 ok")
    assert not space.contains("x" * 51)
    assert not space.contains(None)
    space.seed(1)
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(s) for s in samples)
    assert UnicodeText(50) == UnicodeText(50) != UnicodeText(51)


def test_check_env_passes_on_the_generic_loop():
    env = make_env()
    check_env(env, skip_render_check=True)
    env.close()


def test_turn_loop_info_vocabulary_and_flow():
    env = make_env()
    obs, info = env.reset(seed=3)
    assert set(INFO_KEYS) <= set(info)
    assert env.task.prompt in obs and "<echo>" in obs
    obs, reward, terminated, truncated, info = env.step("<echo>hi</echo>")
    assert (obs, reward, terminated, truncated) == ("HI", 0.0, False, False)
    assert info["turn"] == 1 and info["turns_left"] == 2 and info["tool_error"] is None
    obs, *_, info = env.step("<echo>fail</echo>")
    assert info["tool_error"] == "it failed" and "[tool error] it failed" in obs
    obs, reward, terminated, truncated, info = env.step(f"<answer>{env.task.answer}</answer>")
    assert reward == 1.0 and terminated and not truncated
    assert info["done_reason"] == "answered" and info["reward_components"] == {"exact": 1.0}
    with pytest.raises(ResetNeeded):
        env.step("<echo>again</echo>")
    env.close()


def test_malformed_actions_are_observations_and_budget_truncates():
    env = make_env()
    env.reset(seed=0)
    for turn in (1, 2, 3):
        obs, _reward, terminated, truncated, info = env.step("no tags")
        assert obs.startswith("[error]") and info["action_error"] and info["void_turn"]
        assert not terminated and truncated == (turn == 3)
    assert info["done_reason"] == "max_turns"


def test_end_on_void_turn_terminates():
    env = make_env(end_on_void_turn=True)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("nothing here")
    assert terminated and not truncated and reward == 0.0 and info["done_reason"] == "void_turn"


def test_oversized_and_wrongly_typed_actions():
    env = make_env(max_action_chars=100)
    env.reset(seed=0)
    _obs, *_, info = env.step("<echo>" + "x" * 1000 + "</echo>")
    assert "limit is 100" in info["action_error"]
    with pytest.raises(InvalidActionType, match="expected the action to be a str"):
        env.step(None)  # type: ignore[arg-type]


def test_observations_are_capped_with_a_marker():
    env = make_env(max_observation_chars=64)
    env.reset(seed=0)
    obs, *_ = env.step("<echo>" + "y" * 500 + "</echo>")
    assert len(obs) <= 64 and "cut" in obs


def test_reset_options_seeding_and_errors():
    env = make_env()
    assert env.reset(options={"task_id": "echo/2"})[1]["task_id"] == "echo/2"
    assert env.reset(options={"task_index": 4})[1]["task_id"] == "echo/4"
    ids = [env.reset(seed=s)[1]["task_id"] for s in range(10)]
    assert ids == [make_env().reset(seed=s)[1]["task_id"] for s in range(10)]
    with pytest.raises(UnknownTask, match="echo/0"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(UnknownTask, match=r"\[0, 5\)"):
        env.reset(options={"task_index": 9})
    with pytest.raises(ValueError, match="valid options"):
        env.reset(options={"task": 1})


def test_step_before_reset_and_close_twice():
    env = make_env()
    with pytest.raises(ResetNeeded):
        env.step("<echo>x</echo>")
    env.reset(seed=0)
    env.step("<echo>x</echo>")
    sandbox = env.sandbox
    env.reset(seed=1)
    assert sandbox.resets == 1  # a used sandbox is reset between episodes
    env.close()
    env.close()
    assert sandbox.closed == 1
    with pytest.raises(ResetNeeded, match="closed"):
        env.reset()


def test_render_ansi_transcript():
    env = make_env(render_mode="ansi")
    env.reset(seed=0)
    env.step("<echo>abc</echo>")
    text = env.render()
    assert "[agent]\n<echo>abc</echo>" in text and "[env]\nABC" in text


def test_jsonl_task_source(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"q": "1+1", "a": "2"}) + "\n\n" + json.dumps({"q": "2+2", "a": "4"}) + "\n")

    def convert(row: dict[str, Any], line: int) -> Task:
        return Task(f"t/{line}", row["q"], row["a"])

    source = JsonlTaskSource(path, convert)
    assert len(source) == 2 and source.get("t/3").answer == "4"
    assert source.sample(np.random.default_rng(0)).id in {"t/1", "t/3"}

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": "1"}\n{not json\n')
    with pytest.raises(TaskFormatError, match=r"bad.jsonl:1: .*'a'"):
        JsonlTaskSource(bad, convert)
    bad.write_text('{"q": "1", "a": "1"}\n{not json\n')
    with pytest.raises(TaskFormatError, match=r"bad.jsonl:2: not valid JSON"):
        JsonlTaskSource(bad, convert)
    with pytest.raises(FileNotFoundError, match=r"missing\.jsonl"):
        JsonlTaskSource(tmp_path / "missing.jsonl", convert)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(TaskFormatError, match="empty"):
        JsonlTaskSource(tmp_path / "empty.jsonl", convert)


def test_registry_ids_and_errors():
    assert env_id("SQL", 2, variant="Spider") == "AgentRL/SQL-Spider-v2"
    with pytest.raises(ValueError, match="CamelCase"):
        env_id("bad name")
    from agentrl.core import registry

    new = register_domain("CoreTestEcho", "examples.custom_domain:make_env", description="echo")
    try:
        assert register_domain("CoreTestEcho", "examples.custom_domain:make_env", description="echo") == new
        with pytest.raises(ValueError, match="bump the version"):
            register_domain("CoreTestEcho", "elsewhere:Env", description="echo")
    finally:
        registry._DOMAINS.pop(new)
        gym.registry.pop(new)
    with pytest.raises(gym.error.UnregisteredEnv, match="did you mean AgentRL/TIRMath-v0"):
        describe("AgentRL/TIRMaht-v0")
