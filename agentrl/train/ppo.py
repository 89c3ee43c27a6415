"""PPO with a value head for multi-turn agents, one file, top to bottom.

Each step: (1) the rollout engine collects ``episodes_per_step`` episodes as token-level
trajectories; (2) every turn's reward is placed on the last token the policy sampled in that
turn (turn-level rewards; a single final reward is the last turn's); (3) the critic values every
policy token and GAE turns rewards into advantages over the policy's tokens only (the env's tokens
are not steps). GAE comes in three forms: ``standard`` (one lambda), ``decoupled`` (UI-TARS-2:
lambda_policy for the policy's advantages, lambda_critic for the critic's targets) and
``length_adaptive`` (VAPO: lambda_policy = 1 - 1 / (alpha * length) per trajectory);
(4) the first ``value_warmup_steps`` steps train the critic only, with the policy frozen (value
pretraining, as VAPO and UI-TARS-2 do, so that early advantages are not noise); afterwards both
update: the clipped policy loss (token-level, clip-higher via ``clip_high``) and the clipped
value loss. (5) New weights go to the generation backend; metrics, plot and checkpoints as GRPO.

Sources: Schulman et al. 2017 (PPO, arXiv:1707.06347) and 2016 (GAE, arXiv:1506.02438);
Yue et al. 2025 (VAPO, arXiv:2504.05118: length-adaptive GAE, value pretraining, clip-higher);
ByteDance Seed 2025 (UI-TARS-2, arXiv:2509.02544: decoupled GAE, value pretraining for
multi-turn agents).

Run it: ``agentrl train ppo --env AgentRL/TIRMath-v0 --model PATH --max-steps 100``.

Example:
    >>> import tempfile
    >>> from agentrl.envs.toy import LetterEnv
    >>> args = PPOArgs(env_fn=LetterEnv, model="tiny", output_dir=tempfile.mkdtemp(), max_steps=1,
    ...                episodes_per_step=2, max_new_tokens=4, value_warmup_steps=1, tensorboard=False)
    >>> with PPOTrainer(args) as trainer:
    ...     metrics = trainer.step()
    >>> metrics["update/policy_frozen"], "loss/value" in metrics
    (1.0, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentrl.train import distributed
from agentrl.train.advantages import GAE_MODES, gae, length_adaptive_lambda
from agentrl.train.args import TrainArgs, document_fields
from agentrl.train.batch import pack_trajectories
from agentrl.train.logprobs import token_logprobs
from agentrl.train.losses import LossConfig, policy_loss, value_loss
from agentrl.train.metrics import add_policy_totals, policy_update_metrics
from agentrl.train.run import PolicyRun
from agentrl.train.trainer import Trainer
from agentrl.train.value import ValueModel

__all__ = ["PPOArgs", "PPOTrainer", "train"]

# Per-rank sums that are added up over ranks before they become metrics.
_TOTAL_KEYS = (
    "value_loss",
    "value_clip_frac",
    "loss",
    "entropy",
    "clip_low_frac",
    "clip_high_frac",
    "ratio_mean",
    "approx_kl",
    "kl",
)


@document_fields
@dataclass
class PPOArgs(TrainArgs):
    """A PPO run: :class:`~agentrl.train.args.TrainArgs` plus the fields below."""

    output_dir: str = "runs/ppo"
    episodes_per_step: int = field(
        default=16, metadata={"help": "episodes collected per step (each from its own seed)."}
    )
    gamma: float = field(default=1.0, metadata={"help": "discount per policy token."})
    gae_mode: str = field(default="decoupled", metadata={"help": "standard, decoupled or length_adaptive."})
    lambda_policy: float = field(
        default=0.95, metadata={"help": "GAE lambda of the policy's advantages (standard and decoupled)."}
    )
    lambda_critic: float = field(
        default=1.0,
        metadata={
            "help": (
                "GAE lambda of the critic's targets (decoupled and length_adaptive; the standard mode uses "
                "lambda_policy for both)."
            )
        },
    )
    length_alpha: float = field(
        default=0.05, metadata={"help": "alpha of length-adaptive GAE, lambda = 1 - 1 / (alpha * length)."}
    )
    value_warmup_steps: int = field(default=0, metadata={"help": "steps that train only the critic (policy frozen)."})
    value_learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate of the critic."})
    value_clip: float = field(default=0.2, metadata={"help": "clip range of the value loss (0: unclipped)."})
    whiten_advantages: bool = field(
        default=True, metadata={"help": "normalise advantages over the batch's policy tokens."}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.gae_mode not in GAE_MODES:
            raise ValueError(f"gae_mode must be one of {GAE_MODES}, got {self.gae_mode!r}")
        if self.episodes_per_step < 1:
            raise ValueError(f"episodes_per_step must be at least 1, got {self.episodes_per_step}")
        for name in ("gamma", "lambda_policy", "lambda_critic"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


class PPOTrainer(Trainer):
    """A PPO run: ``step()`` collects and learns once; ``train()`` runs to ``max_steps``."""

    def __init__(self, args: PPOArgs) -> None:
        import torch

        self.args = args
        self.run = PolicyRun(args)  # policy, reference, optimizer, backend, engine, logger, checkpoints
        # PPO's token-level aggregation with symmetric clipping unless clip_high asks for clip-higher.
        self.loss_config = LossConfig(
            loss_type="dapo",
            clip_low=0.2 if args.clip_low is None else args.clip_low,
            clip_high=0.2 if args.clip_high is None else args.clip_high,
            dual_clip=args.dual_clip,
            kl_coef=args.kl_coef,
        )
        self.critic = ValueModel(self.run.model_path, dtype=args.dtype, device=self.run.device)
        self.critic_optimizer = torch.optim.AdamW(
            self.critic.parameters(), lr=args.value_learning_rate, weight_decay=args.weight_decay
        )
        self.run.start(extra=self._extra())
        # The critic's training passes go through DDP too when distributed (after a resume).
        self.critic_ddp = distributed.wrap_model(self.critic, self.run.dist)

    def _extra(self) -> dict[str, Any]:
        return {"critic": self.critic, "critic_optimizer": self.critic_optimizer}

    # ------------------------------------------------------------------ one step

    def requests(self, step: int) -> list[Any]:
        """1. Rollouts: ``episodes_per_step`` episodes (this rank's share), each from its own seed."""
        from agentrl.rollout import RolloutRequest

        base = self.run.step_seed(step)
        seeds = self.run.shard([base + k for k in range(self.args.episodes_per_step)])
        return [RolloutRequest(seed=seed, group_id=seed) for seed in seeds]

    def update(self, trajectories: list[Any]) -> dict[str, Any]:
        """Rewards to tokens, GAE, then the critic and policy updates; returns the metrics."""
        import torch

        args, run = self.args, self.run
        started = time.perf_counter()
        metrics: dict[str, Any] = {}
        if any(t.windows for t in trajectories):
            raise ValueError(
                "PPO learns from one token sequence per episode (its critic's returns run across the turns); episodes "
                "split into context windows by max_images are trained with GRPO: use agentrl train grpo, or leave "
                "--max-images unset"
            )
        kept = [t for t in trajectories if t.ok and t.turns]
        if args.filter_void_turns:
            kept = [t for t in kept if not any(turn.void_turn for turn in t.turns)]
        metrics["filter/kept_fraction"] = len(kept) / max(len(trajectories), 1)
        local_tokens = float(sum(t.num_policy_tokens for t in kept))
        count, total_rows = run.global_counts(local_tokens, float(len(kept)))
        if total_rows == 0:
            metrics["update/skipped"] = 1.0
            metrics["time/update_s"] = time.perf_counter() - started
            return metrics
        count = max(count, 1.0)

        sums = {"adv": 0.0, "adv_sq": 0.0, "adv_abs": 0.0, "value": 0.0, "return": 0.0}
        if kept:
            batch = pack_trajectories(kept, run.pad_id).to(run.device)
            mask = batch.loss_mask

            # 2. Turn rewards on each turn's last sampled token.
            rewards = torch.zeros_like(mask)
            for row, trajectory in enumerate(kept):
                for turn in trajectory.turns:
                    start, end = turn.completion_span
                    if end > start:
                        rewards[row, end - 1] += turn.reward

            # 3. Old logprobs, reference logprobs and values (unwrapped models: no collectives);
            #    GAE over the policy's tokens.
            old_logprobs, ref_logprobs, gap = run.rollout_logprobs(batch, local_tokens)
            metrics["update/logprob_mismatch"] = gap
            with torch.no_grad():
                critic = self.critic
                old_values = run.by_micro_batch(
                    batch, lambda sub: critic(sub.input_ids, sub.attention_mask, **sub.vision)
                ) * mask
                if args.gae_mode == "length_adaptive":
                    lam_policy: Any = length_adaptive_lambda(mask.sum(-1), args.length_alpha)
                else:
                    lam_policy = args.lambda_policy
                lam_critic = args.lambda_policy if args.gae_mode == "standard" else args.lambda_critic
                advantages, _ = gae(rewards.cpu(), old_values.cpu(), mask.cpu(), gamma=args.gamma, lam=lam_policy)
                _, returns = gae(rewards.cpu(), old_values.cpu(), mask.cpu(), gamma=args.gamma, lam=lam_critic)
                advantages, returns = advantages.to(run.device), returns.to(run.device)
            sums = {
                "adv": float((advantages * mask).sum()),
                "adv_sq": float((advantages**2 * mask).sum()),
                "adv_abs": float((advantages.abs() * mask).sum()),
                "value": float((old_values * mask).sum()),
                "return": float((returns * mask).sum()),
            }
        sums = run.reduce_totals(sums)
        if args.whiten_advantages and kept and count > 1:
            # Whitened with the statistics of the whole batch (all ranks).
            mean = sums["adv"] / count
            std = max((sums["adv_sq"] - count * mean**2) / (count - 1), 0.0) ** 0.5
            advantages = (advantages - mean) / (std + 1e-8) * mask
        metrics["advantage/mean_abs"] = sums["adv_abs"] / count
        metrics["value/mean"] = sums["value"] / count
        metrics["value/return_mean"] = sums["return"] / count

        # 4. Critic always; policy after the warm-up. Micro-batches accumulate to the full batch.
        train_policy = run.step_index >= args.value_warmup_steps
        metrics["update/policy_frozen"] = 0.0 if train_policy else 1.0
        micro = run.micro_batches(len(kept), args.grad_accum_steps, [len(t.token_ids) for t in kept])
        totals: dict[str, float] = {}
        grad_norm = value_norm = 0.0
        for _ in range(args.updates_per_step):
            run.optimizer.zero_grad(set_to_none=True)
            self.critic_optimizer.zero_grad(set_to_none=True)
            for index, part in enumerate(micro):
                defer = index < len(micro) - 1
                with run.no_sync(self.critic_ddp, defer=defer), run.no_sync(run.policy, defer=defer):
                    if not part:  # this rank has fewer rows than micro-batches: keep DDP in step
                        run.backward_nothing(self.critic_ddp)
                        if train_policy:
                            run.backward_nothing(run.policy)
                        continue
                    sub = batch.select(part)
                    width = sub.input_ids.shape[1]
                    sub_tokens = float(sub.loss_mask.sum())
                    values = self.critic_ddp(sub.input_ids, sub.attention_mask, **sub.vision)
                    v_loss, v_stats = value_loss(
                        values,
                        old_values[part][:, :width],
                        returns[part][:, :width],
                        sub.loss_mask,
                        clip=args.value_clip or None,
                    )
                    # value_loss is a token mean over the micro-batch: reweigh it to the global mean.
                    (v_loss * sub_tokens / count * run.loss_scale).backward()
                    if train_policy:
                        logprobs, entropy = token_logprobs(
                            run.policy,
                            sub.input_ids,
                            sub.attention_mask,
                            temperature=args.temperature,
                            extra_inputs=sub.vision,
                            suppress_token_ids=run.suppressed_token_ids,
                        )
                        loss, stats = policy_loss(
                            logprobs,
                            old_logprobs[part][:, :width],
                            advantages[part][:, :width],
                            sub.loss_mask,
                            self.loss_config,
                            ref_logprobs=None if ref_logprobs is None else ref_logprobs[part][:, :width],
                            num_tokens=count,
                        )
                        (loss * run.loss_scale).backward()
                totals["value_loss"] = totals.get("value_loss", 0.0) + v_loss.item() * sub_tokens
                totals["value_clip_frac"] = (
                    totals.get("value_clip_frac", 0.0) + float(v_stats["value_clip_frac"]) * sub_tokens
                )
                if train_policy:
                    add_policy_totals(totals, loss, entropy, sub.loss_mask, stats)
            # 5. Clip and step (the policy only after the warm-up).
            value_norm = run.optimizer_step(list(self.critic.parameters()), self.critic_optimizer, args.max_grad_norm)
            if train_policy:
                grad_norm = run.optimizer_step(run.parameters, run.optimizer, args.max_grad_norm)

        totals = run.reduce_totals({key: totals.get(key, 0.0) for key in _TOTAL_KEYS})
        updates = args.updates_per_step
        metrics["loss/value"] = totals["value_loss"] / count / updates
        metrics["update/value_clip_frac"] = totals["value_clip_frac"] / count / updates
        metrics["update/value_grad_norm"] = value_norm
        if train_policy:
            metrics.update(policy_update_metrics(totals, count, updates, with_kl=args.kl_coef > 0))
            metrics["update/grad_norm"] = grad_norm
        metrics["update/rows"] = total_rows
        metrics["update/tokens"] = count
        metrics["time/update_s"] = time.perf_counter() - started
        return metrics


def train(args: PPOArgs) -> list[dict[str, Any]]:
    """Run PPO to ``args.max_steps`` and return the metrics of every step."""
    with PPOTrainer(args) as trainer:
        return trainer.train()
