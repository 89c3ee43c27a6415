"""Observation and action spaces for text and pixel envs.

Gymnasium's :class:`~gymnasium.spaces.Text` only *contains* strings over its charset (alphanumeric
by default), so an LLM prompt with spaces, punctuation or non-ASCII fails ``check_env``.
:class:`UnicodeText` accepts any ``str`` within its length bounds and still samples (printable ASCII),
so random-agent baselines and ``check_env`` work.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import utils as _vector_utils

__all__ = ["TextObservation", "UnicodeText", "rgb_image_space"]

_SAMPLE_CHARSET = string.printable


class UnicodeText(spaces.Text):
    """Any Python ``str`` of length ``min_length..max_length``.

    Args:
        max_length: the longest string in the space.
        min_length: the shortest string in the space.
        sample_charset: characters used by :meth:`sample` (membership does not depend on it).
        seed: seed for the sampler.

    >>> space = UnicodeText(100)
    >>> space.contains("Héllo, wörld! ∑ x²"), space.contains("x" * 101), space.contains(b"bytes")
    (True, False, False)
    >>> len(space.sample()) <= 100
    True
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        sample_charset: str = _SAMPLE_CHARSET,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=sample_charset, seed=seed)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``str`` with a length in bounds (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    __hash__ = spaces.Text.__hash__


def rgb_image_space(height: int, width: int) -> spaces.Box:
    """An ``(height, width, 3)`` ``uint8`` RGB image space, as pixel envs return.

    >>> rgb_image_space(720, 1280).shape
    (720, 1280, 3)
    """
    return spaces.Box(low=0, high=255, shape=(height, width, 3), dtype=np.uint8)


class TextObservation(str):
    """A ``str`` that also carries the ``dtype`` of :class:`UnicodeText` spaces.

    It behaves as the plain string it is; the one extra attribute lets checkers that compare an
    observation's ``dtype`` with its space's (PettingZoo's AEC ``api_test``) accept text.

    >>> obs = TextObservation("Your move.")
    >>> obs == "Your move.", obs.dtype == UnicodeText(10).dtype
    (True, True)
    """

    __slots__ = ()
    dtype = np.dtype(str)


def _refuse_shared_memory(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    raise TypeError(
        "text observations cannot live in AsyncVectorEnv's shared memory (gymnasium would encode them "
        'as character indices and hand back strings of "0"); pass vector_kwargs={"shared_memory": False} '
        "to gym.make_vec, or shared_memory=False to AsyncVectorEnv"
    )


# Fail loudly instead of silently corrupting text in async vector envs with shared memory.
_vector_utils.create_shared_memory.register(UnicodeText)(_refuse_shared_memory)
