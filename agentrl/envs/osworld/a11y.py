"""The accessibility tree (AT-SPI) as OSWorld serves it, and what OSWorld's agents make of it.

OSWorld's VM server answers ``GET /accessibility`` with ``{"AT": xml}``: one XML element per AT-SPI
node, tagged by its role name (spaces as ``-``), under a ``desktop-frame`` root. The node's name is the
plain ``name`` attribute; states (``st:visible="true"``), the toolkit's attributes (``attr:*``), its
on-screen box (``cp:screencoord="(x, y)"``, ``cp:size="(w, h)"``), value (``val:*``) and actions
(``act:*``) are namespaced attributes (:data:`NAMESPACES`, by prefix); the text, for nodes with a text
interface, is the element's text. :data:`DUMP_SCRIPT` writes that XML: the program
:mod:`agentrl.envs.osworld.runtime.programs.a11y_dump`, run in a child process of the *system* Python (where
Debian's ``python3-gi`` imports), see :meth:`agentrl.envs.osworld.runtime.desktop.DesktopSession.accessibility_tree`.

The pure functions here need no desktop:

* :func:`filter_nodes` keeps what OSWorld's ``filter_nodes`` keeps (interesting roles, showing and
  visible, enabled or editable or expandable or checkable, named or with text, on screen);
* :func:`linearize` writes OSWorld's tab-separated table for ``a11y_tree`` agents;
* :func:`trim` cuts a table to a token budget on whole lines;
* :func:`marks` lists the numbered boxes of set-of-marks (see :mod:`agentrl.envs.osworld.som`);
* :func:`terminal_text` reads the focused terminal's text, as OSWorld's ``GET /terminal`` does.
"""

from __future__ import annotations

import ast
import math
import re
import xml.etree.ElementTree as ET
from typing import Any

from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.runtime.programs.a11y_dump import NAMESPACES

__all__ = [
    "DUMP_SCRIPT",
    "LINEAR_HEADER",
    "NAMESPACES",
    "filter_nodes",
    "linearize",
    "marks",
    "parse",
    "terminal_text",
    "trim",
]

LINEAR_HEADER = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"

_ST = "{" + NAMESPACES["st"] + "}"
_CP = "{" + NAMESPACES["cp"] + "}"
_ATTR = "{" + NAMESPACES["attr"] + "}"

# The roles OSWorld's ``judge_node`` keeps: by suffix/prefix, and by exact name.
_KEEP_SUFFIXES = (
    "item", "button", "heading", "label", "scrollbar", "searchbox", "textbox", "link", "tabelement",
    "textfield", "textarea", "menu",
)  # fmt: skip
_KEEP_EXACT = frozenset(
    {
        "alert", "canvas", "check-box", "combo-box", "entry", "icon", "image", "paragraph", "scroll-bar",
        "section", "slider", "static", "table-cell", "terminal", "text",
    }
)  # fmt: skip

DUMP_SCRIPT = programs.source("a11y_dump")
"""The dumper (:mod:`agentrl.envs.osworld.runtime.programs.a11y_dump`), run from its text in the system Python:
``/usr/bin/python3 -I -c DUMP_SCRIPT <max nodes> <max depth> <max width> <max text>``; it prints the XML, and exits
3 when ``gi.repository.Atspi`` cannot be imported."""


def parse(xml: str | ET.Element) -> ET.Element:
    """The root element of an accessibility-tree XML string (an Element passes through).

    >>> parse('<desktop-frame><frame name="x"/></desktop-frame>')[0].get("name")
    'x'
    """
    if isinstance(xml, ET.Element):
        return xml
    return ET.fromstring(xml)


def terminal_text(xml: str | ET.Element) -> str | None:
    r"""The text of the focused terminal in the active window, as OSWorld's ``GET /terminal`` reads it.

    OSWorld takes ``//application[@name="gnome-terminal-server"]/frame[@st:active="true"]
    //terminal[@st:focused="true"]`` and answers its text (trailing whitespace cut) when exactly one
    node matches, else ``None``. Any application's terminal counts here (a VTE terminal such as
    gnome-terminal or xfce4-terminal; xterm has no accessibility tree, so it is never read).

    >>> st = NAMESPACES["st"]
    >>> xml = (f'<desktop-frame xmlns:st="{st}"><application name="xfce4-terminal"><frame st:active="true">'
    ...        '<terminal st:focused="true">$ ls\nnotes.txt\n\n</terminal></frame></application></desktop-frame>')
    >>> terminal_text(xml)
    '$ ls\nnotes.txt'
    >>> terminal_text('<desktop-frame/>') is None
    True
    """
    root = parse(xml)
    found = [
        node
        for app in root.iter("application")
        for frame in app.findall("frame")
        if frame.get(_ST + "active") == "true"
        for node in frame.iter("terminal")
        if node.get(_ST + "focused") == "true"
    ]
    return (found[0].text or "").rstrip() if len(found) == 1 else None


