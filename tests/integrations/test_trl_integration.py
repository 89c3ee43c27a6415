"""TRL's GRPOTrainer trains on an AgentRL env through ``agentrl.integrations.trl`` (two real steps)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.installed import skip_module_unless_installed

skip_module_unless_installed("torch", "transformers", "datasets", "trl")

import torch  # noqa: E402

from agentrl.integrations.trl import AgentRLRollout, env_reward  # noqa: E402
from agentrl.llm.tiny import build_tiny_model  # noqa: E402

pytestmark = pytest.mark.timeout(600)

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def distinct_token_share(completion_ids: list[list[int]], **kwargs: Any) -> list[float]:
    """The share of distinct tokens in a completion: a reward that differs between samples.

    A random tiny model never solves a problem, so every env reward is 0 and GRPO's advantages
    vanish; this second reward gives the update a direction so that the weights move. (TRL pops
    ``env_mask`` before the reward functions, so it sees the whole completion, env replies included.)
    """
    return [len(set(ids)) / len(ids) for ids in completion_ids]


def test_env_reward_reads_the_extra_field() -> None:
    assert env_reward(["p", "q"], ["a", "b"], env_reward=[1, 0.5], env_turns=[2, 1]) == [1.0, 0.5]


def test_dataset_maps_prompts_to_seeds(tmp_path: Path) -> None:
    rollout = AgentRLRollout("AgentRL/TIRMath-v0", str(tmp_path), env_kwargs={"max_turns": 2})
    data = rollout.dataset(3, seed=10)
    assert data["env_seed"] == [10, 11, 12]
    prompt = data[0]["prompt"]
    assert [m["role"] for m in prompt] == ["system", "user"]
    assert "boxed" in prompt[1]["content"]
    assert all(t.startswith("tirmath/") for t in data["task_id"])
    with pytest.raises(KeyError):
        rollout([[{"role": "user", "content": "not from the dataset"}]], object())
    rollout.close()


class _FakeTrainer:
    """Just enough of a GRPOTrainer for a rollout call (no training)."""

    def __init__(self, model_path: Path) -> None:
        import transformers
        from accelerate import Accelerator

        build_tiny_model(model_path)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(model_path)
        self.accelerator = Accelerator(cpu=True)
        self.args = type("Args", (), {"temperature": 1.0, "top_p": 1.0})()
        self.max_completion_length = 40
        self.state = type("State", (), {"global_step": 0})()


def test_rollout_shapes_and_cut(tmp_path: Path) -> None:
    trainer = _FakeTrainer(tmp_path / "tiny")
    with AgentRLRollout(
        "AgentRL/TIRMath-v0", None, num_envs=4, max_new_tokens=8, env_kwargs={"max_turns": 2}, sampling_seed=0
    ) as rollout:
        prompts = list(rollout.dataset(2)["prompt"])
        prompts = [prompts[0], prompts[0], prompts[1], prompts[1]]  # what TRL's RepeatSampler passes
        out = rollout(prompts, trainer)
        assert {len(v) for v in out.values()} == {4}
        for ids, mask, logps in zip(out["completion_ids"], out["env_mask"], out["logprobs"], strict=True):
            assert len(ids) == len(mask) == len(logps) <= 40
            assert all(lp == 0.0 for lp, m in zip(logps, mask, strict=True) if not m)
        traj = rollout.last_trajectories
        assert traj is not None and traj[0] is not None
        assert out["prompt_ids"][0] == traj[0].token_ids[: traj[0].prompt_length]
        # The two copies of a prompt reset to the same task; the groups differ.
        assert out["prompt_ids"][0] == out["prompt_ids"][1] != out["prompt_ids"][2]
        assert rollout.stats["cut"] > 0  # 2 turns of 8 tokens plus an env reply exceed 40 tokens
        assert rollout.stats["weight_syncs"] == 1


@pytest.mark.parametrize("where", ["in_process", "served"])
def test_grpo_trainer_two_steps_on_tirmath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """TRL's GRPOTrainer, two steps; "served": the envs are an agentrl serve-env server's (OpenEnv's shape)."""
    from trl import GRPOConfig, GRPOTrainer

    model_path = build_tiny_model(tmp_path / "tiny", family="qwen2")
    env_kwargs: dict[str, Any] = {"max_turns": 2}
    server = None
    if where == "served":
        pytest.importorskip("websockets", reason="websockets is missing: pip install 'agentrl-gym[serve]'")
        from agentrl.serving.env_server import serve_env

        server = serve_env("AgentRL/TIRMath-v0", {"max_turns": 2}, insecure_loopback=True, max_sessions=16)
        env_kwargs["remote"] = server.base_url
    rollout = AgentRLRollout(
        "AgentRL/TIRMath-v0", str(model_path), num_envs=8, max_new_tokens=12, env_kwargs=env_kwargs
    )
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=256,
        learning_rate=1e-2,
        temperature=1.0,
        beta=0.0,
        report_to="none",
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=str(model_path),
        reward_funcs=[env_reward, distinct_token_share],
        args=args,
        train_dataset=rollout.dataset(8),
        rollout_func=rollout,
    )
    seen_prompts: list[list[Any]] = []
    original_call = AgentRLRollout.__call__

    def spy_rollout(self: AgentRLRollout, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        seen_prompts.append(prompts)
        return original_call(self, prompts, trainer)

    monkeypatch.setattr(AgentRLRollout, "__call__", spy_rollout)
    loss_inputs: list[dict[str, torch.Tensor]] = []
    drift: list[float] = []
    original_loss = trainer._compute_loss

    def spy_loss(model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        loss_inputs.append({k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)})
        if len(loss_inputs) == 1:  # before the first update: the trained model is the one that sampled
            ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
            attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
            with torch.no_grad():
                logps, _, _ = trainer._get_per_token_logps_and_entropies(
                    model, ids, attention, inputs["completion_ids"].size(1)
                )
            mask = (inputs["completion_mask"] * inputs["tool_mask"]).bool()
            sampled = inputs["sampling_per_token_logps"]
            drift.append(float((logps - sampled)[mask].abs().max()))
        return original_loss(model, inputs)

    monkeypatch.setattr(trainer, "_compute_loss", spy_loss)
    before = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    try:
        trainer.train()
    finally:
        rollout.close()
        if server is not None:
            opened = server.app.opened
            server.close()
    if server is not None:
        assert opened >= 1, "the rollout did not use the served envs"

    assert trainer.state.global_step == 2
    # TRL repeats each row num_generations times before the rollout sees it: 4 prompts, 2 distinct.
    assert len(seen_prompts) == 2
    assert all(len(p) == 4 and p[0] == p[1] and p[2] == p[3] and p[0] != p[2] for p in seen_prompts)
    after = trainer.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before), "the weights did not change"
    # The env mask reached the loss as TRL's tool_mask: env tokens inside the completion are excluded.
    assert loss_inputs and all("tool_mask" in x for x in loss_inputs)
    for x in loss_inputs:
        env_tokens = (x["completion_mask"] == 1) & (x["tool_mask"] == 0)
        assert env_tokens.any(), "no env token in the completions: the episodes were not multi-turn"
        assert (x["completion_mask"] * x["tool_mask"]).sum() < x["completion_mask"].sum()
    # TRL scored exactly the tokens we sampled: its logprobs of them match the sampler's.
    assert drift and drift[0] < 1e-3, drift
    assert rollout.stats["episodes"] == 8 and rollout.stats["failed"] == 0
    assert rollout.stats["weight_syncs"] == 2  # once per optimizer step
    logged = [h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]
    assert len(logged) == 2
    assert all(h["env/turns"] == 2.0 for h in logged)


