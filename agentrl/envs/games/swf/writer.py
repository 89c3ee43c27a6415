r"""A small SWF (Flash) writer with an AVM1 assembler: enough to build the project's own Flash games.

It writes uncompressed movies (signature ``FWS``, SWF version 8) with a handful of tags: FileAttributes,
SetBackgroundColor, DefineShape (solid filled rectangles), DefineButton2 (with actions on release),
PlaceObject2, RemoveObject2, DoAction, ShowFrame and End. Frame scripts and button actions are AVM1
bytecode assembled from a list of instructions with labels for the jumps (:class:`Asm`).

Everything here is deterministic: the same calls give the same bytes. Coordinates are given in pixels
and written in twips (1/20 pixel), as the format wants.

A minimal movie::

    >>> movie = Movie(100, 50, frame_rate=30, background=(255, 255, 255))
    >>> box = movie.rect(40, 20, (0, 200, 0))
    >>> movie.place(box, depth=1, x=10, y=10)
    >>> movie.action(Asm().stop())
    >>> movie.show_frame()
    >>> data = movie.to_bytes()
    >>> data[:4], len(data) == int.from_bytes(data[4:8], "little")
    (b'FWS\x08', True)

The format is described in Adobe's "SWF File Format Specification, Version 19".
"""

from __future__ import annotations

import struct

__all__ = ["Asm", "BitWriter", "Movie", "rect_record", "matrix_record", "signed_bits", "unsigned_bits"]

TWIPS = 20  # twips per pixel

# tag codes
TAG_END = 0
TAG_SHOW_FRAME = 1
TAG_DEFINE_SHAPE = 2
TAG_SET_BACKGROUND_COLOR = 9
TAG_DO_ACTION = 12
TAG_PLACE_OBJECT2 = 26
TAG_REMOVE_OBJECT2 = 28
TAG_DEFINE_BUTTON2 = 34
TAG_FILE_ATTRIBUTES = 69

# button condition flags: the 16 bit fields of BUTTONCONDACTION, read in stream order (first byte high)
COND_PRESS = 0x0400  # CondOverUpToOverDown
COND_RELEASE = 0x0800  # CondOverDownToOverUp

RGB = tuple[int, int, int]


def unsigned_bits(value: int) -> int:
    """The bits needed for ``value`` as an unsigned bit field (UB).

    >>> unsigned_bits(0), unsigned_bits(1), unsigned_bits(5), unsigned_bits(255)
    (0, 1, 3, 8)
    """
    if value < 0:
        raise ValueError("unsigned bit fields hold no negative values")
    return value.bit_length()


def signed_bits(*values: int) -> int:
    """The bits needed to hold every value as a signed (two's complement) bit field (SB).

    >>> signed_bits(0), signed_bits(1), signed_bits(-1), signed_bits(2000, -3)
    (1, 2, 1, 12)
    """
    return max(1, *(v.bit_length() + 1 if v >= 0 else (~v).bit_length() + 1 for v in values))


class BitWriter:
    """Packs bit fields most significant bit first, as SWF records do; :meth:`bytes` pads the last byte.

    >>> w = BitWriter()
    >>> w.ub(5, 3)          # 00011
    >>> w.sb(5, -2)         # 11110
    >>> w.bytes().hex()     # 0001 1111 10(000000)
    '1f80'
    """

    def __init__(self) -> None:
        self._bits: list[int] = []

    def ub(self, nbits: int, value: int) -> None:
        """Write ``value`` as an unsigned field of ``nbits`` bits."""
        if value < 0 or value >= 1 << nbits:
            raise ValueError(f"{value} does not fit in {nbits} unsigned bits")
        self._bits.extend((value >> i) & 1 for i in range(nbits - 1, -1, -1))

    def sb(self, nbits: int, value: int) -> None:
        """Write ``value`` as a signed (two's complement) field of ``nbits`` bits."""
        if nbits and not -(1 << (nbits - 1)) <= value < 1 << (nbits - 1):
            raise ValueError(f"{value} does not fit in {nbits} signed bits")
        self.ub(nbits, value & ((1 << nbits) - 1))

    def bytes(self) -> bytes:
        """The packed bytes, the last one padded with zero bits."""
        bits = self._bits + [0] * (-len(self._bits) % 8)
        return bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))


