"""The desktop's wallpaper, where OSWorld keeps it: GNOME's ``org.gnome.desktop.background picture-uri``.

OSWorld's VM server sets the wallpaper with ``gsettings set org.gnome.desktop.background picture-uri
file://PATH`` (``POST /setup/change_wallpaper``) and answers the file that setting names on ``POST
/wallpaper``. The local desktop keeps the same setting, with ``gsettings`` run in the desktop's sandbox
(Debian's dconf backend stores it under the desktop's HOME, through its session bus), so an agent that
changes the wallpaper the GNOME way is seen too. There is no GNOME shell to draw it: :func:`set_wallpaper`
also paints the image, scaled to the screen, on the X root window (what xfwm4 shows behind the windows).
"""

from __future__ import annotations

from typing import Any

from agentrl.envs.osworld.runtime import programs

__all__ = ["PAINT_SCRIPT", "SCHEMA", "get_wallpaper", "set_wallpaper", "uri_path"]

SCHEMA = ("org.gnome.desktop.background", "picture-uri")

PAINT_SCRIPT = programs.source("paint_wallpaper")
"""Run by the sandbox's ``python3`` (PIL and python-xlib importable there): paint ``argv[1]`` on the root window.

The program is :mod:`agentrl.envs.osworld.runtime.programs.paint_wallpaper`, run from its text (``python3 -c``).
"""


def uri_path(value: str) -> str | None:
    r"""The file path in a ``gsettings get`` answer (``'file:///a b.png'``); ``None`` for anything else.

    >>> uri_path("'file:///home/user/a%20b.png'\n")
    '/home/user/a b.png'
    >>> uri_path("''") is None
    True
    """
    import urllib.parse

    text = value.strip().strip("'\"")
    if text.startswith("file://"):
        return urllib.parse.unquote(text[len("file://") :]) or None
    return text if text.startswith("/") else None


def get_wallpaper(session: Any) -> str | None:
    """The wallpaper file the desktop's setting names (a path in its sandbox), or ``None``."""
    rc, out, _ = session.run(["gsettings", "get", *SCHEMA], timeout_s=15.0)
    return uri_path(out) if rc == 0 else None


def set_wallpaper(session: Any, path: str) -> str:
    """Store ``path`` (a file in the sandbox) as the wallpaper and paint it; a note on the painting.

    Raises:
        RuntimeError: ``gsettings`` failed or did not keep the value (no session bus or dconf here);
            the message names what to install.
    """
    import pathlib

    uri = pathlib.PurePosixPath(path).as_uri()
    rc, _, err = session.run(["gsettings", "set", *SCHEMA, uri], timeout_s=15.0)
    if rc != 0 or get_wallpaper(session) != path:
        raise RuntimeError(
            "cannot store the wallpaper setting "
            f"({err.strip()[-300:] or 'gsettings did not keep it'}): it needs the desktop's session bus and dconf; "
            "install with: sudo apt-get install -y dbus dconf-gsettings-backend libglib2.0-bin"
        )
    rc, _, err = session.run(["python3", "-c", PAINT_SCRIPT, path], timeout_s=30.0)
    return "painted on the root window" if rc == 0 else f"not painted: {err.strip()[-300:]}"
