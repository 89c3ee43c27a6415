"""Starting each episode of a desktop: its folders restored, a new sandbox, its daemons, the display dressed.

Each episode of a :class:`~.desktop.DesktopSession` (at start and at each reset) gets, in this order:

* HOME and the runtime folder restored by the host, following no link (:func:`restore_home`, :func:`restore_run`:
  :mod:`~agentrl.envs.osworld.runtime.safe_fs`), while no process of a sandbox runs;
* a new sandbox (:func:`new_sandbox`: a :class:`~agentrl.envs.osworld.runtime.jail.Jail` on a package database made
  ready first, with its pyautogui worker started), started ahead during the last episode (:func:`start_spare`,
  :func:`take_spare`, :func:`adopt_jail`); the last one is ended first, every process of it gone (:func:`end_jail`);
* its daemons, started side by side in it (:func:`start_daemons`): the session bus and the AT-SPI bus launcher on
  it (:func:`spawn_bus`, :func:`finish_accessibility`), the ``ctrl+alt+t`` daemon (:func:`spawn_hotkeys`,
  :func:`wait_hotkeys`) and, at a reset, the worker releasing keys and clearing the display
  (:func:`reset_display_code`);
* the root window dressed as OSWorld's VM's (:func:`dress_display`: the wallpaper painted, the xterm resources).

Like :mod:`~agentrl.envs.osworld.runtime.startup`, these are functions of the session
(:class:`~agentrl.envs.osworld.runtime.startup.Session`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from agentrl.core.errors import SandboxUnavailable
from agentrl.envs.osworld.runtime import programs, safe_fs
from agentrl.envs.osworld.runtime.jail import Jail, JailProcess
from agentrl.envs.osworld.runtime.startup import Session, read_capped

__all__ = [
    "A11Y_APT_COMMAND",
    "OUTPUT_CAP",
    "adopt_jail",
    "dress_display",
    "end_jail",
    "new_sandbox",
    "new_worker",
    "release_input_code",
    "reset_display_code",
    "restore_home",
    "restore_run",
    "start_daemons",
    "start_spare",
    "take_spare",
]

A11Y_APT_COMMAND = "apt-get install -y at-spi2-core dbus-x11 python3-gi gir1.2-atspi-2.0"
A11Y_LAUNCHERS = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher")
OUTPUT_CAP = 20_000
"""Characters kept of an action's output and of its error."""


def read_line(fd: int, timeout_s: float) -> bool:
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


def new_jail(session: Session, slot: int) -> Jail:
    """A new sandbox with nothing in it yet, on package database ``slot`` (restored first, as nothing binds it).

    Runs on the jail thread: bwrap's --die-with-parent follows the thread that started it.
    """
    from agentrl.core.deadlines import scaled_timeout
    from agentrl.envs.osworld.runtime.vm_state import HIDDEN_PYTHON_MODULES

    assert session._state.tmpdir is not None
    session.vm_state.restore(slot)
    tmpdir = session._state.tmpdir
    x_socket = Path(f"/tmp/.X11-unix/X{session._state.display}")
    return Jail(
        session.home,
        writable=[tmpdir / "run"],
        readable=[x_socket, tmpdir / "Xauthority", tmpdir / "bus", *session.vm_state.readable],
        mounts=session.vm_state.mounts(slot),
        hidden_modules=HIDDEN_PYTHON_MODULES,
        sandbox=session._sandbox,
        startup_timeout_s=scaled_timeout(20.0),  # a loaded machine starts bwrap and Python slowly
    )


def new_worker(session: Session, jail: Jail, output_cap: int = OUTPUT_CAP) -> Any:
    """A pyautogui worker for ``jail`` (not started)."""
    from agentrl.envs.osworld.runtime.executor import PyautoguiWorker

    assert session._state.tmpdir is not None
    return PyautoguiWorker(
        session.env(), session.home, xauthority=session._state.tmpdir / "Xauthority", output_cap=output_cap, jail=jail
    )


def new_sandbox(session: Session, slot: int) -> tuple[Jail, Any]:
    """A new sandbox on package database ``slot`` with its pyautogui worker started (``None`` if it failed)."""
    jail = new_jail(session, slot)
    worker = new_worker(session, jail)
    try:
        worker.start()
    except Exception:  # the first action starts one (and says why it cannot)
        worker.close()
        worker = None
    return jail, worker


