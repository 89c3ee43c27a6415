"""The rollout engine: token/mask invariants on every registered text env, groups, faults, staleness."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gymnasium as gym
import torch

import agentrl
from agentrl.core.spaces import UnicodeText
from agentrl.llm.base import BackendError, Generation, GenerationConfig
from agentrl.llm.tiny import TINY_CHAT_TEMPLATES, build_tiny_model
from agentrl.llm.transformers_backend import TransformersBackend
from agentrl.rollout import (
    ChatTokenizer,
    RolloutConfig,
    RolloutEngine,
    RolloutRequest,
    TemplateNotIncremental,
    Trajectory,
    group_requests,
)
from agentrl.rollout.errors import RolloutConfigError
from agentrl.rollout.workloads import FaultyEnv, LatencyEnv

pytestmark = pytest.mark.timeout(300)

FAMILIES = ["qwen2", "llama"]
TEXT_ENV_IDS = [spec.env_id for spec in agentrl.registered_domains() if "text" in spec.tags]


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TransformersBackend]]:
    root = tmp_path_factory.mktemp("tiny-rollout")
    made = {
        family: TransformersBackend(build_tiny_model(root / family, family=family), batch_wait_ms=5)
        for family in FAMILIES
    }
    yield made
    for backend in made.values():
        backend.close()


def quick_env(max_turns: int = 3, turns: tuple[int, int] = (1, 3)) -> functools.partial[LatencyEnv]:
    return functools.partial(LatencyEnv, min_turns=turns[0], max_turns=turns[1], min_latency_s=0.0, max_latency_s=0.005)


def assert_exact(trajectory: Trajectory, chat: ChatTokenizer, backend: TransformersBackend) -> None:
    """Every invariant a trainer relies on, including that the logprobs are the model's own."""
    trajectory.validate()
    assert trajectory.turns, trajectory.failure
    # Decoding the ids reproduces the conversation; only the template's close of the last turn is missing.
    decoded = chat.decode(trajectory.token_ids)
    rendered = chat.render(trajectory.messages)
    assert rendered.startswith(decoded)
    last = trajectory.turns[-1].completion_span
    assert rendered[len(decoded) :] == chat.closing_text(trajectory.token_ids[last[0] : last[1]])
    # The masked-in tokens are exactly the completions, which decode to the assistant messages.
    assistant = [m["content"] for m in trajectory.messages if m["role"] == "assistant"]
    assert len(assistant) == len(trajectory.turns)
    for turn, content in zip(trajectory.turns, assistant, strict=True):
        start, end = turn.completion_span
        assert chat.completion_text(trajectory.token_ids[start:end]) == content
    assert sum(trajectory.loss_mask) == sum(e - s for s, e in (t.completion_span for t in trajectory.turns))
    # The logprobs are what the model gives these very tokens in one forward pass over the whole
    # sequence (temperature 1, no top-p): so the ids are exactly the ones it sampled from.
    with torch.inference_mode():
        logits = backend.model(input_ids=torch.tensor([trajectory.token_ids])).logits[0].float()
    logp = torch.log_softmax(logits[:-1], dim=-1)
    targets = torch.tensor(trajectory.token_ids[1:])
    recomputed = logp[torch.arange(len(targets)), targets]
    for turn in trajectory.turns:
        start, end = turn.completion_span
        got = torch.tensor(trajectory.logprobs[start:end])
        want = recomputed[start - 1 : end - 1]
        assert torch.allclose(got, want, atol=2e-3), (got - want).abs().max()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("env_id", TEXT_ENV_IDS)
