"""Per-token logprobs and entropies of a causal LM, aligned with the token positions of a batch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["token_logprobs"]


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The model's logprob of each token given the tokens before it, and the entropy there.

    Position ``t`` holds ``log p(token_t | tokens_<t)``; position 0 holds 0. The logits are divided
    by ``temperature`` first, so the logprobs are those of the distribution the sampler used.

    Args:
        model: a causal LM (``transformers`` or anything returning ``.logits`` of shape (B, T, V)).
        input_ids: (B, T) token ids.
        attention_mask: (B, T), 1 on real tokens (right padding).
        temperature: the sampling temperature (must be > 0).
        with_entropy: also return the entropy of each predictive distribution.

    Returns:
        ``(logprobs, entropy)``, each (B, T) in float32; ``entropy`` is ``None`` when not asked for.
    """
    import torch

    if temperature <= 0:
        raise ValueError("temperature must be > 0 to define logprobs (use 1.0 for greedy rollouts)")
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions).logits
    logits = logits[:, :-1, :].float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    taken = logp_all.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    zeros = taken.new_zeros((taken.shape[0], 1))
    logprobs = torch.cat([zeros, taken], dim=1)
    entropy = None
    if with_entropy:
        detached = logp_all.detach()  # a metric: no gradient through the whole vocabulary
        ent = -(detached.exp() * detached).sum(-1)
        entropy = torch.cat([zeros, ent], dim=1)
    return logprobs, entropy
