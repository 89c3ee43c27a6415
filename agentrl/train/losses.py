"""Clipped policy-gradient losses for GRPO-family training and PPO, selectable by name.

Every loss takes per-token tensors of shape (B, T) (see :mod:`agentrl.train.batch`) and a mask
that is 1 on the policy's own tokens only, so env and template tokens never carry a gradient.

========== ==========================================================================================
name       what it is
========== ==========================================================================================
``grpo``   PPO-style clipped ratio per token; each sequence's token mean, then the mean over
           sequences (Shao et al. 2024, *DeepSeekMath*, arXiv:2402.03300).
``dr_grpo`` the same per-token objective, summed and divided by a constant (rows x the generation
           budget) instead of each sequence's length, with advantages not divided by a std
           (Liu et al. 2025, *Understanding R1-Zero-Like Training*, arXiv:2503.20783).
``dapo``   token-level aggregation over the whole batch (every token weighs the same), clip-higher
           with separate low/high epsilons (0.2 / 0.28); the trainer adds dynamic sampling
           (Yu et al. 2025, *DAPO*, arXiv:2503.14476).
``gspo``   one length-normalised importance ratio per sequence, clipped per sequence with tiny
           epsilons (3e-4 / 4e-4) (Zheng et al. 2025, *Group Sequence Policy Optimization*,
           arXiv:2507.18071).
``dcpo``   clipping bounds that depend on each token's prior probability (rare tokens may move
           further), with token-mean aggregation over the batch (the authors' code takes the
           token mean of each micro-batch); the trainer adds smooth advantage standardisation
           across steps (Yang et al. 2025, *DCPO*, arXiv:2509.02333).
========== ==========================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["LOSS_TYPES", "LossConfig", "dcpo_bounds", "policy_loss", "value_loss"]

LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "gspo", "dcpo")

#: Clip epsilons (low, high) each method's paper uses, applied when a bound is left as ``None``.
DEFAULT_CLIP: dict[str, tuple[float, float]] = {
    "grpo": (0.2, 0.2),
    "dr_grpo": (0.2, 0.2),
    "dapo": (0.2, 0.28),
    "gspo": (3e-4, 4e-4),
    "dcpo": (0.16, 0.2),
}


@dataclass(frozen=True)
class LossConfig:
    """The knobs of :func:`policy_loss`.

    Attributes:
        loss_type: one of :data:`LOSS_TYPES`.
        clip_low: epsilon below 1 for the ratio (``None``: the method's default).
        clip_high: epsilon above 1 (``None``: the method's default; DAPO's clip-higher is 0.28).
        dual_clip: an upper bound on the ratio for negative advantages (``None``: off).
        kl_coef: weight of the k3 KL estimate against the reference model (0: off).
        max_completion_length: the constant normaliser of ``dr_grpo`` (policy tokens per row).
        dcpo_max_ratio: the cap on DCPO's upper bound (the paper caps it at 10).
    """

    loss_type: str = "grpo"
    clip_low: float | None = None
    clip_high: float | None = None
    dual_clip: float | None = None
    kl_coef: float = 0.0
    max_completion_length: int | None = None
    dcpo_max_ratio: float = 10.0

    def __post_init__(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"unknown loss_type {self.loss_type!r}; choose from {LOSS_TYPES}")

    @property
    def epsilons(self) -> tuple[float, float]:
        """(low, high), with the method's defaults filled in."""
        low, high = DEFAULT_CLIP[self.loss_type]
        return (low if self.clip_low is None else self.clip_low, high if self.clip_high is None else self.clip_high)


def dcpo_bounds(
    prior_prob: torch.Tensor, eps_low: float, eps_high: float, max_ratio: float = 10.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """DCPO's dynamic-adaptive ratio bounds for tokens of old probability ``q``.

    DCPO bounds the change of probability mass rather than the ratio: ``|(r - 1) * r| * q <= eps``
    with ``r = p / q``, whose solutions are ``lower = 0.5 + 0.5 * sqrt(max(1 - 4 eps_low / q, 0))``
    and ``upper = 0.5 + 0.5 * sqrt(1 + 4 eps_high / q)``, the latter capped at ``max_ratio`` (10, as
    the authors' code does). Likely tokens (``q`` near 1) get bounds close to PPO's; rare tokens may
    move further, which is the exploration DCPO is after. Defaults eps_low 0.16, eps_high 0.2.

    Example:
        >>> import torch
        >>> low, high = dcpo_bounds(torch.tensor([1.0, 0.01]), 0.16, 0.2)
        >>> [round(x, 3) for x in low.tolist()], [round(x, 3) for x in high.tolist()]
        ([0.8, 0.5], [1.171, 5.0])
    """
    import torch

    q = prior_prob.clamp(min=1e-12)
    lower = 0.5 + 0.5 * torch.sqrt(torch.clamp(1.0 - 4.0 * eps_low / q, min=0.0))
    upper = torch.clamp(0.5 + 0.5 * torch.sqrt(1.0 + 4.0 * eps_high / q), max=max_ratio)
    return lower, upper


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    config: LossConfig,
    *,
    ref_logprobs: torch.Tensor | None = None,
    num_tokens: float | None = None,
    num_rows: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The clipped surrogate loss of ``config.loss_type`` (to minimise) and its diagnostics.

    Args:
        logprobs: (B, T) the current policy's logprobs of the taken tokens (with gradient).
        old_logprobs: (B, T) the logprobs of the policy that sampled them.
        advantages: (B, T) the advantage of each token (a sequence's advantage repeated for GRPO).
        mask: (B, T) 1 on tokens that count (policy tokens of kept trajectories).
        config: the :class:`LossConfig`.
        ref_logprobs: (B, T) the reference model's logprobs (needed when ``kl_coef > 0``).
        num_tokens: the token normaliser of ``dapo``/``dcpo`` when the batch is split into
            micro-batches for gradient accumulation: the masked tokens of the *whole* batch
            (default: this call's). Then the micro-batch losses add up to the full-batch loss.
        num_rows: the row normaliser of ``grpo``/``gspo``/``dr_grpo`` likewise (default: B).

    Returns:
        ``(loss, stats)``; ``stats`` holds detached scalars: ``clip_low_frac``, ``clip_high_frac``,
        ``ratio_mean``, ``approx_kl`` (to the sampler), and ``kl`` (to the reference) when used.

    Example:
        >>> import torch
        >>> lp = torch.zeros(1, 3, requires_grad=True)
        >>> loss, stats = policy_loss(lp, torch.zeros(1, 3), torch.ones(1, 3), torch.tensor([[0.0, 1, 1]]),
        ...                           LossConfig("grpo"))
        >>> round(loss.item(), 4), stats["clip_high_frac"].item()
        (-1.0, 0.0)
    """
    import torch

    mask = mask.float()
    rows = float(num_rows if num_rows is not None else logprobs.shape[0])
    tokens = float(num_tokens if num_tokens is not None else mask.sum().clamp(min=1.0))
    low, high = config.epsilons
    log_ratio = (logprobs - old_logprobs) * mask
    row_tokens = mask.sum(-1).clamp(min=1.0)

    if config.loss_type == "gspo":
        # One length-normalised ratio per sequence; the token form keeps the same value and gradient
        # (s_i(theta) per token, gradient through each token's logprob) as GSPO-token.
        seq_log_ratio = log_ratio.sum(-1) / row_tokens
        log_weights = logprobs - logprobs.detach() + seq_log_ratio.detach()[:, None]
    else:
        log_weights = log_ratio
    ratio = torch.exp(log_weights)
    if config.loss_type == "dcpo":
        lower, upper = dcpo_bounds(old_logprobs.detach().exp(), low, high, config.dcpo_max_ratio)
    else:
        lower = torch.full_like(ratio, 1.0 - low)
        upper = torch.full_like(ratio, 1.0 + high)
    clipped = torch.maximum(torch.minimum(ratio, upper), lower)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    if config.dual_clip is not None:
        # Dual-clip PPO (Ye et al. 2020): for negative advantages, the ratio's weight is capped.
        surrogate = torch.where(advantages < 0, torch.maximum(surrogate, config.dual_clip * advantages), surrogate)
    per_token = -surrogate

    stats: dict[str, torch.Tensor] = {}
    if config.kl_coef > 0:
        if ref_logprobs is None:
            raise ValueError("kl_coef > 0 needs ref_logprobs (the reference model's logprobs)")
        delta = ref_logprobs - logprobs
        kl = torch.exp(delta) - delta - 1.0  # k3: unbiased, non-negative (Schulman's estimator)
        per_token = per_token + config.kl_coef * kl
        stats["kl"] = ((kl * mask).sum() / mask.sum().clamp(min=1.0)).detach()

    if config.loss_type in ("grpo", "gspo"):
        loss = ((per_token * mask).sum(-1) / row_tokens).sum() / rows
    elif config.loss_type == "dr_grpo":
        budget = config.max_completion_length or mask.shape[1]
        loss = (per_token * mask).sum() / (rows * budget)
    else:  # dapo, dcpo: every token of the batch weighs the same
        loss = (per_token * mask).sum() / tokens

    with torch.no_grad():
        count = mask.sum().clamp(min=1.0)
        low_hit = ((ratio < lower) & (advantages < 0)).float() * mask
        high_hit = ((ratio > upper) & (advantages > 0)).float() * mask
        stats["clip_low_frac"] = low_hit.sum() / count
        stats["clip_high_frac"] = high_hit.sum() / count
        stats["ratio_mean"] = (ratio * mask).sum() / count
        stats["approx_kl"] = (((ratio - 1) - log_weights) * mask).sum() / count
    return loss, stats


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float | None = 0.2,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's clipped value loss, ``0.5 * max((V - R)^2, (clip(V, V_old +- c) - R)^2)``, token mean.

    Example:
        >>> import torch
        >>> loss, _ = value_loss(torch.ones(1, 2), torch.ones(1, 2), torch.zeros(1, 2), torch.ones(1, 2))
        >>> float(loss)
        0.5
    """
    import torch

    mask = mask.float()
    count = mask.sum().clamp(min=1.0)
    error = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + (values - old_values).clamp(-clip, clip)
        error = torch.maximum(error, (clipped - returns) ** 2)
    loss = 0.5 * (error * mask).sum() / count
    with torch.no_grad():
        clip_frac = (
            (((values - old_values).abs() > clip).float() * mask).sum() / count
            if clip is not None
            else values.new_zeros(())
        )
    return loss, {"value_clip_frac": clip_frac}
