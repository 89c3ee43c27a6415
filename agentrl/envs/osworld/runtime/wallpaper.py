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

__all__ = ["PAINT_SCRIPT", "SCHEMA", "get_wallpaper", "set_wallpaper", "uri_path"]

SCHEMA = ("org.gnome.desktop.background", "picture-uri")

PAINT_SCRIPT = r"""
import sys
from PIL import Image
from Xlib import X, Xatom, display, error
d = display.Display()
screen = d.screen()
root, depth = screen.root, screen.root_depth
if depth not in (24, 32):
    sys.exit("the root window has depth %d; only 24 and 32 are painted" % depth)
w, h = screen.width_in_pixels, screen.height_in_pixels
with Image.open(sys.argv[1]) as image:
    data = image.convert("RGB").resize((w, h)).tobytes("raw", "BGRX")
old = root.get_full_property(d.intern_atom("ESETROOT_PMAP_ID"), Xatom.PIXMAP)
if old is not None and len(old.value):  # the pixmap kept by the last painter: free it (with its client)
    d.create_resource_object("pixmap", int(old.value[0])).kill_client(onerror=error.CatchError())
pixmap = root.create_pixmap(w, h, depth)
gc = pixmap.create_gc()
rows = max(1, 200000 // (w * 4))  # requests stay under the X server's size limit
for y in range(0, h, rows):
    n = min(rows, h - y)
    pixmap.put_image(gc, 0, y, w, n, X.ZPixmap, depth, 0, data[y * w * 4:(y + n) * w * 4])
root.change_attributes(background_pixmap=pixmap)
for name in ("_XROOTPMAP_ID", "ESETROOT_PMAP_ID"):
    root.change_property(d.intern_atom(name), Xatom.PIXMAP, 32, [pixmap.id])
root.clear_area(0, 0, w, h)
d.set_close_down_mode(X.RetainPermanent)  # the pixmap outlives this process
d.sync()
d.close()
"""
"""Run by the sandbox's ``python3`` (PIL and python-xlib importable there): paint ``argv[1]`` on the root window."""


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
