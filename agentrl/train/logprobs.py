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
    extra_inputs: dict[str, Any] | None = None,
    suppress_token_ids: Any = (),
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
        extra_inputs: more model inputs (a VLM's ``pixel_values`` and its mask, from ``TokenBatch.vision``).
        suppress_token_ids: tokens the sampler never draws (a VLM's image tokens): their logits are set
            to -inf first, so these logprobs are those of the sampler's distribution.

    Returns:
        ``(logprobs, entropy)``, each (B, T) in float32; ``entropy`` is ``None`` when not asked for.
    """
    import torch

    if temperature <= 0:
        raise ValueError("temperature must be > 0 to define logprobs (use 1.0 for greedy rollouts)")
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, **(extra_inputs or {})
    ).logits
    logits = logits[:, :-1, :].float()
    if len(suppress_token_ids):
        index = torch.as_tensor(list(suppress_token_ids), dtype=torch.long, device=logits.device)
        logits = logits.index_fill(-1, index, float("-inf"))
    if temperature != 1.0:
        logits = logits / temperature
    # log p(token) = logit(token) - logsumexp(logits): no second (B, T, V) tensor for log_softmax's output,
    # which autograd would keep until backward; the logits are the only vocabulary-sized tensor held.
    taken = logits.gather(-1, input_ids[:, 1:, None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    if len(suppress_token_ids):  # the env writes those tokens (an image's block): 0, not -inf, outside the loss
        taken = taken.masked_fill(torch.isin(input_ids[:, 1:], index), 0.0)
    zeros = taken.new_zeros((taken.shape[0], 1))
    logprobs = torch.cat([zeros, taken], dim=1)
    entropy = None
    if with_entropy:
        entropy = torch.cat([zeros, _entropy(logits.detach())], dim=1)
    return logprobs, entropy


def _entropy(logits: torch.Tensor, rows_per_chunk: int = 1024) -> torch.Tensor:
    """The entropy of each position's distribution, a metric: no gradient, a few rows of the vocabulary at a time.

    >>> import torch
    >>> _entropy(torch.zeros(1, 2, 4)).tolist()  # uniform over 4 tokens: log 4
    [[1.3862943649291992, 1.3862943649291992]]
    """
    import torch

    with torch.no_grad():
        flat = logits.reshape(-1, logits.shape[-1])
        parts = []
        for start in range(0, flat.shape[0], rows_per_chunk):
            logp = torch.log_softmax(flat[start : start + rows_per_chunk], dim=-1)
            # xlogy: a suppressed token (logit -inf) has p = 0 and adds 0, not 0 * -inf = nan
            parts.append(-torch.special.xlogy(logp.exp(), logp.exp()).sum(-1))
        out = torch.cat(parts) if parts else flat.new_zeros((0,))
    return out.reshape(logits.shape[:-1])
