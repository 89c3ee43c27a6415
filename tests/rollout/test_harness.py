"""Training an agent harness: the recording endpoint, trajectories from its records, and GRPO through a harness.

A harness is third-party-shaped agent code, ``run_episode(env, client, model)``, that only talks to an OpenAI
client. These tests run real harnesses (the plain ``openai`` loop of ``examples/harness_openai.py`` and some broken
ones) against the recording endpoint over a tiny model, and check what the trainer gets: the exact sampled ids,
logprobs the trainer reproduces, rewards on the right turns, and failed episodes that say why.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests import warm_python
from tests.paths import ROOT

pytest.importorskip("openai", reason="the harness client is openai's: pip install 'agentrl-gym[harness]'")
pytest.importorskip("transformers", reason="the tiny policy needs transformers: pip install 'agentrl-gym[train]'")

import gymnasium as gym

import agentrl  # noqa: F401
from agentrl.llm.server import EPISODE_HEADER, serve_model
from agentrl.rollout.engine import RolloutConfig
from agentrl.rollout.harness import HarnessEngine, load_harness
from agentrl.rollout.recording import CallRecord, CallRecorder, trajectory_from_calls
from agentrl.rollout.trajectory import RolloutRequest

PLAIN = "examples.harness_openai:run_episode"


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from agentrl.llm.tiny import build_tiny_model
    from agentrl.llm.transformers_backend import TransformersBackend

    path = build_tiny_model(tmp_path_factory.mktemp("harness") / "tiny")
    with TransformersBackend(path, batch_wait_ms=5.0, name="tiny") as made:
        yield made


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def letter_engine(backend: Any, harness: Any, **config: Any) -> HarnessEngine:
    settings = {"num_envs": 4, "max_new_tokens": 24, "keep_failed": True, **config}
    return HarnessEngine(lambda: gym.make("AgentRL/Letter-v0", turns=2), harness, backend, RolloutConfig(**settings))


def test_the_recording_endpoint_refuses_calls_without_an_open_episode(backend: Any) -> None:
    recorder = CallRecorder()
    recorder.open("ep-a")
    chat = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
    with serve_model(backend, recorder=recorder) as server:
        url = server.base_url + "/chat/completions"
        status, body = _post(url, chat)
        assert status == 400 and EPISODE_HEADER in body["error"]["message"]
        status, body = _post(url, chat, {EPISODE_HEADER: "ep-zzz"})
        assert status == 400 and "unknown episode 'ep-zzz'" in body["error"]["message"]
        assert _post(url, {**chat, "user": "ep-a"})[0] == 200  # the user field names it too
        assert _post(url, chat, {EPISODE_HEADER: "ep-a"})[0] == 200
        completions = {"prompt": [5, 6, 7], "max_tokens": 3, "logprobs": 1}
        assert _post(server.base_url + "/completions", completions, {EPISODE_HEADER: "ep-a"})[0] == 200
    calls = recorder.close("ep-a")
    assert [len(c.token_ids) == len(c.logprobs) for c in calls] == [True, True, True]
    assert calls[2].prompt_ids == [5, 6, 7] and calls[2].messages is None
    assert calls[0].prompt_ids == backend.encode_prompt([{"role": "user", "content": "hello"}])


def test_a_rewritten_history_becomes_windows_each_valid() -> None:
    def call(index: int, prompt: list[int], sampled: list[int]) -> CallRecord:
        return CallRecord(index, prompt, sampled, [-0.5] * len(sampled), "x", "stop")

    calls = [call(0, [1, 2], [3]), call(1, [1, 2, 3, 4], [5, 6]), call(2, [1, 9], [7])]  # call 2 drops history
    trajectory = trajectory_from_calls(calls, [(1, 0.25), (2, 0.5), (3, 1.0)])
    assert [piece.token_ids for piece in trajectory.pieces()] == [[1, 2, 3, 4, 5, 6], [1, 9, 7]]
    assert [piece.loss_mask for piece in trajectory.pieces()] == [[0, 0, 1, 0, 1, 1], [0, 0, 1]]
    for piece in trajectory.pieces():
        piece.validate()
    assert trajectory.rewards == [0.25, 0.5, 1.0] and trajectory.turns[-1].terminated
    with pytest.raises(ValueError, match="without model calls"):
        trajectory_from_calls([], [])


def test_a_reward_goes_to_the_turn_of_the_last_call_before_its_step() -> None:
    calls = [CallRecord(i, [1] * (i + 1), [2], [-1.0], "x", "stop") for i in range(3)]
    # Two steps after call 1 (a harness that thinks twice before acting), none after call 2.
    assert trajectory_from_calls(calls, [(1, 0.5), (1, 0.25), (3, 1.0)]).rewards == [0.75, 0.0, 1.0]


def test_the_plain_openai_harness_plays_token_exact_episodes(backend: Any) -> None:
    engine = letter_engine(backend, PLAIN)
    try:
        trajectories = engine.run([RolloutRequest(seed=3, group_id=0, index=i) for i in range(4)])
    finally:
        engine.close()
    assert [t.status for t in trajectories] == ["ok"] * 4, [t.failure for t in trajectories]
    for trajectory in trajectories:
        # The tiny model's replies do not re-tokenise to the ids it sampled, so each call is its own window.
        assert trajectory.num_turns == 2 and trajectory.turns[-1].terminated
        assert all(piece.num_policy_tokens > 0 for piece in trajectory.pieces())
        replay = gym.make("AgentRL/Letter-v0", turns=2)
        replay.reset(seed=3)
        expected = 0.0
        for turn in trajectory.all_turns:
            _, reward, *_ = replay.step(turn.action)
            expected += float(reward)
        assert trajectory.total_reward == pytest.approx(expected)
        # The first prompt is the chat template over the env's first observation, as the harness sent it.
        first = trajectory.pieces()[0]
        assert first.token_ids[: first.prompt_length] == backend.encode_prompt(
            [{"role": "user", "content": str(replay.reset(seed=3)[0])}]
        )
        replay.close()


def _raises(env: Any, client: Any, model: str) -> None:
    env.reset()
    raise RuntimeError("the agent crashed")


def _never_asks(env: Any, client: Any, model: str) -> None:
    env.reset()
    env.step("aaaa")


def _too_long(env: Any, client: Any, model: str) -> None:
    env.reset()
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "word " * 5000}])


def _no_reset(env: Any, client: Any, model: str) -> None:
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=2)


def _untagged(env: Any, client: Any, model: str) -> None:
    import openai

    env.reset()
    stray = openai.OpenAI(base_url=str(client.base_url), api_key="x", max_retries=0)  # not the client it was handed
    stray.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=2)


async def _async_plain(env: Any, client: Any, model: str) -> None:
    observation, _ = env.reset()
    done = False
    while not done:
        reply = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": str(observation)}], max_tokens=8
        )
        observation, _, terminated, truncated, _ = env.step(reply.choices[0].message.content or "")
        done = terminated or truncated


@pytest.mark.parametrize(
    ("harness", "reason"),
    [
        (_raises, "the harness raised RuntimeError: the agent crashed"),
        (_never_asks, "the harness never called the model"),
        (_too_long, "the model's context is 4096 tokens"),
        (_no_reset, "never reset the env"),
        (_untagged, EPISODE_HEADER),
    ],
    ids=["raises", "never-asks", "too-long", "no-reset", "untagged"],
)
def test_a_broken_harness_fails_its_episode_with_the_reason(backend: Any, harness: Any, reason: str) -> None:
    engine = letter_engine(backend, harness, num_envs=2)
    try:
        failed = engine.run([RolloutRequest(seed=0)])
        assert len(failed) == 1 and failed[0].status == "failed" and reason in str(failed[0].failure)
        # The engine goes on: the next batch, with a working harness, is collected as usual.
        engine.harness = _async_plain  # an async def: call_harness gives it an AsyncOpenAI
        assert [t.status for t in engine.run([RolloutRequest(seed=1), RolloutRequest(seed=2)])] == ["ok", "ok"]
    finally:
        engine.close()


def test_failed_episodes_are_dropped_unless_kept(backend: Any) -> None:
    engine = letter_engine(backend, _raises, keep_failed=False)
    try:
        assert engine.run([RolloutRequest(seed=0)]) == []
    finally:
        engine.close()


def test_a_harness_is_named_module_colon_function() -> None:
    with pytest.raises(ValueError, match=r"package\.module:name"):
        load_harness("examples.harness_openai")
    with pytest.raises(ValueError, match="has no 'nope'"):
        load_harness("examples.harness_openai:nope")


@pytest.mark.timeout(600)
def test_agentrl_train_grpo_with_a_harness_from_the_command_line(tmp_path: Path) -> None:
    """The issue's command at two steps (the console script: the harness module is found from the working folder)."""
    out = tmp_path / "run"
    command = [
        str(Path(sys.executable).parent / "agentrl"), "train", "grpo", "--env", "AgentRL/Letter-v0", "--model", "tiny",
        "--harness", PLAIN, "--max-steps", "2", "--output-dir", str(out),
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = warm_python.run(command, cwd=ROOT, timeout=540, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["rollout/failed"] == 0
        assert row["update/logprob_mismatch"] < 1e-4


class ScriptedModel:
    """A stand-in for the model's *output* only: the endpoint's tool-call parsing needs replies that hold tool
    calls, which a random tiny model never writes. Prompts are rendered and tokenised by the real tiny tokenizer."""

    def __init__(self, path: Path, replies: list[str]) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.name, self.replies, self.prompts = "scripted", list(replies), []

    async def agenerate_ids(self, prompt_ids: Any, config: Any) -> Any:
        from agentrl.llm.base import Generation

        text = self.replies.pop(0)
        self.prompts.append(self.tokenizer.decode(list(prompt_ids)))
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return Generation(text, "stop", list(prompt_ids), ids, [-0.5] * len(ids))


ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    },
}


