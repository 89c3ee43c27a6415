"""Writes the accessibility (AT-SPI) tree of every app on the display, as OSWorld's ``GET /accessibility`` XML.

Runs where: in the desktop's sandbox, beside the apps, started by
:meth:`~agentrl.envs.osworld.runtime.desktop.DesktopSession.accessibility_tree` through the sandbox's ``run``:
``/usr/bin/python3 -I -c <this file's text> <max nodes> <max depth> <max width> <max text>``. The system Python,
because Debian's ``python3-gi`` imports only there: standard library and ``gi`` only. Prints the XML on standard
output (the root has ``truncated="true"`` when ``<max nodes>`` cut the walk); exit 3 when ``gi.repository.Atspi``
cannot be imported.

One XML element per AT-SPI node, tagged by its role name (spaces as ``-``), under a ``desktop-frame`` root: the
name as the ``name`` attribute; states (``st:``), the toolkit's attributes (``attr:``), the on-screen box of a
visible and showing node (``cp:screencoord``, ``cp:size``), values (``val:``) and actions (``act:``) as attributes
in the namespaces of :data:`NAMESPACES` (which :mod:`agentrl.envs.osworld.a11y` reads them with); the text of a
node with a text interface as the element's text (at most ``<max text>`` characters).

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing (``gi`` is imported by :func:`main`).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from typing import Any

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
"""The XML namespaces of the node's attributes, by prefix (OSWorld's)."""
BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What XML 1.0 cannot hold: dropped from every name, attribute value and text."""
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
"""An attribute or action name that can be an XML name."""


def clean(s: str | None) -> str:
    """``s`` without the characters XML 1.0 cannot hold (``None`` is ``""``)."""
    return BAD.sub("", s or "")


class Dump:
    """One walk of the tree: the limits, the namespaces and how many nodes it has written."""

    def __init__(self, atspi: Any, namespaces: dict[str, str], max_nodes: int, max_depth: int, max_width: int,
                 max_text: int) -> None:
        self.atspi = atspi
        self.max_nodes, self.max_depth, self.max_width, self.max_text = max_nodes, max_depth, max_width, max_text
        prefixes = ("st", "attr", "cp", "val", "act")
        self.st, self.at, self.cp, self.val, self.act = (f"{{{namespaces[k]}}}" for k in prefixes)
        self.count = 0
        self.truncated = False

    def attributes(self, acc: Any) -> dict[str, str]:
        """The node's name, states, toolkit attributes, box, interfaces, values and actions (each where it has any)."""
        Atspi = self.atspi
        attrs: dict[str, str] = {}
        try:
            attrs["name"] = clean(acc.get_name())
        except Exception:
            attrs["name"] = ""
        try:
            for st in acc.get_state_set().get_states():
                nick = Atspi.StateType(st).value_nick.replace("-", "_")
                if nick:
                    attrs[self.st + nick] = "true"
        except Exception:
            pass
        try:
            for k, v in (acc.get_attributes() or {}).items():
                if k and NAME.match(k):
                    attrs[self.at + k] = clean(v)
        except Exception:
            pass
        if attrs.get(self.st + "visible") == "true" and attrs.get(self.st + "showing") == "true":
            try:
                comp = acc.get_component_iface()
                if comp is not None:
                    r = comp.get_extents(Atspi.CoordType.SCREEN)
                    attrs[self.cp + "screencoord"] = str((r.x, r.y))
                    attrs[self.cp + "size"] = str((r.width, r.height))
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
                        attrs[self.val + key] = str(getattr(vi, fn)())
                    except Exception:
                        pass
        except Exception:
            pass
        try:
            ai = acc.get_action_iface()
            if ai is not None:
                for i in range(ai.get_n_actions()):
                    an = (ai.get_action_name(i) or "").replace(" ", "-")
                    if an and NAME.match(an):
                        attrs[self.act + an + "_desc"] = clean(ai.get_action_description(i))
                        attrs[self.act + an + "_kb"] = clean(ai.get_key_binding(i))
        except Exception:
            pass
        return attrs

    def text(self, acc: Any) -> str:
        """The node's text (at most ``max_text`` characters), ``""`` without a text interface."""
        try:
            ti = acc.get_text_iface()
            if ti is not None:
                n = ti.get_character_count()
                text = ti.get_text(0, min(n, self.max_text)) if n > 0 else ""
                return clean(text.replace("\ufffc", "").replace("\ufffd", ""))
        except Exception:
            pass
        return ""

    def build(self, acc: Any, depth: int) -> ET.Element:
        """The element of node ``acc`` at ``depth``, with its children (within the limits)."""
        self.count += 1
        attrs = self.attributes(acc)
        text = self.text(acc)
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
        if depth >= self.max_depth:
            return node
        try:
            n = acc.get_child_count()
        except Exception:
            n = 0
        self.add_children(node, acc, min(n, self.max_width), depth + 1)
        return node

    def add_children(self, parent: ET.Element, acc: Any, width: int, depth: int) -> None:
        """Append to ``parent`` the elements of ``acc``'s first ``width`` children, until ``max_nodes`` are written."""
        for i in range(width):
            if self.count >= self.max_nodes:
                self.truncated = True
                break
            try:
                child = acc.get_child_at_index(i)
            except Exception:
                continue
            if child is not None:
                parent.append(self.build(child, depth))

    def desktop(self) -> ET.Element:
        """The ``desktop-frame`` root with every app under it."""
        Atspi = self.atspi
        Atspi.set_timeout(2000, 5000)
        root = ET.Element("desktop-frame")
        desktop = Atspi.get_desktop(0)
        self.add_children(root, desktop, desktop.get_child_count(), 1)
        if self.truncated:
            root.set("truncated", "true")
        return root


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <max nodes>, <max depth>, <max width>, <max text>]``; prints the XML on standard output."""
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except Exception as exc:
        print(f"cannot import gi.repository.Atspi: {exc}", file=sys.stderr)
        sys.exit(3)
    max_nodes, max_depth, max_width, max_text = (int(a) for a in argv[1:5])
    for prefix, uri in NAMESPACES.items():
        ET.register_namespace(prefix, uri)
    root = Dump(Atspi, NAMESPACES, max_nodes, max_depth, max_width, max_text).desktop()
    sys.stdout.write(ET.tostring(root, encoding="unicode"))


if __name__ == "__main__":
    main(sys.argv)
