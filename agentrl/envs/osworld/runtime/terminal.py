r"""The text of the desktop's terminal (an xterm) for ``GET /terminal``, which OSWorld reads through AT-SPI.

OSWorld's VM answers ``GET /terminal`` with the text of the focused terminal of the active
gnome-terminal window, read from its accessibility tree. This desktop's terminal is xterm, which has
no accessibility tree; xterm can print, though: the Media Copy escape ``CSI ? 11 i`` ("print all
pages") sends the saved lines and the screen, as plain text, to its ``printerCommand``. So:

* every xterm of the desktop gets :func:`xterm_resources` (``RESOURCE_MANAGER`` on the display's root
  window, which Xt apps read at start): ``printerCommand`` writes what is printed to a file of the
  session, without video attributes, and ``printerAutoClose`` closes that pipe when ``CSI 4 i`` turns
  the printer off, so the file is complete when it appears;
* :data:`READ_SCRIPT` (run in the desktop's sandbox) finds the active window's xterm (``_NET_WM_PID``),
  the pseudo-terminal its shell holds, writes ``CSI ? 11 i CSI 4 i`` to it (as output a program
  writes: nothing is typed, the screen does not change) and returns the file once it appears.

Only the active window counts, as on the VM: another window in front answers ``None``.

>>> "printerCommand" in xterm_resources("/run/x")
True
>>> clean_text("a  \nb\n\n\n")
'a\nb'
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = ["PRINT_SEQUENCE", "READ_SCRIPT", "clean_text", "read_xterm", "xterm_resources"]

PRINT_SEQUENCE = b"\x1b[?11i\x1b[4i"
"""Media Copy: print all pages (the saved lines and the screen), then printer off (closes the pipe)."""
PRINT_FILE = "print.txt"


def xterm_resources(print_dir: str) -> str:
    """The X resources that make every xterm print to ``print_dir``/:data:`PRINT_FILE` (written whole, then renamed)."""
    part, done = shlex.quote(f"{print_dir}/print.part"), shlex.quote(f"{print_dir}/{PRINT_FILE}")
    return (
        f"*printerCommand:\tcat > {part} && mv -f {part} {done}\n"
        "*printAttributes:\t0\n"
        "*printerAutoClose:\ttrue\n"
        "*printerExtent:\ttrue\n"
    )


# Runs in the desktop's sandbox: argv = [-c, <this>, <print dir>, <timeout s>]. Exit 3: no active xterm.
READ_SCRIPT = r"""
import os, subprocess, sys, time
folder, timeout = sys.argv[1], float(sys.argv[2])
def out(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
window = out("xdotool", "getactivewindow")
pid = out("xdotool", "getwindowpid", window) if window else ""
try:
    with open("/proc/%s/comm" % pid) as f:
        is_xterm = pid.isdigit() and f.read().strip() == "xterm"
except OSError:
    is_xterm = False
if not is_xterm:
    sys.exit(3)
tty = None
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    try:
        with open("/proc/%s/stat" % name) as f:
            ppid = f.read().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        continue
    if ppid != pid:
        continue
    for fd in (0, 1, 2):
        try:
            link = os.readlink("/proc/%s/fd/%d" % (name, fd))
        except OSError:
            continue
        if link.startswith("/dev/pts/"):
            tty = link
            break
    if tty:
        break
if tty is None:
    sys.exit(3)
done = os.path.join(folder, "print.txt")
os.makedirs(folder, exist_ok=True)
for stale in (done, os.path.join(folder, "print.part")):
    try:
        os.unlink(stale)
    except FileNotFoundError:
        pass
fd = os.open(tty, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
try:
    os.write(fd, b"\x1b[?11i\x1b[4i")
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
"""


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