def test_function_calling_in_hermes_format_round_trips_through_openais_client(tmp_path: Path) -> None:
    import openai

    from agentrl.llm.tiny import build_tiny_model

    model = ScriptedModel(
        build_tiny_model(tmp_path / "tiny"),
        ['I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>', "It is 5."],
    )
    recorder = CallRecorder()
    recorder.open("ep-t")
    with serve_model(model, recorder=recorder) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", default_headers={EPISODE_HEADER: "ep-t"})
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 2 + 3?"}]
        first = client.chat.completions.create(model="m", messages=messages, tools=[ADD])  # type: ignore[arg-type]
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls" and choice.message.content == "I will add."
        call = choice.message.tool_calls[0]  # type: ignore[index]
        assert call.function.name == "add" and json.loads(call.function.arguments) == {"a": 2, "b": 3}
        messages += [
            {"role": "assistant", "content": choice.message.content, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "5"},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=[ADD])  # type: ignore[arg-type]
        assert second.choices[0].message.content == "It is 5." and not second.choices[0].message.tool_calls
    # The template (the tiny model's knows no tools) got Hermes's text: the signatures, the call, the result.
    assert '"name": "add"' in model.prompts[0] and "<tools>" in model.prompts[0]
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>' in model.prompts[1]
    assert "<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>" in model.prompts[1]
    calls = recorder.close("ep-t")
    assert len(calls) == 2 and calls[1].prompt_ids[: len(calls[0].prompt_ids)] == calls[0].prompt_ids