def rect_record(xmin: int, xmax: int, ymin: int, ymax: int) -> bytes:
    """A RECT (values in twips): Nbits (5 bits), then four signed fields.

    >>> rect_record(0, 11000, 0, 8000).hex()  # a 550x400 pixel stage
    '7800055f00000fa000'
    """
    n = signed_bits(xmin, xmax, ymin, ymax)
    w = BitWriter()
    w.ub(5, n)
    for v in (xmin, xmax, ymin, ymax):
        w.sb(n, v)
    return w.bytes()


def matrix_record(tx: int = 0, ty: int = 0) -> bytes:
    """A MATRIX with a translation only (in twips): no scale, no rotation.

    >>> matrix_record().hex(), matrix_record(200, 400).hex()
    ('00', '14643200')
    """
    w = BitWriter()
    w.ub(1, 0)  # HasScale
    w.ub(1, 0)  # HasRotate
    n = signed_bits(tx, ty) if tx or ty else 0
    w.ub(5, n)
    if n:
        w.sb(n, tx)
        w.sb(n, ty)
    return w.bytes()


def _tag(code: int, body: bytes) -> bytes:
    """A tag: short header (code << 6 | length) when the body is under 63 bytes, else the long form."""
    if len(body) < 0x3F:
        return struct.pack("<H", code << 6 | len(body)) + body
    return struct.pack("<HI", code << 6 | 0x3F, len(body)) + body


def _string(s: str) -> bytes:
    return s.encode("utf-8") + b"\x00"


