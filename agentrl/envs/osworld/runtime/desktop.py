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
* the session bus starts services only from the system's folders
  (:data:`~agentrl.envs.osworld.runtime.startup.BUS_SERVICE_DIRS`), never from a service file the sandbox wrote
  under HOME or ``XDG_RUNTIME_DIR``;
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

How these are started is in two modules of their own: :mod:`~agentrl.envs.osworld.runtime.startup` (Xvfb and the
window manager) and :mod:`~agentrl.envs.osworld.runtime.episode` (each episode's restored folders, sandbox, daemons
and dressed display); this module is the desktop's use.

Needs ``xvfb`` (and ``x11-utils``, ``xterm``, ``xdotool``, ``scrot``, ``xfwm4`` for the full desktop) from
apt, and ``pip install 'agentrl-gym[desktop]'`` (``mss``, ``pyautogui``). The accessibility tree needs
``apt-get install -y at-spi2-core dbus-x11 python3-gi gir1.2-atspi-2.0`` (without them the desktop
still works; :meth:`DesktopSession.accessibility_tree` raises SandboxUnavailable).
"""

from __future__ import annotations

import contextlib
import os
import shutil  # noqa: F401  # tests patch desktop.shutil.which: the shared module that start-up calls which on
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
from agentrl.envs.osworld.runtime import episode, programs, startup
from agentrl.envs.osworld.runtime.episode import A11Y_APT_COMMAND, OUTPUT_CAP
from agentrl.envs.osworld.runtime.jail import Jail, JailProcess
from agentrl.envs.osworld.runtime.settle import ANSWER_S, ProcessActivity, SettleResult
from agentrl.envs.osworld.runtime.settle import settle as settle_screen
from agentrl.envs.osworld.runtime.startup import APT_PACKAGES, ensure_xvfb

__all__ = ["APT_PACKAGES", "DesktopSession", "ensure_xvfb"]

SYSTEM_PYTHON = "/usr/bin/python3"
# Only these of the server's environment reach the desktop's processes (never the trainer's API keys).
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "XDG_SESSION_TYPE")


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
        self._state = startup.SessionState()
        self._finalizer = weakref.finalize(self, startup.cleanup, self._state)
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
        (self._state.tmpdir / "Xauthority").write_bytes(startup.PLACEHOLDER_XAUTH)
        (self._state.tmpdir / "bus").mkdir()  # read-only in the sandbox
        (self._state.tmpdir / "bus" / "session.conf").write_text(startup.BUS_CONFIG, encoding="utf-8")
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
            startup.start_xvfb(self, xvfb, startup_timeout_s)
            episode.restore_home(self)
            episode.restore_run(self)
            if window_manager:
                startup.start_window_manager(self)
            else:
                self.window_manager_note = "window_manager=False"
            jail, self._worker = self._jail_thread.submit(episode.new_sandbox, self, 0).result()
            episode.adopt_jail(self, jail, 0)
            episode.start_daemons(self, warm_worker=False)
            episode.dress_display(self, force=True)
            episode.start_spare(self)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ the sandbox
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
            self._worker = episode.new_worker(self, self._jail(), output_cap)
        result = self._worker.run(code, timeout_s=timeout_s)
        if result.get("timed_out"):  # killed mid-action: a key or button may still be held down
            self._worker.run(episode.release_input_code(), timeout_s=10.0)
        return result

    def _stop_worker(self) -> None:
        if self._worker is not None:
            with contextlib.suppress(Exception):
                self._worker.close()
            self._worker = None

    def accessibility_tree(self, max_nodes: int = 5000, timeout_s: float = 10.0, *, max_text: int = 10_000) -> str:
        """The AT-SPI tree of every app on this desktop, as OSWorld's ``GET /accessibility`` XML.

        Runs :mod:`~agentrl.envs.osworld.runtime.programs.a11y_dump` in ``/usr/bin/python3 -I`` (Debian's ``gi``
        imports only there) in the desktop's sandbox with its env, killed after ``timeout_s``. At most ``max_nodes``
        nodes (the root then has ``truncated="true"``), 50 levels deep, 1024 children a node, and
        ``max_text`` characters of each node's text. Only apps started with :meth:`env` (GTK apps with
        ``GTK_MODULES=gail:atk-bridge`` and this session's bus) appear.

        Raises:
            SandboxUnavailable: no session bus / AT-SPI launcher / ``python3-gi`` here (the message
                names the apt packages), or the dump failed.
            TimeoutError: the dump ran past ``timeout_s``.
        """
        self._check_open()
        if self._state.bus_address is None:
            raise SandboxUnavailable(f"no AT-SPI bus on this desktop: {self.accessibility_note}")
        if not os.access(SYSTEM_PYTHON, os.X_OK):
            raise SandboxUnavailable(f"{SYSTEM_PYTHON} is missing; install with: {A11Y_APT_COMMAND}")
        env = self.env()
        env["NO_AT_BRIDGE"] = "1"  # the dumper itself must not appear in the tree
        env.pop("GTK_MODULES", None)
        dump = programs.source("a11y_dump")
        argv = [SYSTEM_PYTHON, "-I", "-c", dump, str(int(max_nodes)), "50", "1024", str(int(max_text))]
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
        episode.end_jail(self)
        episode.restore_home(self)
        episode.restore_run(self)
        jail, slot, self._worker = episode.take_spare(self)
        episode.adopt_jail(self, jail, slot)
        episode.start_daemons(self, warm_worker=True)
        episode.dress_display(self)
        episode.start_spare(self)

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
    def _check_open(self) -> None:
        if self._state.closed:
            raise SandboxUnavailable("this DesktopSession is closed; create a new one")
