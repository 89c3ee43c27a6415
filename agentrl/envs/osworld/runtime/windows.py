"""Find, wait for, activate and close top-level windows on one X display, through ``xdotool``.

OSWorld's setup steps ``activate_window`` and ``close_window`` name a window by title (a substring,
or the whole title with ``strict``) or by its WM_CLASS (``by_class``); OSWorld's VM server uses
``wmctrl`` for them. These helpers do the same with ``xdotool``, which the desktop already needs.
Each call is a short subprocess with the desktop's environment (``DISPLAY`` set).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Window",
    "activate_window",
    "close_window",
    "cursor_position",
    "find_windows",
    "list_windows",
    "wait_for_window",
    "window_size",
]


@dataclass(frozen=True)
class Window:
    """A visible top-level window: X id, title, WM_CLASS (instance and class, lower case) and pid."""

    id: int
    name: str
    wm_class: str
    pid: int | None


def _host_env(env: Mapping[str, str]) -> dict[str, str]:
    """What of the desktop's environment these host-side X tools get: the display, and nothing that names HOME.

    They run on the host, so they must not read the sandbox's HOME (which the agent writes) for settings.

    >>> sorted(_host_env({"DISPLAY": ":5", "HOME": "/tmp/x/home", "PATH": "/usr/bin", "GTK_MODULES": "gail"}))
    ['DISPLAY', 'PATH']
    """
    keep = ("DISPLAY", "XAUTHORITY", "PATH", "LANG")
    return {key: value for key, value in env.items() if key in keep or key.startswith("LC_")}


def _xdotool(args: list[str], env: Mapping[str, str], timeout_s: float = 5.0) -> str:
    exe = shutil.which("xdotool")
    if exe is None:
        raise FileNotFoundError("xdotool is not installed; install with: apt-get install -y xdotool")
    try:
        proc = subprocess.run([exe, *args], env=_host_env(env), capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return ""
    return proc.stdout.decode(errors="replace")


def _wm_class(window_id: int, env: Mapping[str, str]) -> str:
    xprop = shutil.which("xprop")
    if xprop is None:
        return ""
    try:
        out = subprocess.run(
            [xprop, "-id", str(window_id), "WM_CLASS"], env=_host_env(env), capture_output=True, timeout=5, check=False
        ).stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return ""
    # WM_CLASS(STRING) = "mousepad", "Mousepad"
    return " ".join(re.findall(r'"([^"]*)"', out)).lower()


def list_windows(env: Mapping[str, str], *, wm_class: bool = True) -> list[Window]:
    """Every visible window with a title (menus and tooltips without one are left out).

    ``wm_class=False`` skips reading WM_CLASS (one ``xprop`` per window; ``wm_class`` is then ``""``).
    """
    windows = []
    for line in _xdotool(["search", "--onlyvisible", "--name", "."], env).split():
        if not line.isdigit():
            continue
        wid = int(line)
        name = _xdotool(["getwindowname", str(wid)], env).strip()
        pid_text = _xdotool(["getwindowpid", str(wid)], env).strip()
        klass = _wm_class(wid, env) if wm_class else ""
        windows.append(Window(wid, name, klass, int(pid_text) if pid_text.isdigit() else None))
    return windows


def find_windows(
    env: Mapping[str, str], window_name: str, *, strict: bool = False, by_class: bool = False
) -> list[Window]:
    """The windows matching ``window_name`` as OSWorld's setup does.

    ``by_class`` compares with WM_CLASS, else with the title; ``strict`` wants the whole string
    (case-sensitive for titles), otherwise a case-insensitive substring is enough.
    """
    wanted = window_name if strict and not by_class else window_name.lower()
    found = []
    for window in list_windows(env):
        if by_class:
            names = window.wm_class.split()
            hit = wanted in names if strict else wanted in window.wm_class
        else:
            hit = window.name == wanted if strict else wanted in window.name.lower()
        if hit:
            found.append(window)
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is ``ancestor`` or one of its descendants (per ``/proc``)."""
    for _ in range(64):  # a bounded walk up the parent chain
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
        if pid <= 1:
            return False
    return False


def wait_for_window(
    env: Mapping[str, str],
    *,
    pid: int | None = None,
    window_name: str | None = None,
    new_since: Collection[int] | None = None,
    timeout_s: float = 10.0,
    descends: Callable[[int, int], bool] | None = None,
) -> Window | None:
    """Poll until a matching window is visible; ``None`` at the deadline.

    A window matches when it belongs to process ``pid`` or one of its children (apps started
    through a wrapper script, as ``libreoffice`` is), is titled like ``window_name``, or, with
    ``new_since`` (the window ids seen before the launch), is any window that is new. ``descends(pid,
    ancestor)`` answers the process question where ``pid`` is not a pid of this machine's ``/proc`` (an
    app in a desktop's sandbox, whose windows carry the sandbox's pids).
    """
    related = descends if descends is not None else _descends_from
    deadline = time.monotonic() + timeout_s
    while True:
        for window in list_windows(env, wm_class=False):
            if pid is not None and window.pid is not None and related(window.pid, pid):
                return window
            if window_name is not None and window_name.lower() in window.name.lower():
                return window
            if new_since is not None and window.id not in new_since:
                return window
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def activate_window(env: Mapping[str, str], window_name: str, *, strict: bool = False, by_class: bool = False) -> bool:
    """Raise and focus the first matching window; ``False`` when none matches."""
    found = find_windows(env, window_name, strict=strict, by_class=by_class)
    if not found:
        return False
    _xdotool(["windowactivate", "--sync", str(found[0].id)], env)
    return True


def close_window(env: Mapping[str, str], window_name: str, *, strict: bool = False, by_class: bool = False) -> int:
    """Close every matching window (the X window is destroyed: no save dialog); returns how many."""
    found = find_windows(env, window_name, strict=strict, by_class=by_class)
    for window in found:
        _xdotool(["windowclose", str(window.id)], env)
    return len(found)


def _shell_values(text: str) -> dict[str, int]:
    """``KEY=123`` lines of ``xdotool ... --shell`` as a dict of the integer values."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if value.strip().lstrip("-").isdigit():
            out[key.strip()] = int(value)
    return out


def window_size(env: Mapping[str, str], app_class_name: str) -> tuple[int, int] | None:
    """``(width, height)`` of the first window whose WM_CLASS instance or class is ``app_class_name``.

    The name is compared whole and case-insensitively, as OSWorld's ``/window_size`` does; ``None``
    when no visible window has it.
    """
    wanted = app_class_name.lower()
    for window in list_windows(env):
        if wanted in window.wm_class.split():
            geometry = _shell_values(_xdotool(["getwindowgeometry", "--shell", str(window.id)], env))
            if "WIDTH" in geometry and "HEIGHT" in geometry:
                return geometry["WIDTH"], geometry["HEIGHT"]
    return None


def cursor_position(env: Mapping[str, str]) -> tuple[int, int] | None:
    """The mouse pointer's ``(x, y)`` on the display; ``None`` when xdotool cannot tell."""
    where = _shell_values(_xdotool(["getmouselocation", "--shell"], env))
    return (where["X"], where["Y"]) if "X" in where and "Y" in where else None