class Asm:
    """A tiny AVM1 assembler: chain instruction methods, mark jump targets with :meth:`label`.

    Jumps (:meth:`jump`, :meth:`if_true`) name a label; offsets are resolved by :meth:`assemble`,
    which also appends the ActionEnd byte.

    >>> Asm().push("n", 1).set_variable().stop().assemble().hex()
    '960800006e0007010000001d0700'
    >>> code = Asm().push(1).if_true("skip").play().label("skip").stop().assemble()
    >>> code[-8:].hex()  # If with offset 1 (skips Play), then Play, Stop, End
    '9d02000100060700'
    """

    def __init__(self) -> None:
        self._items: list[tuple[str, object]] = []

    # -- plumbing -------------------------------------------------------------------------
    def _op(self, code: int, payload: bytes = b"") -> Asm:
        if code >= 0x80:
            self._items.append(("bytes", bytes([code]) + struct.pack("<H", len(payload)) + payload))
        else:
            self._items.append(("bytes", bytes([code])))
        return self

    def label(self, name: str) -> Asm:
        """Mark a jump target here."""
        self._items.append(("label", name))
        return self

    def assemble(self) -> bytes:
        """The bytecode, with jump offsets resolved and the final ActionEnd (0x00)."""
        positions: dict[str, int] = {}
        pos = 0
        for kind, value in self._items:
            if kind == "label":
                if value in positions:
                    raise ValueError(f"label {value!r} defined twice")
                positions[str(value)] = pos
            else:
                pos += len(value) if kind == "bytes" else 5  # type: ignore[arg-type]
        out = bytearray()
        for kind, value in self._items:
            if kind == "bytes":
                out += value  # type: ignore[arg-type,operator]
            elif kind in ("jump", "if"):
                target = positions.get(str(value))
                if target is None:
                    raise ValueError(f"unknown label {value!r}")
                offset = target - (len(out) + 5)  # relative to the next instruction
                out += bytes([0x99 if kind == "jump" else 0x9D]) + struct.pack("<Hh", 2, offset)
        return bytes(out) + b"\x00"

    # -- instructions ---------------------------------------------------------------------
    def push(self, *values: str | int | bool | None) -> Asm:
        """ActionPush (0x96): strings (type 0), integers (type 7), booleans (5), null (2)."""
        payload = bytearray()
        for v in values:
            if v is None:
                payload += b"\x02"
            elif isinstance(v, bool):
                payload += b"\x05" + bytes([int(v)])
            elif isinstance(v, int):
                payload += b"\x07" + struct.pack("<i", v)
            elif isinstance(v, str):
                payload += b"\x00" + _string(v)
            else:
                raise TypeError(f"cannot push {v!r}")
        return self._op(0x96, bytes(payload))

    def get_variable(self) -> Asm:
        """ActionGetVariable (0x1C): pops a name, pushes its value."""
        return self._op(0x1C)

    def set_variable(self) -> Asm:
        """ActionSetVariable (0x1D): pops a value, then a name, and sets it."""
        return self._op(0x1D)

    def add(self) -> Asm:
        """ActionAdd2 (0x47): pops b, a; pushes a + b (ECMA-262 rules)."""
        return self._op(0x47)

    def equals(self) -> Asm:
        """ActionEquals2 (0x49): pops b, a; pushes a == b."""
        return self._op(0x49)

    def not_(self) -> Asm:
        """ActionNot (0x12): pops a; pushes !a."""
        return self._op(0x12)

    def pop(self) -> Asm:
        """ActionPop (0x17)."""
        return self._op(0x17)

    def jump(self, label: str) -> Asm:
        """ActionJump (0x99) to ``label``."""
        self._items.append(("jump", label))
        return self

    def if_true(self, label: str) -> Asm:
        """ActionIf (0x9D): pops a condition; jumps to ``label`` when it is true."""
        self._items.append(("if", label))
        return self

    def goto_frame(self, frame: int) -> Asm:
        """ActionGotoFrame (0x81): go to ``frame`` (0-based); the play state is kept."""
        return self._op(0x81, struct.pack("<H", frame))

    def next_frame(self) -> Asm:
        """ActionNextFrame (0x04)."""
        return self._op(0x04)

    def play(self) -> Asm:
        """ActionPlay (0x06)."""
        return self._op(0x06)

    def stop(self) -> Asm:
        """ActionStop (0x07)."""
        return self._op(0x07)

    def set_target(self, target: str) -> Asm:
        """ActionSetTarget (0x8B): the following actions apply to ``target`` ("" = back to this clip)."""
        return self._op(0x8B, _string(target))

    # -- small macros ---------------------------------------------------------------------
    def set(self, name: str, value: str | int) -> Asm:
        """``name = value``."""
        return self.push(name, value).set_variable()

    def increment(self, name: str) -> Asm:
        """``name = name + 1``."""
        return self.push(name, name).get_variable().push(1).add().set_variable()


