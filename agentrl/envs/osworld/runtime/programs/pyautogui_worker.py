"""The pyautogui worker: imports ``pyautogui`` once and runs the agent's code snippets sent over a pipe.

Runs where: in the desktop's sandbox (started by its jail), or standalone under bubblewrap or as a plain child,
as :class:`~agentrl.envs.osworld.runtime.executor.PyautoguiWorker` starts it: ``python -I -c <this file's text>
<request fd> <reply fd> <json config>`` (the text read with :func:`~agentrl.envs.osworld.runtime.programs.source`).
The config holds the import path (``sys_path``: absolute folders only, never one the agent writes) and the
rlimits the worker sets, soft and hard, before any agent code runs. ``agentrl`` is not imported: the sandbox
need not hold the package, only the interpreter's ``site-packages`` where ``pyautogui`` lives.

Why a separate file: it is a whole program, the other end of the worker's protocol, so ruff, mypy and the import
graph read it as one; importing it runs nothing.

The protocol: on the request pipe, frames of a 4-byte big-endian length and UTF-8 JSON ``{"code", "cap"}``; on
the reply pipe, one ``{"ready", "pid", "import_error"}`` frame at start, then ``{"ok", "output", "error"}`` a
request. Each snippet runs in a fresh namespace with ``pyautogui`` and ``time`` predefined, its output captured
and capped at ``cap`` characters.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import struct
import sys
import time
import traceback
from typing import Any


class _Capped(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters written and notes that more came."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        s = str(s)
        room = self.cap - self.size
        if room > 0:
            self.parts.append(s[:room])
            self.size += min(len(s), room)
        if len(s) > max(room, 0):
            self.truncated = True
        return len(s)

    def text(self) -> str:
        """What was kept, with a note when more was written."""
        out = "".join(self.parts)
        if self.truncated:
            out += f"\n... [output truncated at {self.cap} characters]"
        return out


def _capped(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[:cap] + f"\n... [output truncated at {cap} characters]"


def _set_limits(rlimits: dict[str, int]) -> None:
    """Lower each named rlimit, soft and hard, to the value given (never above the hard limit in force)."""
    for name, value in rlimits.items():
        res = getattr(resource, name)
        _soft, hard = resource.getrlimit(res)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(res, (value, value))


def _import_pyautogui() -> tuple[Any, str, list[float]]:
    """``(pyautogui or None, the import's traceback or "", the pause owed)``, pyautogui set up as OSWorld's VM runs it.

    OSWorld's VM runs each action with pyautogui's default PAUSE, 0.1 s after every call, and agents' code is
    written against it: in ``click(x, y); write("text")`` the pause lets the window manager hand the click on
    (focus moves to the field) before the keys arrive; without it the keys can reach the old focus. The pause
    after the *last* call is only a wait for the screen, which the env does itself (a fixed pause or the
    settle), so the pause is owed and paid when the next call of the same snippet starts. ``owed_until[0]`` is
    when the owed pause ends.
    """
    owed_until = [0.0]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            import pyautogui
        except BaseException:
            return None, traceback.format_exc(), owed_until
    pyautogui.FAILSAFE = False

    def owe_pause(pause: bool) -> None:
        if pause and pyautogui.PAUSE:
            owed_until[0] = time.monotonic() + pyautogui.PAUSE

    fail_safe_check = pyautogui.failSafeCheck

    def pay_pause_then_check() -> None:
        wait = owed_until[0] - time.monotonic()
        owed_until[0] = 0.0
        if wait > 0:
            time.sleep(wait)
        fail_safe_check()

    pyautogui._handlePause = owe_pause
    pyautogui.failSafeCheck = pay_pause_then_check
    try:  # X's default keymap puts '<' on the ISO key, where pyautogui's shift gives '>': use shift+comma
        import pyautogui._pyautogui_x11 as x11

        if "," in x11.keyboardMapping:
            x11.keyboardMapping["<"] = x11.keyboardMapping[","]
    except Exception:
        pass
    return pyautogui, "", owed_until


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <request fd>, <reply fd>, <json config>]``; serves requests until the request pipe closes."""
    req_fd, rep_fd = int(argv[1]), int(argv[2])
    cfg = json.loads(argv[3])
    sys.path[:] = cfg["sys_path"]
    _set_limits(cfg["rlimits"])
    req = os.fdopen(req_fd, "rb", buffering=0)
    rep = os.fdopen(rep_fd, "wb", buffering=0)

    def read_exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = req.read(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def send(obj: dict) -> None:
        data = json.dumps(obj).encode("utf-8")
        rep.write(struct.pack(">I", len(data)) + data)

    pyautogui, import_error, owed_until = _import_pyautogui()
    send({"ready": True, "pid": os.getpid(), "import_error": import_error})
    while True:
        try:
            (n,) = struct.unpack(">I", read_exact(4))
            msg = json.loads(read_exact(n).decode("utf-8"))
        except EOFError:
            break
        cap = int(msg.get("cap", 20000))
        out = _Capped(cap)
        namespace = {"__name__": "__main__", "__builtins__": __builtins__, "pyautogui": pyautogui, "time": time}
        if pyautogui is not None:  # each action starts as OSWorld's fresh `python -c` does: default PAUSE, none owed
            pyautogui.PAUSE = 0.1
            owed_until[0] = 0.0
        ok, err = True, ""
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                if pyautogui is None:
                    raise ImportError("pyautogui could not be imported in the worker:\n" + import_error)
                exec(compile(msg["code"], "<agent>", "exec"), namespace)
            except SystemExit as e:
                if e.code not in (None, 0):
                    ok, err = False, f"SystemExit: {e.code!r}"
            except BaseException:
                ok, err = False, traceback.format_exc()
        del namespace
        send({"ok": ok, "output": out.text(), "error": _capped(err, cap)})


if __name__ == "__main__":
    main(sys.argv)
