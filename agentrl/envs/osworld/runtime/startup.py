"""Starting a desktop session: Xvfb and the window manager on the host, and the state its finalizer ends.

A :class:`~.desktop.DesktopSession` starts once what lives as long as it does, on the host, with fixed arguments:
``Xvfb`` on a display number it owns (:func:`start_xvfb`: an exclusive ``flock`` on
``/tmp/agentrl-display-<n>.lock``, so concurrent processes never share a display, then a wait until the display
answers) and the window manager (:func:`start_window_manager`: ``xfwm4``, with a HOME, config and bus of its own,
never the sandbox's). Each episode's start (its sandbox, daemons and restored folders) is
:mod:`~agentrl.envs.osworld.runtime.episode`.

Start-up is a set of functions of the session they start (``session``): :class:`Session` is what they use of a
:class:`~.desktop.DesktopSession`, which keeps its processes in a :class:`SessionState` (``session._state``): what
its finalizer, :func:`cleanup`, ends, and which holds no reference to the session.
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
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentrl.core.errors import SandboxUnavailable
from agentrl.envs.osworld.runtime.jail import Jail, JailProcess
from agentrl.envs.osworld.runtime.vm_state import VMState

__all__ = [
    "APT_PACKAGES",
    "BUS_CONFIG",
    "PLACEHOLDER_XAUTH",
    "Session",
    "SessionState",
    "cleanup",
    "ensure_xvfb",
    "start_window_manager",
    "start_xvfb",
]

APT_PACKAGES = ("xvfb", "xterm", "xdotool", "x11-utils", "scrot", "xfwm4")
APT_COMMAND = "sudo apt-get install -y " + " ".join(APT_PACKAGES)
DISPLAY_START = 100
DISPLAY_TRIES = 200
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
PLACEHOLDER_XAUTH = _xauth_entry(256, b"agentrl-no-such-host", b"0", b"MIT-MAGIC-COOKIE-1", bytes(16))


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


def read_capped(path: Path, cap: int) -> str:
    """The first ``cap`` bytes of a log file of the host's, as text (``""`` when it cannot be read)."""
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
class SessionState:
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


class Session(Protocol):
    """What start-up reads and sets on the session it starts: the part of :class:`.desktop.DesktopSession` it uses.

    Its notes (``window_manager_note``, ``accessibility_note``, ``hotkeys_note``) say what could not start; the
    private attributes are the session's settings (``_sandbox``, ``_accessibility``, ``_startup_timeout_s``), its
    two threads and what start-up keeps between episodes.
    """

    width: int
    height: int
    home: Path
    home_template: Path | None
    pids: list[int]
    vm_state: VMState
    xterm_print_dir: str
    window_manager_name: str | None
    window_manager_note: str
    accessibility_note: str
    hotkeys_note: str
    _state: SessionState
    _sandbox: bool | None
    _accessibility: bool
    _startup_timeout_s: float
    _warned: bool  # the isolation warning was given
    _spare_slot: int  # the package database slot (vm_state.SLOTS) of the sandbox started ahead
    _root_pixmap: str | None  # the wallpaper pixmap painted last (its id on the root window)
    _wm_window: int | None  # the window manager's check window (its client's windows stay at reset)
    _jail_thread: ThreadPoolExecutor | None  # every sandbox is started from this thread (bwrap's --die-with-parent)
    _worker_thread: ThreadPoolExecutor | None  # the pyautogui worker's actions run on this thread
    _before_action: bytes | None  # the raw screen before the last action, for the settle after it

    @property
    def display(self) -> str:
        """The ``DISPLAY`` value, ``":<n>"``."""

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a process on the desktop."""

    def run(
        self, argv: Sequence[str], timeout_s: float = 120.0, *, input: bytes | None = None, cap: int = 1_000_000
    ) -> tuple[int | None, str, str]:
        """Run a command to completion in the sandbox."""

    def _grab(self) -> Any:
        """The screen, as mss grabs it."""

    def _run_in_worker(self, code: str, timeout_s: float, output_cap: int) -> dict[str, Any]:
        """Run pyautogui code in the session's worker (a new one when it has none)."""

    def _stop_worker(self) -> None:
        """Close the session's worker."""


def _release_display(state: SessionState) -> None:
    if state.lock_fd is not None:
        if state.lock_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(state.lock_path)
        with contextlib.suppress(OSError):
            os.close(state.lock_fd)
        state.lock_fd = None


def cleanup(state: SessionState) -> None:
    """End what the session started: the sandbox (and the one started ahead), the WM and Xvfb; free the display.

    The session's finalizer (it holds no reference to the session). Idempotent.
    """
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


def x_lock_pid(n: int) -> int | None:
    """The pid that display ``n``'s ``/tmp/.X<n>-lock`` names: the X server that holds ``:n``, or held it.

    ``None`` when there is no such file or it holds no pid (an X server writes its pid there as it starts).

    >>> x_lock_pid(65535) is None  # no X server has used this display
    True
    """
    try:
        return int(Path(f"/tmp/.X{n}-lock").read_text().strip())
    except (OSError, ValueError):
        return None


def _x_lock_held(n: int) -> bool:
    """Whether an X server (not ours) holds display ``n`` per its ``/tmp/.X<n>-lock``."""
    pid = x_lock_pid(n)
    if pid is None:
        return os.path.exists(f"/tmp/.X{n}-lock")  # being written, or unreadable: taken
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


