"""Paints an image, scaled to the screen, on the X root window (what the window manager shows behind the windows).

Runs where: in the desktop's sandbox, through the desktop's ``run``: ``python3 -c <this file's text> <image
path>``, by :func:`~agentrl.envs.osworld.runtime.wallpaper.set_wallpaper` and at each reset. That ``python3`` is
the server's interpreter with its ``site-packages`` (:func:`~agentrl.envs.osworld.runtime.jail.write_python_shim`),
where PIL and python-xlib import; ``agentrl`` is not imported. The pixmap is kept on the root window
(``_XROOTPMAP_ID``, ``ESETROOT_PMAP_ID``) and outlives this process (close-down mode ``RetainPermanent``); the
one kept by the last painter is freed with its client.

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing (PIL and Xlib are imported by :func:`main`).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <image path>]``; exits with a message when the root window's depth is not 24 or 32."""
    from PIL import Image
    from Xlib import X, Xatom, display, error

    d = display.Display()
    screen = d.screen()
    root, depth = screen.root, screen.root_depth
    if depth not in (24, 32):
        sys.exit(f"the root window has depth {depth}; only 24 and 32 are painted")
    w, h = screen.width_in_pixels, screen.height_in_pixels
    with Image.open(argv[1]) as image:
        data = image.convert("RGB").resize((w, h)).tobytes("raw", "BGRX")
    old = root.get_full_property(d.intern_atom("ESETROOT_PMAP_ID"), Xatom.PIXMAP)
    if old is not None and len(old.value):  # the pixmap kept by the last painter: free it (with its client)
        d.create_resource_object("pixmap", int(old.value[0])).kill_client(onerror=error.CatchError())
    pixmap = root.create_pixmap(w, h, depth)
    gc = pixmap.create_gc()
    rows = max(1, 200000 // (w * 4))  # requests stay under the X server's size limit
    for y in range(0, h, rows):
        n = min(rows, h - y)
        pixmap.put_image(gc, 0, y, w, n, X.ZPixmap, depth, 0, data[y * w * 4 : (y + n) * w * 4])
    root.change_attributes(background_pixmap=pixmap)
    for name in ("_XROOTPMAP_ID", "ESETROOT_PMAP_ID"):
        root.change_property(d.intern_atom(name), Xatom.PIXMAP, 32, [pixmap.id])
    root.clear_area(0, 0, w, h)
    d.set_close_down_mode(X.RetainPermanent)  # the pixmap outlives this process
    d.sync()
    d.close()


if __name__ == "__main__":
    main(sys.argv)