def start_spare(session: Session) -> None:
    """Start the next episode's sandbox and its pyautogui worker now, so that the next reset need not wait.

    Nothing else runs in it until that reset, and nothing of this episode can reach it: another PID, IPC,
    network and mount namespace, another package database (its slot, made ready first, which no sandbox binds).
    What it shares with this episode is HOME and the runtime folder, which neither its supervisor nor the
    worker read: the worker's Python runs isolated (``-I``) on absolute import paths, and imports nothing
    from its working directory. Its daemons (the session bus, AT-SPI, the ``ctrl+alt+t`` daemon), which would
    read HOME, start at the reset, after HOME is restored.
    """
    from agentrl.envs.osworld.runtime.vm_state import SLOTS

    if session._jail_thread is not None and session._state.spare is None and not session._state.closed:
        session._spare_slot = (session.vm_state.slot + 1) % SLOTS  # the package database no sandbox binds now
        session._state.spare = session._jail_thread.submit(new_sandbox, session, session._spare_slot)


def take_spare(session: Session) -> tuple[Jail, int, Any]:
    """The sandbox started ahead, its slot and its worker; a new one now when there is none or it failed or died."""
    from agentrl.core.deadlines import scaled_timeout

    assert session._jail_thread is not None
    spare, session._state.spare = session._state.spare, None
    if spare is not None:
        made: tuple[Jail, Any] | None = None
        with contextlib.suppress(Exception):  # it did not start: the one started below says why
            made = spare.result(timeout=scaled_timeout(60.0))
        if made is not None and made[0].alive():
            return made[0], session._spare_slot, made[1]
        if made is not None:
            if made[1] is not None:
                made[1].close()
            made[0].close()
    return session._jail_thread.submit(new_jail, session, session._spare_slot).result(), session._spare_slot, None


def adopt_jail(session: Session, jail: Jail, slot: int) -> None:
    """Make ``jail`` (on package database ``slot``) the sandbox; a warning once when it is not isolated."""
    session._state.jail = jail
    session.vm_state.slot = slot
    session.pids.append(jail.host_pid or -1)
    if session._sandbox is None and not jail.sandboxed and not session._warned:
        import warnings

        session._warned = True  # the caller did not choose this: say what isolation is missing
        warnings.warn(f"AgentRL desktop: {jail.isolation_warning}", RuntimeWarning, stacklevel=3)


def end_jail(session: Session) -> None:
    """End the sandbox: its PID namespace is killed, and every process of it is gone when this returns."""
    jail, session._state.jail = session._state.jail, None
    session._state.bus = session._state.a11y = session._state.hotkeys = None
    session._state.apps.clear()
    session._state.launched.clear()
    if jail is None:
        return
    pid = jail.host_pid
    jail.close(grace_s=0.0)
    if pid in session.pids:
        session.pids.remove(pid)


def spawn_daemon(
    session: Session,
    argv: Sequence[str],
    log: Path,
    env: Mapping[str, str],
    *,
    pass_fds: Mapping[int, int] | None = None,
) -> JailProcess:
    """Start one of the episode's daemons in the sandbox, its output to ``log`` (a file of the host's)."""
    assert session._state.jail is not None and session._state.tmpdir is not None
    with log.open("wb") as out:
        return session._state.jail.spawn(
            argv, env=env, cwd=session._state.tmpdir / "run", stdout=out.fileno(), stderr=out.fileno(),
            pass_fds=pass_fds,
        )  # fmt: skip


def bus_env(session: Session) -> dict[str, str]:
    """The environment of the session bus and AT-SPI (and of the services the bus starts)."""
    assert session._state.tmpdir is not None and session._state.bus_address is not None
    # The bus's activated services inherit its env: give them the desktop (and no a11y bridge).
    # XDG_RUNTIME_DIR outside HOME: the launcher puts the AT-SPI bus socket there.
    env = {
        **session.env({"NO_AT_BRIDGE": "1"}),
        "DBUS_SESSION_BUS_ADDRESS": session._state.bus_address,
        "XDG_RUNTIME_DIR": str(session._state.tmpdir / "run" / "xdg"),
    }
    env.pop("GTK_MODULES", None)
    return env


def start_daemons(session: Session, *, warm_worker: bool) -> None:
    """Start the episode's daemons in the new sandbox side by side; return once each is ready (or has a note).

    The session bus (:data:`BUS_CONFIG`), then the AT-SPI bus launcher on it; the ``ctrl+alt+t`` daemon;
    with ``warm_worker``, the pyautogui worker, which releases any key or button an action killed at its
    deadline left down (it would type into this episode) and clears the display (:func:`reset_display_code`).
    """
    from agentrl.core.deadlines import scaled_timeout

    bus = spawn_bus(session)
    hotkeys = spawn_hotkeys(session)
    worker: Future[dict[str, Any]] | None = None
    pool = session._worker_thread
    if warm_worker and pool is not None:
        try:
            session._before_action = bytes(session._grab().raw)  # as run_pyautogui: for the settle after it
        except Exception:
            session._before_action = None
        clean = reset_display_code(session)
        worker = pool.submit(session._run_in_worker, clean, 10.0, OUTPUT_CAP)
    try:
        if bus is not None:
            finish_accessibility(session, *bus, timeout_s=scaled_timeout(session._startup_timeout_s))
        if hotkeys is not None:
            wait_hotkeys(session, *hotkeys, timeout_s=scaled_timeout(5.0))
    finally:
        if pool is not None and worker is not None and not worker.result().get("ok"):
            # The worker started ahead did not answer well (its X connection closed meanwhile): a new one.
            session._stop_worker()
            pool.submit(session._run_in_worker, clean, 10.0, OUTPUT_CAP).result()