def test_a_malformed_tool_call_fails_the_episode_at_the_endpoint(tmp_path: Path) -> None:
    from agentrl.llm.tiny import build_tiny_model

    def asks_with_tools(env: Any, client: Any, model: str) -> None:
        env.reset()
        try:
            client.chat.completions.create(model=model, messages=[{"role": "user", "content": "2+3?"}], tools=[ADD])
        except Exception:
            pass  # a harness that swallows the error: the episode still fails, with the endpoint's reason
        env.step("aaaa")

    scripted = ScriptedModel(build_tiny_model(tmp_path / "tiny"), ["<tool_call>\n{add(2, 3)}\n</tool_call>"])
    engine = HarnessEngine(
        lambda: gym.make("AgentRL/Letter-v0"), asks_with_tools, scripted, RolloutConfig(num_envs=1, keep_failed=True)
    )
    try:
        [failed] = engine.run([RolloutRequest(seed=0)])
    finally:
        engine.close()
    assert failed.status == "failed" and "the model's tool call is malformed: tool call 0 is not JSON" in str(
        failed.failure
    )
    # Outside training, an unparsable call stays text, as vLLM answers it.
    scripted.replies = ["<tool_call>{add}</tool_call>"]
    with serve_model(scripted) as server:
        body = {"messages": [{"role": "user", "content": "2+3?"}], "tools": [ADD]}
        status, reply = _post(server.base_url + "/chat/completions", body)
    assert status == 200 and reply["choices"][0]["message"]["content"] == "<tool_call>{add}</tool_call>"


