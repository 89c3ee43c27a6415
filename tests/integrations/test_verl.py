"""AgentRL episodes in verl's multi-turn rollout: verl's own ``AgentLoopWorker`` runs the ``agentrl`` agent loop.

Everything on the rollout side is verl's own code: its Hydra config (``verl/trainer/config/ppo_trainer.yaml``),
``AgentLoopWorker.generate_sequences`` (the call verl's trainer makes each step), its Continuous Token builder, its
``LLMServerClient`` and ``GlobalRequestLoadBalancer`` as Ray actors, and its post-processing into the ``DataProto``
the trainer consumes. The one stand-in is the rollout server: a tiny Transformers model behind verl's server
interface (``TransformersTokenServer``) instead of vLLM, which needs a GPU.

The checks are the ones verl's trainer relies on: ``rm_scores`` carry each episode's return (replaying the sampled
replies in a fresh env gives the same return), ``response_mask`` is 1 exactly on sampled tokens and 0 on the env's
observations, and ``rollout_log_probs`` equal the model's own log-probabilities of that exact token sequence (so
no text was re-tokenized on the way).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from tests.installed import skip_module_unless_installed

# found, not imported: verl takes seconds to import in every test worker; the tests import it
skip_module_unless_installed(
    "verl", reason="verl is missing: pip install 'agentrl-gym[verl]' && pip install --no-deps verl==0.9.1"
)
skip_module_unless_installed("ray", reason="verl's rollout client talks to Ray actors: pip install 'agentrl-gym[ray]'")

LETTER = {"turns": 2, "reply_chars": 8}
PROMPT_LENGTH, RESPONSE_LENGTH = 256, 192


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentrl.llm.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("verl") / "tiny")


@pytest.fixture(scope="module")
def rollout(tiny_model: Path) -> Any:
    """verl's AgentLoopWorker with its LLMServerClient, load balancer and one CPU rollout server (Ray actors)."""
    import ray

    from agentrl.integrations.verl import local_rollout_worker, write_agent_loop_config

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        # The loop is named through the config file a cluster's workers read, as in a real verl run.
        loops = write_agent_loop_config(tiny_model.parent / "agent_loops.yaml")
        yield local_rollout_worker(
            str(tiny_model),
            prompt_length=PROMPT_LENGTH,
            response_length=RESPONSE_LENGTH,
            max_new_tokens=48,
            overrides=[f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}"],
        )
    finally:
        ray.shutdown()


def segments(mask: list[int]) -> list[tuple[int, int]]:
    """The [start, end) runs of 1s in a mask."""
    runs, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            runs.append((start, i))
            start = None
    return runs


def replay(env_id: str, seed: int, replies: list[str], **make_kwargs: Any) -> tuple[float, list[str]]:
    """The return of ``replies`` played in a fresh env, and the observations after each."""
    env = gym.make(env_id, **make_kwargs)
    try:
        env.reset(seed=seed)
        total, observations = 0.0, []
        for reply in replies:
            observation, reward, terminated, truncated, _ = env.step(reply)
            total += float(reward)
            observations.append(str(observation))
            if terminated or truncated:
                break
        return total, observations
    finally:
        env.close()


@pytest.mark.timeout(600)
def test_verls_worker_plays_agentrl_episodes_in_process_and_served(
    rollout: Any, tiny_model: Path, tmp_path: Path
) -> None:
    import pandas as pd
    import torch
    from transformers import AutoModelForCausalLM
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from agentrl.integrations.verl import dataset_rows, episode_spec
    from agentrl.serving.env_server import serve_env

    worker = rollout
    with serve_env("AgentRL/Letter-v0", LETTER, insecure_loopback=True, max_sessions=4) as served:
        system = "Reply with letters."
        rows = dataset_rows("AgentRL/Letter-v0", [0, 1, 2], system_prompt=system, make_kwargs=LETTER)
        rows += dataset_rows(
            "AgentRL/Letter-v0", [3, 4], system_prompt=system, remote=served.base_url, make_kwargs=LETTER
        )
        # The rows go the way verl's trainer takes them: a parquet file, its RLHFDataset, its collate_fn.
        pd.DataFrame(rows).to_parquet(tmp_path / "train.parquet")
        dataset = RLHFDataset([str(tmp_path / "train.parquet")], worker.tokenizer, worker.config.data)
        batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
        out = asyncio.run(worker.generate_sequences(batch))
        assert served.app.opened == 2  # the two served rows were played on the server, one session each

    batch = out.batch
    assert set(batch.keys()) >= {"prompts", "responses", "response_mask", "rm_scores", "rollout_log_probs"}
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    tokenizer = worker.tokenizer
    returns, turns = [], []
    for i, row in enumerate(rows):
        spec = episode_spec(row)
        mask = batch["response_mask"][i].tolist()
        responses = batch["responses"][i].tolist()
        runs = segments(mask)
        assert 1 <= len(runs) <= LETTER["turns"]
        turns.append(len(runs))
        replies = [tokenizer.decode(responses[a:b], skip_special_tokens=True) for a, b in runs]
        # rm_scores hold the episode's return on the last response token, as verl's reward path reads it.
        score = float(batch["rm_scores"][i].sum())
        total, observations = replay("AgentRL/Letter-v0", spec["seed"], replies, **LETTER)
        assert score == pytest.approx(total)
        # The env's observation between two replies is in the sequence, as a user turn, with mask 0.
        if len(runs) == 2:
            between = tokenizer.decode(responses[runs[0][1] : runs[1][0]])
            assert f"<|im_start|>user\n{observations[0]}<|im_end|>" in between
        returns.append(score)
        # Token exactness: the model's log-probabilities of this exact sequence equal what the server sampled with.
        kept = batch["attention_mask"][i][:PROMPT_LENGTH].bool()
        prompt = batch["prompts"][i][kept].tolist()
        length = int(batch["attention_mask"][i][PROMPT_LENGTH:].sum())
        ids = torch.tensor([prompt + responses[:length]])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].float()
        logprobs = torch.log_softmax(logits[:-1], dim=-1).gather(1, ids[0, 1:, None])[:, 0]
        sampled = torch.tensor([j for j in range(length) if mask[j]])
        trainer_side = logprobs[len(prompt) - 1 + sampled]
        recorded = batch["rollout_log_probs"][i][sampled]
        assert float((trainer_side - recorded).abs().max()) < 1e-4
    assert 2 in turns, f"no two-turn episode to check the observation's mask on: {turns}"
    assert all(0.0 <= r <= LETTER["turns"] for r in returns)
    assert any(r > 0 for r in returns), f"a random tiny model should hit some target letters; returns {returns}"


def test_a_row_without_its_episode_names_the_fix() -> None:
    from agentrl.integrations.verl import episode_spec

    with pytest.raises(ValueError, match=r'extra_info: \{"agentrl": \{"env_id"'):
        episode_spec({"extra_info": {"index": 0}})
    with pytest.raises(ValueError, match="unknown keys \\['sede'\\]"):
        episode_spec({"extra_info": {"agentrl": {"env_id": "AgentRL/SQL-v0", "sede": 1}}})


def test_an_env_without_text_actions_is_refused_with_the_text_mode_named() -> None:
    from agentrl.integrations.verl import _make_env, episode_spec

    spec = episode_spec({"agentrl": {"env_id": "AgentRL/FlashGame-Catch-v0"}})
    with pytest.raises(ValueError, match=r"not text.*action_mode"):
        _make_env(spec)