def release_input_code() -> str:
    """What the worker runs after an action killed at its deadline: release the keys and buttons it left down."""
    return programs.source("display_reset") + "\nrelease_input()\n"


def reset_display_code(session: Session) -> str:
    """What the worker runs at reset: release keys and buttons, kill the X clients left behind, repaint the root.

    The functions of :mod:`~agentrl.envs.osworld.runtime.programs.display_reset`, then their calls.
    """
    pixmap = 0
    with contextlib.suppress(ValueError, TypeError):
        pixmap = int(session._root_pixmap or "0", 16)
    calls = f"release_input()\nclean_display({int(session._wm_window or 0)}, {pixmap})\n"
    return programs.source("display_reset") + "\n" + calls


def spawn_bus(session: Session) -> tuple[JailProcess, int, str] | None:
    """Start the session bus in the sandbox; ``(bus, read end of its address pipe, AT-SPI launcher)``.

    ``None``, with ``accessibility_note`` saying why, when there is no bus or launcher (or ``accessibility=False``).
    """
    assert session._state.tmpdir is not None
    session._state.bus_address = None
    if not session._accessibility:
        session.accessibility_note = "accessibility=False"
        return None
    dbus = shutil.which("dbus-daemon")
    launcher = next((p for p in A11Y_LAUNCHERS if os.access(p, os.X_OK)), None)
    if dbus is None or launcher is None:
        missing = "dbus-daemon" if dbus is None else "at-spi-bus-launcher"
        session.accessibility_note = f"{missing} is not installed; install with: {A11Y_APT_COMMAND}"
        return None
    tmpdir = session._state.tmpdir
    # The episode's processes, started from now on, get this address (None again if the bus fails).
    session._state.bus_address = f"unix:path={tmpdir / 'run' / 'bus'}"
    argv = [dbus, f"--config-file={tmpdir / 'bus' / 'session.conf'}", "--nofork", "--nopidfile",
            f"--address={session._state.bus_address}", "--print-address=3"]  # fmt: skip
    ready_r, ready_w = os.pipe()
    try:
        bus = spawn_daemon(session, argv, tmpdir / "dbus.log", bus_env(session), pass_fds={3: ready_w})
    except (OSError, SandboxUnavailable) as exc:
        os.close(ready_r)
        session.accessibility_note = f"dbus-daemon did not start: {exc}"
        session._state.bus_address = None
        return None
    finally:
        os.close(ready_w)
    session._state.bus = bus
    return bus, ready_r, launcher


def finish_accessibility(session: Session, bus: JailProcess, ready_r: int, launcher: str, *, timeout_s: float) -> None:
    """Wait for the bus to listen, start the AT-SPI bus launcher on it and wait for its AT-SPI bus."""
    assert session._state.tmpdir is not None
    tmpdir = session._state.tmpdir
    try:
        listening = read_line(ready_r, timeout_s)  # dbus-daemon prints its address once it listens
    finally:
        os.close(ready_r)
    if not listening:
        log = read_capped(tmpdir / "dbus.log", 2000).strip()[-300:]
        session.accessibility_note = f"dbus-daemon did not start: {log}"
        bus.kill_group()
        session._state.bus = None
        session._state.bus_address = None
        return
    try:
        a11y = spawn_daemon(session, [launcher, "--launch-immediately"], tmpdir / "a11y.log", bus_env(session))
    except (OSError, SandboxUnavailable) as exc:
        session.accessibility_note = f"at-spi-bus-launcher did not start: {exc}"
        return
    session._state.a11y = a11y
    # Ready once it has made its AT-SPI bus (it owns org.a11y.Bus by then): apps launched earlier
    # would have the bus activate a second launcher. Looked for without following a link.
    deadline = time.monotonic() + min(timeout_s, 5.0)
    run = safe_fs.open_dir(tmpdir / "run")
    try:
        while a11y.poll() is None and time.monotonic() < deadline:
            if any(name.startswith("bus") for name in safe_fs.list_names(run, "xdg", "at-spi") or ()):
                session.accessibility_note = ""
                return
            time.sleep(0.005)
    finally:
        os.close(run)
    if a11y.poll() is not None:
        session.accessibility_note = (
            "at-spi-bus-launcher exited: " + read_capped(tmpdir / "a11y.log", 2000).strip()[-300:]
        )


