"""The desktop's global shortcut: ``ctrl+alt+t`` opens a terminal, as on OSWorld's Ubuntu (GNOME).

OSWorld's task files press ``ctrl+alt+t`` and then activate the window named ``"Terminal"``
(gnome-terminal's title). xfwm4 cannot start commands, so a small daemon does it: it grabs
``ctrl+alt+t`` on the root window (``XGrabKey``, with and without NumLock/CapsLock, so either state
works) and, on each press, starts :data:`TERMINAL_ARGV`, an ``xterm`` titled and classed
``Terminal`` whose title the shell cannot rename.

The daemon runs inside the desktop's sandbox as one of its daemons (``infra``: it outlives
:meth:`~agentrl.envs.osworld.runtime.desktop.DesktopSession.reset`); each terminal it opens is detached
(double fork), so it is re-parented to the sandbox's supervisor and dies at the next reset like
any other episode process.

>>> import json
>>> TERMINAL_ARGV[:1], "Terminal" in TERMINAL_ARGV
(['xterm'], True)
>>> argv = grabber_argv("/usr/bin/python3", ["/site-packages"])
>>> argv[:3], json.loads(argv[-1])["sys_path"]
(['/usr/bin/python3', '-I', '-c'], ['/site-packages'])
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["GRABBER_SOURCE", "TERMINAL_ARGV", "grabber_argv"]

TERMINAL_ARGV = ["xterm", "-T", "Terminal", "-n", "Terminal", "-class", "Terminal", "-xrm", "*allowTitleOps: false"]
"""What ``ctrl+alt+t`` starts: a window whose title and WM_CLASS are ``Terminal`` (gnome-terminal's)."""

# Runs in the sandbox: argv = [-c, <this>, <json config>]. Prints "ready" once the key is grabbed.
GRABBER_SOURCE = r"""
import json, os, sys
_cfg = json.loads(sys.argv[1])
sys.path[:] = _cfg["sys_path"]
from Xlib import X, XK, display, error

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

d = display.Display()
root = d.screen().root
code = d.keysym_to_keycode(XK.string_to_keysym("t"))
caught = error.CatchError(error.BadAccess)
base = X.ControlMask | X.Mod1Mask
for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask):
    root.grab_key(code, base | extra, True, X.GrabModeAsync, X.GrabModeAsync, onerror=caught)
d.sync()
if caught.get_error() is not None:
    sys.exit("ctrl+alt+t is grabbed by another client: " + str(caught.get_error()))
print("ready", flush=True)
while True:
    event = d.next_event()
    if event.type == X.KeyPress and event.detail == code:
        try:
            launch(_cfg["terminal"])
        except OSError as exc:
            print("cannot start the terminal:", exc, file=sys.stderr, flush=True)
"""


def grabber_argv(python: str, sys_path: Sequence[str], terminal: Sequence[str] = TERMINAL_ARGV) -> list[str]:
    """The command that runs the ``ctrl+alt+t`` daemon with ``python`` (``sys_path``: where ``Xlib`` imports)."""
    config = json.dumps({"sys_path": [str(p) for p in sys_path], "terminal": list(terminal)})
    return [python, "-I", "-c", GRABBER_SOURCE, config]
