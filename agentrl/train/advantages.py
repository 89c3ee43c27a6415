"""Advantage estimators: GRPO's group baselines, DCPO's smooth standardisation, and (decoupled, length-adaptive) GAE.

All of them work on the tensors of :mod:`agentrl.train.batch`: rows are trajectories, and the
"time steps" of GAE are the policy's tokens only (the env's tokens are skipped, not counted as
steps), so a multi-turn episode is one sequence of decisions with turn rewards at turn ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["GAE_MODES", "SmoothAdvantageStandardizer", "gae", "group_advantages", "length_adaptive_lambda"]

SCALES = ("group", "batch", "none")
GAE_MODES = ("standard", "decoupled", "length_adaptive")


def group_advantages(
    rewards: torch.Tensor, group_ids: Sequence[object], *, scale: str = "group", eps: float = 1e-4
) -> torch.Tensor:
    """GRPO advantages: each reward minus its group's mean, optionally divided by a standard deviation.

    ``scale="group"`` divides by the group's standard deviation (GRPO, Shao et al. 2024,
    arXiv:2402.03300), ``"batch"`` by the whole batch's (as TRL's ``scale_rewards="batch"``),
    ``"none"`` does not divide (Dr. GRPO, Liu et al. 2025, arXiv:2503.20783, which shows the std
    division biases towards easy and hard questions). Standard deviations are unbiased (``n - 1``),
    as TRL computes them; ``eps`` keeps a group of equal rewards at advantage 0.

    Example:
        >>> import torch
        >>> group_advantages(torch.tensor([1.0, 0.0, 2.0, 2.0]), [0, 0, 1, 1], scale="none").tolist()
        [0.5, -0.5, 0.0, 0.0]
    """
    import torch

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if len(group_ids) != len(rewards):
        raise ValueError(f"{len(rewards)} rewards but {len(group_ids)} group ids")
    advantages = torch.zeros_like(rewards)
    stds = torch.zeros_like(rewards)
    for group in dict.fromkeys(group_ids):
        index = torch.tensor([i for i, g in enumerate(group_ids) if g == group], dtype=torch.long)
        members = rewards[index]
        advantages[index] = members - members.mean()
        stds[index] = members.std() if len(index) > 1 else 0.0
    if scale == "group":
        advantages = advantages / (stds + eps)
    elif scale == "batch":
        advantages = advantages / (rewards.std() + eps)
    return advantages


def length_adaptive_lambda(lengths: torch.Tensor, alpha: float = 0.05) -> torch.Tensor:
    """VAPO's length-adaptive GAE lambda, ``1 - 1 / (alpha * length)`` (Yue et al. 2025, arXiv:2504.05118).

    Long sequences get a lambda near 1 (low bias over many steps), short ones a smaller lambda;
    the result is clipped to ``[0, 1]``.

    Example:
        >>> import torch
        >>> length_adaptive_lambda(torch.tensor([100, 1000]), alpha=0.05).tolist()
        [0.800000011920929, 0.9800000190734863]
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return (1.0 - 1.0 / (alpha * lengths.float().clamp(min=1))).clamp(0.0, 1.0)


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    *,
    gamma: float = 1.0,
    lam: float | torch.Tensor = 0.95,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over the masked positions of each row (Schulman et al. 2016).

    Args:
        rewards: (B, T) the reward received after each token (turn rewards sit on the turn's last
            policy token; everything else 0).
        values: (B, T) the critic's value of each position.
        mask: (B, T) 1 on policy tokens: the steps. Other positions are skipped, and get 0.
        gamma: the discount per policy token.
        lam: the GAE lambda, a float or one per row (length-adaptive GAE).

    Returns:
        ``(advantages, returns)``, (B, T); ``returns = advantages + values`` on the steps.

    Example:
        >>> import torch
        >>> adv, ret = gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.zeros(1, 3), torch.tensor([[0.0, 1.0, 1.0]]), lam=1.0)
        >>> adv.tolist(), ret.tolist()
        ([[0.0, 1.0, 1.0]], [[0.0, 1.0, 1.0]])
    """
    import torch

    rows, width = rewards.shape
    lam_t = torch.as_tensor(lam, dtype=torch.float32).reshape(-1)
    lam_t = lam_t.expand(rows) if lam_t.numel() == 1 else lam_t
    if lam_t.numel() != rows:
        raise ValueError(f"lam must be a float or one value per row ({rows}), got {lam_t.numel()} values")
    advantages = torch.zeros_like(rewards, dtype=torch.float32)
    next_value = torch.zeros(rows)
    next_advantage = torch.zeros(rows)
    step = mask.float()
    for t in reversed(range(width)):
        on = step[:, t] > 0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        advantage = delta + gamma * lam_t * next_advantage
        advantages[:, t] = torch.where(on, advantage, torch.zeros_like(advantage))
        next_value = torch.where(on, values[:, t], next_value)
        next_advantage = torch.where(on, advantage, next_advantage)
    returns = (advantages + values) * step
    return advantages, returns


class SmoothAdvantageStandardizer:
    """DCPO's smooth advantage standardisation (SAS) across training steps (Yang et al. 2025, arXiv:2509.02333).

    For each prompt (a task key), the mean and variance of its rewards are accumulated over every
    step it was sampled at. At its ``i``-th appearance, the step-wise advantage
    ``A_new = (R - mu_step) / std_step`` and the cumulative one ``A_total = (R - mu_total) / std_total``
    are blended two ways, ``SA_new = ((i-1)/i) A_new + (1/i) A_total`` and
    ``SA_total = (1/i) A_new + ((i-1)/i) A_total``, and the one smaller in magnitude is used. A
    component whose std is 0 is 0, so a group of equal rewards still learns from the history of its
    prompt (``(1/i) A_total``) instead of giving zero gradient. Stds are unbiased, as the authors' code.

    Example:
        >>> import torch
        >>> sas = SmoothAdvantageStandardizer()
        >>> sas(torch.tensor([1.0, 0.0]), ["q", "q"]).tolist()  # first visit: plain standardisation
        [0.7071067690849304, -0.7071067690849304]
        >>> sas(torch.tensor([1.0, 1.0]), ["q", "q"]).tolist()  # equal rewards, but q was hard before
        [0.22360679507255554, 0.22360679507255554]
    """

    def __init__(self, scale: bool = True) -> None:
        self.scale = scale
        self.stats: dict[str, tuple[int, float, float]] = {}  # key -> (times seen, mean, variance)

    def __call__(self, rewards: torch.Tensor, keys: Sequence[str]) -> torch.Tensor:
        """Advantages for a batch of rewards, grouped by prompt key; updates the history."""
        import torch

        if len(keys) != len(rewards):
            raise ValueError(f"{len(rewards)} rewards but {len(keys)} keys")
        out = torch.zeros_like(rewards)
        for key in dict.fromkeys(keys):
            index = torch.tensor([i for i, k in enumerate(keys) if k == key], dtype=torch.long)
            r = rewards[index].double()
            mu_new = float(r.mean())
            var_new = float(r.var()) if len(index) > 1 else 0.0
            times, mu_old, var_old = self.stats.get(key, (0, 0.0, 0.0))
            i = times + 1
            if i == 1:
                mu_total, var_total = mu_new, var_new
            else:
                mu_total = ((i - 1) * mu_old + mu_new) / i
                var_total = ((i - 1) * var_old + var_new + (i - 1) / i * (mu_new - mu_old) ** 2) / i
            self.stats[key] = (i, mu_total, var_total)
            a_new = self._standardise(r, mu_new, var_new)
            a_total = self._standardise(r, mu_total, var_total)
            sa_new = (i - 1) / i * a_new + a_total / i
            sa_total = a_new / i + (i - 1) / i * a_total
            out[index] = torch.where(sa_new.abs() < sa_total.abs(), sa_new, sa_total).to(out.dtype)
        return out

    def _standardise(self, r: torch.Tensor, mean: float, var: float) -> torch.Tensor:
        import torch

        if not self.scale:
            return r - mean
        if var <= 0:
            return torch.zeros_like(r)
        return (r - mean) / var**0.5

    def state_dict(self) -> dict[str, list[object]]:
        """The per-prompt history (for checkpoints)."""
        return {key: list(value) for key, value in self.stats.items()}

    def load_state_dict(self, state: dict[str, list[object]]) -> None:
        """Restore :meth:`state_dict`."""
        self.stats = {key: (int(v[0]), float(v[1]), float(v[2])) for key, v in state.items()}  # type: ignore[arg-type]