def spawn_hotkeys(session: Session) -> tuple[JailProcess, Path] | None:
    """Start the ``ctrl+alt+t`` daemon in the sandbox; ``None`` with ``hotkeys_note`` when it cannot."""
    from agentrl.envs.osworld.runtime.hotkeys import TERMINAL_ARGV, grabber_argv
    from agentrl.envs.osworld.runtime.jail import _interpreter

    assert session._state.tmpdir is not None
    session._state.hotkeys = None
    if shutil.which(TERMINAL_ARGV[0]) is None:
        session.hotkeys_note = f"{TERMINAL_ARGV[0]} is not installed; ctrl+alt+t opens nothing (apt-get install xterm)"
        return None
    log = session._state.tmpdir / "hotkeys.log"
    try:
        proc = spawn_daemon(session, grabber_argv(_interpreter()), log, session.env())
    except (OSError, SandboxUnavailable) as exc:
        session.hotkeys_note = f"the ctrl+alt+t daemon did not start: {exc}"
        return None
    return proc, log


def wait_hotkeys(session: Session, proc: JailProcess, log: Path, *, timeout_s: float) -> None:
    """Wait until the ``ctrl+alt+t`` daemon holds the key; a note when it exits."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        if b"ready" in log.read_bytes()[:4096]:  # the host's log file (the daemon's stdout), not the sandbox's
            session._state.hotkeys = proc
            session.hotkeys_note = ""
            return
        time.sleep(0.005)
    if proc.poll() is None:  # slow, not failed: keep it (it grabs the key as soon as it connects)
        session._state.hotkeys = proc
        return
    session.hotkeys_note = "the ctrl+alt+t daemon exited: " + read_capped(log, 2000).strip()[-300:]


def dress_display(session: Session, *, force: bool = False) -> None:
    """Dress the root window as OSWorld's VM's: its wallpaper painted, and the X resources of ``GET /terminal``.

    The resources let the server read an xterm (:mod:`agentrl.envs.osworld.runtime.terminal`). Only what changed
    since the last time (the agent painted another wallpaper, replaced the resources) is redone.
    """
    from agentrl.envs.osworld.runtime.terminal import xterm_resources

    xprop = shutil.which("xprop")
    root = ""
    if xprop is not None and not force:
        root = xprop_root(session, xprop, "_XROOTPMAP_ID", "RESOURCE_MANAGER")
    if xprop is not None and (force or session.xterm_print_dir not in root):
        subprocess.run(
            [xprop, "-display", session.display, "-root", "-f", "RESOURCE_MANAGER", "8s", "-set", "RESOURCE_MANAGER",
             xterm_resources(session.xterm_print_dir)],
            capture_output=True, timeout=10, check=False,
        )  # fmt: skip
    if force or session._root_pixmap is None or session._root_pixmap not in root:
        paint = programs.source("paint_wallpaper")  # as wallpaper.set_wallpaper paints
        session.run(["python3", "-c", paint, str(session.vm_state.wallpaper)], timeout_s=30.0)
        painted = xprop_root(session, xprop, "_XROOTPMAP_ID") if xprop is not None else ""
        session._root_pixmap = painted.rsplit("#", 1)[-1].strip() if "#" in painted else None


def xprop_root(session: Session, xprop: str, *names: str) -> str:
    """The root window's properties ``names`` as ``xprop`` prints them (``""`` when it cannot run)."""
    try:
        argv = [xprop, "-display", session.display, "-root", *names]
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def restore_home(session: Session) -> None:
    """Empty HOME and copy the template in, following no link (the sandbox writes HOME; its processes are gone)."""
    session.home.mkdir(parents=True, exist_ok=True)  # in the session's temp dir, which the sandbox cannot write
    fd = safe_fs.open_dir(session.home)
    try:
        safe_fs.empty_dir(fd)
        os.fchmod(fd, 0o755)
        if session.home_template is not None:
            safe_fs.copy_tree(session.home_template, fd)
        with contextlib.suppress(OSError):  # as on OSWorld's VM (its /desktop_path)
            os.close(safe_fs.ensure_dir(fd, "Desktop"))
    finally:
        os.close(fd)


def restore_run(session: Session) -> None:
    """Empty the runtime folder (the bus socket, ``XDG_RUNTIME_DIR``, xterm's prints), following no link."""
    assert session._state.tmpdir is not None
    fd = safe_fs.open_dir(session._state.tmpdir / "run")
    try:
        safe_fs.empty_dir(fd)
        os.fchmod(fd, 0o700)
        os.close(safe_fs.ensure_dir(fd, "xdg", 0o700))
    finally:
        os.close(fd)
