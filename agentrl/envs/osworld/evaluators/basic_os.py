"""OSWorld's os-domain metrics (``metrics/basic_os.py``): GNOME settings, the time zone, moved files.

Metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``.

=================================== =========================================================================
``check_gnome_favorite_apps``       ``gsettings`` list text holds exactly ``rules["expected"]`` (any order)
``is_utc_0``                        ``timedatectl status``'s ``Time zone:`` line ends in ``+0000)``
``check_text_enlarged``             ``gsettings``' text-scaling-factor is above 1.0
``check_moved_jpgs``                a ``list_directory`` tree's children are exactly ``rules["expected"]``
=================================== =========================================================================

Our desktop is Debian with xfwm4, not GNOME: the gsettings metrics read the text they are given with OSWorld's
semantics (the desktop has ``gsettings`` from libglib2.0-bin, with dconf).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "GETTERS",
    "METRICS",
    "check_gnome_favorite_apps",
    "check_moved_jpgs",
    "check_text_enlarged",
    "is_utc_0",
]

def check_gnome_favorite_apps(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 if the ``gsettings`` list in ``result`` holds the same apps as ``rules["expected"]``, in any order.

    ``result`` is ``gsettings get org.gnome.shell favorite-apps`` output, a GVariant string array such as
    ``['a.desktop', 'b.desktop']`` (``@as []`` when empty). OSWorld ``eval``s it; this parses it as a literal.
    The lengths must match too, so a duplicated entry scores 0.

    >>> check_gnome_favorite_apps("['thunderbird.desktop', 'vim.desktop']\n", {"expected": ["vim.desktop",
    ...                           "thunderbird.desktop"]})
    1.0
    >>> check_gnome_favorite_apps("['thunderbird.desktop']", {"expected": ["vim.desktop", "thunderbird.desktop"]})
    0.0
    """
    if not isinstance(result, str):
        return 0.0
    text = result.strip()
    if text.startswith("@as "):  # GVariant's type annotation of an empty (or typed) string array
        text = text[len("@as ") :]
    try:
        apps = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return 0.0
    if not isinstance(apps, list | tuple):
        return 0.0
    expected = list(rules["expected"])
    if len(apps) != len(expected):
        return 0.0
    return float(set(apps) == set(expected))


def _time_zone_line(output: str) -> str | None:
    lines = output.split("\n")
    for line in lines:
        if line.strip().startswith("Time zone:"):
            return line
    # OSWorld reads the fourth line, which is "Time zone:" in timedatectl's fixed layout.
    return lines[3] if len(lines) > 3 else None


def is_utc_0(result: Any, expected: Any = None, **options: Any) -> float:
    r"""1 if ``timedatectl status``' ``Time zone:`` line ends in ``+0000)`` (a UTC+0 zone, e.g. ``Etc/UTC``).

    OSWorld takes the fourth output line, which is that line in timedatectl's layout; this finds the line
    by its label, so a missing or reordered line cannot score the wrong one.

    >>> is_utc_0("               Local time: Thu 2024-01-25 12:56:06 WET\n"
    ...          "           Universal time: Thu 2024-01-25 12:56:06 UTC\n"
    ...          "                 RTC time: Thu 2024-01-25 12:56:05\n"
    ...          "                Time zone: Atlantic/Faroe (WET, +0000)\n")
    1.0
    >>> is_utc_0("                Time zone: Asia/Tokyo (JST, +0900)\n")
    0.0
    """
    if not isinstance(result, str):
        return 0.0
    line = _time_zone_line(result)
    return float(line is not None and line.rstrip().endswith("+0000)"))


def check_text_enlarged(result: Any, expected: Any = None, **options: Any) -> float:
    r"""1 if ``result`` (``gsettings get org.gnome.desktop.interface text-scaling-factor``) is above 1.0.

    >>> check_text_enlarged("1.25\n"), check_text_enlarged("1.0"), check_text_enlarged("No such schema")
    (1.0, 0.0, 0.0)
    """
    if result is None:
        return 0.0
    try:
        factor = float(str(result).strip())
    except ValueError:
        return 0.0
    return float(factor > 1.0)


def check_moved_jpgs(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 if the children of a ``list_directory`` tree are exactly ``rules["expected"]`` (names, any order).

    >>> tree = {"name": "cpjpg", "type": "directory", "children": [{"name": "b.jpg", "type": "file"},
    ...                                                            {"name": "a.jpg", "type": "file"}]}
    >>> check_moved_jpgs(tree, {"expected": ["a.jpg", "b.jpg"]}), check_moved_jpgs(tree, {"expected": ["a.jpg"]})
    (1.0, 0.0)
    """
    if not isinstance(result, Mapping):
        return 0.0
    children = result.get("children")
    if not isinstance(children, list):
        return 0.0
    moved = [node.get("name") for node in children if isinstance(node, Mapping)]
    expected = list(rules["expected"])
    if len(moved) != len(expected):
        return 0.0
    return float(set(moved) == set(expected))


GETTERS: dict[str, Callable[..., Any]] = {
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_gnome_favorite_apps": check_gnome_favorite_apps,
    "check_moved_jpgs": check_moved_jpgs,
    "check_text_enlarged": check_text_enlarged,
    "is_utc_0": is_utc_0,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
