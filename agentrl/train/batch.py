"""Trajectories to padded tensors, one row per trajectory, aligned token by token.

Position ``t`` of every tensor refers to token ``t`` of the row: ``loss_mask[b, t]`` says whether
token ``t`` was sampled by the policy, ``old_logprobs[b, t]`` is the sampler's logprob of it. The
model's logprob of token ``t`` comes from the logits at ``t - 1`` (:func:`agentrl.train.logprobs.token_logprobs`
does that shift), so the first token of a row never carries a loss (it is always prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from agentrl.rollout.trajectory import Trajectory

__all__ = ["TokenBatch", "pack_trajectories"]


@dataclass
class TokenBatch:
    """Right-padded tensors of shape ``(B, T)``.

    Attributes:
        input_ids: token ids (``pad_id`` after each row's end).
        attention_mask: 1 on real tokens.
        loss_mask: 1 on policy tokens (the env's and the template's tokens are 0, always).
        old_logprobs: the sampler's logprobs on policy tokens, 0 elsewhere.
        turn_index: the policy turn a token belongs to (-1 outside completions).
        lengths: real tokens per row.
        vision: a VLM's pixel inputs (``pixel_values`` (B, N, 3, H, W)...), one block of images per row, in
            the order of the row's image tokens; empty for text.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    old_logprobs: torch.Tensor
    turn_index: torch.Tensor
    lengths: torch.Tensor
    vision: dict[str, torch.Tensor] = field(default_factory=dict)

    _TENSORS = ("input_ids", "attention_mask", "loss_mask", "old_logprobs", "turn_index", "lengths")

    def to(self, device: Any) -> TokenBatch:
        """The same batch on another device."""
        return TokenBatch(
            *(getattr(self, f).to(device) for f in self._TENSORS),
            vision={k: v.to(device) for k, v in self.vision.items()},
        )

    def select(self, rows: Sequence[int] | torch.Tensor) -> TokenBatch:
        """A batch of some rows (trimmed to their longest row)."""
        import torch

        index = torch.as_tensor(rows, dtype=torch.long)
        width = int(self.lengths[index].max()) if len(index) else 0
        return TokenBatch(
            *(getattr(self, f)[index][..., :width] if f != "lengths" else self.lengths[index] for f in self._TENSORS),
            vision={k: v[index.to(v.device)] for k, v in self.vision.items()},
        )


def pack_trajectories(trajectories: Sequence[Trajectory], pad_id: int) -> TokenBatch:
    """Stack trajectories into a :class:`TokenBatch` (right padding).

    Example:
        >>> from agentrl.rollout.trajectory import RolloutRequest, Trajectory
        >>> t = Trajectory(RolloutRequest())
        >>> _ = t.append_env([5, 6]); _ = t.append_policy([7, 8], [-0.5, -0.25])
        >>> batch = pack_trajectories([t], pad_id=0)
        >>> batch.loss_mask.tolist(), batch.old_logprobs.tolist()
        ([[0.0, 0.0, 1.0, 1.0]], [[0.0, 0.0, -0.5, -0.25]])
    """
    import torch

    if not trajectories:
        raise ValueError("no trajectories to pack")
    width = max(len(t.token_ids) for t in trajectories)
    shape = (len(trajectories), width)
    input_ids = torch.full(shape, int(pad_id), dtype=torch.long)
    attention = torch.zeros(shape, dtype=torch.long)
    loss_mask = torch.zeros(shape, dtype=torch.float32)
    old = torch.zeros(shape, dtype=torch.float32)
    turn_index = torch.full(shape, -1, dtype=torch.long)
    for row, t in enumerate(trajectories):
        n = len(t.token_ids)
        input_ids[row, :n] = torch.tensor(t.token_ids, dtype=torch.long)
        attention[row, :n] = 1
        loss_mask[row, :n] = torch.tensor(t.loss_mask, dtype=torch.float32)
        old[row, :n] = torch.tensor(t.logprobs, dtype=torch.float32)
        for number, turn in enumerate(t.turns):
            start, end = turn.completion_span
            turn_index[row, start:end] = number
    if bool(loss_mask[:, 0].any()):
        raise ValueError("a trajectory starts with a policy token; every row must start with its prompt")
    lengths = attention.sum(dim=1)
    vision: dict[str, Any] = {}
    if any(t.images for t in trajectories):
        from agentrl.llm.vlm_backend import pixel_inputs

        vision = pixel_inputs([t.images for t in trajectories])
    return TokenBatch(input_ids, attention, loss_mask, old, turn_index, lengths, vision)
