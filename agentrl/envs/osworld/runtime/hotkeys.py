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
any other. The daemon is :mod:`agentrl.envs.osworld.runtime.programs.hotkey_grabber` (Xlib through ``ctypes``,
the standard library only), run from its text with ``python -I -S -c``.

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

from agentrl.envs.osworld.runtime import programs

__all__ = ["GRABBER_SOURCE", "TERMINAL_ARGV", "grabber_argv"]

TERMINAL_ARGV = ["xterm", "-T", "Terminal", "-n", "Terminal", "-class", "Terminal", "-xrm", "*allowTitleOps: false"]
"""What ``ctrl+alt+t`` starts: a window whose title and WM_CLASS are ``Terminal`` (gnome-terminal's)."""

GRABBER_SOURCE = programs.source("hotkey_grabber")
"""The daemon's program (:mod:`agentrl.envs.osworld.runtime.programs.hotkey_grabber`), run from its text."""


def grabber_argv(python: str, sys_path: Sequence[str] = (), terminal: Sequence[str] = TERMINAL_ARGV) -> list[str]:
    """The command that runs the ``ctrl+alt+t`` daemon with ``python`` (``-I -S``: the standard library only).

    ``sys_path`` is kept in the config for callers that pass one; the daemon needs only ``ctypes`` and libX11.
    """
    config = json.dumps({"sys_path": [str(p) for p in sys_path], "terminal": list(terminal)})
    return [python, "-I", "-S", "-c", GRABBER_SOURCE, config]
