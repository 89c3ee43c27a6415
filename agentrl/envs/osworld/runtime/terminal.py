r"""The text of the desktop's terminal (an xterm) for ``GET /terminal``, which OSWorld reads through AT-SPI.

OSWorld's VM answers ``GET /terminal`` with the text of the focused terminal of the active
gnome-terminal window, read from its accessibility tree. This desktop's terminal is xterm, which has
no accessibility tree; xterm can print, though: the Media Copy escape ``CSI ? 11 i`` ("print all
pages") sends the saved lines and the screen, as plain text, to its ``printerCommand``. So:

* every xterm of the desktop gets :func:`xterm_resources` (``RESOURCE_MANAGER`` on the display's root
  window, which Xt apps read at start): ``printerCommand`` writes what is printed to a file of the
  session, without video attributes, and ``printerAutoClose`` closes that pipe when ``CSI 4 i`` turns
  the printer off, so the file is complete when it appears;
* :data:`READ_SCRIPT` (:mod:`~agentrl.envs.osworld.runtime.programs.xterm_reader`, run in the desktop's
  sandbox) finds the active window's xterm (``_NET_WM_PID``), the pseudo-terminal its shell holds, writes
  ``CSI ? 11 i CSI 4 i`` to it (as output a program writes: nothing is typed, the screen does not change) and
  returns the file once it appears.

Only the active window counts, as on the VM: another window in front answers ``None``.

>>> "printerCommand" in xterm_resources("/run/x")
True
>>> clean_text("a  \nb\n\n\n")
'a\nb'
"""

from __future__ import annotations

import shlex
from typing import Any

from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.runtime.programs.xterm_reader import PART_FILE, PRINT_FILE, PRINT_SEQUENCE

__all__ = ["PRINT_SEQUENCE", "READ_SCRIPT", "clean_text", "read_xterm", "xterm_resources"]


def xterm_resources(print_dir: str) -> str:
    """The X resources that make every xterm print to ``print_dir``/:data:`PRINT_FILE` (written whole, then renamed)."""
    part, done = shlex.quote(f"{print_dir}/{PART_FILE}"), shlex.quote(f"{print_dir}/{PRINT_FILE}")
    return (
        f"*printerCommand:\tcat > {part} && mv -f {part} {done}\n"
        "*printAttributes:\t0\n"
        "*printerAutoClose:\ttrue\n"
        "*printerExtent:\ttrue\n"
    )


READ_SCRIPT = programs.source("xterm_reader")
"""The reader (:mod:`agentrl.envs.osworld.runtime.programs.xterm_reader`), run from its text: ``python3 -c``."""


def clean_text(text: str) -> str:
    """Each line without its trailing blanks, and the whole without trailing blank lines (as OSWorld's ``rstrip``)."""
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip()


def read_xterm(session: Any, print_dir: str, timeout_s: float = 3.0) -> str | None:
    """The text of the active window's xterm on ``session`` (a DesktopSession), or ``None`` when it is not one.

    ``None`` too when that xterm does not print within ``timeout_s`` (started with other resources, or its
    output stopped).
    """
    rc, out, _ = session.run(["python3", "-c", READ_SCRIPT, print_dir, str(timeout_s)], timeout_s=timeout_s + 10.0)
    if rc != 0:
        return None
    return clean_text(out)
