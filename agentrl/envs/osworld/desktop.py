"""A real X desktop per session: Xvfb, a window manager, a private HOME and pyautogui in a child.

:class:`DesktopSession` starts ``Xvfb :<n>`` on a display number it owns (an exclusive ``flock`` on
``/tmp/agentrl-display-<n>.lock``, so concurrent processes never share a display), waits until the
display answers, starts ``xfwm4`` when it is installed and gives the session its own HOME directory.
Every process it starts is tracked (each in its own process group, so a kill reaches its children).

* :meth:`DesktopSession.launch` runs an app bound to the display with HOME set.
* :meth:`DesktopSession.screenshot` / :meth:`DesktopSession.screenshot_png` grab the screen with ``mss``.
* :meth:`DesktopSession.run_pyautogui` runs an agent's pyautogui code in a separate child process with
  a deadline; the agent's code never runs in this process.
* :meth:`DesktopSession.reset` kills the launched apps and restores HOME; :meth:`DesktopSession.close`
  kills everything and removes the lock and temp dirs. A forgotten session is cleaned up by a
  ``weakref`` finalizer.

Needs ``xvfb`` (and ``x11-utils``, ``xterm``, ``xdotool``, ``scrot``, ``xfwm4`` for the full desktop) from
apt, and ``pip install 'agentrl-gym[desktop]'`` (``mss``, ``pyautogui``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable

__all__ = ["APT_PACKAGES", "DesktopSession", "ensure_xvfb"]

APT_PACKAGES = ("xvfb", "xterm", "xdotool", "x11-utils", "scrot", "xfwm4")
APT_COMMAND = "sudo apt-get install -y " + " ".join(APT_PACKAGES)
DISPLAY_START = 100
DISPLAY_TRIES = 200
OUTPUT_CAP = 20_000

# Runs in the child: the agent's code arrives on stdin; ``pyautogui`` is imported before it runs.
_PYAUTOGUI_BOOTSTRAP = """\
import contextlib, io, sys, traceback
with contextlib.redirect_stdout(io.StringIO()):  # python-xlib prints xauth warnings on import
    import pyautogui
pyautogui.FAILSAFE = False
_code = sys.stdin.read()
_ns = {"__name__": "__main__", "pyautogui": pyautogui}
try:
    exec(compile(_code, "<agent>", "exec"), _ns)
except SystemExit as _e:
    if _e.code not in (None, 0):
        traceback.print_exc()
        sys.exit(1)
except BaseException:
    traceback.print_exc()
    sys.exit(1)
"""


def ensure_xvfb() -> str:
    """Path of ``Xvfb``; installs the apt packages when root with apt-get, else raises SandboxUnavailable."""
    found = shutil.which("Xvfb")
    if found:
        return found
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        cmd = ["apt-get", "install", "-y", "-q", *APT_PACKAGES]
        result = subprocess.run(cmd, env=env, capture_output=True, check=False)
        if result.returncode != 0:  # stale package lists: update once and retry
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
            subprocess.run(cmd, env=env, capture_output=True, check=False)
        found = shutil.which("Xvfb")
        if found:
            return found
    raise SandboxUnavailable(f"Xvfb is not installed; install with: {APT_COMMAND}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_procs(procs: Sequence[subprocess.Popen[Any]], grace_s: float = 1.0) -> None:
    """SIGTERM each process group, wait up to ``grace_s``, then SIGKILL the groups and reap."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            if sig == signal.SIGTERM and proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        if all(proc.poll() is not None for proc in procs) and sig == signal.SIGTERM:
            # Leaders are gone; SIGKILL the groups anyway so children that ignored SIGTERM die too.
            for proc in procs:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            return


def _read_capped(path: Path, cap: int) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
    except OSError:
        return ""
    text = data[:cap].decode("utf-8", errors="replace")
    if len(data) > cap:
        text += f"\n... [output truncated at {cap} bytes]"
    return text