def test_token_and_mask_invariants_on_every_text_env(env_id: str, family: str, backends) -> None:
    backend = backends[family]
    chat = ChatTokenizer.for_backend(backend)
    config = RolloutConfig(num_envs=2, max_new_tokens=24, temperature=1.0, sampling_seed=1, max_turns=3)
    with RolloutEngine(functools.partial(gym.make, env_id), backend, config=config) as engine:
        trajectories = engine.run([RolloutRequest(seed=s) for s in range(3)])
    assert len(trajectories) == 3
    for trajectory in trajectories:
        assert trajectory.ok, trajectory.failure
        assert trajectory.turns[-1].terminated or trajectory.turns[-1].truncated
        assert trajectory.task_id
        assert_exact(trajectory, chat, backend)
    # The first prompt is the env's system prompt and task, tokenised once.
    first = trajectories[0]
    assert first.messages[0]["role"] == "system"
    assert chat.decode(first.token_ids[: first.prompt_length]) == chat.render(
        first.messages[:2], add_generation_prompt=True
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_stop_strings_and_length_cuts_keep_the_tokens_exact(family: str, backends) -> None:
    # Stop strings that gibberish hits often end turns mid-token; max_new_tokens=3 cuts others.
    backend = backends[family]
    chat = ChatTokenizer.for_backend(backend)
    for max_new in (3, 40):
        config = RolloutConfig(
            num_envs=3, max_new_tokens=max_new, temperature=1.0, sampling_seed=7, max_turns=4, stop=("e", "t")
        )
        reasons = set()
        with RolloutEngine(quick_env(turns=(2, 4)), backend, config=config) as engine:
            for trajectory in engine.run([RolloutRequest(seed=s) for s in range(3)]):
                assert_exact(trajectory, chat, backend)
                for turn in trajectory.turns:
                    span = trajectory.token_ids[turn.completion_span[0] : turn.completion_span[1]]
                    text = chat.completion_text(span)
                    ended_by_string = turn.finish_reason == "stop" and span[-1] not in chat.stop_token_ids
                    reasons.add("string" if ended_by_string else turn.finish_reason)
                    if ended_by_string:  # the action stops before the string; the tokens keep it
                        assert turn.action != text and text.startswith(turn.action)
        assert "string" in reasons and (max_new == 40 or "length" in reasons), reasons


def test_chat_tokenizer_glue_after_eos_and_after_a_cut(backends) -> None:
    chat = ChatTokenizer.for_backend(backends["qwen2"])
    im_end = chat.tokenizer.convert_tokens_to_ids("<|im_end|>")
    said = chat.encode("x = 1")
    after_eos = chat.decode(chat.observation_ids("out", [*said, im_end]))
    after_cut = chat.decode(chat.observation_ids("out", said))
    assert after_eos == "\n<|im_start|>user\nout<|im_end|>\n<|im_start|>assistant\n"
    assert after_cut == "<|im_end|>" + after_eos
    assert chat.decode(chat.close_ids([*said, im_end])) == "\n"
    assert chat.decode(chat.close_ids(said)) == "<|im_end|>\n"
    llama = ChatTokenizer.for_backend(backends["llama"])
    eot = llama.tokenizer.convert_tokens_to_ids("<|eot_id|>")
    glue = llama.decode(llama.observation_ids("out", [*llama.encode("hi"), eot]))
    assert (
        glue
        == "<|start_header_id|>user<|end_header_id|>\n\nout<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_a_template_that_rewrites_earlier_turns_is_refused(backends) -> None:
    tokenizer = backends["qwen2"].tokenizer
    original = tokenizer.chat_template
    # Like reasoning templates that strip earlier assistant turns: the last one is written differently.
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'assistant' and not loop.last %}<|im_start|>assistant\n"
        "(hidden)<|im_end|>\n{% else %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    try:
        with pytest.raises(TemplateNotIncremental, match="rewrites"):
            ChatTokenizer(tokenizer).observation_ids("obs", [1, 2])
    finally:
        tokenizer.chat_template = original
    assert original == TINY_CHAT_TEMPLATES["qwen2"]


def test_groups_start_identically_and_sample_differently(backends) -> None:
    config = RolloutConfig(num_envs=6, max_new_tokens=16, temperature=1.0, sampling_seed=3, max_turns=2)
    with RolloutEngine(functools.partial(gym.make, "AgentRL/TIRMath-v0"), backends["qwen2"], config=config) as engine:
        trajectories = engine.run(group_requests([10, 11], group_size=3))
    assert [(t.request.group_id, t.request.index) for t in trajectories] == [(g, i) for g in (0, 1) for i in range(3)]
    for group in (0, 1):
        members = [t for t in trajectories if t.request.group_id == group]
        prompts = {tuple(t.token_ids[: t.prompt_length]) for t in members}
        assert len(prompts) == 1 and len({t.task_id for t in members}) == 1
        completions = {tuple(t.token_ids[t.prompt_length : t.turns[0].completion_span[1]]) for t in members}
        assert len(completions) == 3  # same start, different samples
    assert trajectories[0].task_id != trajectories[3].task_id


def test_async_and_lockstep_collect_the_same_episodes(backends) -> None:
    requests = [RolloutRequest(seed=s) for s in range(6)]
    results = {}
    for mode in ("async", "lockstep"):
        config = RolloutConfig(num_envs=3, mode=mode, max_new_tokens=8, temperature=0.0, max_turns=8)
        with RolloutEngine(quick_env(turns=(1, 5)), backends["qwen2"], config=config) as engine:
            results[mode] = engine.run(requests)
    for a, b in zip(results["async"], results["lockstep"], strict=True):
        assert a.request == b.request
        assert len(a.turns) == len(b.turns) == a.reset_info["turns"]
    # Greedy decoding: identical token ids whatever the schedule (batching noise cannot flip an argmax).
    assert [a.token_ids for a in results["async"]] == [b.token_ids for b in results["lockstep"]]


@pytest.mark.parametrize("mode", ["async", "lockstep"])
def test_faults_are_isolated_and_never_deadlock(mode: str, backends) -> None:
    config = RolloutConfig(num_envs=4, mode=mode, max_new_tokens=4, step_timeout_s=0.5, keep_failed=True)
    envs = {
        "hang": functools.partial(FaultyEnv, fault="hang", hang_s=20.0, turns=2, only_seeds=(1,)),
        "raise": functools.partial(FaultyEnv, fault="step_raises", turns=2, only_seeds=(1,)),
        "env_error": functools.partial(FaultyEnv, fault="env_error", turns=2, only_seeds=(1,)),
        "reset": functools.partial(FaultyEnv, fault="reset_raises", turns=2, only_seeds=(1,)),
    }
    for kind, env_fn in envs.items():
        with RolloutEngine(env_fn, backends["qwen2"], config=config) as engine:
            trajectories = engine.run([RolloutRequest(seed=s) for s in range(4)])
        assert [t.request.seed for t in trajectories] == [0, 1, 2, 3]
        bad = trajectories[1]
        assert bad.status == "failed"
        expected = {
            "hang": "timed out after 0.5s",
            "raise": "injected fault in step",
            "env_error": "the env failed mid-episode (done_reason env_error): FaultyEnv: injected crash",
            "reset": "injected fault in reset",
        }
        assert expected[kind] in (bad.failure or "")
        assert all(t.ok and len(t.turns) == 2 for i, t in enumerate(trajectories) if i != 1)


def test_an_env_that_cannot_be_built_fails_every_request_with_the_reason(backends) -> None:
    config = RolloutConfig(num_envs=2, max_new_tokens=4, keep_failed=True, retries=1)
    with RolloutEngine(functools.partial(FaultyEnv, fault="construct_raises"), backends["qwen2"], config=config) as e:
        trajectories = e.run([RolloutRequest(seed=s) for s in range(3)])
        assert e.stats["retried"] == 3
    assert all(t.status == "failed" and "building the env failed" in (t.failure or "") for t in trajectories)
    assert all(t.attempts == 2 for t in trajectories)


class FlakyPolicy:
    """Wraps a backend: the first ``failures`` calls raise BackendError; can bump a policy version."""

    def __init__(self, backend: TransformersBackend, failures: int = 0) -> None:
        self.backend, self.failures, self.calls = backend, failures, 0
        self.tokenizer = backend.tokenizer
        self.stop_token_ids = backend.stop_token_ids
        self.engine: RolloutEngine | None = None

    async def agenerate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        self.calls += 1
        if self.calls <= self.failures:
            raise BackendError("flaky: server restarting")
        if self.engine is not None:
            self.engine.policy_version += 1  # a trainer updating the weights between turns
        return await self.backend.agenerate_ids(prompt_ids, config)


def test_backend_errors_are_retried_then_succeed(backends) -> None:
    policy = FlakyPolicy(backends["qwen2"], failures=2)
    config = RolloutConfig(num_envs=2, max_new_tokens=4, retries=1, max_turns=2)
    with RolloutEngine(quick_env(), policy, config=config) as engine:
        trajectories = engine.run([RolloutRequest(seed=s) for s in range(2)])
        assert engine.stats["failed"] == 2 and engine.stats["retried"] == 2
    assert all(t.ok and t.attempts == 2 for t in trajectories)


def test_backend_errors_without_retries_drop_the_trajectory(backends) -> None:
    policy = FlakyPolicy(backends["qwen2"], failures=100)
    with RolloutEngine(quick_env(), policy, config=RolloutConfig(num_envs=2, max_new_tokens=4)) as engine:
        assert engine.run([RolloutRequest(seed=s) for s in range(3)]) == []
        assert engine.stats["failed"] == 3


def test_stale_trajectories_fail_and_versions_are_recorded(backends) -> None:
    policy = FlakyPolicy(backends["qwen2"])
    config = RolloutConfig(num_envs=1, max_new_tokens=4, max_staleness=1, keep_failed=True)
    with RolloutEngine(quick_env(turns=(4, 4)), policy, config=config) as engine:
        policy.engine = engine
        trajectory = engine.run([RolloutRequest(seed=0)])[0]
    assert trajectory.status == "failed" and trajectory.failure is not None
    assert trajectory.failure.startswith("stale")
    assert [t.policy_version for t in trajectory.turns] == [1, 2]
    with RolloutEngine(quick_env(turns=(3, 3)), policy, config=RolloutConfig(num_envs=1, max_new_tokens=4)) as engine:
        policy.engine = engine
        trajectory = engine.run([RolloutRequest(seed=0)])[0]
    assert trajectory.ok and trajectory.staleness == 0 and trajectory.turns[-1].policy_version == 3


def test_context_limit_truncates_and_ends_with_the_policy(backends) -> None:
    backend = backends["qwen2"]
    chat = ChatTokenizer.for_backend(backend)
    config = RolloutConfig(num_envs=1, max_new_tokens=16, temperature=1.0, sampling_seed=0, max_context_tokens=90)
    with RolloutEngine(quick_env(turns=(8, 8)), backend, config=config) as engine:
        trajectory = engine.run([RolloutRequest(seed=0)])[0]
    assert trajectory.ok and len(trajectory.token_ids) <= 90
    assert (
        trajectory.turns[-1].truncated
        and trajectory.turns[-1].observation_span[0] == trajectory.turns[-1].observation_span[1]
    )
    assert_exact(trajectory, chat, backend)


def test_pixel_observations_fail_with_a_clear_reason(backends) -> None:
    config = RolloutConfig(num_envs=1, max_new_tokens=4, keep_failed=True)

    def cartpole_with_text_actions() -> gym.Env[Any, Any]:
        env = gym.make("CartPole-v1")
        env.action_space = UnicodeText(8)  # past the action check: the observation is what is refused here
        return env

    with RolloutEngine(cartpole_with_text_actions, backends["qwen2"], config=config) as engine:
        trajectory = engine.run([RolloutRequest(seed=0)])[0]
    assert trajectory.status == "failed"
    assert "takes text, an (H, W, 3) uint8 image or a dict of them; got a float32 array of shape (4,)" in str(
        trajectory.failure
    )


def test_streaming_yields_as_episodes_finish(backends) -> None:
    async def main() -> list[int]:
        config = RolloutConfig(num_envs=4, max_new_tokens=4, max_turns=8)
        with RolloutEngine(quick_env(turns=(1, 8)), backends["qwen2"], config=config) as engine:
            return [len(t.turns) async for t in engine.astream([RolloutRequest(seed=s) for s in range(8)])]

    lengths = asyncio.run(main())
    assert len(lengths) == 8
    assert lengths[0] < max(lengths)  # short episodes come out first, not in request order


def test_misuse_is_refused_with_the_fix(backends) -> None:
    with pytest.raises(TypeError, match="agenerate_ids"):
        RolloutEngine(quick_env(), object())  # type: ignore[arg-type]
    from agentrl.core.errors import AgentRLError
    from agentrl.rollout.errors import RolloutConfigError, RolloutMisuse

    with pytest.raises(RolloutConfigError, match="mode must be one of") as info:
        RolloutConfig(mode="asyn")
    assert isinstance(info.value, (ValueError, AgentRLError)) and "did you mean 'async'?" in str(info.value)
    with pytest.raises(RolloutConfigError, match="group_size"):
        group_requests([1], group_size=0)
    engine = RolloutEngine(quick_env(), backends["qwen2"], config=RolloutConfig(num_envs=1, max_new_tokens=4))
    engine.close()
    with pytest.raises(RolloutMisuse, match="make a new RolloutEngine"):
        engine.run([RolloutRequest(seed=0)])
    with pytest.raises(ValueError, match="token ids"):
        backends["qwen2"].generate_ids([], GenerationConfig())


def test_trajectories_serialise_to_json(backends) -> None:
    import json

    with RolloutEngine(quick_env(), backends["qwen2"], config=RolloutConfig(num_envs=1, max_new_tokens=4)) as engine:
        trajectory = engine.run([RolloutRequest(seed=0, options={"difficulty": 1})])[0]
    data = json.loads(json.dumps(trajectory.to_dict()))
    assert data["token_ids"] == trajectory.token_ids and data["request"]["options"] == {"difficulty": 1}


def test_one_collection_at_a_time(backends) -> None:
    async def main() -> None:
        with RolloutEngine(
            quick_env(), backends["qwen2"], config=RolloutConfig(num_envs=2, max_new_tokens=4)
        ) as engine:
            first = engine.astream([RolloutRequest(seed=0)])
            await first.__anext__()
            with pytest.raises(RuntimeError, match="one collection at a time"):
                await engine.arun([RolloutRequest(seed=1)])
            await first.aclose()
            assert len(await engine.arun([RolloutRequest(seed=2)])) == 1  # free again

    asyncio.run(main())


class _DiscreteEnv(gym.Env[str, int]):
    """An env whose actions are ints: an LLM policy cannot act in it."""

    metadata: dict[str, Any] = {}

    def __init__(self, action_mode: str = "discrete") -> None:
        self.action_space = gym.spaces.Discrete(3)
        self.observation_space = UnicodeText(64)
        self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        self.resets += 1
        return "go", {}

    def step(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise AssertionError("an LLM policy must never reach step() of a Discrete env")


@pytest.mark.parametrize("mode", ["async", "lockstep"])
def test_an_env_without_text_actions_stops_the_collection_before_any_episode(mode: str, backends) -> None:
    """Before the fix, every rollout failed in turn with InvalidActionType; now the first worker start says why."""
    made: list[_DiscreteEnv] = []

    def make() -> _DiscreteEnv:
        made.append(_DiscreteEnv())
        return made[-1]

    config = RolloutConfig(num_envs=2, max_new_tokens=4, mode=mode, keep_failed=True)
    with RolloutEngine(make, backends["qwen2"], config=config) as engine:
        with pytest.raises(RolloutConfigError, match=r"Discrete\(3\), not text.*--env-kwarg action_mode=text"):
            engine.run(group_requests([0, 1], group_size=2))
    assert made and all(env.resets == 0 for env in made)  # no episode began
