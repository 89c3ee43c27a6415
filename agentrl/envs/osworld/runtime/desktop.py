"""A real X desktop per session: Xvfb, a window manager, a private HOME and pyautogui in a child.

:class:`DesktopSession` starts ``Xvfb :<n>`` on a display number it owns (an exclusive ``flock`` on
``/tmp/agentrl-display-<n>.lock``, so concurrent processes never share a display), waits until the
display answers, starts ``xfwm4`` when it is installed and gives the session its own HOME directory.
Every process the desktop runs for a task or an agent (apps, setup commands, ``/execute``, getters,
pyautogui actions, and the session's D-Bus and AT-SPI daemons, whose bus activates services) runs in
one sandbox per episode, a :class:`~agentrl.envs.osworld.runtime.jail.Jail`: bubblewrap with its own PID,
IPC and user namespaces, no network, a read-only system and only HOME, the bus folder and a private package
database writable. Agent and scorer see the same processes and files. Only Xvfb and the window manager,
started with fixed arguments (the WM with a HOME of its own), run outside it.

Between episodes (:meth:`DesktopSession.reset`) nothing of one episode reaches the next or the host:

* every process of the sandbox ends: its PID namespace is killed (the session bus, AT-SPI and whatever
  they or the agent started, double-forked, ``setsid`` or in nested namespaces) and the reset goes on only
  once they are all gone; its ``/tmp``, ``/run``, ``/dev`` and System V IPC go with the namespaces. The next
  episode runs in a new sandbox, started ahead (with its pyautogui worker) during the last episode, with a
  new session bus, AT-SPI and ``ctrl+alt+t`` daemon, started after the folders below are restored;
* the host restores what the sandbox could write, HOME and the runtime folder (the bus socket and
  ``XDG_RUNTIME_DIR``, emptied), never following a link left there
  (:mod:`~agentrl.envs.osworld.runtime.safe_fs`: descriptors opened with ``O_NOFOLLOW``, new files renamed
  into place), and the next sandbox gets a package database made ready while no sandbox could write it;
* the session bus starts services only from the system's folders (:data:`BUS_SERVICE_DIRS`), never from a
  service file the sandbox wrote under HOME or ``XDG_RUNTIME_DIR``;
* X clients whose windows outlived their processes (close-down mode ``RetainPermanent``) are killed and
  the root window gets its wallpaper back. The X server's other state (root-window properties, cut
  buffers, the keyboard map) is not reset.

* :meth:`DesktopSession.launch` runs an app bound to the display with HOME set, in the sandbox.
* :meth:`DesktopSession.run` runs a command to completion there; :meth:`DesktopSession.read_file`,
  :meth:`DesktopSession.list_directory` and :meth:`DesktopSession.write_file` see its files.
* :meth:`DesktopSession.screenshot` / :meth:`DesktopSession.screenshot_png` grab the screen with ``mss``.
* :meth:`DesktopSession.run_pyautogui` runs an agent's pyautogui code in a separate child process with
  a deadline; the agent's code never runs in this process.
* :meth:`DesktopSession.accessibility_tree` dumps the AT-SPI tree as OSWorld's XML (see
  :mod:`agentrl.envs.osworld.a11y`): each session runs its own D-Bus session bus and AT-SPI bus
  launcher, and :meth:`DesktopSession.env` points apps at them (``DBUS_SESSION_BUS_ADDRESS``,
  ``GTK_MODULES=gail:atk-bridge``).
* :meth:`DesktopSession.reset` starts the next episode as above; :meth:`DesktopSession.close` ends the
  sandbox (and the one started ahead), the WM and Xvfb, and removes the lock and temp dirs. A forgotten
  session is cleaned up by a ``weakref`` finalizer.
* Each episode starts in OSWorld's VM's state (``vm_state``, :mod:`agentrl.envs.osworld.runtime.vm_state`): its
  GSettings defaults (``GSETTINGS_SCHEMA_DIR``), its wallpaper set and painted on the root window, a
  ``python3`` without lxml and a private package database in the sandbox; and the root window carries
  the X resources that let ``GET /terminal`` read an xterm (:mod:`agentrl.envs.osworld.runtime.terminal`).

Needs ``xvfb`` (and ``x11-utils``, ``xterm``, ``xdotool``, ``scrot``, ``xfwm4`` for the full desktop) from
apt, and ``pip install 'agentrl-gym[desktop]'`` (``mss``, ``pyautogui``). The accessibility tree needs
``apt-get install -y at-spi2-core dbus-x11 python3-gi gir1.2-atspi-2.0`` (without them the desktop
still works; :meth:`DesktopSession.accessibility_tree` raises SandboxUnavailable).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
from agentrl.envs.osworld.runtime import safe_fs
from agentrl.envs.osworld.runtime.jail import Jail, JailProcess
from agentrl.envs.osworld.runtime.settle import ANSWER_S, ProcessActivity, SettleResult
from agentrl.envs.osworld.runtime.settle import settle as settle_screen

__all__ = ["APT_PACKAGES", "DesktopSession", "ensure_xvfb"]

APT_PACKAGES = ("xvfb", "xterm", "xdotool", "x11-utils", "scrot", "xfwm4")
APT_COMMAND = "sudo apt-get install -y " + " ".join(APT_PACKAGES)
A11Y_APT_COMMAND = "apt-get install -y at-spi2-core dbus-x11 python3-gi gir1.2-atspi-2.0"
A11Y_LAUNCHERS = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher")
SYSTEM_PYTHON = "/usr/bin/python3"
_RELEASE_INPUT = """\
from Xlib import X
from Xlib.ext import xtest
import pyautogui._pyautogui_x11 as _x11
_d = _x11._display
for _i, _byte in enumerate(_d.query_keymap()):
    for _bit in range(8):
        if _byte & (1 << _bit):
            xtest.fake_input(_d, X.KeyRelease, _i * 8 + _bit)
_mask = _d.screen().root.query_pointer().mask
for _button, _flag in ((1, X.Button1Mask), (2, X.Button2Mask), (3, X.Button3Mask)):
    if _mask & _flag:
        xtest.fake_input(_d, X.ButtonRelease, _button)