class _FlakyEnv:
    """A text env whose ``step`` raises for seed 1 (a crashing tool); seed 0 plays two turns."""

    metadata: dict[str, Any] = {}

    def __init__(self) -> None:
        import gymnasium as gym

        self.unwrapped = self
        self.action_space = gym.spaces.Text(1000)
        self.seed_ = 0
        self.turn = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        """Start task ``seed``."""
        self.seed_, self.turn = int(seed or 0), 0
        return f"task {self.seed_}: say something", {"task_id": f"flaky/{self.seed_}"}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """Answer a turn; seed 1 crashes."""
        if self.seed_ == 1:
            raise RuntimeError("the tool crashed")
        self.turn += 1
        return "go on", 0.5, self.turn >= 2, False, {}

    def close(self) -> None:
        """Nothing to free."""


def test_failed_episode_is_an_empty_masked_row(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    trainer = _FakeTrainer(tmp_path / "tiny")
    with AgentRLRollout(_FlakyEnv, None, num_envs=2, max_new_tokens=4, retries=1) as rollout:
        prompts = list(rollout.dataset(2)["prompt"])
        with caplog.at_level("WARNING", logger="agentrl.integrations.trl"):
            out = rollout([prompts[0], prompts[0], prompts[1], prompts[1]], trainer)
        assert out["env_failed"] == [False, False, True, True]
        assert out["env_reward"] == [1.0, 1.0, 0.0, 0.0]
        assert out["env_turns"] == [2, 2, 0, 0]
        eos = trainer.model.config.eos_token_id
        for i in (2, 3):
            assert out["completion_ids"][i] == [eos] and out["env_mask"][i] == [0] and out["logprobs"][i] == [0.0]
            assert out["prompt_ids"][i]  # the prompt still tokenised, so TRL's padding works
        assert rollout.stats["failed"] == 2
        assert "failed after 2 tries" in caplog.text and "the tool crashed" in caplog.text
        # The generation model holds the trainer's weights.
        synced = rollout.backend.model.state_dict()
        assert all(torch.equal(v, synced[k]) for k, v in trainer.model.state_dict().items())
