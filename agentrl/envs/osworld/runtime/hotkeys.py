"""The desktop's global shortcut: ``ctrl+alt+t`` opens a terminal, as on OSWorld's Ubuntu (GNOME).

OSWorld's task files press ``ctrl+alt+t`` and then activate the window named ``"Terminal"``
(gnome-terminal's title). xfwm4 cannot start commands, so a small daemon does it: it grabs
``ctrl+alt+t`` on the root window (``XGrabKey``, with and without NumLock/CapsLock, so either state
works) and, on each press, starts :data:`TERMINAL_ARGV`, an ``xterm`` titled and classed
``Terminal`` whose title the shell cannot rename.

The daemon runs inside the desktop's sandbox, one per episode: like every process of the sandbox it dies
at :meth:`~agentrl.envs.osworld.runtime.desktop.DesktopSession.reset` (the agent's processes could have
taken it over), and the reset starts a new one in the next episode's sandbox. Each terminal it opens is
detached (double fork), so it is re-parented to the sandbox's supervisor and is an episode process like
any other.

>>> import json
>>> TERMINAL_ARGV[:1], "Terminal" in TERMINAL_ARGV
(['xterm'], True)
>>> argv = grabber_argv("/usr/bin/python3", ["/site-packages"])
>>> argv[:4], json.loads(argv[-1])["sys_path"]
(['/usr/bin/python3', '-I', '-S', '-c'], ['/site-packages'])
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["GRABBER_SOURCE", "TERMINAL_ARGV", "grabber_argv"]

TERMINAL_ARGV = ["xterm", "-T", "Terminal", "-n", "Terminal", "-class", "Terminal", "-xrm", "*allowTitleOps: false"]
"""What ``ctrl+alt+t`` starts: a window whose title and WM_CLASS are ``Terminal`` (gnome-terminal's)."""

# Runs in the sandbox: argv = [-c, <this>, <json config>]. Prints "ready" once the key is grabbed. Xlib through
# ctypes, with no site packages (``python -I -S``): it starts in a few milliseconds, as a new one does each episode.
GRABBER_SOURCE = r"""
import ctypes, json, os, sys
from ctypes import POINTER, Structure, Union, byref, c_char_p, c_int, c_long, c_ubyte, c_uint, c_ulong, c_void_p
_cfg = json.loads(sys.argv[1])
try:
    x11 = ctypes.CDLL("libX11.so.6")
except OSError:
    import ctypes.util
    x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so")

class XErrorEvent(Structure):
    _fields_ = [("type", c_int), ("display", c_void_p), ("resourceid", c_ulong), ("serial", c_ulong),
                ("error_code", c_ubyte), ("request_code", c_ubyte), ("minor_code", c_ubyte)]

class XKeyEvent(Structure):
    _fields_ = [("type", c_int), ("serial", c_ulong), ("send_event", c_int), ("display", c_void_p),
                ("window", c_ulong), ("root", c_ulong), ("subwindow", c_ulong), ("time", c_ulong),
                ("x", c_int), ("y", c_int), ("x_root", c_int), ("y_root", c_int), ("state", c_uint),
                ("keycode", c_uint), ("same_screen", c_int)]

class XEvent(Union):
    _fields_ = [("type", c_int), ("xkey", XKeyEvent), ("pad", c_long * 24)]

ERROR_HANDLER = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(XErrorEvent))
x11.XOpenDisplay.argtypes, x11.XOpenDisplay.restype = [c_char_p], c_void_p
x11.XDefaultRootWindow.argtypes, x11.XDefaultRootWindow.restype = [c_void_p], c_ulong
x11.XStringToKeysym.argtypes, x11.XStringToKeysym.restype = [c_char_p], c_ulong
x11.XKeysymToKeycode.argtypes, x11.XKeysymToKeycode.restype = [c_void_p, c_ulong], c_ubyte
x11.XGrabKey.argtypes = [c_void_p, c_int, c_uint, c_ulong, c_int, c_int, c_int]
x11.XSync.argtypes = [c_void_p, c_int]
x11.XNextEvent.argtypes = [c_void_p, POINTER(XEvent)]
x11.XSetErrorHandler.argtypes, x11.XSetErrorHandler.restype = [ERROR_HANDLER], c_void_p
BAD_ACCESS, KEY_PRESS, GRAB_ASYNC = 10, 2, 1
CONTROL, ALT, LOCK, NUM_LOCK = 4, 8, 2, 16

def launch(argv):
    pid = os.fork()
    if pid == 0:  # detach: the terminal is re-parented to the sandbox's supervisor, not kept by this daemon
        try:
            os.setsid()
            if os.fork() == 0:
                os.execvp(argv[0], argv)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)

errors = []

def on_error(display, event):
    errors.append(event.contents.error_code)
    return 0

handler = ERROR_HANDLER(on_error)
x11.XSetErrorHandler(handler)
d = x11.XOpenDisplay(None)
if not d:
    sys.exit("cannot open the display %r" % os.environ.get("DISPLAY"))
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
            launch(_cfg["terminal"])
        except OSError as exc:
            print("cannot start the terminal:", exc, file=sys.stderr, flush=True)
"""


def grabber_argv(python: str, sys_path: Sequence[str] = (), terminal: Sequence[str] = TERMINAL_ARGV) -> list[str]:
    """The command that runs the ``ctrl+alt+t`` daemon with ``python`` (``-I -S``: the standard library only).

    ``sys_path`` is kept in the config for callers that pass one; the daemon needs only ``ctypes`` and libX11.
    """
    config = json.dumps({"sys_path": [str(p) for p in sys_path], "terminal": list(terminal)})
    return [python, "-I", "-S", "-c", GRABBER_SOURCE, config]