@dataclass
class _State:
    """Everything the finalizer needs; holds no reference to the session itself."""

    display: int = -1
    lock_fd: int | None = None
    lock_path: Path | None = None
    tmpdir: Path | None = None
    xvfb: subprocess.Popen[bytes] | None = None
    wm: subprocess.Popen[bytes] | None = None
    apps: list[subprocess.Popen[Any]] = field(default_factory=list)
    closed: bool = False


def _release_display(state: _State) -> None:
    if state.lock_fd is not None:
        if state.lock_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(state.lock_path)
        with contextlib.suppress(OSError):
            os.close(state.lock_fd)
        state.lock_fd = None


def _cleanup(state: _State) -> None:
    if state.closed:
        return
    state.closed = True
    _kill_procs(state.apps)
    state.apps.clear()
    _kill_procs([p for p in (state.wm, state.xvfb) if p is not None])
    if state.display >= 0 and state.lock_fd is not None:
        # Xvfb removes these on SIGTERM; after a SIGKILL they are stale and ours to remove.
        for stale in (f"/tmp/.X11-unix/X{state.display}", f"/tmp/.X{state.display}-lock"):
            if os.path.exists(stale) and (state.xvfb is None or state.xvfb.poll() is not None):
                with contextlib.suppress(OSError):
                    os.unlink(stale)
    _release_display(state)
    if state.tmpdir is not None:
        shutil.rmtree(state.tmpdir, ignore_errors=True)
        state.tmpdir = None


def _x_lock_held(n: int) -> bool:
    """Whether an X server (not ours) holds display ``n`` per its ``/tmp/.X<n>-lock``."""
    try:
        pid = int(Path(f"/tmp/.X{n}-lock").read_text().strip())
    except (OSError, ValueError):
        return os.path.exists(f"/tmp/.X{n}-lock")
    return _pid_alive(pid)


def _try_lock(n: int) -> tuple[int, Path] | None:
    path = Path(tempfile.gettempdir()) / f"agentrl-display-{n}.lock"
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The holder may have unlinked the file between our open and flock: then we hold a dead inode.
        if os.fstat(fd).st_ino != os.stat(path).st_ino:
            raise BlockingIOError
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd, path