_d.sync()
"""
# Runs in the next episode's worker at reset, once every process of the last episode is gone: a client that set its
# close-down mode to RetainPermanent keeps its windows on the screen after it exits. Every window whose client is
# neither the window manager (__WM__: its check window, read when it started) nor this worker is such a leftover, and
# KillClient on it destroys all its client made. The root gets its wallpaper back (__PIXMAP__, the desktop's).
_CLEAN_DISPLAY = """\
from Xlib import error as _error
import pyautogui._pyautogui_x11 as _x11
_d = _x11._display
_mask = _d.display.info.resource_id_mask
_keep = {_d.display.info.resource_id_base} | ({__WM__ & ~_mask} if __WM__ else set())
_root = _d.screen().root
_todo, _left = [(_root, 0)], []
while _todo:
    _window, _depth = _todo.pop()
    try:
        _children = _window.query_tree().children
    except _error.XError:
        continue
    for _child in _children:
        if _child.id & ~_mask not in _keep:
            _left.append(_child.id)
        elif _depth < 3:  # the window manager's frames hold the windows it manages
            _todo.append((_child, _depth + 1))
for _id in _left:
    _d.create_resource_object("window", _id).kill_client(onerror=_error.CatchError())
if __PIXMAP__:
    _root.change_attributes(background_pixmap=__PIXMAP__, onerror=_error.CatchError())
    _root.clear_area(0, 0, 0, 0, onerror=_error.CatchError())
