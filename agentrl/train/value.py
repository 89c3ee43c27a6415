"""A critic for PPO: a causal LM's backbone with a scalar value head on every position."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["ValueModel"]


def _module_base() -> Any:
    import torch

    return torch.nn.Module


class ValueModel(_module_base()):  # type: ignore[misc]
    """``V(tokens_<=t)`` for every position ``t``: the backbone's last hidden state through a linear head.

    The backbone is initialised from the policy's checkpoint (as in most LLM PPO setups, e.g.
    UI-TARS-2's critic), the head from zeros, so the first values are 0 and value pretraining
    (``PPOArgs.value_warmup_steps``) fits them before the policy moves.

    Args:
        path: the checkpoint folder.
        dtype: the torch dtype name.
        device: where to put it.
    """

    def __init__(self, path: Path, *, dtype: str = "float32", device: str = "cpu") -> None:
        import torch
        import transformers

        super().__init__()
        config = transformers.AutoConfig.from_pretrained(path)
        if getattr(config, "vision_config", None) is not None:  # a VLM: the whole model (vision tower too)
            vlm = transformers.AutoModelForImageTextToText.from_pretrained(path, dtype=getattr(torch, dtype))
            self.backbone = vlm.model
            hidden = int(vlm.config.text_config.hidden_size)
        else:
            causal = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
            self.backbone = causal.get_decoder() if hasattr(causal, "get_decoder") else causal.model
            hidden = int(causal.config.hidden_size)
        self.head = torch.nn.Linear(hidden, 1, dtype=getattr(torch, dtype))
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.to(device)

    def forward(self, input_ids: Any, attention_mask: Any, **extra_inputs: Any) -> Any:
        """Values of shape (B, T), float32, aligned as :func:`~agentrl.train.logprobs.token_logprobs`.

        Position ``t`` holds the value of the state in which token ``t`` is chosen, i.e. computed
        from the hidden state at ``t - 1`` (tokens before ``t``); position 0 holds 0. ``extra_inputs``: a VLM's
        pixel inputs (``TokenBatch.vision``).
        """
        import torch

        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        hidden = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, **extra_inputs
        )
        raw = self.head(hidden.last_hidden_state).squeeze(-1).float()
        return torch.cat([raw.new_zeros((raw.shape[0], 1)), raw[:, :-1]], dim=1)