class DesktopSession:
    """One real X desktop (Xvfb + optional xfwm4) with its own HOME; every process it starts is tracked.

    Attributes: ``display`` (``":<n>"``), ``display_number``, ``width``, ``height``, ``home`` (the
    session's HOME), ``window_manager_name`` (``"xfwm4"`` or ``None``) and ``window_manager_note``
    (why there is none), ``pids`` (every pid started so far, Xvfb and WM included).
    """

    def __init__(
        self,
        width: int = 1280,
        height: int = 720,
        *,
        window_manager: bool = True,
        home_template: str | os.PathLike[str] | None = None,
        startup_timeout_s: float = 15.0,
    ) -> None:
        self.width = int(width)
        self.height = int(height)
        self.home_template = Path(home_template) if home_template is not None else None
        self.window_manager_name: str | None = None
        self.window_manager_note = ""
        self.pids: list[int] = []
        self._state = _State()
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        self._mss: Any = None
        xvfb = ensure_xvfb()
        self._state.tmpdir = Path(tempfile.mkdtemp(prefix="agentrl-desktop-"))
        self.home = self._state.tmpdir / "home"
        self.home.mkdir()
        (self._state.tmpdir / "Xauthority").touch()
        try:
            self._start_xvfb(xvfb, startup_timeout_s)
            self._restore_home()
            if window_manager:
                self._start_window_manager()
            else:
                self.window_manager_note = "window_manager=False"
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ startup
    def _start_xvfb(self, xvfb: str, timeout_s: float) -> None:
        assert self._state.tmpdir is not None
        log = self._state.tmpdir / "xvfb.log"
        errors: list[str] = []
        for n in range(DISPLAY_START, DISPLAY_START + DISPLAY_TRIES):
            if _x_lock_held(n):
                continue
            lock = _try_lock(n)
            if lock is None:
                continue
            self._state.lock_fd, self._state.lock_path = lock
            self._state.display = n
            argv = [xvfb, f":{n}", "-screen", "0", f"{self.width}x{self.height}x24", "-nolisten", "tcp"]
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            self._state.xvfb = proc
            self.pids.append(proc.pid)
            if self._wait_display(n, proc, timeout_s):
                return
            errors.append(f":{n}: " + _read_capped(log, 500).strip()[-300:])
            _kill_procs([proc])
            self._state.xvfb = None
            _release_display(self._state)
            self._state.display = -1
            if len(errors) >= 3:
                break
        raise SandboxUnavailable("Xvfb did not start: " + " | ".join(errors or ["no free display number"]))

    def _wait_display(self, n: int, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
        socket_path = f"/tmp/.X11-unix/X{n}"
        xdpyinfo = shutil.which("xdpyinfo")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if os.path.exists(socket_path):
                if xdpyinfo is None:
                    return True
                result = subprocess.run([xdpyinfo, "-display", f":{n}"], capture_output=True, timeout=5, check=False)
                if result.returncode == 0:
                    return True
            time.sleep(0.05)
        return False

    def _start_window_manager(self) -> None:
        wm = shutil.which("xfwm4")
        if wm is None:
            self.window_manager_note = "xfwm4 is not installed; running without a window manager"
            return
        assert self._state.tmpdir is not None
        argv = [wm, "--compositor=off", "--sm-client-disable"]
        dbus = shutil.which("dbus-run-session")
        if dbus is not None:  # xfwm4 reads its settings through xfconf, which needs a session bus
            argv = [dbus, "--", *argv]
        log = self._state.tmpdir / "wm.log"
        # Keep the WM's config, caches and bus sockets out of HOME, which reset() empties.
        wm_env = {"NO_AT_BRIDGE": "1"}
        for var in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
            path = self._state.tmpdir / "wm" / var.lower()
            path.mkdir(parents=True, exist_ok=True)
            wm_env[var] = str(path)
        for attempt in range(3):  # a WM started right as Xvfb comes up occasionally fails to connect
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    argv,
                    env=self.env(wm_env),
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._state.wm = proc
            self.pids.append(proc.pid)
            if self._wait_window_manager(proc):
                self.window_manager_name = "xfwm4"
                return
            _kill_procs([proc])
            self._state.wm = None
            time.sleep(0.2 * (attempt + 1))
        tail = _read_capped(log, 2000).strip()[-300:]
        self.window_manager_note = f"xfwm4 did not start; running without a window manager: {tail}"

    def _wait_window_manager(self, proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> bool:
        """Wait until the WM claims the screen (``_NET_SUPPORTING_WM_CHECK`` on the root window)."""
        xprop = shutil.which("xprop")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if xprop is None:
                time.sleep(0.5)
                return proc.poll() is None
            result = subprocess.run(
                [xprop, "-display", self.display, "-root", "_NET_SUPPORTING_WM_CHECK"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if "window id" in result.stdout:
                return True
            time.sleep(0.05)
        return proc.poll() is None

    # ------------------------------------------------------------------ public API
    @property
    def display_number(self) -> int:
        """The X display number ``n`` this session owns."""
        return self._state.display

    @property
    def display(self) -> str:
        """The ``DISPLAY`` value, ``":<n>"``."""
        return f":{self._state.display}"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run (or the finalizer did)."""
        return self._state.closed

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a process on this desktop: DISPLAY, HOME and XDG_SESSION_TYPE=x11 set."""
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "XAUTHORITY")}
        env.update(DISPLAY=self.display, HOME=str(self.home), XDG_SESSION_TYPE="x11")
        if self._state.tmpdir is not None:  # an empty auth file: python-xlib fails without one
            env["XAUTHORITY"] = str(self._state.tmpdir / "Xauthority")
        if extra:
            env.update(extra)
        return env

    def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start an app on this display (HOME set, cwd HOME by default); ``env`` adds to the session env.

        The app runs in its own process group, tracked by the session, so :meth:`reset` and
        :meth:`close` kill it and its children.
        """
        self._check_open()
        proc = subprocess.Popen(
            list(argv),
            env=self.env(env),
            cwd=cwd if cwd is not None else self.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._state.apps.append(proc)
        self.pids.append(proc.pid)
        return proc

    @property
    def apps(self) -> list[subprocess.Popen[Any]]:
        """The processes started by :meth:`launch` and :meth:`run_pyautogui` since the last reset."""
        return list(self._state.apps)

    def _grabber(self) -> Any:
        self._check_open()
        if self._mss is None:
            try:
                import mss
            except ImportError as exc:
                raise DependencyNotInstalled("mss", extra="desktop") from exc
            factory = getattr(mss, "MSS", None) or mss.mss  # mss>=10.2 deprecates mss.mss
            self._mss = factory(display=self.display)
        return self._mss

    def _grab(self) -> Any:
        grabber = self._grabber()
        return grabber.grab({"left": 0, "top": 0, "width": self.width, "height": self.height})

    def screenshot(self) -> np.ndarray:
        """The screen as an ``(H, W, 3)`` uint8 RGB array."""
        shot = self._grab()
        bgra = np.frombuffer(shot.bgra, dtype=np.uint8).reshape(shot.height, shot.width, 4)
        return np.ascontiguousarray(bgra[:, :, 2::-1])

    def screenshot_png(self) -> bytes:
        """The screen as PNG bytes."""
        import mss.tools

        shot = self._grab()
        png = mss.tools.to_png(shot.rgb, shot.size)
        assert png is not None
        return png

    def run_pyautogui(self, code: str, timeout_s: float = 10.0, *, output_cap: int = OUTPUT_CAP) -> dict[str, Any]:
        """Run the agent's pyautogui ``code`` in a child process bound to this display.

        ``pyautogui`` is imported in the child before the code runs, with FAILSAFE off. Returns
        ``{"ok", "output", "error", "timed_out"}``: stdout, the traceback/stderr (each capped at
        ``output_cap`` bytes), and whether the deadline killed the child's process group.
        """
        self._check_open()
        assert self._state.tmpdir is not None
        runs = self._state.tmpdir / "runs"
        runs.mkdir(exist_ok=True)
        fd, name = tempfile.mkstemp(dir=runs, suffix=".py")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(code)
        out_path, err_path = Path(name + ".out"), Path(name + ".err")
        with open(name, "rb") as stdin, out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _PYAUTOGUI_BOOTSTRAP],
                env=self.env({"PYTHONUNBUFFERED": "1"}),
                cwd=self.home,
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        # Tracked like an app: anything the code spawned in the background dies on reset()/close().
        self._state.apps.append(proc)
        self.pids.append(proc.pid)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        output = _read_capped(out_path, output_cap)
        error = _read_capped(err_path, output_cap)
        for path in (Path(name), out_path, err_path):
            with contextlib.suppress(OSError):
                path.unlink()
        if timed_out:
            error = (error + "\n" if error else "") + f"timed out after {timeout_s:g}s"
        return {"ok": proc.returncode == 0 and not timed_out, "output": output, "error": error, "timed_out": timed_out}

    def reset(self) -> None:
        """Kill every app the session launched (not Xvfb or the WM) and restore HOME."""
        self._check_open()
        _kill_procs(self._state.apps)
        self._state.apps.clear()
        self._restore_home()

    def close(self) -> None:
        """Kill apps, window manager and Xvfb; remove the lock file and temp dirs. Idempotent."""
        if self._mss is not None:
            with contextlib.suppress(Exception):
                self._mss.close()
            self._mss = None
        self._finalizer()

    def __enter__(self) -> DesktopSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"DesktopSession(display={self.display!r}, {self.width}x{self.height}, {state})"

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self._state.closed:
            raise SandboxUnavailable("this DesktopSession is closed; create a new one")

    def _restore_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        for child in self.home.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    child.unlink()
        if self.home_template is not None:
            shutil.copytree(self.home_template, self.home, symlinks=True, dirs_exist_ok=True)
