"""Observation and action spaces for text and pixel envs.

Gymnasium's :class:`~gymnasium.spaces.Text` only *contains* strings over its charset (alphanumeric
by default), so an LLM prompt with spaces, punctuation or non-ASCII fails ``check_env``.
:class:`UnicodeText` accepts any ``str`` within its length bounds and still samples (printable ASCII),
so random-agent baselines and ``check_env`` work. It also lives in ``AsyncVectorEnv``'s shared memory
(code points, read back through :class:`SharedTexts`), so ``gym.make_vec(..., vectorization_mode="async")``
works on text envs with gymnasium's defaults.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector import utils as _vector_utils

__all__ = ["SHARED_TEXT_BUDGET_BYTES", "SharedTexts", "TextObservation", "UnicodeText", "rgb_image_space"]

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


# -- AsyncVectorEnv's shared memory (the default of ``gym.make_vec(..., vectorization_mode="async")``) ---------------
# Gymnasium stores a Text observation as indices into the space's charset and reads the buffer once, when the vector
# env starts: any character outside the charset fails (KeyError), and every later batch reads back what the buffer
# held then (strings of "0"). A UnicodeText slot holds the string's length and then its Unicode code points, and
# reading it gives a live view that decodes the current strings whenever it is read; the vector env hands out a copy
# of that view each step (a plain tuple of str). Pixel arrays next to the text (a Dict space) keep gymnasium's own
# shared buffers.

#: the most shared memory one UnicodeText observation may take across the vector env's copies; a space with a
#: larger ``max_length`` is refused with a message naming ``shared_memory=False`` (observations through the pipes).
SHARED_TEXT_BUDGET_BYTES = 1 << 30
_CODE = np.dtype("<u4")  # one Unicode code point (lone surrogates included: "surrogatepass")


def _slot(space: UnicodeText) -> int:
    return space.max_length + 1  # the length, then the code points


def _create_text_shared_memory(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    size = n * _slot(space) * _CODE.itemsize
    if size > SHARED_TEXT_BUDGET_BYTES:
        raise TypeError(
            f"text observations of up to {space.max_length:,} characters would take {size / 2**20:,.0f} MiB of "
            f"AsyncVectorEnv's shared memory for {n} envs (more than agentrl.core.spaces.SHARED_TEXT_BUDGET_BYTES); "
            'pass vector_kwargs={"shared_memory": False} to gym.make_vec, or shared_memory=False to AsyncVectorEnv, '
            "or give the space a smaller max_length"
        )
    if ctx is None:
        import multiprocessing as ctx
    return ctx.Array(_CODE.char, n * _slot(space))


def _codes(shared_memory: Any, space: UnicodeText) -> np.ndarray:
    return np.frombuffer(shared_memory.get_obj(), dtype=_CODE).reshape(-1, _slot(space))


def _write_text_to_shared_memory(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"a {space!r} observation must be a str, got {type(value).__name__}")
    codes = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=_CODE)
    if len(codes) > space.max_length:
        raise ValueError(
            f"an observation of {len(codes):,} characters does not fit its space {space!r}: the env returned "
            "an observation outside its observation_space"
        )
    row = _codes(shared_memory, space)[index]
    row[1 : 1 + len(codes)] = codes
    row[0] = len(codes)


class SharedTexts(Sequence[str]):
    """The live view of the text observations in an AsyncVectorEnv's shared memory (one ``str`` per env).

    Reading an item decodes what the worker wrote last. ``copy.copy``/``deepcopy`` and pickling give a plain
    ``tuple`` of ``str``: what ``AsyncVectorEnv`` hands out each step (its default ``copy=True``).
    """

    __slots__ = ("_codes",)

    def __init__(self, codes: np.ndarray) -> None:
        self._codes = codes

    def __len__(self) -> int:
        return len(self._codes)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        row = self._codes[index]
        return row[1 : 1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def snapshot(self) -> tuple[str, ...]:
        """The current strings, as a tuple."""
        return tuple(self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedTexts):
            other = other.snapshot()
        return isinstance(other, (tuple, list)) and self.snapshot() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # live contents: not hashable, as a list is not

    def __copy__(self) -> tuple[str, ...]:
        return self.snapshot()

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return self.snapshot()

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self.snapshot(),))

    def __repr__(self) -> str:
        return f"SharedTexts({self.snapshot()!r})"


def _read_text_from_shared_memory(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(_codes(shared_memory, space)[:n])


_vector_utils.create_shared_memory.register(UnicodeText)(_create_text_shared_memory)
_vector_utils.write_to_shared_memory.register(UnicodeText)(_write_text_to_shared_memory)
_vector_utils.read_from_shared_memory.register(UnicodeText)(_read_text_from_shared_memory)
