"""The accessibility tree (AT-SPI) as OSWorld serves it, and what OSWorld's agents make of it.

OSWorld's VM server answers ``GET /accessibility`` with ``{"AT": xml}``: one XML element per AT-SPI
node, tagged by its role name (spaces as ``-``), under a ``desktop-frame`` root. The node's name is the
plain ``name`` attribute; states (``st:visible="true"``), the toolkit's attributes (``attr:*``), its
on-screen box (``cp:screencoord="(x, y)"``, ``cp:size="(w, h)"``), value (``val:*``) and actions
(``act:*``) are namespaced attributes; the text, for nodes with a text interface, is the element's
text. :data:`DUMP_SCRIPT` writes that XML; it runs in a child process of the *system* Python (where
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

_BASE = "https://accessibility.ubuntu.example.org/ns/"
NAMESPACES: dict[str, str] = {
    "st": _BASE + "state",
    "attr": _BASE + "attributes",
    "cp": _BASE + "component",
    "doc": _BASE + "document",
    "docattr": _BASE + "document/attributes",
    "txt": _BASE + "text",
    "val": _BASE + "value",
    "act": _BASE + "action",
}
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

# Runs in the system python (``/usr/bin/python3 -I``): stdlib and gi only. argv: max_nodes max_depth
# max_width max_text. Prints the XML on stdout; exit 3 when gi/Atspi cannot be imported.
DUMP_SCRIPT = r"""
import re, sys
import xml.etree.ElementTree as ET
try:
    import gi
    gi.require_version("Atspi", "2.0")
    from gi.repository import Atspi
except Exception as exc:
    print("cannot import gi.repository.Atspi: %s" % exc, file=sys.stderr)
    sys.exit(3)

MAX_NODES, MAX_DEPTH, MAX_WIDTH, MAX_TEXT = (int(a) for a in sys.argv[1:5])
NS = __NAMESPACES__
for _p, _u in NS.items():
    ET.register_namespace(_p, _u)
ST, AT, CP, VAL, ACT = ("{%s}" % NS[k] for k in ("st", "attr", "cp", "val", "act"))
BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
count = 0
truncated = False


def clean(s):
    return BAD.sub("", s or "")


def build(acc, depth):
    global count, truncated
    count += 1
    attrs = {}
    try:
        attrs["name"] = clean(acc.get_name())
    except Exception:
        attrs["name"] = ""
    try:
        for st in acc.get_state_set().get_states():
            nick = Atspi.StateType(st).value_nick.replace("-", "_")
            if nick:
                attrs[ST + nick] = "true"
    except Exception:
        pass
    try:
        for k, v in (acc.get_attributes() or {}).items():
            if k and re.match(r"^[A-Za-z_][A-Za-z0-9_.-]*$", k):
                attrs[AT + k] = clean(v)
    except Exception:
        pass
    if attrs.get(ST + "visible") == "true" and attrs.get(ST + "showing") == "true":
        try:
            comp = acc.get_component_iface()
            if comp is not None:
                r = comp.get_extents(Atspi.CoordType.SCREEN)
                attrs[CP + "screencoord"] = str((r.x, r.y))
                attrs[CP + "size"] = str((r.width, r.height))
        except Exception:
            pass
    text = ""
    try:
        ti = acc.get_text_iface()
        if ti is not None:
            n = ti.get_character_count()
            text = ti.get_text(0, min(n, MAX_TEXT)) if n > 0 else ""
            text = clean(text.replace("\ufffc", "").replace("\ufffd", ""))
    except Exception:
        pass
    for flag, getter in (("image", "get_image_iface"), ("selection", "get_selection_iface")):
        try:
            if getattr(acc, getter)() is not None:
                attrs[flag] = "true"
        except Exception:
            pass
    try:
        vi = acc.get_value_iface()
        if vi is not None:
            for key, fn in (("value", "get_current_value"), ("min", "get_minimum_value"),
                            ("max", "get_maximum_value"), ("step", "get_minimum_increment")):
                try:
                    attrs[VAL + key] = str(getattr(vi, fn)())
                except Exception:
                    pass
    except Exception:
        pass
    try:
        ai = acc.get_action_iface()
        if ai is not None:
            for i in range(ai.get_n_actions()):
                an = (ai.get_action_name(i) or "").replace(" ", "-")
                if an and re.match(r"^[A-Za-z_][A-Za-z0-9_.-]*$", an):
                    attrs[ACT + an + "_desc"] = clean(ai.get_action_description(i))
                    attrs[ACT + an + "_kb"] = clean(ai.get_key_binding(i))
    except Exception:
        pass
    try:
        role = (acc.get_role_name() or "").strip()
    except Exception:
        role = ""
    tag = re.sub(r"[^A-Za-z0-9_.-]", "-", role.replace(" ", "-")) or "unknown"
    if not re.match(r"^[A-Za-z_]", tag):
        tag = "unknown-" + tag
    node = ET.Element(tag, attrs)
    if text:
        node.text = text
    if depth >= MAX_DEPTH:
        return node
    try:
        n = acc.get_child_count()
    except Exception:
        n = 0
    for i in range(min(n, MAX_WIDTH)):
        if count >= MAX_NODES:
            truncated = True
            break
        try:
            child = acc.get_child_at_index(i)
        except Exception:
            continue
        if child is not None:
            node.append(build(child, depth + 1))
    return node


Atspi.set_timeout(2000, 5000)
root = ET.Element("desktop-frame")
desktop = Atspi.get_desktop(0)
for i in range(desktop.get_child_count()):
    if count >= MAX_NODES:
        truncated = True
        break
    try:
        app = desktop.get_child_at_index(i)
    except Exception:
        continue
    if app is not None:
        root.append(build(app, 1))
if truncated:
    root.set("truncated", "true")
sys.stdout.write(ET.tostring(root, encoding="unicode"))
""".replace("__NAMESPACES__", repr(NAMESPACES))


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