def start_xvfb(session: Session, xvfb: str, timeout_s: float, tries: int = 2) -> None:
    """Start Xvfb on a free display and wait until it answers; up to ``tries`` slow starts (a fresh display each).

    ``timeout_s`` is the deadline on an idle machine; it is stretched with the load
    (:func:`~agentrl.core.deadlines.scaled_timeout`) at each try. The error names the step that failed.
    """
    from agentrl.core.deadlines import scaled_timeout

    assert session._state.tmpdir is not None
    log = session._state.tmpdir / "xvfb.log"
    errors: list[str] = []
    timeouts = 0
    for n in range(DISPLAY_START, DISPLAY_START + DISPLAY_TRIES):
        if _x_lock_held(n):
            continue
        lock = _try_lock(n)
        if lock is None:
            continue
        session._state.lock_fd, session._state.lock_path = lock
        session._state.display = n
        argv = [xvfb, f":{n}", "-screen", "0", f"{session.width}x{session.height}x24", "-nolisten", "tcp"]
        proc = spawn_host(session, argv, log)
        session._state.xvfb = proc
        failure = wait_display(session, n, proc, scaled_timeout(timeout_s))
        if failure is None:
            return
        errors.append(failure)
        timeouts += proc.poll() is None  # still running: it was slow, not broken
        _kill_procs([proc])
        session._state.xvfb = None
        _release_display(session._state)
        session._state.display = -1
        if timeouts >= tries or len(errors) >= max(tries, 3):  # an Xvfb that exits at once costs little
            break
    raise SandboxUnavailable("Xvfb did not start: " + " | ".join(errors or ["no free display number"]))


def spawn_host(
    session: Session,
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start one of the desktop's host daemons (Xvfb, the WM) in its own session, output to ``log``; pid tracked."""
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
    session.pids.append(proc.pid)
    return proc


def wait_display(session: Session, n: int, proc: subprocess.Popen[bytes], timeout_s: float) -> str | None:
    """Wait until Xvfb ``:n`` has its socket and answers ``xdpyinfo``; ``None``, or which step failed."""
    from agentrl.core.deadlines import load_note

    socket_path = f"/tmp/.X11-unix/X{n}"
    xdpyinfo = shutil.which("xdpyinfo")
    started = time.monotonic()
    deadline = started + timeout_s
    step = f"did not create its socket {socket_path}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            assert session._state.tmpdir is not None
            tail = read_capped(session._state.tmpdir / "xvfb.log", 2000).strip()[-300:]
            waited = time.monotonic() - started
            return f"Xvfb :{n} exited with status {proc.returncode} after {waited:.1f} s: {tail}"
        if os.path.exists(socket_path):
            if xdpyinfo is None:
                return None
            step = "did not answer xdpyinfo"
            # One xdpyinfo may take a while on a loaded machine: it gets what is left of the deadline.
            left = max(0.5, deadline - time.monotonic())
            try:
                result = subprocess.run([xdpyinfo, "-display", f":{n}"], capture_output=True, timeout=left, check=False)
            except subprocess.TimeoutExpired:
                break
            if result.returncode == 0:
                return None
        time.sleep(0.05)
    return f"Xvfb :{n} {step} within {timeout_s:.1f} s ({load_note()})"


def start_window_manager(session: Session) -> None:
    """Start ``xfwm4`` on the host with a HOME of its own (3 tries); without one, ``window_manager_note`` says why."""
    wm = shutil.which("xfwm4")
    if wm is None:
        session.window_manager_note = "xfwm4 is not installed; running without a window manager"
        return
    assert session._state.tmpdir is not None
    argv = [wm, "--compositor=off", "--sm-client-disable"]
    dbus = shutil.which("dbus-run-session")
    if dbus is not None:  # xfwm4 reads its settings through xfconf, which needs a session bus
        argv = [dbus, "--", *argv]
    log = session._state.tmpdir / "wm.log"
    # The WM runs on the host: its HOME, config, caches and bus are its own, never the sandbox's HOME (whose
    # ~/.themes, ~/.icons and ~/.local the agent writes), and outside the folders reset() empties.
    wm_env = {"NO_AT_BRIDGE": "1"}
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        path = session._state.tmpdir / "wm" / var.lower()
        path.mkdir(parents=True, exist_ok=True)
        wm_env[var] = str(path)
    from agentrl.core.deadlines import scaled_timeout

    failures: list[str] = []
    for attempt in range(3):  # a WM started right as Xvfb comes up occasionally fails to connect
        proc = spawn_host(session, argv, log, env=session.env(wm_env), cwd=session._state.tmpdir / "wm")
        session._state.wm = proc
        failure = wait_window_manager(session, proc, scaled_timeout(5.0))
        if failure is None:
            session.window_manager_name = "xfwm4"
            return
        failures.append(failure)
        _kill_procs([proc])
        session._state.wm = None
        time.sleep(0.2 * (attempt + 1))
    tail = read_capped(log, 2000).strip()[-300:]
    session.window_manager_note = f"xfwm4 did not start ({failures[-1]}); running without a window manager: {tail}"


def wait_window_manager(session: Session, proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> str | None:
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
                [xprop, "-display", session.display, "-root", "_NET_SUPPORTING_WM_CHECK"],
                capture_output=True,
                text=True,
                timeout=max(0.5, deadline - time.monotonic()),
                check=False,
            )
        except subprocess.TimeoutExpired:
            break
        if "window id" in result.stdout:
            with contextlib.suppress(ValueError):
                session._wm_window = int(result.stdout.rsplit("#", 1)[-1].split()[0], 16)
            return None
        time.sleep(0.05)
    if proc.poll() is None:
        return None
    return f"xfwm4 did not claim the screen within {timeout_s:.1f} s ({load_note()}) and exited"