class Movie:
    """A movie under construction: define characters, place them, add actions, end frames.

    Args:
        width, height: the stage size in pixels.
        frame_rate: frames per second.
        background: the stage colour.
        version: the SWF version (8: AVM1 with FileAttributes).
    """

    def __init__(
        self, width: int, height: int, frame_rate: float = 30, background: RGB = (255, 255, 255), version: int = 8
    ) -> None:
        self.width, self.height, self.frame_rate, self.version = width, height, frame_rate, version
        self._tags: list[bytes] = [
            _tag(TAG_FILE_ATTRIBUTES, struct.pack("<I", 0)),
            _tag(TAG_SET_BACKGROUND_COLOR, bytes(background)),
        ]
        self._next_id = 1
        self.frames = 0

    def _new_id(self) -> int:
        cid = self._next_id
        self._next_id += 1
        return cid

    # -- characters -----------------------------------------------------------------------
    def rect(self, w: int, h: int, color: RGB) -> int:
        """Define a filled ``w`` x ``h`` rectangle (origin at its top-left); returns its character id."""
        cid = self._new_id()
        tw, th = w * TWIPS, h * TWIPS
        body = bytearray(struct.pack("<H", cid))
        body += rect_record(0, tw, 0, th)
        body += b"\x01\x00" + bytes(color)  # one solid fill style
        body += b"\x00"  # no line styles
        bits = BitWriter()
        bits.ub(4, 1)  # NumFillBits
        bits.ub(4, 0)  # NumLineBits
        # StyleChangeRecord: not an edge, StateNewStyles 0, LineStyle 0, FillStyle1 1, FillStyle0 0, MoveTo 0
        bits.ub(1, 0)
        bits.ub(5, 0b00100)
        bits.ub(1, 1)  # FillStyle1 = style 1 (the fill right of the edges, drawn clockwise)
        for dx, dy in ((tw, 0), (0, th), (-tw, 0), (0, -th)):
            n = signed_bits(dx or dy)
            n = max(n, 2)
            bits.ub(1, 1)  # edge
            bits.ub(1, 1)  # straight
            bits.ub(4, n - 2)
            bits.ub(1, 0)  # not a general line
            bits.ub(1, 1 if dx == 0 else 0)  # vertical?
            bits.sb(n, dx or dy)
        bits.ub(1, 0)
        bits.ub(5, 0)  # EndShapeRecord
        body += bits.bytes()
        self._tags.append(_tag(TAG_DEFINE_SHAPE, bytes(body)))
        return cid

    def button(
        self,
        up: int,
        actions: Asm | None = None,
        over: int | None = None,
        down: int | None = None,
        condition: int = COND_RELEASE,
    ) -> int:
        """Define a button (DefineButton2) drawn with character ``up`` (and ``over``/``down`` when given).

        The hit area is ``up``; ``actions`` run on ``condition`` (default: on release).
        """
        cid = self._new_id()
        records = bytearray()
        # ``up`` is the hit area and the up state (and over/down unless those are given)
        states = [(up, 0b1000 | 0b0001 | (0 if over is not None else 0b0010) | (0 if down is not None else 0b0100))]
        if over is not None:
            states.append((over, 0b0010))
        if down is not None:
            states.append((down, 0b0100))
        for depth, (char, flags) in enumerate(states, start=1):
            records += bytes([flags]) + struct.pack("<HH", char, depth) + matrix_record() + b"\x00"
        records += b"\x00"  # CharacterEndFlag
        body = bytearray(struct.pack("<HB", cid, 0))
        if actions is None:
            body += struct.pack("<H", 0) + records
        else:
            body += struct.pack("<H", 2 + len(records)) + records
            # CondActionSize 0 (the last one); the condition bits are stored most significant byte first
            body += struct.pack("<H", 0) + struct.pack(">H", condition) + actions.assemble()
        self._tags.append(_tag(TAG_DEFINE_BUTTON2, bytes(body)))
        return cid

    # -- display list and frames ----------------------------------------------------------
    def place(self, character: int, depth: int, x: int = 0, y: int = 0, name: str | None = None) -> None:
        """PlaceObject2: put ``character`` at ``depth``, translated to (x, y) pixels, optionally named."""
        flags = 0x02 | 0x04 | (0x20 if name else 0)
        body = struct.pack("<BHH", flags, depth, character) + matrix_record(x * TWIPS, y * TWIPS)
        if name:
            body += _string(name)
        self._tags.append(_tag(TAG_PLACE_OBJECT2, body))

    def remove(self, depth: int) -> None:
        """RemoveObject2: clear ``depth``."""
        self._tags.append(_tag(TAG_REMOVE_OBJECT2, struct.pack("<H", depth)))

    def action(self, code: Asm) -> None:
        """DoAction: a frame script, run when the frame is shown."""
        self._tags.append(_tag(TAG_DO_ACTION, code.assemble()))

    def show_frame(self) -> None:
        """End the current frame."""
        self._tags.append(_tag(TAG_SHOW_FRAME, b""))
        self.frames += 1

    def to_bytes(self) -> bytes:
        """The whole file: header, the tags, End."""
        body = rect_record(0, self.width * TWIPS, 0, self.height * TWIPS)
        rate = round(self.frame_rate * 256)
        body += struct.pack("<HH", rate, self.frames)
        body += b"".join(self._tags) + _tag(TAG_END, b"")
        return b"FWS" + bytes([self.version]) + struct.pack("<I", 8 + len(body)) + body
