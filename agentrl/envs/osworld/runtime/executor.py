"""A persistent, sandboxed pyautogui worker bound to one X display.

:class:`PyautoguiWorker` starts one child Python process that imports ``pyautogui`` once
(``FAILSAFE=False``; pyautogui's 0.1 s ``PAUSE`` between the calls of a snippet, as on OSWorld's VM, but
not after its last call: the env waits for the screen itself) and then runs the agent's code
snippets sent over a pipe, each in a fresh namespace with ``pyautogui`` and ``time`` predefined.
Requests and replies are length-prefixed JSON frames (4-byte big-endian length, then UTF-8 JSON) on
two dedicated pipes, so nothing the agent prints can corrupt the protocol.

Inside a desktop (``jail=``, what :class:`~agentrl.envs.osworld.runtime.desktop.DesktopSession` does) the worker
is started by the desktop's :class:`~agentrl.envs.osworld.runtime.jail.Jail`, the sandbox its apps and commands
share, so the agent's code sees the same processes and files as the task's setup and the scorer.

Standalone isolation (``sandbox=True``, the default when ``bwrap`` is installed): bubblewrap with every namespace
unshared (no network), a read-only root, a private tmpfs ``/tmp``, the session HOME bound read-write
(the only writable path besides ``/tmp``), the X socket and the Xauthority file bound read-only. The
child also lowers its own rlimits (address space, core dumps, processes, file size) before the agent
code can run, soft and hard, so the code cannot raise them back. Only an allowlist of environment
variables reaches the child (never the trainer's API keys).

The child's program is :mod:`agentrl.envs.osworld.runtime.programs.pyautogui_worker`, a module of its own that the
child runs from its text (``python -I -c``).

Each :meth:`PyautoguiWorker.run` has a deadline: on timeout the worker's process group is killed and
the next call restarts it (``timed_out=True``). A worker that died (``os._exit``, a signal, a
corrupted pipe) is restarted on the next call and the death is reported in ``error``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.runtime.jail import _interpreter, bwrap_available

__all__ = ["OUTPUT_CAP", "PyautoguiWorker", "bwrap_available"]

OUTPUT_CAP = 20_000
MAX_FRAME = 16 * 1024 * 1024
ADDRESS_SPACE_BYTES = 2 * 1024**3
FILE_SIZE_BYTES = 64 * 1024**2
EXTRA_PROCESSES = 256
_ENV_ALLOW = ("DISPLAY", "HOME", "XAUTHORITY", "XDG_SESSION_TYPE", "PATH", "LANG", "LANGUAGE", "TZ")


def _uid_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


@dataclass
class _State:
    """What the finalizer needs; holds no reference to the worker."""

    proc: Any = None  # a subprocess.Popen, or a JailProcess inside a desktop's jail
    req_w: int | None = None
    rep_r: int | None = None
    pids: list[int] = field(default_factory=list)


def _stop(state: _State) -> None:
    proc = state.proc
    state.proc = None
    for name in ("req_w", "rep_r"):
        fd = getattr(state, name)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(state, name, None)
    if proc is not None:
        if hasattr(proc, "kill_group"):  # a JailProcess: its pid is the jail's, so the jail signals it
            proc.kill_group(signal.SIGKILL)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


class PyautoguiWorker:
    """One persistent child process that runs pyautogui code on one display.

    Args:
        env: the display environment (``DesktopSession.env()``); only DISPLAY, HOME, XAUTHORITY,
            XDG_SESSION_TYPE, PATH, LANG/LC_* and TZ are passed on.
        home: the session HOME, bound read-write (the only writable path besides a private ``/tmp``).
        x_socket_dir: the X socket directory (``/tmp/.X11-unix``); only this display's socket is bound
            when it exists there.
        xauthority: the Xauthority file, bound read-only (``None``: ``env["XAUTHORITY"]`` if set).
        sandbox: ``True`` requires bwrap, ``False`` runs a plain child, ``None`` uses bwrap when
            installed. Without a sandbox, :attr:`isolation_warning` says isolation is off.
        output_cap: characters kept of the output and of the error.
        startup_timeout_s: how long a (re)start may take before :meth:`run` reports an error.

    Attributes: ``sandboxed`` (bool), ``isolation_warning`` (``""`` when sandboxed), ``pid`` (the
    current child's pid or ``None``), ``pids`` (every pid started), ``restarts``.
    """

    def __init__(
        self,
        env: Mapping[str, str],
        home: str | os.PathLike[str],
        x_socket_dir: str | os.PathLike[str] = "/tmp/.X11-unix",
        xauthority: str | os.PathLike[str] | None = None,
        *,
        sandbox: bool | None = None,
        output_cap: int = OUTPUT_CAP,
        startup_timeout_s: float = 20.0,
        jail: Any = None,
    ) -> None:
        from agentrl.core.errors import SandboxUnavailable

        self.jail = jail
        self.home = Path(home)
        self.x_socket_dir = Path(x_socket_dir)
        auth = xauthority if xauthority is not None else env.get("XAUTHORITY")
        self.xauthority = Path(auth) if auth else None
        self.output_cap = int(output_cap)
        self.startup_timeout_s = float(startup_timeout_s)
        self._env = {k: v for k, v in env.items() if k in _ENV_ALLOW or k.startswith("LC_")}
        self._env["HOME"] = str(self.home)
        self._env["PYTHONUNBUFFERED"] = "1"
        self._env["PYTHONDONTWRITEBYTECODE"] = "1"
        if self.xauthority is not None:
            self._env["XAUTHORITY"] = str(self.xauthority)
        self._bwrap = bwrap_available() if jail is None else None
        if sandbox is True and self._bwrap is None and jail is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not installed; install with: sudo apt-get install -y bubblewrap"
            )
        self.sandboxed = bool(self._bwrap) if sandbox is None else bool(sandbox)
        if jail is not None:
            self.sandboxed = bool(jail.sandboxed)
        self.isolation_warning = (
            ""
            if self.sandboxed
            else "isolation is off: agent code runs as a plain child process with full filesystem and network access"
            + ("" if self._bwrap else " (install bubblewrap to sandbox it)")
        )
        self.restarts = 0
        self._starts = 0
        self._pending_note = ""
        self._state = _State()
        self._finalizer = weakref.finalize(self, _stop, self._state)

    # ------------------------------------------------------------------ properties
    @property
    def pid(self) -> int | None:
        """The pid of the running child (the bwrap process when sandboxed), or ``None``."""
        proc = self._state.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def pids(self) -> list[int]:
        """Every host pid this worker started (none when it runs in a desktop's jail: those pids are the jail's)."""
        return list(self._state.pids) if self.jail is None else []

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (or the finalizer did)."""
        return not self._finalizer.alive

    # ------------------------------------------------------------------ process management
    def _argv(self, req_r: int, rep_w: int) -> list[str]:
        limits = {
            "RLIMIT_AS": ADDRESS_SPACE_BYTES,
            "RLIMIT_CORE": 0,
            "RLIMIT_FSIZE": FILE_SIZE_BYTES,
            "RLIMIT_NPROC": _uid_process_count() + EXTRA_PROCESSES,
        }
        # Absolute entries only: a relative one (an editable install's path hook, "") would be looked up in the
        # worker's working directory, HOME, which the agent writes.
        config = json.dumps({"sys_path": [p for p in sys.path if os.path.isabs(p)], "rlimits": limits})
        # The worker program (programs/pyautogui_worker.py) goes as -c's text: the sandbox need not see the package.
        py = [_interpreter(), "-I", "-c", programs.source("pyautogui_worker"), str(req_r), str(rep_w), config]
        if not self.sandboxed or self.jail is not None:
            return py
        assert self._bwrap is not None
        argv = [self._bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        # The private /tmp hides whatever lives under the real one: a checkout or venv there (a CI
        # clone in a temp dir) must come back, read-only, or the worker cannot import pyautogui.
        tmp = os.path.realpath(tempfile.gettempdir())
        for entry in dict.fromkeys(os.path.realpath(p) for p in sys.path if p):
            if (entry == tmp or entry.startswith(tmp + os.sep)) and os.path.isdir(entry):
                argv += ["--ro-bind", entry, entry]
        display = self._env.get("DISPLAY", "")
        number = display.rsplit(":", 1)[-1].split(".")[0] if ":" in display else ""
        socket = self.x_socket_dir / f"X{number}"
        if number and socket.exists():
            argv += ["--ro-bind", str(socket), str(socket)]
        elif self.x_socket_dir.exists():
            argv += ["--ro-bind", str(self.x_socket_dir), str(self.x_socket_dir)]
        argv += ["--bind", str(self.home), str(self.home)]
        if self.xauthority is not None and self.xauthority.exists():
            argv += ["--ro-bind", str(self.xauthority), str(self.xauthority)]
        argv += ["--chdir", str(self.home), "--"]
        return argv + py

    def _start(self) -> str:
        """Start the child and wait for its ready frame; ``""`` or an error message."""
        from agentrl.core.errors import SandboxUnavailable

        _stop(self._state)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        # The child's own stderr (startup failures, output of processes the code spawns) goes to an
        # unlinked temp file, bounded by RLIMIT_FSIZE; it is read back only when startup fails.
        log = tempfile.TemporaryFile()
        proc: Any
        try:
            if self.jail is not None:  # fds 3 and 4 in the child, handed over by the jail
                proc = self.jail.spawn(
                    self._argv(3, 4),
                    env=self._env,
                    cwd=self.home,
                    stderr=log.fileno(),
                    pass_fds={3: req_r, 4: rep_w},
                )
            else:
                proc = subprocess.Popen(
                    self._argv(req_r, rep_w),
                    env=self._env,
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    pass_fds=(req_r, rep_w),
                    start_new_session=True,
                )
        except (OSError, SandboxUnavailable) as exc:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            log.close()
            return f"could not start the pyautogui worker: {exc}"
        os.close(req_r)
        os.close(rep_w)
        self._state.proc, self._state.req_w, self._state.rep_r = proc, req_w, rep_r
        self._state.pids.append(proc.pid)
        self._starts += 1
        if self._starts > 1:
            self.restarts += 1
        reply = self._recv(time.monotonic() + self.startup_timeout_s)
        if isinstance(reply, dict) and reply.get("ready"):
            log.close()
            return ""
        _stop(self._state)
        err = ""
        with contextlib.suppress(OSError):
            log.seek(0)
            err = log.read(8000).decode("utf-8", "replace").strip()[-2000:]
        log.close()
        what = "did not start in time" if reply == "timeout" else "exited during startup"
        return f"the pyautogui worker {what}" + (f": {err}" if err else "")

    def _recv(self, deadline: float) -> dict[str, Any] | str:
        """One reply frame, or ``"timeout"`` / ``"dead"`` / ``"bad frame"``."""
        header = self._read(4, deadline)
        if isinstance(header, str):
            return header
        (size,) = struct.unpack(">I", header)
        if size > MAX_FRAME:
            return "bad frame"
        body = self._read(size, deadline)
        if isinstance(body, str):
            return body
        try:
            obj = json.loads(body.decode("utf-8"))
        except ValueError:
            return "bad frame"
        return obj if isinstance(obj, dict) else "bad frame"

    def _read(self, n: int, deadline: float) -> bytes | str:
        fd = self._state.rep_r
        if fd is None:
            return "dead"
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(fd, n - len(buf))
            except OSError:
                return "dead"
            if not chunk:
                return "dead"
            buf += chunk
        return bytes(buf)

    def _send(self, obj: Mapping[str, Any]) -> bool:
        fd = self._state.req_w
        if fd is None:
            return False
        data = json.dumps(obj).encode("utf-8")
        frame = struct.pack(">I", len(data)) + data
        try:
            view = memoryview(frame)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError:  # BrokenPipeError: the child is gone
            return False
        return True

    def _death_note(self) -> str:
        proc = self._state.proc
        if proc is None:
            return ""
        code = proc.poll()
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=1)
        if code is None:
            return "the pyautogui worker stopped answering"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"the pyautogui worker was killed by {signal.Signals(-code).name}"
        return f"the pyautogui worker exited with status {code}"

    # ------------------------------------------------------------------ public API
    def start(self) -> None:
        """Start the worker now (otherwise the first :meth:`run` does); raises if it cannot start."""
        from agentrl.core.errors import SandboxUnavailable

        self._check_open()
        if self.pid is None:
            error = self._start()
            if error:
                raise SandboxUnavailable(error)

    def run(self, code: str, timeout_s: float = 10.0) -> dict[str, Any]:
        """Run ``code`` with ``pyautogui`` and ``time`` predefined; returns the outcome, never raises.

        Returns ``{"ok", "output", "error", "timed_out"}``: captured stdout+stderr, the traceback (or
        why the worker died/restarted), each capped at ``output_cap`` characters.
        """
        self._check_open()
        note = self._pending_note
        self._pending_note = ""
        proc = self._state.proc
        if proc is not None and proc.poll() is not None:
            note = _join(note, self._death_note() + " after the previous call; restarted it")
            _stop(self._state)
        if self._state.proc is None:
            error = self._start()
            if error:
                return {"ok": False, "output": "", "error": _join(note, error), "timed_out": False}
        deadline = time.monotonic() + float(timeout_s)
        if not self._send({"code": code, "cap": self.output_cap}):
            death = self._death_note()
            _stop(self._state)
            return {"ok": False, "output": "", "error": _join(note, death), "timed_out": False}
        reply = self._recv(deadline)
        if isinstance(reply, dict):
            return {
                "ok": bool(reply.get("ok")),
                "output": str(reply.get("output", "")),
                "error": _join(note, str(reply.get("error", ""))),
                "timed_out": False,
            }
        if reply == "timeout":
            _stop(self._state)
            msg = f"timed out after {timeout_s:g}s; the worker was killed and will restart on the next call"
            return {"ok": False, "output": "", "error": _join(note, msg), "timed_out": True}
        death = self._death_note() if reply == "dead" else "the pyautogui worker sent a corrupted reply"
        _stop(self._state)
        error = _join(note, death + "; it will restart on the next call")
        return {"ok": False, "output": "", "error": error, "timed_out": False}

    def close(self) -> None:
        """Kill the worker (its whole process group). Idempotent."""
        self._finalizer()

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            from agentrl.core.errors import SandboxUnavailable

            raise SandboxUnavailable("this PyautoguiWorker is closed; create a new one")

    def __enter__(self) -> PyautoguiWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "bwrap" if self.sandboxed else "unsandboxed"
        return f"PyautoguiWorker(DISPLAY={self._env.get('DISPLAY')!r}, {mode}, pid={self.pid})"


def _join(*parts: str) -> str:
    return "\n".join(p for p in parts if p)
