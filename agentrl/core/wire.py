"""Gymnasium values and spaces as JSON: what an env server sends and its client reads back exactly.

:func:`encode` turns an observation, action or ``info`` into JSON-safe data and :func:`decode` reverses it:
arrays come back with their dtype and shape, and ``uint8`` images (``H x W``, ``H x W x 3`` or ``x 4``) travel as
PNG (lossless, and what image viewers and OpenEnv clients can open), other arrays as their raw bytes in base64.
:func:`space_to_json` / :func:`space_from_json` carry the spaces, so a remote env has the same
``observation_space`` and ``action_space`` as the one it stands for.

>>> import numpy as np
>>> frame = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
>>> wire = encode({"screen": frame, "text": "hi", "n": np.int64(3)})
>>> wire["screen"]["__array__"], wire["n"]
('png', 3)
>>> back = decode(wire)
>>> bool((back["screen"] == frame).all()), back["screen"].dtype, back["text"]
(True, dtype('uint8'), 'hi')
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from agentrl.core.errors import AgentRLError
from agentrl.core.spaces import UnicodeText

__all__ = ["MAX_DEPTH", "WireError", "decode", "decode_for_space", "encode", "space_from_json", "space_to_json"]

ARRAY_KEY = "__array__"
"""The key that marks an encoded array: ``{"__array__": "png" | "raw", "dtype", "shape", "data"}``."""


MAX_DEPTH = 32
"""The deepest nesting of lists and dicts :func:`decode_for_space` takes (an action is never deeper)."""


class WireError(AgentRLError, ValueError):
    """A value or space that cannot be carried, or a payload that is not one this module wrote."""


def _is_image(array: np.ndarray) -> bool:
    if array.dtype != np.uint8 or array.size == 0:
        return False
    return array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (1, 3, 4))


def _encode_array(array: np.ndarray) -> dict[str, Any]:
    if _is_image(array):
        from PIL import Image

        pixels = array[:, :, 0] if array.ndim == 3 and array.shape[2] == 1 else array
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(pixels)).save(buffer, format="PNG", compress_level=1)
        data, kind = buffer.getvalue(), "png"
    else:
        data, kind = np.ascontiguousarray(array).tobytes(), "raw"
    return {
        ARRAY_KEY: kind,
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "data": base64.b64encode(data).decode("ascii"),
    }


ArraySpec = tuple[np.dtype[Any], tuple[int, ...]]


def _decode_array(payload: Mapping[str, Any], expected: ArraySpec | None = None) -> np.ndarray:
    try:
        kind, dtype, shape = payload[ARRAY_KEY], np.dtype(payload["dtype"]), tuple(int(n) for n in payload["shape"])
        encoded = payload["data"]
        if not isinstance(encoded, str):
            raise TypeError("data must be a base64 string")
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"an encoded array needs {ARRAY_KEY}, dtype, shape and base64 data; got {exc!r}") from None
    if expected is not None:
        # Checked before a byte is decoded: the client chooses dtype and shape, and a 300 KiB PNG can expand to GBs.
        want_dtype, want_shape = expected
        if dtype != want_dtype or shape != want_shape:
            raise WireError(
                f"expected an array of dtype {want_dtype} and shape {list(want_shape)} (the space's), got dtype "
                f"{dtype} and shape {list(shape)}"
            )
        if kind == "raw" and len(encoded) > 4 * (dtype.itemsize * math.prod(shape) + 2) // 3 + 4:
            raise WireError(f"an encoded array of shape {list(shape)} carries more bytes than its shape holds")
    try:
        data = base64.b64decode(encoded, validate=True)
    except ValueError as exc:
        raise WireError(f"an encoded array's data is not base64: {exc}") from None
    if kind == "png":
        from PIL import Image

        try:
            image = Image.open(io.BytesIO(data))  # reads the header only
            width, height = image.size
            channels = len(image.getbands())
            if width * height * channels != math.prod(shape):
                raise WireError(f"a PNG of {width}x{height}x{channels} cannot be an array of shape {list(shape)}")
            array = np.asarray(image, dtype=dtype)
        except WireError:
            raise
        except Exception as exc:  # PIL's errors for a broken image are of many kinds
            raise WireError(f"an encoded array's PNG cannot be read: {exc}") from None
    elif kind == "raw":
        try:
            array = np.frombuffer(data, dtype=dtype).copy()
        except ValueError as exc:
            raise WireError(f"an encoded array's bytes do not fit its dtype {dtype}: {exc}") from None
    else:
        raise WireError(f"unknown array encoding {kind!r}; expected 'png' or 'raw'")
    if array.size != math.prod(shape):
        raise WireError(f"an encoded array of shape {list(shape)} carries {array.size} values")
    return array.reshape(shape)


def encode(value: Any) -> Any:
    """``value`` as JSON-safe data: arrays as :data:`ARRAY_KEY` dicts, numpy scalars as numbers, tuples as lists.

    Raises:
        WireError: a value JSON cannot carry (an object, bytes); its type is named.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, Mapping):
        return {str(key): encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    raise WireError(f"cannot send a {type(value).__name__} over the wire; use str, numbers, lists, dicts or arrays")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode` (lists stay lists)."""
    if isinstance(value, Mapping):
        if ARRAY_KEY in value:
            return _decode_array(value)
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value


def _array_of(space: gym.Space[Any] | None) -> ArraySpec | None:
    """The dtype and shape an array of ``space`` has, or ``None`` when the space holds no array."""
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return np.dtype(space.dtype), tuple(int(n) for n in space.shape)
    return None


def decode_for_space(value: Any, space: gym.Space[Any] | None, *, _depth: int = 0) -> Any:
    """:func:`decode` for a value that should belong to ``space`` (a client's action), checked before it is decoded.

    An encoded array is decoded only where the space holds an array, and only with the space's dtype and
    shape (its bytes and a PNG's size are checked before decoding); a ``Dict`` space takes only its own keys,
    a ``Tuple`` space its own length; nothing nests deeper than :data:`MAX_DEPTH`. Scalars, strings and lists
    pass as they are: the env's ``step`` judges them (and raises ``InvalidActionType``).

    >>> box = gym.spaces.Box(0, 255, (2, 2), np.uint8)
    >>> decode_for_space(encode(np.zeros((2, 2), np.uint8)), box).shape
    (2, 2)
    >>> decode_for_space(encode(np.zeros((64, 64), np.uint8)), box)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentrl.core.wire.WireError: expected an array of dtype uint8 and shape [2, 2] (the space's), got ... [64, 64]
    >>> decode_for_space(encode(np.zeros((2, 2), np.uint8)), UnicodeText(max_length=8))
    Traceback (most recent call last):
    ...
    agentrl.core.wire.WireError: this env's action space is UnicodeText(0, 8): an encoded array does not belong in it

    Raises:
        WireError: what does not fit, named.
    """
    if _depth > MAX_DEPTH:
        raise WireError(f"the value nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        if ARRAY_KEY in value:
            expected = _array_of(space)
            if expected is None:
                raise WireError(f"this env's action space is {space}: an encoded array does not belong in it")
            return _decode_array(value, expected)
        if isinstance(space, gym.spaces.Dict):
            unknown = sorted(str(k) for k in value if k not in space.spaces)
            if unknown:
                raise WireError(f"unknown key(s) {', '.join(unknown)}; this Dict space has {', '.join(space.spaces)}")
            return {key: decode_for_space(item, space.spaces[key], _depth=_depth + 1) for key, item in value.items()}
        return {key: decode_for_space(item, None, _depth=_depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        if isinstance(space, gym.spaces.Tuple):
            if len(value) != len(space.spaces):
                raise WireError(f"this Tuple space has {len(space.spaces)} parts, got {len(value)}")
            pairs = zip(value, space.spaces, strict=True)
            return [decode_for_space(item, sub, _depth=_depth + 1) for item, sub in pairs]
        expected = _array_of(space)
        if expected is not None and len(value) > max(1, math.prod(expected[1])):
            raise WireError(f"a list of {len(value)} items cannot be an action of shape {list(expected[1])}")
        return [decode_for_space(item, None, _depth=_depth + 1) for item in value]
    return value


def space_to_json(space: gym.Space[Any]) -> dict[str, Any]:
    """A JSON description of ``space`` that :func:`space_from_json` rebuilds (``type`` plus its parameters).

    >>> space_to_json(gym.spaces.Discrete(3))
    {'type': 'Discrete', 'n': 3, 'start': 0}
    >>> space_from_json(space_to_json(UnicodeText(max_length=10))).max_length
    10
    """
    if isinstance(space, UnicodeText):
        return {"type": "UnicodeText", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, gym.spaces.Text):
        return {
            "type": "Text",
            "min_length": space.min_length,
            "max_length": space.max_length,
            "charset": "".join(sorted(space.character_set)),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "low": encode(space.low),
            "high": encode(space.high),
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": encode(space.nvec), "start": encode(space.start)}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": encode(np.asarray(space.n))}
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {key: space_to_json(sub) for key, sub in space.spaces.items()}}
    if isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_json(sub) for sub in space.spaces]}
    raise WireError(f"cannot describe a {type(space).__name__} space over the wire")


def space_from_json(data: Mapping[str, Any]) -> gym.Space[Any]:
    """The space :func:`space_to_json` described.

    Raises:
        WireError: an unknown ``type`` or a missing parameter.
    """
    kind = data.get("type")
    try:
        if kind == "UnicodeText":
            return UnicodeText(min_length=int(data["min_length"]), max_length=int(data["max_length"]))
        if kind == "Text":
            return gym.spaces.Text(
                min_length=int(data["min_length"]), max_length=int(data["max_length"]), charset=str(data["charset"])
            )
        if kind == "Discrete":
            return gym.spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
        if kind == "Box":
            dtype = np.dtype(data["dtype"])
            low, high = np.asarray(decode(data["low"]), dtype=dtype), np.asarray(decode(data["high"]), dtype=dtype)
            return gym.spaces.Box(low=low, high=high, shape=tuple(data["shape"]), dtype=dtype)  # type: ignore[arg-type]
        if kind == "MultiDiscrete":
            return gym.spaces.MultiDiscrete(decode(data["nvec"]), start=decode(data["start"]))
        if kind == "MultiBinary":
            n = decode(data["n"])
            return gym.spaces.MultiBinary(n.tolist() if isinstance(n, np.ndarray) and n.ndim else int(n))
        if kind == "Dict":
            return gym.spaces.Dict({key: space_from_json(sub) for key, sub in data["spaces"].items()})
        if kind == "Tuple":
            return gym.spaces.Tuple([space_from_json(sub) for sub in data["spaces"]])
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"a {kind} space description is missing or has a bad parameter: {exc!r}") from None
    raise WireError(f"unknown space type {kind!r} in a space description")
