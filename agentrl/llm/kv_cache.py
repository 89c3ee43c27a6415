"""KV caches across requests: rows joining a decoding batch, and a conversation's earlier turns reused.

:class:`~agentrl.llm.transformers_backend.TransformersBackend` decodes left-padded batches with a
``transformers`` ``DynamicCache`` (one ``keys``/``values`` tensor of shape ``(batch, heads, length, dim)`` per
layer) and an attention mask whose width is that length. Two things here work on that layout:

* :func:`merge_batches` appends one batch's rows to another's, both left-padded to the wider one, so that
  requests arriving while a batch decodes can join it (continuous batching);
* :class:`PrefixStore` keeps, for the last finished rows, the KV of every token they were fed (prompt and
  completion but its last token). An agent's next turn continues its conversation's token ids, so its
  prompt starts with such a row's ids: only the new tokens (the env's observation) are run through the
  model, not the whole history again.

Both work for plain dynamic layers only (:func:`can_merge`); a sliding-window or static cache keeps its own
shape, and the backend then runs each batch to its end and prefills every prompt whole.

>>> store = PrefixStore(capacity=2)
>>> store.put(range(10), [("keys", "values")])  # a finished row's ids and its per-layer KV
>>> store.longest([*range(10), 42, 43])  # the next turn: the same ids, then the observation
(10, [('keys', 'values')])
>>> store.longest([0, 1, 2, 99])  # too short a match to be worth it
(0, None)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PrefixStore", "can_merge", "cache_from_rows", "merge_batches", "row_kv"]

#: a match shorter than this is not worth a second code path (a chat template's first tokens)
MIN_REUSE_TOKENS = 8


def can_merge(cache: Any) -> bool:
    """Whether rows can be joined into or copied out of this cache: every layer a plain dynamic one."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)


def _pad_left(tensor: Any, width: int, dim: int) -> Any:
    import torch

    missing = width - tensor.shape[dim]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


def merge_batches(cache: Any, attention: Any, other: Any, other_attention: Any) -> Any:
    """Append ``other``'s rows to ``cache`` (in place), both left-padded to the wider one; the merged mask.

    A cache's length equals its mask's width (both grow by one column a token), so padding the keys and
    values on the left with zeros that the mask hides keeps every row's attention as it was.
    """
    import torch

    width = max(attention.shape[1], other_attention.shape[1])
    for layer, add in zip(cache.layers, other.layers, strict=True):
        layer.keys = torch.cat([_pad_left(layer.keys, width, 2), _pad_left(add.keys, width, 2)])
        layer.values = torch.cat([_pad_left(layer.values, width, 2), _pad_left(add.values, width, 2)])
    return torch.cat([_pad_left(attention, width, 1), _pad_left(other_attention, width, 1)])


def row_kv(cache: Any, row: int, mask: Any) -> list[tuple[Any, Any]]:
    """One row's keys and values, per layer, at the columns its mask keeps (``(heads, length, dim)`` each)."""
    columns = mask.nonzero().flatten()
    return [
        (layer.keys[row].index_select(1, columns).clone(), layer.values[row].index_select(1, columns).clone())
        for layer in cache.layers
    ]


def cache_from_rows(cache_class: Any, rows: Sequence[Sequence[tuple[Any, Any]] | None], lengths: Sequence[int]) -> Any:
    """A ``DynamicCache`` holding each row's first ``lengths[i]`` tokens of KV, right-aligned (left-padded).

    ``rows[i]`` is a row's per-layer ``(keys, values)`` from :func:`row_kv` (``None`` with a length of 0: no
    reuse for that row, all padding).
    """
    import torch

    width = max(lengths)
    sample = next(kv for kv in rows if kv is not None)
    cache = cache_class()
    for layer_index in range(len(sample)):
        keys, values = [], []
        for kv, length in zip(rows, lengths, strict=True):
            if kv is None or length == 0:
                k0, v0 = sample[layer_index]
                keys.append(k0.new_zeros((k0.shape[0], width, k0.shape[2])))
                values.append(v0.new_zeros((v0.shape[0], width, v0.shape[2])))
                continue
            k, v = kv[layer_index]
            keys.append(_pad_left(k[:, :length], width, 1))
            values.append(_pad_left(v[:, :length], width, 1))
        cache.update(torch.stack(keys), torch.stack(values), layer_index)
    return cache


class PrefixStore:
    """The KV of recently finished rows, keyed by their token ids; the least recently used go first.

    :meth:`longest` finds the entry sharing the longest prefix with a new prompt (numpy compares whole
    arrays, so a lookup over ``capacity`` entries of a few thousand tokens takes well under a millisecond).
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = int(capacity)
        self._entries: OrderedDict[int, tuple[np.ndarray, Any]] = OrderedDict()
        self._next = 0
        self.hits = 0
        self.reused_tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every entry (the weights changed: the cached keys and values are the old policy's)."""
        self._entries.clear()

    def put(self, ids: Sequence[int], kv: Any) -> None:
        """Keep ``kv`` (per-layer keys and values) for the token ``ids`` it was computed from."""
        if self.capacity <= 0 or len(ids) < MIN_REUSE_TOKENS:
            return
        array = np.asarray(ids, dtype=np.int64)
        for key, (known, _) in list(self._entries.items()):  # an entry this one extends is not needed any more
            if len(known) <= len(array) and np.array_equal(known, array[: len(known)]):
                del self._entries[key]
        self._entries[self._next] = (array, kv)
        self._next += 1
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def longest(self, prompt: Sequence[int]) -> tuple[int, Any]:
        """``(n, kv)``: the entry sharing the longest prefix with ``prompt`` and its length ``n`` (0, None: none)."""
        if not self._entries:
            return 0, None
        array = np.asarray(prompt, dtype=np.int64)
        best, best_key = 0, None
        for key, (known, _) in self._entries.items():
            width = min(len(known), len(array))
            if width <= best:
                continue
            differ = np.flatnonzero(known[:width] != array[:width])
            shared = int(differ[0]) if len(differ) else width
            if shared > best:
                best, best_key = shared, key
        if best_key is None or best < MIN_REUSE_TOKENS:
            return 0, None
        self._entries.move_to_end(best_key)
        return best, self._entries[best_key][1]
