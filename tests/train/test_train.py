"""The trainers learn, resume exactly, and their pieces (losses, advantages, batching) hold their invariants."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from agentrl.envs.toy import LetterEnv
from agentrl.rollout.trajectory import RolloutRequest, Trajectory
from agentrl.train.advantages import SmoothAdvantageStandardizer, gae, group_advantages, length_adaptive_lambda
from agentrl.train.batch import pack_trajectories
from agentrl.train.grpo import GRPOArgs, GRPOTrainer
from agentrl.train.losses import LOSS_TYPES, LossConfig, dcpo_bounds, policy_loss
from agentrl.train.ppo import PPOArgs, PPOTrainer

pytestmark = pytest.mark.timeout(600)


def grpo_args(tmp_path: Path, **overrides) -> GRPOArgs:
    values = dict(
        env_fn=LetterEnv,
        model="tiny",
        output_dir=str(tmp_path / "run"),
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=8,
        learning_rate=1e-3,
        num_envs=32,
        tensorboard=False,
    )
    values.update(overrides)
    return GRPOArgs(**values)


def rises(rewards: list[float]) -> tuple[float, float]:
    start = sum(rewards[:3]) / 3
    end = sum(rewards[-5:]) / 5
    return start, end


# ---------------------------------------------------------------------- learning


@pytest.mark.parametrize("loss_type", ["dapo", "dr_grpo", "gspo", "dcpo"])
def test_grpo_variants_learn_the_toy_env(tmp_path: Path, loss_type: str) -> None:
    """Each loss learns (``grpo`` itself: the guide's line, tests/artifacts/test_readme_training.py); DAPO's run has
    its rollouts overlapped with the updates, so it also shows that overlapped rollouts learn."""
    overlap = loss_type == "dapo"
    with GRPOTrainer(grpo_args(tmp_path, loss_type=loss_type, max_steps=40, overlap_rollouts=overlap)) as trainer:
        history = trainer.train()
    rewards = [m["reward/mean"] for m in history]
    start, end = rises(rewards)
    # A random tiny model writes the letter ~5% of the time; learning drives that up several-fold.
    assert end > start + 0.15 and end > 3 * start, (loss_type, rewards)
    if overlap:
        assert max(m["staleness/mean"] for m in history[1:]) > 0  # later batches were sampled one version behind


@pytest.mark.parametrize("gae_mode", ["decoupled", "length_adaptive"])
def test_ppo_learns_the_multi_turn_toy_env_from_turn_rewards(tmp_path: Path, gae_mode: str) -> None:
    args = PPOArgs(
        env_fn=functools.partial(LetterEnv, turns=2),
        model="tiny",
        output_dir=str(tmp_path / "run"),
        episodes_per_step=32,
        max_new_tokens=8,
        learning_rate=1e-3,
        value_learning_rate=1e-3,
        value_warmup_steps=3,
        gae_mode=gae_mode,
        num_envs=32,
        tensorboard=False,
        max_steps=36,
    )
    with PPOTrainer(args) as trainer:
        history = [trainer.step() for _ in range(36)]
    assert [h["update/policy_frozen"] for h in history[:4]] == [1.0, 1.0, 1.0, 0.0]  # value pretraining
    rewards = [h["reward/mean"] for h in history]
    start, end = rises(rewards)
    assert end > start + 0.15 and end > 3 * start, rewards
    assert history[-1]["value/mean"] > history[0]["value/mean"]  # the critic learned the returns


# ---------------------------------------------------------------------- runs: resume, CLI, LoRA, KL


def test_resume_continues_exactly(tmp_path: Path) -> None:
    common = dict(max_new_tokens=6, group_size=4, prompts_per_step=2, learning_rate=1e-3)
    with GRPOTrainer(grpo_args(tmp_path / "a", max_steps=4, **common)) as trainer:
        straight = trainer.train()
        final = {k: v.clone() for k, v in trainer.run.model.state_dict().items()}
    with GRPOTrainer(grpo_args(tmp_path / "b", max_steps=2, save_every=1, **common)) as trainer:
        trainer.train()
    with GRPOTrainer(grpo_args(tmp_path / "b", max_steps=4, resume=True, **common)) as trainer:
        assert trainer.step_index == 2
        resumed = trainer.train()
        weights = trainer.run.model.state_dict()
    assert [m["reward/mean"] for m in resumed] == [m["reward/mean"] for m in straight[2:]]
    assert [m["loss/policy"] for m in resumed] == [m["loss/policy"] for m in straight[2:]]
    for key, value in final.items():
        assert torch.equal(value, weights[key]), key
    lines = [json.loads(line) for line in (tmp_path / "b" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2, 3, 4]
    assert (tmp_path / "b" / "run" / "curves.png").stat().st_size > 1000


def test_ppo_resume_restores_the_critic(tmp_path: Path) -> None:
    def args(out: Path, steps: int, resume: bool = False) -> PPOArgs:
        return PPOArgs(
            env_fn=LetterEnv,
            model="tiny",
            output_dir=str(out),
            episodes_per_step=4,
            max_new_tokens=4,
            learning_rate=1e-3,
            value_learning_rate=1e-3,
            max_steps=steps,
            save_every=1,
            resume=resume,
            tensorboard=False,
        )

    with PPOTrainer(args(tmp_path / "a", 3)) as trainer:
        trainer.train()
        critic = {k: v.clone() for k, v in trainer.critic.state_dict().items()}
    with PPOTrainer(args(tmp_path / "b", 2)) as trainer:
        trainer.train()
    with PPOTrainer(args(tmp_path / "b", 3, resume=True)) as trainer:
        trainer.train()
        for key, value in trainer.critic.state_dict().items():
            assert torch.equal(value, critic[key]), key


def test_cli_refuses_an_unknown_loss_type_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    """Training TIRMath from the command line and resuming it is the train-text guide's line, run as written by
    tests/artifacts/test_readme_training.py (its steps must run 1, 2 with none twice); here, the refusal."""
    from agentrl.cli import main

    assert main(["train", "grpo", "--loss-type", "nope", "--max-steps", "1"]) == 2
    assert "unknown loss_type 'nope'" in capsys.readouterr().err


def test_lora_and_kl_run_and_sync_merged_weights(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    args = grpo_args(tmp_path, lora_rank=4, kl_coef=0.1, max_steps=2, group_size=4, prompts_per_step=2)
    with GRPOTrainer(args) as trainer:
        before = {k: v.clone() for k, v in trainer.run.backend.model.state_dict().items()}
        metrics = trainer.step()
        after = trainer.run.backend.model.state_dict()
        trainable = sum(p.numel() for p in trainer.run.parameters)
        total = sum(p.numel() for p in trainer.run.model.parameters())
    assert trainable < total / 2  # only the adapters train
    assert metrics["update/kl"] >= 0.0
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all("proj" in k for k in changed)  # merged adapter deltas reached the generation copy


def test_void_turn_filter_and_dynamic_sampling_drop_rows(tmp_path: Path) -> None:
    with GRPOTrainer(grpo_args(tmp_path, max_steps=1, group_size=2, prompts_per_step=2, filter_void_turns=True,
                               dynamic_sampling=True)) as trainer:  # fmt: skip
        made = []
        for group, rewards in enumerate([(1.0, 1.0), (0.0, 1.0)]):
            for index, reward in enumerate(rewards):
                t = Trajectory(RolloutRequest(seed=group, group_id=group, index=index))
                t.append_env([1, 2, 3])
                t.prompt_length = 3
                from agentrl.rollout.trajectory import TurnRecord

                span = t.append_policy([4, 5], [-1.0, -1.0])
                t.turns.append(
                    TurnRecord(
                        span,
                        (span[1], span[1]),
                        "x",
                        "stop",
                        reward,
                        True,
                        False,
                        void_turn=(group == 1 and index == 0),
                        info={},
                        policy_version=0,
                    )
                )
                made.append(t)
        metrics = trainer.update(made)
    # Group 0 has equal rewards (dynamic sampling drops it); in group 1 one trajectory has a void turn.
    assert metrics["update/rows"] == 1.0 and metrics["filter/kept_fraction"] == 0.25


def test_bad_arguments_are_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown loss_type"):
        GRPOArgs(loss_type="ppo2")
    with pytest.raises(ValueError, match="group_size must be at least 2"):
        GRPOArgs(group_size=1)
    with pytest.raises(ValueError, match="gae_mode"):
        PPOArgs(gae_mode="fancy")
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        GRPOTrainer(grpo_args(tmp_path, model=str(tmp_path / "missing")))


# ---------------------------------------------------------------------- pieces


def random_batch(rows: int = 4, width: int = 12, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    mask = torch.zeros(rows, width)
    for r in range(rows):
        mask[r, 4 : 4 + 2 + r * 2] = 1
    return {
        "logprobs": (-torch.rand(rows, width, generator=g)).requires_grad_(),
        "old": -torch.rand(rows, width, generator=g),
        "adv": torch.randn(rows, 1, generator=g).expand(rows, width) * mask,
        "mask": mask,
    }


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_micro_batches_with_global_normalisers_add_up_to_the_full_batch(loss_type: str) -> None:
    b = random_batch()
    config = LossConfig(loss_type, max_completion_length=12)
    full, _ = policy_loss(b["logprobs"], b["old"], b["adv"], b["mask"], config)
    (full_grad,) = torch.autograd.grad(full, b["logprobs"])
    tokens, rows = float(b["mask"].sum()), 4.0
    parts = [[0, 2], [1, 3]]
    total = 0.0
    grad = torch.zeros_like(b["logprobs"])
    for part in parts:
        loss, _ = policy_loss(b["logprobs"][part], b["old"][part], b["adv"][part], b["mask"][part], config,
                              num_tokens=tokens, num_rows=rows)  # fmt: skip
        (g,) = torch.autograd.grad(loss, b["logprobs"])
        total += loss.item()
        grad += g
    assert abs(total - full.item()) < 1e-6
    assert torch.allclose(grad, full_grad, atol=1e-7)


def test_env_tokens_never_get_a_gradient() -> None:
    b = random_batch()
    for loss_type in LOSS_TYPES:
        loss, _ = policy_loss(b["logprobs"], b["old"], b["adv"], b["mask"], LossConfig(loss_type))
        (grad,) = torch.autograd.grad(loss, b["logprobs"])
        assert torch.all(grad[b["mask"] == 0] == 0), loss_type


def test_clipping_and_dcpo_bounds() -> None:
    mask = torch.ones(1, 2)
    logprobs = torch.log(torch.tensor([[1.5, 0.5]])).requires_grad_()
    _, stats = policy_loss(logprobs, torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), mask, LossConfig("grpo"))
    assert float(stats["clip_high_frac"]) == 0.5 and float(stats["clip_low_frac"]) == 0.5
    _, stats = policy_loss(
        logprobs, torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), mask, LossConfig("dapo", clip_high=0.6)
    )
    assert float(stats["clip_high_frac"]) == 0.0  # clip-higher lets the ratio 1.5 through
    low, high = dcpo_bounds(torch.tensor([0.9, 0.1, 0.001]), 0.16, 0.2)
    assert torch.all(low[1:] <= low[:-1]) and torch.all(high[1:] >= high[:-1])  # rarer tokens: wider range
    assert float(high[-1]) == 10.0  # capped


def test_group_advantages_and_sas() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    groups = [0, 0, 0, 1, 1, 1]
    adv = group_advantages(rewards, groups)
    assert torch.allclose(adv[:3], -adv[3:], atol=1e-6) and adv[0] > 1
    assert torch.allclose(group_advantages(torch.ones(4), [0, 0, 1, 1]), torch.zeros(4))
    sas = SmoothAdvantageStandardizer()
    first = sas(torch.tensor([1.0, 0.0, 0.0]), ["q"] * 3)
    second = sas(torch.tensor([0.0, 0.0, 0.0]), ["q"] * 3)
    assert torch.all(first.sign() == torch.tensor([1.0, -1.0, -1.0]))
    assert torch.all(second < 0) and torch.all(second.abs() < first.abs().max())  # history still gives signal
    restored = SmoothAdvantageStandardizer()
    restored.load_state_dict(sas.state_dict())
    assert restored.stats == sas.stats


def reference_gae(rewards: list[float], values: list[float], gamma: float, lam: float) -> list[float]:
    out, running = [0.0] * len(rewards), 0.0
    for t in reversed(range(len(rewards))):
        next_value = values[t + 1] if t + 1 < len(values) else 0.0
        running = rewards[t] + gamma * next_value - values[t] + gamma * lam * running
        out[t] = running
    return out


def test_gae_skips_env_tokens_and_matches_the_textbook() -> None:
    # Policy tokens at 1, 2, 4, 5 (3 is an env token): GAE runs over the four steps only.
    mask = torch.tensor([[0.0, 1, 1, 0, 1, 1]])
    rewards = torch.tensor([[0.0, 0, 0.5, 0, 0, 1]])
    values = torch.tensor([[0.0, 0.1, 0.2, 9.9, 0.3, 0.4]])
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.8)
    expected = reference_gae([0, 0.5, 0, 1], [0.1, 0.2, 0.3, 0.4], 0.9, 0.8)
    assert torch.allclose(adv[0, [1, 2, 4, 5]], torch.tensor(expected), atol=1e-6)
    assert adv[0, 3] == 0 and adv[0, 0] == 0
    assert torch.allclose(ret, (adv + values) * mask)
    lam = length_adaptive_lambda(torch.tensor([4.0, 400.0]), alpha=0.05)
    adv2, _ = gae(rewards.repeat(2, 1), values.repeat(2, 1), mask.repeat(2, 1), lam=lam)
    assert not torch.allclose(adv2[0], adv2[1])  # per-row lambda


def test_pack_trajectories_rejects_rows_without_a_prompt() -> None:
    t = Trajectory(RolloutRequest())
    t.append_policy([1], [-0.5])
    with pytest.raises(ValueError, match="prompt"):
        pack_trajectories([t], pad_id=0)


def test_overlapped_rollouts_drop_stale_episodes(tmp_path: Path) -> None:
    """That overlapped rollouts learn is checked by the DAPO run of test_grpo_variants_learn_the_toy_env."""
    assert grpo_args(tmp_path, overlap_rollouts=True).recompute_old_logprobs is False  # the batch may lag a version
    with GRPOTrainer(grpo_args(tmp_path / "strict", max_steps=3, overlap_rollouts=True, max_staleness=0)) as trainer:
        history = trainer.train()
    assert history[0]["filter/stale"] == 0  # the first batch is collected in step
    # Prefetched episodes that started before the previous update finished lag one version: dropped.
    assert sum(m["filter/stale"] for m in history[1:]) > 0


def test_overlap_benchmark_measures_real_overlap() -> None:
    from benchmarks.train_overlap import run

    lines: list[str] = []
    report = run(steps=3, updates=1, repeats=1, log=lines.append)
    assert set(report) == {"in_step_s", "overlapped_s", "speedup", "in_step_concurrent_s", "overlapped_concurrent_s"}
    assert report["speedup"] == pytest.approx(report["in_step_s"] / report["overlapped_s"])
    # Collecting in step never runs a collection during an update; overlapping does (the prefetch of
    # the next batch, started before this update, takes >= 40 ms of env latency, the update far less
    # to start). The speedup itself depends on the machine's load and is not asserted.
    assert report["in_step_concurrent_s"] == 0.0
    assert report["overlapped_concurrent_s"] > 0.0, lines
    assert any("overlapped" in line for line in lines)


def _rendezvous(trainer, timeout_s: float = 60.0) -> dict[str, list]:
    """Make each prefetched collection and the update it should overlap wait for each other.

    The collection of step ``s + 1`` (on the collector thread) waits until the update of step ``s``
    has started, and that update waits until the collection has started: both waits succeed only
    if the two really run at the same time (a collection run before or after the update, on the
    same thread, would time out). Returns what each wait saw.
    """
    import threading
    from collections import defaultdict

    collecting: defaultdict[int, threading.Event] = defaultdict(threading.Event)
    updating: defaultdict[int, threading.Event] = defaultdict(threading.Event)
    seen: dict[str, list] = {"collect": [], "update": [], "threads": []}
    collect, update = trainer.run.collect, trainer.update
    main = threading.get_ident()

    def rendezvous_collect(requests, step):
        if step > 0 and threading.get_ident() != main:  # a prefetch for ``step``
            collecting[step].set()
            seen["collect"].append((step, updating[step - 1].wait(timeout_s)))
        seen["threads"].append((step, threading.get_ident() == main))
        return collect(requests, step)

    def rendezvous_update(trajectories):
        step = trainer.run.step_index
        updating[step].set()
        if step + 1 < trainer.args.max_steps:
            seen["update"].append((step, collecting[step + 1].wait(timeout_s)))
        return update(trajectories)

    trainer.run.collect = rendezvous_collect  # the prefetch submits run.collect: the instance attribute
    trainer.update = rendezvous_update
    return seen


def test_ppo_overlaps_rollouts_too(tmp_path: Path) -> None:
    args = PPOArgs(
        env_fn=LetterEnv, model="tiny", output_dir=str(tmp_path / "run"), episodes_per_step=4, max_new_tokens=4,
        max_steps=3, overlap_rollouts=True, max_staleness=0, tensorboard=False,
    )  # fmt: skip
    with PPOTrainer(args) as trainer:
        seen = _rendezvous(trainer)
        trainer.step()
        assert trainer.run._pending is not None and trainer.run._pending[0] == 1  # step 1 is being collected
        history = [trainer.step(), trainer.step()]
    # Step 0 is collected in step, on the main thread; steps 1 and 2 are prefetched on another thread,
    # each while the update before it runs (both sides of each rendezvous saw the other in progress).
    assert seen["threads"] == [(0, True), (1, False), (2, False)]
    assert seen["collect"] == [(1, True), (2, True)]
    assert seen["update"] == [(0, True), (1, True)]
    # Every request is accounted for: collected, or failed by the engine as stale. With max_staleness=0
    # a prefetched episode whose first turn comes after the update bumped the policy version fails,
    # so how many survive depends on timing (on a loaded machine, none may).
    assert all(m["rollout/trajectories"] + m["rollout/failed"] == 4 for m in history)


# ---------------------------------------------------------------------- bad input


class BrokenLetterEnv(LetterEnv):
    """Every reset fails, as a misconfigured env would."""

    def reset(self, *, seed=None, options=None):
        raise RuntimeError("broken env: the database is missing")


class FlakyLetterEnv(LetterEnv):
    """Every fourth reset (over all instances) fails."""

    resets = iter(())

    def reset(self, *, seed=None, options=None):
        if next(type(self).resets) % 4 == 0:
            raise RuntimeError("flaky env: reset failed")
        return super().reset(seed=seed, options=options)


def cli_train(argv: list[str]) -> int:
    from agentrl.cli import main

    return main(["train", "grpo", "--model", "tiny", "--max-new-tokens", "6", "--group-size", "4",
                 "--prompts-per-step", "2", "--tensorboard", "false", *argv])  # fmt: skip


def test_cli_refuses_an_unknown_env_id_before_any_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "typo"
    assert cli_train(["--env", "AgentRL/Leter-v0", "--output-dir", str(out), "--max-steps", "2"]) == 2
    err = capsys.readouterr().err
    assert "Leter" in err and "Did you mean: `Letter`?" in err
    assert cli_train(["--env", "AgentRL/NoSuchEnv-v0", "--output-dir", str(out), "--max-steps", "2"]) == 2
    assert "NoSuchEnv" in capsys.readouterr().err
    assert not out.exists()  # refused before a model was built or a step ran


def test_env_failing_every_rollout_stops_the_run_with_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gymnasium as gym

    from agentrl.train.trainer import RolloutsFailed

    with GRPOTrainer(grpo_args(tmp_path, env_fn=BrokenLetterEnv, max_steps=2)) as trainer:
        with pytest.raises(RolloutsFailed, match=r"step 1: all 32 rollouts failed.*the database is missing"):
            trainer.train()
        assert trainer.step_index == 0
    gym.register("AgentRLTest/BrokenLetter-v0", entry_point=BrokenLetterEnv)
    try:
        out = tmp_path / "cli"
        assert cli_train(["--env", "AgentRLTest/BrokenLetter-v0", "--output-dir", str(out), "--max-steps", "2"]) == 2
        captured = capsys.readouterr()
        assert "all 8 rollouts failed" in captured.err and "the database is missing" in captured.err
        assert "reward nan" not in captured.out
    finally:
        gym.registry.pop("AgentRLTest/BrokenLetter-v0", None)


def test_env_failing_some_rollouts_is_named_in_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import itertools

    import gymnasium as gym

    from agentrl.train.metrics import failure_warning

    FlakyLetterEnv.resets = itertools.count()
    with GRPOTrainer(grpo_args(tmp_path / "api", env_fn=FlakyLetterEnv, max_steps=2)) as trainer:
        history = trainer.train()
    assert [m["rollout/failed"] + m["rollout/trajectories"] for m in history] == [32, 32]
    assert all(m["rollout/failed"] == 8 for m in history)
    assert history[0]["rollout/first_failure"] == "RuntimeError: flaky env: reset failed"
    warning = failure_warning(history, 0.1)
    assert warning and warning.startswith("warning: 16 of 64 rollouts failed (25%"), warning
    assert failure_warning(history, 0.3) is None
    FlakyLetterEnv.resets = itertools.count()
    gym.register("AgentRLTest/FlakyLetter-v0", entry_point=FlakyLetterEnv)
    try:
        out = tmp_path / "cli"
        assert cli_train(["--env", "AgentRLTest/FlakyLetter-v0", "--output-dir", str(out), "--max-steps", "2"]) == 0
        summary = capsys.readouterr().out
        assert "grpo: 2 step(s)" in summary
        assert "warning: 4 of 16 rollouts failed (25%, above max_failure_rate=0.1)" in summary, summary
        assert "the first failure: RuntimeError: flaky env: reset failed" in summary
        assert cli_train(["--env", "AgentRLTest/FlakyLetter-v0", "--output-dir", str(tmp_path / "cli2"),
                          "--max-steps", "1", "--max-failure-rate", "0.5"]) == 0  # fmt: skip
        assert "warning" not in capsys.readouterr().out
    finally:
        gym.registry.pop("AgentRLTest/FlakyLetter-v0", None)


@pytest.mark.parametrize("trainer", ["grpo", "ppo"])
def test_a_token_budget_splits_micro_batches_without_changing_the_update(tmp_path: Path, trainer: str) -> None:
    """``max_micro_batch_tokens`` bounds each forward/backward pass; the step's update is the same.

    The README's desktop command (16 episodes in ~150 context windows) held every row in one pass and was
    killed for memory on a 24 GB machine; with a budget each pass holds a few rows, and the weights after a
    step equal (to float rounding) those of one big pass.
    """
    passes: list[tuple[int, int]] = []  # (rows, width) of each pass through the policy
    import agentrl.train.logprobs as logprobs_module

    real = logprobs_module.token_logprobs

    def counting(model, input_ids, *args, **kwargs):  # type: ignore[no-untyped-def]
        passes.append((int(input_ids.shape[0]), int(input_ids.shape[1])))
        return real(model, input_ids, *args, **kwargs)

    weights = {}
    counts = {}
    for budget in (1_000_000, 40):
        passes.clear()
        common = dict(model="tiny", env_fn=LetterEnv, output_dir=str(tmp_path / str(budget)), max_new_tokens=6,
                      learning_rate=1e-3, tensorboard=False, max_steps=1, max_micro_batch_tokens=budget)
        with pytest.MonkeyPatch.context() as patch:
            for module in ("agentrl.train.run", "agentrl.train.grpo", "agentrl.train.ppo"):
                patch.setattr(f"{module}.token_logprobs", counting, raising=False)
            patch.setattr("agentrl.train.logprobs.token_logprobs", counting)
            if trainer == "grpo":
                with GRPOTrainer(GRPOArgs(group_size=4, prompts_per_step=2, **common)) as made:
                    made.train()
                    weights[budget] = {k: v.clone() for k, v in made.run.model.state_dict().items()}
            else:
                with PPOTrainer(PPOArgs(episodes_per_step=8, value_learning_rate=1e-3, **common)) as made:
                    made.train()
                    weights[budget] = {k: v.clone() for k, v in made.run.model.state_dict().items()}
        assert passes
        counts[budget] = len(passes)
        if budget == 40:  # no pass over the budget, but for a row longer than it, which goes alone
            assert all(rows == 1 or rows * width <= 40 for rows, width in passes), passes
    assert counts[40] > counts[1_000_000]
    for key, value in weights[1_000_000].items():
        # Adam turns float rounding of near-zero gradients into ~1e-6 steps; a real difference would be ~lr (1e-3)
        torch.testing.assert_close(weights[40][key], value, rtol=1e-4, atol=2e-5)