_d.sync()
"""
# Only these of the server's environment reach the desktop's processes (never the trainer's API keys).
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "XDG_SESSION_TYPE")
DISPLAY_START = 100
DISPLAY_TRIES = 200
OUTPUT_CAP = 20_000
BUS_SERVICE_DIRS = ("/usr/local/share/dbus-1/services", "/usr/share/dbus-1/services")
"""Where the session bus finds the services it starts on demand: the system's folders only, which the sandbox
cannot write (a session bus's usual ones are under HOME and ``XDG_RUNTIME_DIR``, which it can)."""
BUS_CONFIG = (
    '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"\n'
    ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
    "<busconfig>\n  <type>session</type>\n  <keep_umask/>\n  <listen>unix:tmpdir=/tmp</listen>\n"
    "  <auth>EXTERNAL</auth>\n"
    + "".join(f"  <servicedir>{folder}</servicedir>\n" for folder in BUS_SERVICE_DIRS)
    + '  <policy context="default">\n    <allow send_destination="*" eavesdrop="true"/>\n'
    '    <allow eavesdrop="true"/>\n    <allow own="*"/>\n  </policy>\n'
    + "".join(
        f'  <limit name="{name}">{value}</limit>\n'
        for name, value in (
            ("max_incoming_bytes", 1000000000), ("max_outgoing_bytes", 1000000000),
            ("max_message_size", 1000000000), ("service_start_timeout", 120000), ("auth_timeout", 240000),
            ("max_completed_connections", 100000), ("max_incomplete_connections", 10000),
            ("max_connections_per_user", 100000), ("max_pending_service_starts", 10000),
            ("max_names_per_connection", 50000), ("max_match_rules_per_connection", 50000),
            ("max_replies_per_connection", 50000),
        )
    )
    + "</busconfig>\n"
)  # fmt: skip
"""The session bus's configuration: Debian's ``session.conf`` with :data:`BUS_SERVICE_DIRS` for its service folders."""


# Runs in the child: the agent's code arrives on stdin; ``pyautogui`` is imported before it runs.
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


def _xauth_entry(family: int, address: bytes, number: bytes, name: bytes, data: bytes) -> bytes:
    """One entry of an Xauthority file (big-endian lengths before each field)."""
    out = family.to_bytes(2, "big")
    for part in (address, number, name, data):
        out += len(part).to_bytes(2, "big") + part
    return out


# The display needs no cookie (Xvfb listens on its unix socket only), but python-xlib prints a warning to
# stdout on every connection when XAUTHORITY has no entry at all, which would corrupt `python -c` output.
# One entry for a host that does not exist (FamilyLocal, 256) matches no display: clients connect without auth.
_PLACEHOLDER_XAUTH = _xauth_entry(256, b"agentrl-no-such-host", b"0", b"MIT-MAGIC-COOKIE-1", bytes(16))


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


def _read_line(fd: int, timeout_s: float) -> bool:
    """Whether a whole line arrives on pipe ``fd`` within ``timeout_s`` (not: EOF or the deadline first)."""
    import select

    deadline = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return False
        chunk = os.read(fd, 4096)
        if not chunk:
            return False
        data += chunk
    return True


@dataclass
class _State:
    """Everything the finalizer needs; holds no reference to the session itself."""

    display: int = -1
    lock_fd: int | None = None
    lock_path: Path | None = None
    tmpdir: Path | None = None
    xvfb: subprocess.Popen[bytes] | None = None
    wm: subprocess.Popen[bytes] | None = None
    bus: JailProcess | None = None
    a11y: JailProcess | None = None
    hotkeys: JailProcess | None = None  # the ctrl+alt+t daemon (agentrl.envs.osworld.runtime.hotkeys)
    bus_address: str | None = None
    jail: Jail | None = None
    spare: Future[tuple[Jail, Any]] | None = None  # the next episode's sandbox and pyautogui worker, started ahead
    apps: list[JailProcess] = field(default_factory=list)
    launched: set[int] = field(default_factory=set)  # pids of launch()ed apps, for crashed_apps()
    extra_dirs: list[Path] = field(default_factory=list)  # the session's folders outside tmpdir (in /dev/shm)
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
    if state.jail is not None:  # every app, command and daemon of the desktop dies with its sandbox
        state.jail.close()
        state.jail = None
    spare, state.spare = state.spare, None
    if spare is not None and not spare.cancel():
        with contextlib.suppress(Exception):
            jail, worker = spare.result(timeout=120)
            if worker is not None:
                worker.close()
            jail.close()
    state.apps.clear()
    state.a11y = state.bus = None
    state.bus_address = None
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
    for folder in state.extra_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    state.extra_dirs.clear()


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
    (why there is none), ``accessibility_note`` (why there is no AT-SPI bus, when there is none),
    ``pids`` (the host pids started so far: Xvfb, the WM and the sandbox), ``jail`` (the sandbox every
    app, command and action runs in) and ``isolation_warning``.

    ``sandbox``: ``True`` requires bubblewrap for the sandbox, ``False`` runs its processes as plain
    children (inside a container, which is then the boundary), ``None`` uses bubblewrap where installed
    and warns (``RuntimeWarning``) where it is not.
    """

    def __init__(
        self,
        width: int = 1280,
        height: int = 720,
        *,
        window_manager: bool = True,
        accessibility: bool = True,
        home_template: str | os.PathLike[str] | None = None,
        startup_timeout_s: float = 15.0,
        sandbox: bool | None = None,
    ) -> None:
        self.width = int(width)
        self.height = int(height)
        self.home_template = Path(home_template) if home_template is not None else None
        self.window_manager_name: str | None = None
        self.window_manager_note = ""
        self.accessibility_note = ""
        self.hotkeys_note = ""
        """Why ``ctrl+alt+t`` opens no terminal here (empty when it does)."""
        self.pids: list[int] = []
        self._state = _State()
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        self._mss: Any = None
        self._worker: Any = None  # the PyautoguiWorker, started on the first run_pyautogui
        #: the raw screen just before the last action, until a settle takes it (has the app answered yet?)
        self._before_action: bytes | None = None
        # The pyautogui worker's actions run one at a time on this long-lived thread.
        self._worker_thread: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="agentrl-desktop")
        # bwrap's --die-with-parent follows the *thread* that started it: every sandbox (each episode's, and the
        # next one's, started ahead) is started from this one long-lived thread, never from an HTTP handler's.
        self._jail_thread: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="agentrl-desktop-jail")
        self._sandbox = sandbox
        self._spare_slot = 1  # the package database slot (vm_state.SLOTS) of the sandbox started ahead
        self._warned = False
        self._accessibility = accessibility
        self._startup_timeout_s = float(startup_timeout_s)
        xvfb = ensure_xvfb()
        self._state.tmpdir = Path(tempfile.mkdtemp(prefix="agentrl-desktop-"))
        self.home = self._state.tmpdir / "home"
        self.home.mkdir()
        (self._state.tmpdir / "run").mkdir(mode=0o700)
        (self._state.tmpdir / "Xauthority").write_bytes(_PLACEHOLDER_XAUTH)
        (self._state.tmpdir / "bus").mkdir()  # read-only in the sandbox
        (self._state.tmpdir / "bus" / "session.conf").write_text(BUS_CONFIG, encoding="utf-8")
        self.xterm_print_dir = str(self._state.tmpdir / "run" / "xterm-print")
        """Where the desktop's xterms print their text (:mod:`agentrl.envs.osworld.runtime.terminal`)."""
        self._root_pixmap: str | None = None  # the wallpaper pixmap painted last (its id on the root window)
        self._wm_window: int | None = None  # the window manager's check window (its client's windows stay at reset)
        try:
            from agentrl.envs.osworld.runtime.vm_state import VMState

            self.vm_state = VMState(self._state.tmpdir / "vm", self.width, self.height)
            """OSWorld's VM's starting state (:mod:`agentrl.envs.osworld.runtime.vm_state`), restored at each reset."""
            self._state.extra_dirs += self.vm_state.outside
            self.vm_state.restore()
            self._start_xvfb(xvfb, startup_timeout_s)
            self._restore_home()
            self._restore_run()
            if window_manager:
                self._start_window_manager()
            else:
                self.window_manager_note = "window_manager=False"
            jail, self._worker = self._jail_thread.submit(self._new_sandbox, 0).result()
            self._adopt_jail(jail, 0)
            self._start_daemons(warm_worker=False)
            self._dress_display(force=True)
            self._start_spare()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ startup
    def _start_xvfb(self, xvfb: str, timeout_s: float, tries: int = 2) -> None:
        """Start Xvfb on a free display and wait until it answers; up to ``tries`` slow starts (a fresh display each).

        ``timeout_s`` is the deadline on an idle machine; it is stretched with the load
        (:func:`~agentrl.core.deadlines.scaled_timeout`) at each try. The error names the step that failed.
        """
        from agentrl.core.deadlines import scaled_timeout

        assert self._state.tmpdir is not None
        log = self._state.tmpdir / "xvfb.log"
        errors: list[str] = []
        timeouts = 0
        for n in range(DISPLAY_START, DISPLAY_START + DISPLAY_TRIES):
            if _x_lock_held(n):
                continue
            lock = _try_lock(n)
            if lock is None:
                continue
            self._state.lock_fd, self._state.lock_path = lock
            self._state.display = n
            argv = [xvfb, f":{n}", "-screen", "0", f"{self.width}x{self.height}x24", "-nolisten", "tcp"]
            proc = self._spawn(argv, log)
            self._state.xvfb = proc
            failure = self._wait_display(n, proc, scaled_timeout(timeout_s))
            if failure is None:
                return
            errors.append(failure)
            timeouts += proc.poll() is None  # still running: it was slow, not broken
            _kill_procs([proc])
            self._state.xvfb = None
            _release_display(self._state)
            self._state.display = -1
            if timeouts >= tries or len(errors) >= max(tries, 3):  # an Xvfb that exits at once costs little
                break
        raise SandboxUnavailable("Xvfb did not start: " + " | ".join(errors or ["no free display number"]))

    def _spawn(
        self,
        argv: Sequence[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start one of the desktop's daemons in its own session, output to ``log``; its pid is tracked."""
        with log.open("wb") as out:
            proc = subprocess.Popen(
                list(argv),
                env=dict(env) if env is not None else None,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pids.append(proc.pid)
        return proc

    def _wait_display(self, n: int, proc: subprocess.Popen[bytes], timeout_s: float) -> str | None:
        """Wait until Xvfb ``:n`` has its socket and answers ``xdpyinfo``; ``None``, or which step failed."""
        from agentrl.core.deadlines import load_note

        socket_path = f"/tmp/.X11-unix/X{n}"
        xdpyinfo = shutil.which("xdpyinfo")
        started = time.monotonic()
        deadline = started + timeout_s
        step = f"did not create its socket {socket_path}"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                assert self._state.tmpdir is not None
                tail = _read_capped(self._state.tmpdir / "xvfb.log", 2000).strip()[-300:]
                waited = time.monotonic() - started
                return f"Xvfb :{n} exited with status {proc.returncode} after {waited:.1f} s: {tail}"
            if os.path.exists(socket_path):
                if xdpyinfo is None:
                    return None
                step = "did not answer xdpyinfo"
                # One xdpyinfo may take a while on a loaded machine: it gets what is left of the deadline.
                left = max(0.5, deadline - time.monotonic())
                try:
                    result = subprocess.run(
                        [xdpyinfo, "-display", f":{n}"], capture_output=True, timeout=left, check=False
                    )
                except subprocess.TimeoutExpired:
                    break
                if result.returncode == 0:
                    return None
            time.sleep(0.05)
        return f"Xvfb :{n} {step} within {timeout_s:.1f} s ({load_note()})"

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
        # The WM runs on the host: its HOME, config, caches and bus are its own, never the sandbox's HOME (whose
        # ~/.themes, ~/.icons and ~/.local the agent writes), and outside the folders reset() empties.
        wm_env = {"NO_AT_BRIDGE": "1"}
        for var in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
            path = self._state.tmpdir / "wm" / var.lower()
            path.mkdir(parents=True, exist_ok=True)
            wm_env[var] = str(path)
        from agentrl.core.deadlines import scaled_timeout

        failures: list[str] = []
        for attempt in range(3):  # a WM started right as Xvfb comes up occasionally fails to connect
            proc = self._spawn(argv, log, env=self.env(wm_env), cwd=self._state.tmpdir / "wm")
            self._state.wm = proc
            failure = self._wait_window_manager(proc, scaled_timeout(5.0))
            if failure is None:
                self.window_manager_name = "xfwm4"
                return
            failures.append(failure)
            _kill_procs([proc])
            self._state.wm = None
            time.sleep(0.2 * (attempt + 1))
        tail = _read_capped(log, 2000).strip()[-300:]
        self.window_manager_note = f"xfwm4 did not start ({failures[-1]}); running without a window manager: {tail}"

    def _wait_window_manager(self, proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> str | None:
        """Wait until the WM claims the screen (``_NET_SUPPORTING_WM_CHECK`` on the root window).

        ``None`` when it did (or still runs at the deadline), else which step failed.
        """
        from agentrl.core.deadlines import load_note

        xprop = shutil.which("xprop")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return f"xfwm4 exited with status {proc.returncode}"
            if xprop is None:
                time.sleep(0.5)
                return None if proc.poll() is None else f"xfwm4 exited with status {proc.returncode}"
            try:
                result = subprocess.run(
                    [xprop, "-display", self.display, "-root", "_NET_SUPPORTING_WM_CHECK"],
                    capture_output=True,
                    text=True,
                    timeout=max(0.5, deadline - time.monotonic()),
                    check=False,
                )
            except subprocess.TimeoutExpired:
                break
            if "window id" in result.stdout:
                with contextlib.suppress(ValueError):
                    self._wm_window = int(result.stdout.rsplit("#", 1)[-1].split()[0], 16)
                return None
            time.sleep(0.05)
        if proc.poll() is None:
            return None
        return f"xfwm4 did not claim the screen within {timeout_s:.1f} s ({load_note()}) and exited"

    # ------------------------------------------------------------------ the sandbox and its daemons
    def _new_jail(self, slot: int) -> Jail:
        """A new sandbox with nothing in it yet, on package database ``slot`` (restored first, as nothing binds it).

        Runs on the jail thread: bwrap's --die-with-parent follows the thread that started it.
        """
        from agentrl.core.deadlines import scaled_timeout
        from agentrl.envs.osworld.runtime.vm_state import HIDDEN_PYTHON_MODULES

        assert self._state.tmpdir is not None
        self.vm_state.restore(slot)
        tmpdir = self._state.tmpdir
        x_socket = Path(f"/tmp/.X11-unix/X{self._state.display}")
        return Jail(
            self.home,
            writable=[tmpdir / "run"],
            readable=[x_socket, tmpdir / "Xauthority", tmpdir / "bus", *self.vm_state.readable],
            mounts=self.vm_state.mounts(slot),
            hidden_modules=HIDDEN_PYTHON_MODULES,
            sandbox=self._sandbox,
            startup_timeout_s=scaled_timeout(20.0),  # a loaded machine starts bwrap and Python slowly
        )

    def _new_worker(self, jail: Jail, output_cap: int = OUTPUT_CAP) -> Any:
        """A pyautogui worker for ``jail`` (not started)."""
        from agentrl.envs.osworld.runtime.executor import PyautoguiWorker

        assert self._state.tmpdir is not None
        return PyautoguiWorker(
            self.env(), self.home, xauthority=self._state.tmpdir / "Xauthority", output_cap=output_cap, jail=jail
        )

    def _new_sandbox(self, slot: int) -> tuple[Jail, Any]:
        """A new sandbox on package database ``slot`` with its pyautogui worker started (``None`` if it failed)."""
        jail = self._new_jail(slot)
        worker = self._new_worker(jail)
        try:
            worker.start()
        except Exception:  # the first action starts one (and says why it cannot)
            worker.close()
            worker = None
        return jail, worker

    def _start_spare(self) -> None:
        """Start the next episode's sandbox and its pyautogui worker now, so that the next reset need not wait.

        Nothing else runs in it until that reset, and nothing of this episode can reach it: another PID, IPC,
        network and mount namespace, another package database (its slot, made ready first, which no sandbox binds).
        What it shares with this episode is HOME and the runtime folder, which neither its supervisor nor the
        worker read: the worker's Python runs isolated (``-I``) on absolute import paths, and imports nothing
        from its working directory. Its daemons (the session bus, AT-SPI, the ``ctrl+alt+t`` daemon), which would
        read HOME, start at the reset, after HOME is restored.
        """
        from agentrl.envs.osworld.runtime.vm_state import SLOTS

        if self._jail_thread is not None and self._state.spare is None and not self._state.closed:
            self._spare_slot = (self.vm_state.slot + 1) % SLOTS  # the package database no sandbox binds now
            self._state.spare = self._jail_thread.submit(self._new_sandbox, self._spare_slot)

    def _take_spare(self) -> tuple[Jail, int, Any]:
        """The sandbox started ahead, its slot and its worker; a new one now when there is none or it failed or died."""
        from agentrl.core.deadlines import scaled_timeout

        assert self._jail_thread is not None
        spare, self._state.spare = self._state.spare, None
        if spare is not None:
            made: tuple[Jail, Any] | None = None
            with contextlib.suppress(Exception):  # it did not start: the one started below says why
                made = spare.result(timeout=scaled_timeout(60.0))
            if made is not None and made[0].alive():
                return made[0], self._spare_slot, made[1]
            if made is not None:
                if made[1] is not None:
                    made[1].close()
                made[0].close()
        return self._jail_thread.submit(self._new_jail, self._spare_slot).result(), self._spare_slot, None

    def _adopt_jail(self, jail: Jail, slot: int) -> None:
        """Make ``jail`` (on package database ``slot``) the sandbox; a warning once when it is not isolated."""
        self._state.jail = jail
        self.vm_state.slot = slot
        self.pids.append(jail.host_pid or -1)
        if self._sandbox is None and not jail.sandboxed and not self._warned:
            import warnings

            self._warned = True  # the caller did not choose this: say what isolation is missing
            warnings.warn(f"AgentRL desktop: {jail.isolation_warning}", RuntimeWarning, stacklevel=3)

    def _end_jail(self) -> None:
        """End the sandbox: its PID namespace is killed, and every process of it is gone when this returns."""
        jail, self._state.jail = self._state.jail, None
        self._state.bus = self._state.a11y = self._state.hotkeys = None
        self._state.apps.clear()
        self._state.launched.clear()
        if jail is None:
            return
        pid = jail.host_pid
        jail.close(grace_s=0.0)
        if pid in self.pids:
            self.pids.remove(pid)

    def _spawn_daemon(
        self, argv: Sequence[str], log: Path, env: Mapping[str, str], *, pass_fds: Mapping[int, int] | None = None
    ) -> JailProcess:
        """Start one of the episode's daemons in the sandbox, its output to ``log`` (a file of the host's)."""
        assert self._state.jail is not None and self._state.tmpdir is not None
        with log.open("wb") as out:
            return self._state.jail.spawn(
                argv, env=env, cwd=self._state.tmpdir / "run", stdout=out.fileno(), stderr=out.fileno(),
                pass_fds=pass_fds,
            )  # fmt: skip

    def _bus_env(self) -> dict[str, str]:
        """The environment of the session bus and AT-SPI (and of the services the bus starts)."""
        assert self._state.tmpdir is not None and self._state.bus_address is not None
        # The bus's activated services inherit its env: give them the desktop (and no a11y bridge).
        # XDG_RUNTIME_DIR outside HOME: the launcher puts the AT-SPI bus socket there.
        env = {
            **self.env({"NO_AT_BRIDGE": "1"}),
            "DBUS_SESSION_BUS_ADDRESS": self._state.bus_address,
            "XDG_RUNTIME_DIR": str(self._state.tmpdir / "run" / "xdg"),
        }
        env.pop("GTK_MODULES", None)
        return env

    def _start_daemons(self, *, warm_worker: bool) -> None:
        """Start the episode's daemons in the new sandbox side by side; return once each is ready (or has a note).

        The session bus (:data:`BUS_CONFIG`), then the AT-SPI bus launcher on it; the ``ctrl+alt+t`` daemon;
        with ``warm_worker``, the pyautogui worker, which releases any key or button an action killed at its
        deadline left down (it would type into this episode) and clears the display (:meth:`_reset_display_code`).
        """
        from agentrl.core.deadlines import scaled_timeout

        bus = self._spawn_bus()
        hotkeys = self._spawn_hotkeys()
        worker: Future[dict[str, Any]] | None = None
        pool = self._worker_thread
        if warm_worker and pool is not None:
            try:
                self._before_action = bytes(self._grab().raw)  # as run_pyautogui: for the settle after it
            except Exception:
                self._before_action = None
            clean = self._reset_display_code()
            worker = pool.submit(self._run_in_worker, clean, 10.0, OUTPUT_CAP)
        try:
            if bus is not None:
                self._finish_accessibility(*bus, timeout_s=scaled_timeout(self._startup_timeout_s))
            if hotkeys is not None:
                self._wait_hotkeys(*hotkeys, timeout_s=scaled_timeout(5.0))
        finally:
            if pool is not None and worker is not None and not worker.result().get("ok"):
                # The worker started ahead did not answer well (its X connection closed meanwhile): a new one.
                self._stop_worker()
                pool.submit(self._run_in_worker, clean, 10.0, OUTPUT_CAP).result()

    def _reset_display_code(self) -> str:
        """What the worker runs at reset: release keys and buttons, kill the X clients left behind, repaint the root."""
        pixmap = 0
        with contextlib.suppress(ValueError, TypeError):
            pixmap = int(self._root_pixmap or "0", 16)
        clean = _CLEAN_DISPLAY.replace("__WM__", str(self._wm_window or 0)).replace("__PIXMAP__", str(pixmap))
        return _RELEASE_INPUT + clean

    def _spawn_bus(self) -> tuple[JailProcess, int, str] | None:
        """Start the session bus in the sandbox; ``(bus, read end of its address pipe, AT-SPI launcher)``.

        ``None``, with ``accessibility_note`` saying why, when there is no bus or launcher (or ``accessibility=False``).
        """
        assert self._state.tmpdir is not None
        self._state.bus_address = None
        if not self._accessibility:
            self.accessibility_note = "accessibility=False"
            return None
        dbus = shutil.which("dbus-daemon")
        launcher = next((p for p in A11Y_LAUNCHERS if os.access(p, os.X_OK)), None)
        if dbus is None or launcher is None:
            missing = "dbus-daemon" if dbus is None else "at-spi-bus-launcher"
            self.accessibility_note = f"{missing} is not installed; install with: {A11Y_APT_COMMAND}"
            return None
        tmpdir = self._state.tmpdir
        # The episode's processes, started from now on, get this address (None again if the bus fails).
        self._state.bus_address = f"unix:path={tmpdir / 'run' / 'bus'}"
        argv = [dbus, f"--config-file={tmpdir / 'bus' / 'session.conf'}", "--nofork", "--nopidfile",
                f"--address={self._state.bus_address}", "--print-address=3"]  # fmt: skip
        ready_r, ready_w = os.pipe()
        try:
            bus = self._spawn_daemon(argv, tmpdir / "dbus.log", self._bus_env(), pass_fds={3: ready_w})
        except (OSError, SandboxUnavailable) as exc:
            os.close(ready_r)
            self.accessibility_note = f"dbus-daemon did not start: {exc}"
            self._state.bus_address = None
            return None
        finally:
            os.close(ready_w)
        self._state.bus = bus
        return bus, ready_r, launcher

    def _finish_accessibility(self, bus: JailProcess, ready_r: int, launcher: str, *, timeout_s: float) -> None:
        """Wait for the bus to listen, start the AT-SPI bus launcher on it and wait for its AT-SPI bus."""
        assert self._state.tmpdir is not None
        tmpdir = self._state.tmpdir
        try:
            listening = _read_line(ready_r, timeout_s)  # dbus-daemon prints its address once it listens
        finally:
            os.close(ready_r)
        if not listening:
            log = _read_capped(tmpdir / "dbus.log", 2000).strip()[-300:]
            self.accessibility_note = f"dbus-daemon did not start: {log}"
            bus.kill_group()
            self._state.bus = None
            self._state.bus_address = None
            return
        try:
            a11y = self._spawn_daemon([launcher, "--launch-immediately"], tmpdir / "a11y.log", self._bus_env())
        except (OSError, SandboxUnavailable) as exc:
            self.accessibility_note = f"at-spi-bus-launcher did not start: {exc}"
            return
        self._state.a11y = a11y
        # Ready once it has made its AT-SPI bus (it owns org.a11y.Bus by then): apps launched earlier
        # would have the bus activate a second launcher. Looked for without following a link.
        deadline = time.monotonic() + min(timeout_s, 5.0)
        run = safe_fs.open_dir(tmpdir / "run")
        try:
            while a11y.poll() is None and time.monotonic() < deadline:
                if any(name.startswith("bus") for name in safe_fs.list_names(run, "xdg", "at-spi") or ()):
                    self.accessibility_note = ""
                    return
                time.sleep(0.005)
        finally:
            os.close(run)
        if a11y.poll() is not None:
            self.accessibility_note = (
                "at-spi-bus-launcher exited: " + _read_capped(tmpdir / "a11y.log", 2000).strip()[-300:]
            )

    def _spawn_hotkeys(self) -> tuple[JailProcess, Path] | None:
        """Start the ``ctrl+alt+t`` daemon in the sandbox; ``None`` with ``hotkeys_note`` when it cannot."""
        from agentrl.envs.osworld.runtime.hotkeys import TERMINAL_ARGV, grabber_argv
        from agentrl.envs.osworld.runtime.jail import _interpreter

        assert self._state.tmpdir is not None
        self._state.hotkeys = None
        if shutil.which(TERMINAL_ARGV[0]) is None:
            self.hotkeys_note = f"{TERMINAL_ARGV[0]} is not installed; ctrl+alt+t opens nothing (apt-get install xterm)"
            return None
        log = self._state.tmpdir / "hotkeys.log"
        try:
            proc = self._spawn_daemon(grabber_argv(_interpreter()), log, self.env())
        except (OSError, SandboxUnavailable) as exc:
            self.hotkeys_note = f"the ctrl+alt+t daemon did not start: {exc}"
            return None
        return proc, log

    def _wait_hotkeys(self, proc: JailProcess, log: Path, *, timeout_s: float) -> None:
        """Wait until the ``ctrl+alt+t`` daemon holds the key; a note when it exits."""
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            if b"ready" in log.read_bytes()[:4096]:  # the host's log file (the daemon's stdout), not the sandbox's
                self._state.hotkeys = proc
                self.hotkeys_note = ""
                return
            time.sleep(0.005)
        if proc.poll() is None:  # slow, not failed: keep it (it grabs the key as soon as it connects)
            self._state.hotkeys = proc
            return
        self.hotkeys_note = "the ctrl+alt+t daemon exited: " + _read_capped(log, 2000).strip()[-300:]

    def _jail(self) -> Jail:
        self._check_open()
        jail = self._state.jail
        if jail is None or not jail.alive():
            raise SandboxUnavailable("the desktop's sandbox died; reset the desktop")
        return jail

    @property
    def jail(self) -> Jail:
        """The sandbox every app, command and action of this desktop runs in."""
        return self._jail()

    @property
    def isolation_warning(self) -> str:
        """``""`` when the desktop's processes are sandboxed, else what isolation is missing."""
        jail = self._state.jail
        return jail.isolation_warning if jail is not None else ""

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

    @property
    def bus_address(self) -> str | None:
        """The session bus's ``DBUS_SESSION_BUS_ADDRESS``; ``None`` without one (see ``accessibility_note``)."""
        return self._state.bus_address

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a process on this desktop: DISPLAY, HOME and XDG_SESSION_TYPE=x11 set.

        With the session's bus: ``DBUS_SESSION_BUS_ADDRESS`` (its own), ``GTK_MODULES=gail:atk-bridge``,
        and no ``NO_AT_BRIDGE`` or ``AT_SPI_BUS_ADDRESS`` from this process, so GTK apps join its AT-SPI bus.
        """
        env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW or k.startswith("LC_")}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(DISPLAY=self.display, HOME=str(self.home), XDG_SESSION_TYPE="x11")
        if self._state.bus_address is not None:
            for var in ("NO_AT_BRIDGE", "AT_SPI_BUS_ADDRESS"):
                env.pop(var, None)
            env.update(DBUS_SESSION_BUS_ADDRESS=self._state.bus_address, GTK_MODULES="gail:atk-bridge")
        if self._state.tmpdir is not None:  # an empty auth file: python-xlib fails without one
            env["XAUTHORITY"] = str(self._state.tmpdir / "Xauthority")
        vm_state = getattr(self, "vm_state", None)
        if vm_state is not None:  # GSETTINGS_SCHEMA_DIR: GSettings' defaults are OSWorld's VM's
            env.update(vm_state.env())
        if extra:
            env.update(extra)
        return env

    def launch(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
    ) -> JailProcess:
        """Start an app on this display in the sandbox (HOME set, cwd HOME by default); returns at once.

        ``env`` adds to the session env. :meth:`reset` and :meth:`close` kill it and everything it
        started. The returned process's ``pid`` is its pid inside the sandbox.

        Raises:
            FileNotFoundError: the command is not installed (in the sandbox's view).
        """
        proc = self._jail().spawn(argv, env=self.env(env), cwd=cwd if cwd is not None else self.home)
        self._state.apps.append(proc)
        self._state.launched.add(proc.pid)
        return proc

    def run(
        self, argv: Sequence[str], timeout_s: float = 120.0, *, input: bytes | None = None, cap: int = 1_000_000
    ) -> tuple[int | None, str, str]:
        """Run a command to completion in the sandbox with the desktop's env, cwd HOME.

        Returns ``(exit code, or None when killed at the deadline; stdout; stderr)``, each capped at
        ``cap`` bytes; a command that is not installed gives 127.
        """
        return self._jail().run(argv, env=self.env(), cwd=self.home, timeout_s=timeout_s, input=input, cap=cap)

    def _file_op(self, kind: str, path: str, data: bytes | None = None) -> tuple[int | None, bytes, str]:
        rc, out, err = self._jail().run_bytes(
            [], file_op=[kind, path, str(self.home)], cwd=self.home, input=data, timeout_s=120.0, cap=1 << 30
        )
        return rc, out, err.decode(errors="replace")

    def read_file(self, path: str) -> bytes | None:
        """The bytes of ``path`` as the sandbox sees it (a host file outside it is not there); ``None`` if absent."""
        rc, out, _ = self._file_op("read", path)
        return out if rc == 0 else None

    def list_directory(self, path: str) -> dict[str, Any] | None:
        """OSWorld's ``directory_tree`` of ``path`` in the sandbox, or ``None`` when it is not a directory."""
        import json

        rc, out, _ = self._file_op("list", path)
        return json.loads(out) if rc == 0 else None

    def path_kind(self, path: str) -> str | None:
        """``"directory"``, ``"file"`` or ``None``: what ``path`` is in the sandbox."""
        tree = self.list_directory(path)
        if tree is not None:
            return "directory"
        rc, _, _ = self._file_op("read", path)  # a file the sandbox can open
        return "file" if rc == 0 else None

    def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the sandbox, which must resolve under HOME there.

        Raises:
            PermissionError: ``path`` (after symlinks) is outside HOME.
            OSError: the write failed.
        """
        rc, _, err = self._file_op("write", path, data)
        if rc == 3:
            raise PermissionError(err)
        if rc != 0:
            raise OSError(err or f"writing {path} failed (exit {rc})")

    def processes(self) -> list[Any]:
        """Every process of the sandbox (:class:`~.jail.ProcInfo`), as its ``ps`` sees them."""
        return self._jail().ps()

    def descends_from(self, pid: int, ancestor: int) -> bool:
        """Whether sandbox pid ``pid`` is ``ancestor`` or a descendant of it (see :meth:`launch`)."""
        return self._jail().descends_from(pid, ancestor)

    @property
    def apps(self) -> list[JailProcess]:
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
        region = {"left": 0, "top": 0, "width": self.width, "height": self.height}
        try:
            return self._grabber().grab(region)
        except Exception:
            # A lost X connection (seen rarely under load): reconnect once; a dead display raises again.
            if self._mss is not None:
                with contextlib.suppress(Exception):
                    self._mss.close()
                self._mss = None
            time.sleep(0.1)
            return self._grabber().grab(region)

    def screenshot(self) -> np.ndarray:
        """The screen as an ``(H, W, 3)`` uint8 RGB array."""
        shot = self._grab()
        bgra = np.frombuffer(shot.bgra, dtype=np.uint8).reshape(shot.height, shot.width, 4)
        return np.ascontiguousarray(bgra[:, :, 2::-1])

    def settle(self, max_s: float = 1.0, quiet_s: float = 0.02, answer_s: float = ANSWER_S) -> SettleResult[bytes]:
        """Wait until the screen is unchanged and the desktop's apps idle for ``quiet_s``, ``max_s`` at most.

        Watched: the raw screen, and the CPU time of the sandbox's processes and the window manager
        (:func:`~agentrl.envs.osworld.runtime.settle.settle`). After an action (:meth:`run_pyautogui`),
        while the screen is still the one from before it, the stillness must last ``answer_s``: the app
        has not answered yet. Returns the wait's figures; the frame is the screen's raw BGRA bytes.
        """
        self._check_open()
        before, self._before_action = self._before_action, None

        def roots() -> list[int | None]:
            wm = self._state.wm
            jail = self._state.jail
            return [jail.host_pid if jail is not None else None, wm.pid if wm is not None else None]

        return settle_screen(
            lambda: self._grab().raw, ProcessActivity(roots), max_s=max_s, quiet_s=quiet_s, unchanged=before,
            answer_s=answer_s,
        )

    def screenshot_png(self) -> bytes:
        """The screen as PNG bytes."""
        import mss.tools

        shot = self._grab()
        png = mss.tools.to_png(shot.rgb, shot.size)
        assert png is not None
        return png

    def run_pyautogui(self, code: str, timeout_s: float = 10.0, *, output_cap: int = OUTPUT_CAP) -> dict[str, Any]:
        """Run the agent's pyautogui ``code`` in the session's sandboxed worker bound to this display.

        The worker (:class:`~agentrl.envs.osworld.runtime.executor.PyautoguiWorker`) imports pyautogui once
        (FAILSAFE off; pyautogui's 0.1 s PAUSE between a snippet's calls, not after the last) and runs each
        snippet under bubblewrap where it is installed: a read-only root, no network, only this HOME writable.
        Returns ``{"ok", "output", "error", "timed_out"}``; a snippet past ``timeout_s`` is killed with the
        worker, which restarts on the next call.
        """
        self._check_open()
        assert self._worker_thread is not None
        try:
            self._before_action = bytes(self._grab().raw)  # for the settle after it (0.3 ms at 1280x720)
        except Exception:  # no screen to compare with: the settle waits as it would without
            self._before_action = None
        return self._worker_thread.submit(self._run_in_worker, code, timeout_s, output_cap).result()

    def _run_in_worker(self, code: str, timeout_s: float, output_cap: int) -> dict[str, Any]:
        stale = self._worker is not None and self._worker.jail is not self._state.jail
        if self._worker is None or self._worker.closed or self._worker.output_cap != output_cap or stale:
            if self._worker is not None:
                self._worker.close()
            self._worker = self._new_worker(self._jail(), output_cap)
        result = self._worker.run(code, timeout_s=timeout_s)
        if result.get("timed_out"):  # killed mid-action: a key or button may still be held down
            self._worker.run(_RELEASE_INPUT, timeout_s=10.0)
        return result

    def _stop_worker(self) -> None:
        if self._worker is not None:
            with contextlib.suppress(Exception):
                self._worker.close()
            self._worker = None

    def accessibility_tree(self, max_nodes: int = 5000, timeout_s: float = 10.0, *, max_text: int = 10_000) -> str:
        """The AT-SPI tree of every app on this desktop, as OSWorld's ``GET /accessibility`` XML.

        Runs :data:`agentrl.envs.osworld.a11y.DUMP_SCRIPT` in ``/usr/bin/python3 -I`` (Debian's ``gi``
        imports only there) in the desktop's sandbox with its env, killed after ``timeout_s``. At most ``max_nodes``
        nodes (the root then has ``truncated="true"``), 50 levels deep, 1024 children a node, and
        ``max_text`` characters of each node's text. Only apps started with :meth:`env` (GTK apps with
        ``GTK_MODULES=gail:atk-bridge`` and this session's bus) appear.

        Raises:
            SandboxUnavailable: no session bus / AT-SPI launcher / ``python3-gi`` here (the message
                names the apt packages), or the dump failed.
            TimeoutError: the dump ran past ``timeout_s``.
        """
        from agentrl.envs.osworld.a11y import DUMP_SCRIPT

        self._check_open()
        if self._state.bus_address is None:
            raise SandboxUnavailable(f"no AT-SPI bus on this desktop: {self.accessibility_note}")
        if not os.access(SYSTEM_PYTHON, os.X_OK):
            raise SandboxUnavailable(f"{SYSTEM_PYTHON} is missing; install with: {A11Y_APT_COMMAND}")
        env = self.env()
        env["NO_AT_BRIDGE"] = "1"  # the dumper itself must not appear in the tree
        env.pop("GTK_MODULES", None)
        argv = [SYSTEM_PYTHON, "-I", "-c", DUMP_SCRIPT, str(int(max_nodes)), "50", "1024", str(int(max_text))]
        # In the sandbox, beside the apps: the session bus there only lets its own user in.
        rc, out, err = self._jail().run_bytes(argv, env=env, cwd=self.home, timeout_s=timeout_s, cap=64 * 1024**2)
        if rc is None:
            raise TimeoutError(f"the accessibility tree dump ran past {timeout_s:g}s")
        message = err.decode(errors="replace").strip()[-500:]
        if rc == 3:
            raise SandboxUnavailable(f"{message}; install with: {A11Y_APT_COMMAND}")
        if rc != 0:
            raise SandboxUnavailable(f"the accessibility tree dump failed (exit {rc}): {message}")
        return out.decode("utf-8", errors="replace")

    def alive(self) -> bool:
        """Whether the display (Xvfb), the window manager (when one was started) and the sandbox still run."""
        if self._state.closed or self._state.xvfb is None or self._state.xvfb.poll() is not None:
            return False
        if self._state.jail is None or not self._state.jail.alive():
            return False
        return self._state.wm is None or self._state.wm.poll() is None

    def crashed_apps(self) -> list[str]:
        """Apps started by :meth:`launch` since the last reset that died from a signal (a crash, an OOM kill).

        An app that exits by itself (the agent closed its window) is not a crash.
        """
        return [
            Path(str(proc.args[0] if isinstance(proc.args, (list, tuple)) else proc.args)).name
            for proc in self._state.apps
            if proc.pid in self._state.launched and (rc := proc.poll()) is not None and rc < 0
        ]

    def reset(self) -> None:
        """End every process of the last episode and start the next one in a new sandbox (not Xvfb or the WM).

        The sandbox's PID namespace is killed: apps, commands, the session bus and whatever it started, AT-SPI,
        the ``ctrl+alt+t`` daemon, daemons that double-forked or called ``setsid``, all gone when this goes on,
        with the sandbox's ``/tmp``, ``/run``, ``/dev`` and System V IPC. Then, with nothing of it running, the
        host restores what the sandbox can write, following no link: HOME and the runtime folder (the bus's socket
        and ``XDG_RUNTIME_DIR``, emptied). The next sandbox, started ahead during the last episode on a package
        database made ready first, with nothing in it but its pyautogui worker, gets a new session bus, AT-SPI
        and ``ctrl+alt+t`` daemon; the worker releases keys left down and kills X clients whose windows outlived
        the last episode.
        """
        self._check_open()
        self._stop_worker()  # a fresh interpreter per episode: no monkeypatched pyautogui carries over
        self._end_jail()
        self._restore_home()
        self._restore_run()
        jail, slot, self._worker = self._take_spare()
        self._adopt_jail(jail, slot)
        self._start_daemons(warm_worker=True)
        self._dress_display()
        self._start_spare()

    def close(self) -> None:
        """End the sandbox (every app, command and daemon in it), the WM and Xvfb; remove the lock and temp dirs.

        Idempotent.
        """
        self._stop_worker()
        if self._worker_thread is not None:
            self._worker_thread.shutdown(wait=False, cancel_futures=True)
            self._worker_thread = None
        if self._mss is not None:
            with contextlib.suppress(Exception):
                self._mss.close()
            self._mss = None
        self._finalizer()  # the sandbox and the spare one, before the thread that started them ends
        if self._jail_thread is not None:
            self._jail_thread.shutdown(wait=False, cancel_futures=True)
            self._jail_thread = None

    def __enter__(self) -> DesktopSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"DesktopSession(display={self.display!r}, {self.width}x{self.height}, {state})"

    # ------------------------------------------------------------------ helpers
    def _dress_display(self, *, force: bool = False) -> None:
        """Dress the root window as OSWorld's VM's: its wallpaper painted, and the X resources of ``GET /terminal``.

        The resources let the server read an xterm (:mod:`agentrl.envs.osworld.runtime.terminal`). Only what changed
        since the last time (the agent painted another wallpaper, replaced the resources) is redone.
        """
        from agentrl.envs.osworld.runtime.terminal import xterm_resources
        from agentrl.envs.osworld.runtime.wallpaper import PAINT_SCRIPT

        xprop = shutil.which("xprop")
        root = ""
        if xprop is not None and not force:
            root = self._xprop_root(xprop, "_XROOTPMAP_ID", "RESOURCE_MANAGER")
        if xprop is not None and (force or self.xterm_print_dir not in root):
            subprocess.run(
                [xprop, "-display", self.display, "-root", "-f", "RESOURCE_MANAGER", "8s", "-set", "RESOURCE_MANAGER",
                 xterm_resources(self.xterm_print_dir)],
                capture_output=True, timeout=10, check=False,
            )  # fmt: skip
        if force or self._root_pixmap is None or self._root_pixmap not in root:
            self.run(["python3", "-c", PAINT_SCRIPT, str(self.vm_state.wallpaper)], timeout_s=30.0)
            painted = self._xprop_root(xprop, "_XROOTPMAP_ID") if xprop is not None else ""
            self._root_pixmap = painted.rsplit("#", 1)[-1].strip() if "#" in painted else None

    def _xprop_root(self, xprop: str, *names: str) -> str:
        try:
            argv = [xprop, "-display", self.display, "-root", *names]
            return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    def _check_open(self) -> None:
        if self._state.closed:
            raise SandboxUnavailable("this DesktopSession is closed; create a new one")

    def _restore_home(self) -> None:
        """Empty HOME and copy the template in, following no link (the sandbox writes HOME; its processes are gone)."""
        self.home.mkdir(parents=True, exist_ok=True)  # in the session's temp dir, which the sandbox cannot write
        fd = safe_fs.open_dir(self.home)
        try:
            safe_fs.empty_dir(fd)
            os.fchmod(fd, 0o755)
            if self.home_template is not None:
                safe_fs.copy_tree(self.home_template, fd)
            with contextlib.suppress(OSError):  # as on OSWorld's VM (its /desktop_path)
                os.close(safe_fs.ensure_dir(fd, "Desktop"))
        finally:
            os.close(fd)

    def _restore_run(self) -> None:
        """Empty the runtime folder (the bus socket, ``XDG_RUNTIME_DIR``, xterm's prints), following no link."""
        assert self._state.tmpdir is not None
        fd = safe_fs.open_dir(self._state.tmpdir / "run")
        try:
            safe_fs.empty_dir(fd)
            os.fchmod(fd, 0o700)
            os.close(safe_fs.ensure_dir(fd, "xdg", 0o700))
        finally:
            os.close(fd)