def _oracle_harness(env: Any, client: Any, model: str) -> None:
    env.reset()
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
        done = terminated or truncated


def _quits_early(env: Any, client: Any, model: str) -> None:
    env.reset()


def test_agentrl_bench_runs_a_harness_and_scores_it_as_an_agent(tmp_path: Path, backend: Any) -> None:
    from agentrl.agents.registry import AgentSpec
    from agentrl.bench.runner import BenchConfig, run_bench

    def bench(harness: Any, name: str) -> list[dict[str, Any]]:
        spec = AgentSpec(
            "agentrl.agents.harness:HarnessAgent",
            backend="transformers",
            backend_options={"model_path": str(backend.model_path)},
            agent_options={"harness": harness},
        )
        out = tmp_path / name
        run_bench(BenchConfig(["AgentRL/SQL-v0"], spec, out, episodes=3, progress=False, report=False))
        return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]

    oracle = bench(f"{__name__}:_oracle_harness", "oracle")
    assert [r["reward"] for r in oracle] == [1.0, 1.0, 1.0] and not any(r["error"] for r in oracle)
    assert [step["role"] for step in oracle[0]["trajectory"]] == ["env", "agent", "env"]
    early = bench(f"{__name__}:_quits_early", "early")
    assert all("returned before the episode ended" in r["error"] for r in early)


@pytest.mark.parametrize(
    "harness", ["examples.harness_openai:run_episode", f"{__name__}:_async_plain"], ids=["sync", "async"]
)
def test_a_benched_harness_reports_the_tokens_its_calls_spent(tmp_path: Path, backend: Any, harness: str) -> None:
    """The bench's token columns count what the harness's calls got back in ``usage`` (they were 0)."""
    from agentrl.agents.registry import AgentSpec
    from agentrl.bench.runner import BenchConfig, run_bench

    spec = AgentSpec(
        "agentrl.agents.harness:HarnessAgent",
        backend="transformers",
        backend_options={"model_path": str(backend.model_path)},
        agent_options={"harness": harness},
    )
    out = tmp_path / "bench"
    run_bench(BenchConfig(["AgentRL/Letter-v0"], spec, out, episodes=2, progress=False, report=False))
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert not any(row["error"] for row in rows), rows
    for row in rows:
        # Letter-v0 is one turn: one call, its prompt the observation in the chat template, at most 64 new tokens
        assert row["turns"] == 1 and row["prompt_tokens"] > 5 and 0 < row["completion_tokens"] <= 64, row
        assert row["tokens"] == row["prompt_tokens"] + row["completion_tokens"]
