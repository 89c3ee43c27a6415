r"""Reads the text of the active window's xterm: makes it print its saved lines and screen to a file, then prints that.

Runs where: in the desktop's sandbox, beside the xterm, started by
:func:`~agentrl.envs.osworld.runtime.terminal.read_xterm` through the desktop's ``run``: ``python3 -c <this file's
text> <print dir> <timeout s>``. Standard library only (it calls ``xdotool``). Exit 3: the active window is not
an xterm (or its shell has no terminal); 4: the xterm did not print within the timeout.

It finds the active window's xterm (``_NET_WM_PID``), the pseudo-terminal its shell holds, and writes
``CSI ? 11 i CSI 4 i`` to it (as output a program writes: nothing is typed, the screen does not change); the
xterm's ``printerCommand`` (:func:`~agentrl.envs.osworld.runtime.terminal.xterm_resources`) writes the file.

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

PRINT_SEQUENCE = b"\x1b[?11i\x1b[4i"
"""Media Copy: print all pages (the saved lines and the screen), then printer off (closes the pipe)."""
PRINT_FILE = "print.txt"
"""The file the xterm's ``printerCommand`` writes in the print folder, whole (renamed from :data:`PART_FILE`)."""
PART_FILE = "print.part"


def out(*argv: str) -> str:
    """The stripped standard output of a command, ``""`` when it cannot run."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def active_xterm() -> str | None:
    """The pid of the active window's process when it is an xterm, else ``None``."""
    window = out("xdotool", "getactivewindow")
    pid = out("xdotool", "getwindowpid", window) if window else ""
    try:
        with open(f"/proc/{pid}/comm") as f:
            is_xterm = pid.isdigit() and f.read().strip() == "xterm"
    except OSError:
        is_xterm = False
    return pid if is_xterm else None


def shell_tty(pid: str) -> str | None:
    """The pseudo-terminal (``/dev/pts/N``) a child of process ``pid`` holds on its standard streams."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if ppid != pid:
            continue
        for fd in (0, 1, 2):
            try:
                link = os.readlink(f"/proc/{name}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("/dev/pts/"):
                return link
    return None


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <print dir>, <timeout s>]``; prints the xterm's text, or exits 3 or 4."""
    folder, timeout = argv[1], float(argv[2])
    pid = active_xterm()
    if pid is None:
        sys.exit(3)
    tty = shell_tty(pid)
    if tty is None:
        sys.exit(3)
    done = os.path.join(folder, PRINT_FILE)
    os.makedirs(folder, exist_ok=True)
    for stale in (done, os.path.join(folder, PART_FILE)):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
    fd = os.open(tty, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        os.write(fd, PRINT_SEQUENCE)
    except BlockingIOError:  # the terminal's output is stopped (ctrl+s): it cannot print now
        sys.exit(4)
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    while not os.path.exists(done):
        if time.monotonic() > deadline:
            sys.exit(4)
        time.sleep(0.02)
    with open(done, "rb") as f:
        sys.stdout.buffer.write(f.read())


if __name__ == "__main__":
    main(sys.argv)
