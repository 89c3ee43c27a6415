"""GRPO for multi-turn agents, one file, top to bottom.

Each step: (1) the rollout engine collects ``prompts_per_step`` groups of ``group_size``
episodes (same task and seed within a group) from the env with the current policy, as exact
token-level trajectories; (2) each trajectory's return becomes an advantage against its group
(GRPO's baseline, or DCPO's smooth standardisation across steps); (3) groups or trajectories
that carry no signal are filtered (DAPO's dynamic sampling, SimpleTIR's void-turn filter);
(4) the clipped policy loss of ``loss_type`` is minimised over the policy's tokens only (env and
template tokens are masked), with gradient accumulation and clipping and an optional KL to a
frozen reference; (5) the new weights go to the generation backend. Metrics go to JSONL,
TensorBoard and a plot; checkpoints resume exactly.

Run it: ``agentrl train grpo --env AgentRL/TIRMath-v0 --model PATH --max-steps 100``.
Real run (one GPU): ``agentrl train grpo --env AgentRL/TIRMath-v0 --model smollm2 --device cuda
--dtype bfloat16 --group-size 8 --prompts-per-step 16 --max-tokens 384 --learning-rate 1e-6
--loss-type dapo --max-steps 300`` (see the README for what to expect).

Example:
    >>> import tempfile
    >>> from agentrl.envs.toy import LetterEnv
    >>> args = GRPOArgs(env_fn=LetterEnv, model="tiny", output_dir=tempfile.mkdtemp(), max_steps=1,
    ...                 group_size=2, prompts_per_step=2, max_new_tokens=4, tensorboard=False)
    >>> with GRPOTrainer(args) as trainer:
    ...     metrics = trainer.step()
    >>> sorted(k for k in metrics if k.startswith("time/"))
    ['time/generate_s', 'time/step_s', 'time/update_s']
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentrl.train.advantages import SmoothAdvantageStandardizer, group_advantages
from agentrl.train.args import TrainArgs, document_fields
from agentrl.train.batch import pack_trajectories
from agentrl.train.logprobs import token_logprobs
from agentrl.train.losses import LOSS_TYPES, LossConfig, policy_loss
from agentrl.train.metrics import add_policy_totals, policy_update_metrics
from agentrl.train.run import PolicyRun
from agentrl.train.trainer import Trainer

__all__ = ["GRPOArgs", "GRPOTrainer", "train"]

# Per-rank sums that are added up over ranks before they become metrics.
_TOTAL_KEYS = ("loss", "entropy", "clip_low_frac", "clip_high_frac", "ratio_mean", "approx_kl", "kl")


@document_fields
@dataclass
class GRPOArgs(TrainArgs):
    """A GRPO run: :class:`~agentrl.train.args.TrainArgs` plus the fields below."""

    output_dir: str = "runs/grpo"
    loss_type: str = field(
        default="grpo", metadata={"help": "one of grpo, dr_grpo, dapo, gspo, dcpo (see agentrl.train.losses)."}
    )
    group_size: int = field(default=4, metadata={"help": "rollouts per task (G)."})
    prompts_per_step: int = field(default=4, metadata={"help": "tasks (groups) per step."})
    scale_rewards: str | None = field(
        default=None, metadata={"help": "group, batch or none (None: none for dr_grpo, group otherwise)."}
    )
    dynamic_sampling: bool | None = field(
        default=None, metadata={"help": "drop groups whose rewards are all equal (None: on for dapo)."}
    )
    smooth_advantages: bool | None = field(
        default=None, metadata={"help": "DCPO's smooth advantage standardisation (None: on for dcpo)."}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"unknown loss_type {self.loss_type!r}; choose from {LOSS_TYPES}")
        if self.prompts_per_step < 1:
            raise ValueError(f"prompts_per_step must be at least 1, got {self.prompts_per_step}")
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2: GRPO's baseline is the group's mean")
        if self.scale_rewards is None:
            self.scale_rewards = "none" if self.loss_type == "dr_grpo" else "group"
        if self.dynamic_sampling is None:
            self.dynamic_sampling = self.loss_type == "dapo"
        if self.smooth_advantages is None:
            self.smooth_advantages = self.loss_type == "dcpo"


class GRPOTrainer(Trainer):
    """A GRPO run: ``step()`` collects and learns once; ``train()`` runs to ``max_steps``."""

    def __init__(self, args: GRPOArgs) -> None:
        self.args = args
        self.run = PolicyRun(args)  # policy, reference, optimizer, backend, engine, logger, checkpoints
        self.loss_config = LossConfig(
            loss_type=args.loss_type,
            clip_low=args.clip_low,
            clip_high=args.clip_high,
            dual_clip=args.dual_clip,
            kl_coef=args.kl_coef,
            max_completion_length=args.max_new_tokens * (args.max_turns or 1),
        )
        self.smoother = SmoothAdvantageStandardizer(scale=args.scale_rewards != "none")
        self.run.start(extra=self._extra())

    def _extra(self) -> dict[str, Any]:
        return {"smoother": self.smoother}

    # ------------------------------------------------------------------ one step

    def requests(self, step: int) -> list[Any]:
        """1. Rollouts: ``prompts_per_step`` groups of ``group_size`` (this rank's share), seeded by (seed, step)."""
        from agentrl.rollout import group_requests

        base = self.run.step_seed(step)
        tasks = self.run.shard([base + k for k in range(self.args.prompts_per_step)])
        return group_requests(tasks, group_size=self.args.group_size)

    def update(self, trajectories: list[Any]) -> dict[str, Any]:
        """Advantages, filters and the policy update on a batch of trajectories; returns the metrics."""
        import torch

        args, run = self.args, self.run
        started = time.perf_counter()
        metrics: dict[str, Any] = {}
        ok = [t for t in trajectories if t.ok and t.all_turns]

        # 2. Advantages: each return against its group (or DCPO's smoothed history of its task).
        rewards = torch.tensor([t.total_reward for t in ok], dtype=torch.float32)
        groups = [t.request.group_id for t in ok]
        if args.smooth_advantages:
            keys = [f"{t.task_id}|{t.request.seed}|{t.request.options}" for t in ok]
            advantages = self.smoother(rewards, keys)
        else:
            advantages = group_advantages(rewards, groups, scale=str(args.scale_rewards))

        # 3. Filters. DAPO's dynamic sampling drops groups with one reward value (no signal);
        #    SimpleTIR drops trajectories with a void turn (a turn the env could not use).
        keep = [True] * len(ok)
        if args.dynamic_sampling:
            for group in set(groups):
                values = {float(r) for r, g in zip(rewards, groups, strict=True) if g == group}
                if len(values) == 1:
                    keep = [k and g != group for k, g in zip(keep, groups, strict=True)]
        if args.filter_void_turns:
            keep = [k and not any(turn.void_turn for turn in t.all_turns) for k, t in zip(keep, ok, strict=True)]
        kept = [i for i, k in enumerate(keep) if k]
        # One row per token sequence: an episode whose screenshots opened new context windows
        # (RolloutConfig.max_images) has one per window, each with the episode's advantage.
        owners = [i for i in kept for _ in ok[i].pieces()]
        pieces = [piece for i in kept for piece in ok[i].pieces()]
        rows = list(range(len(pieces)))
        metrics["filter/kept_fraction"] = len(kept) / max(len(ok), 1)
        metrics["advantage/mean_abs"] = float(advantages.abs().mean()) if len(ok) else 0.0
        # The loss normalisers are global: tokens and rows over all ranks (one rank alone: these).
        local_tokens = float(sum(piece.num_policy_tokens for piece in pieces))
        count, total_rows = run.global_counts(local_tokens, float(len(rows)))
        if total_rows == 0:
            metrics["update/skipped"] = 1.0
            metrics["time/update_s"] = time.perf_counter() - started
            return metrics
        count = max(count, 1.0)
        if rows:
            batch = pack_trajectories(pieces, run.pad_id).to(run.device)
            token_advantages = advantages[owners].to(run.device)[:, None] * batch.loss_mask

        # The reference's logprobs (with a KL term). The behaviour policy's are the sampler's, or, recomputed
        # (``recompute_old_logprobs``), the training model's before this step's update: the first update pass
        # computes exactly those (with gradients), so they are taken from it, detached, rather than from one more
        # forward pass over the batch (TRL's on-policy path does the same). Their gap to the sampler's is a metric.
        ref_logprobs = run.reference_logprobs(batch) if rows else None
        first_pass: dict[int, Any] = {}  # micro-batch -> its logprobs in the first pass, detached
        gap = 0.0

        # 4. The loss over micro-batches, normalised by the whole batch's rows and tokens, so the
        #    accumulated gradient equals the full batch's (and, scaled, the same across ranks).
        micro = run.micro_batches(len(rows), args.grad_accum_steps, [len(piece.token_ids) for piece in pieces])
        totals: dict[str, float] = {}
        grad_norm = 0.0
        for update in range(args.updates_per_step):
            run.optimizer.zero_grad(set_to_none=True)
            for index, part in enumerate(micro):
                with run.no_sync(run.policy, defer=index < len(micro) - 1):
                    if not part:  # this rank has fewer rows than micro-batches: keep DDP in step
                        run.backward_nothing(run.policy)
                        continue
                    sub = batch.select(part)
                    width = sub.input_ids.shape[1]
                    logprobs, entropy = token_logprobs(
                        run.policy,
                        sub.input_ids,
                        sub.attention_mask,
                        temperature=args.temperature,
                        extra_inputs=sub.vision,
                        suppress_token_ids=run.suppressed_token_ids,
                    )
                    if update == 0:
                        first_pass[index] = logprobs.detach()
                        gap += float(((first_pass[index] - sub.old_logprobs).abs() * sub.loss_mask).sum())
                    loss, stats = policy_loss(
                        logprobs,
                        first_pass[index] if args.recompute_old_logprobs else sub.old_logprobs,
                        token_advantages[part][:, :width],
                        sub.loss_mask,
                        self.loss_config,
                        ref_logprobs=None if ref_logprobs is None else ref_logprobs[part][:, :width],
                        num_tokens=count,
                        num_rows=total_rows,
                    )
                    (loss * run.loss_scale).backward()
                add_policy_totals(totals, loss, entropy, sub.loss_mask, stats)
            # 5. Clip and step (after DDP's all-reduce the gradients are the same on every rank).
            grad_norm = run.optimizer_step(run.parameters, run.optimizer, args.max_grad_norm)

        metrics["update/logprob_mismatch"] = gap / max(local_tokens, 1.0)
        totals = run.reduce_totals({key: totals.get(key, 0.0) for key in _TOTAL_KEYS})
        metrics.update(policy_update_metrics(totals, count, args.updates_per_step, with_kl=args.kl_coef > 0))
        metrics["update/grad_norm"] = grad_norm
        metrics["update/rows"] = total_rows
        metrics["update/tokens"] = count
        metrics["time/update_s"] = time.perf_counter() - started
        return metrics


def train(args: GRPOArgs) -> list[dict[str, Any]]:
    """Run GRPO to ``args.max_steps`` and return the metrics of every step."""
    with GRPOTrainer(args) as trainer:
        return trainer.train()