def _pair(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    try:
        got = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(got, tuple) and len(got) == 2 and all(isinstance(v, int) for v in got):
        return int(got[0]), int(got[1])
    return None


def box(node: ET.Element) -> tuple[int, int, int, int] | None:
    """``(x, y, w, h)`` from ``cp:screencoord`` and ``cp:size``, or ``None`` when either is missing."""
    xy, wh = _pair(node.get(_CP + "screencoord")), _pair(node.get(_CP + "size"))
    if xy is None or wh is None:
        return None
    return xy[0], xy[1], wh[0], wh[1]


def _interesting(tag: str) -> bool:
    return tag.startswith("document") or tag.endswith(_KEEP_SUFFIXES) or tag in _KEEP_EXACT


def _judge(node: ET.Element, check_image: bool) -> bool:
    tag = node.tag if isinstance(node.tag, str) else ""
    if not _interesting(tag):
        return False
    if node.get(_ST + "showing") != "true" or node.get(_ST + "visible") != "true":
        return False
    if not any(node.get(_ST + s) == "true" for s in ("enabled", "editable", "expandable", "checkable")):
        return False
    if not (node.get("name") or node.text or (check_image and node.get("image") == "true")):
        return False
    b = box(node)
    return b is not None and b[0] >= 0 and b[1] >= 0 and b[2] > 0 and b[3] > 0


def filter_nodes(xml: str | ET.Element, check_image: bool = False) -> list[ET.Element]:
    """The nodes OSWorld's ``filter_nodes`` keeps, in document order.

    A node is kept when its role is one agents act on (``*button``, ``*item``, ``*menu``, ``entry``,
    ``document*``, ``label``, ``text``, ...), it is showing and visible, enabled (or editable,
    expandable, checkable), has a name or text (or an image, with ``check_image``), and its box is on
    screen (x, y >= 0; w, h > 0): closed menus report ``-2147483648`` and drop out here.
    """
    return [n for n in parse(xml).iter() if _judge(n, check_image)]


def _quoted(text: str | None) -> str:
    if not text:
        return '""'
    return '"' + text.replace('"', '""') + '"' if '"' in text else text


def linearize(xml: str | ET.Element) -> str:
    r"""OSWorld's linearized accessibility tree: a header, then one tab-separated line per kept node.

    >>> xml = (
    ...     '<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
    ...     'xmlns:cp="https://accessibility.ubuntu.example.org/ns/component">'
    ...     '<push-button name="OK" st:showing="true" st:visible="true" st:enabled="true" '
    ...     'cp:screencoord="(10, 20)" cp:size="(80, 30)"/></desktop-frame>'
    ... )
    >>> print(linearize(xml).splitlines()[1].replace("\t", " | "))
    push-button | OK | "" |  |  | (10, 20) | (80, 30)
    """
    lines = [LINEAR_HEADER]
    for node in filter_nodes(xml):
        lines.append(
            "\t".join(
                [
                    str(node.tag),
                    node.get("name", ""),
                    _quoted(node.text),
                    node.get(_ATTR + "class", ""),
                    node.get(_ATTR + "description", ""),
                    node.get(_CP + "screencoord", ""),
                    node.get(_CP + "size", ""),
                ]
            )
        )
    return "\n".join(lines)


def trim(text: str, max_tokens: int, *, chars_per_token: int = 4) -> str:
    r"""Keep the whole lines of ``text`` that fit ``max_tokens`` (``chars_per_token`` characters a token).

    When lines are dropped, a last line says how many: ``[... N more lines trimmed]``. With
    ``chars_per_token=1`` the budget is in characters. A first line longer than the budget is cut.

    >>> trim("a\nb\nc", 100)
    'a\nb\nc'
    >>> print(trim("header\n" + "x" * 40 + "\n" + "y" * 40, 15))
    header
    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    [... 1 more lines trimmed]
    >>> print(trim("head\naaaa\nbbbb\ncccc", 12, chars_per_token=1))
    head
    aaaa
    [... 2 more lines trimmed]
    """
    if max_tokens <= 0 or chars_per_token <= 0:
        raise ValueError("max_tokens and chars_per_token must be positive")

    def cost(chunk: str) -> int:
        return math.ceil(len(chunk) / chars_per_token)

    if cost(text) <= max_tokens:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        line_cost = cost(line + "\n")
        if used + line_cost > max_tokens and kept:
            break
        kept.append(line if kept else line[: max_tokens * chars_per_token])
        used += line_cost
    dropped = len(lines) - len(kept)
    return "\n".join([*kept, f"[... {dropped} more lines trimmed]"])


_SPACE = re.compile(r"\s+")


def marks(xml: str | ET.Element, image: Any = None, *, check_image: bool = True) -> list[dict[str, Any]]:
    """The set-of-marks boxes: ``{"index", "tag", "name", "text", "x", "y", "w", "h"}``, index from 1.

    The nodes are :func:`filter_nodes`'s (with ``check_image``, as OSWorld's ``tag_screenshot``). Given
    the screenshot ``image`` (an ``(H, W, 3)`` array), boxes whose pixels are all one colour are left
    out, as OSWorld does. ``text`` is the node's text, ``""`` when it has none.

    >>> xml = (
    ...     '<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
    ...     'xmlns:cp="https://accessibility.ubuntu.example.org/ns/component">'
    ...     '<menu name="File" st:showing="true" st:visible="true" st:enabled="true" '
    ...     'cp:screencoord="(0, 25)" cp:size="(40, 20)"/></desktop-frame>'
    ... )
    >>> marks(xml)
    [{'index': 1, 'tag': 'menu', 'name': 'File', 'text': '', 'x': 0, 'y': 25, 'w': 40, 'h': 20}]
    """
    out: list[dict[str, Any]] = []
    for node in filter_nodes(xml, check_image=check_image):
        b = box(node)
        assert b is not None
        x, y, w, h = b
        if image is not None:
            crop = image[y : y + h, x : x + w]
            if crop.size == 0:
                continue
            flat = crop.reshape(-1, crop.shape[-1]) if crop.ndim == 3 else crop.reshape(-1, 1)
            if (flat == flat[0]).all():
                continue
        out.append(
            {
                "index": len(out) + 1,
                "tag": str(node.tag),
                "name": node.get("name", ""),
                "text": node.text or "",
                "x": x,
                "y": y,
                "w": w,
                "h": h,
            }
        )
    return out
