"""The ``ctrl+alt+t`` daemon: grabs the key on the root window and starts a terminal on each press.

Runs where: in the desktop's sandbox, one per episode, started by the desktop
(:func:`~agentrl.envs.osworld.runtime.hotkeys.grabber_argv`): ``python -I -S -c <this file's text> <json config>``,
the config's ``terminal`` being the argv to start. Standard library only (Xlib through :mod:`ctypes`), with no
site packages (``-S``): it starts in a few milliseconds, as a new one does each episode. Prints ``ready`` once
the key is grabbed (the desktop waits for that line).

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing (libX11 is loaded by :func:`main`).
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from ctypes import POINTER, Structure, Union, byref, c_char_p, c_int, c_long, c_ubyte, c_uint, c_ulong, c_void_p

BAD_ACCESS, KEY_PRESS, GRAB_ASYNC = 10, 2, 1
CONTROL, ALT, LOCK, NUM_LOCK = 4, 8, 2, 16


class XErrorEvent(Structure):
    """Xlib's ``XErrorEvent``."""

    _fields_ = [("type", c_int), ("display", c_void_p), ("resourceid", c_ulong), ("serial", c_ulong),
                ("error_code", c_ubyte), ("request_code", c_ubyte), ("minor_code", c_ubyte)]  # fmt: skip


class XKeyEvent(Structure):
    """Xlib's ``XKeyEvent``."""

    _fields_ = [("type", c_int), ("serial", c_ulong), ("send_event", c_int), ("display", c_void_p),
                ("window", c_ulong), ("root", c_ulong), ("subwindow", c_ulong), ("time", c_ulong),
                ("x", c_int), ("y", c_int), ("x_root", c_int), ("y_root", c_int), ("state", c_uint),
                ("keycode", c_uint), ("same_screen", c_int)]  # fmt: skip


class XEvent(Union):
    """Xlib's ``XEvent``, as far as a key press needs."""

    _fields_ = [("type", c_int), ("xkey", XKeyEvent), ("pad", c_long * 24)]


ERROR_HANDLER = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(XErrorEvent))


def load_x11() -> ctypes.CDLL:
    """libX11, with the prototypes of the calls used here."""
    try:
        x11 = ctypes.CDLL("libX11.so.6")
    except OSError:
        from ctypes import util  # not `import ctypes.util`, which would make `ctypes` a name of this function

        x11 = ctypes.CDLL(util.find_library("X11") or "libX11.so")
    x11.XOpenDisplay.argtypes, x11.XOpenDisplay.restype = [c_char_p], c_void_p
    x11.XDefaultRootWindow.argtypes, x11.XDefaultRootWindow.restype = [c_void_p], c_ulong
    x11.XStringToKeysym.argtypes, x11.XStringToKeysym.restype = [c_char_p], c_ulong
    x11.XKeysymToKeycode.argtypes, x11.XKeysymToKeycode.restype = [c_void_p, c_ulong], c_ubyte
    x11.XGrabKey.argtypes = [c_void_p, c_int, c_uint, c_ulong, c_int, c_int, c_int]
    x11.XSync.argtypes = [c_void_p, c_int]
    x11.XNextEvent.argtypes = [c_void_p, POINTER(XEvent)]
    x11.XSetErrorHandler.argtypes, x11.XSetErrorHandler.restype = [ERROR_HANDLER], c_void_p
    return x11


def launch(argv: list[str]) -> None:
    """Start ``argv`` detached: it is re-parented to the sandbox's supervisor, not kept by this daemon."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execvp(argv[0], argv)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <json config>]``; grabs the key, then serves presses until the display closes."""
    cfg = json.loads(argv[1])
    x11 = load_x11()
    errors: list[int] = []

    def on_error(display: int, event: ctypes._Pointer[XErrorEvent]) -> int:
        errors.append(event.contents.error_code)
        return 0

    handler = ERROR_HANDLER(on_error)
    x11.XSetErrorHandler(handler)
    d = x11.XOpenDisplay(None)
    if not d:
        sys.exit(f"cannot open the display {os.environ.get('DISPLAY')!r}")
    root = x11.XDefaultRootWindow(d)
    code = x11.XKeysymToKeycode(d, x11.XStringToKeysym(b"t"))
    for extra in (0, LOCK, NUM_LOCK, LOCK | NUM_LOCK):
        x11.XGrabKey(d, code, CONTROL | ALT | extra, root, 1, GRAB_ASYNC, GRAB_ASYNC)
    x11.XSync(d, 0)
    if BAD_ACCESS in errors:
        sys.exit("ctrl+alt+t is grabbed by another client (BadAccess)")
    print("ready", flush=True)
    event = XEvent()
    while True:
        x11.XNextEvent(d, byref(event))
        if event.type == KEY_PRESS and event.xkey.keycode == code:
            try:
                launch(cfg["terminal"])
            except OSError as exc:
                print("cannot start the terminal:", exc, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv)
