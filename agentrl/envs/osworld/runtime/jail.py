"""One sandbox for everything a desktop runs: apps, setup commands, getters, ``/execute`` and actions.

A :class:`Jail` is a small supervisor process (stdlib Python) that every command of one desktop is
started from. The desktop asks it over a private unix socket to start a process (argv, environment,
working directory and the process's standard streams, handed over as file descriptors), to signal
one, to list the processes it holds, and to kill them all. So the agent's actions, the task's setup
and the scorer's commands all run in the same place and see the same processes and files.

Isolation (``sandbox=True``, the default where ``bwrap`` is installed): the supervisor runs under
bubblewrap with every namespace unshared (its own PID, IPC, UTS and user namespaces, and no network),
every capability dropped, and a root built from the host's system folders read-only (``/usr``, ``/etc``
with its password hashes and host keys masked, ``/sys``), the Python it needs read-only, a private
``/tmp``, ``/var/tmp``, ``/run`` and ``/dev``, and only the desktop's HOME and its runtime folder writable;
the HOME is also seen at ``/home/user`` (OSWorld's VM HOME, which the commands in its task files name).
The host's own files (``/root``, ``/home``, checkouts, ``/var``) are not there at all.

:meth:`Jail.close` ends it all and returns once every process is gone: with no grace (what the desktop's
reset does) it SIGKILLs the PID namespace's init, and the kernel kills every process of the namespace,
nested namespaces included (a daemon that double-forked, called ``setsid``, was started by the session
bus or took over another process cannot outlive it), and reaps them before bwrap outside sees that init
exit. Everything else of the namespaces (the tmpfs folders, System V IPC, the abstract sockets) goes with
them. So a desktop runs each episode in a new jail (:class:`~agentrl.envs.osworld.runtime.desktop.DesktopSession`),
and a jail's processes are one episode's.

Without bubblewrap (``sandbox=False``; a desktop inside a container, whose container is then the
boundary) the supervisor is a plain child that makes itself a *child subreaper*: orphaned
descendants are re-parented to it, so :meth:`Jail.killall` and :meth:`Jail.close` still find daemons
that double-forked.

:meth:`Jail.killall` kills every descendant of the supervisor (first SIGTERM with a grace period, then
SIGKILL rounds until none is left) but the processes started with ``infra=True`` themselves; what those
started dies too. The desktop starts nothing with ``infra``: its reset ends the whole jail instead.

A ``sudo`` that asks for no password and gives nothing more than the sandbox has is first on the
``PATH`` of every process (OSWorld's task files call ``sudo``): it drops sudo's options and runs the
command as it is (``-S`` reads and discards the password line from standard input).

For ``apt``, ``apt-get`` and ``dpkg`` that ``sudo`` gives a root of a user namespace of their own
(``unshare --map-root-user``: still the sandbox's user outside it, so no more rights), as they refuse
to run otherwise; what they change is what the sandbox lets them write (a desktop binds a private
package database there, :mod:`~agentrl.envs.osworld.runtime.vm_state`).

``python`` and ``python3`` there too are the server's own interpreter, set up as a small virtual
environment (:func:`write_python_shim`) whose import path holds the server's ``site-packages``: so
``pyautogui`` (and ``Xlib``, ``PIL``) import in ``python -c ...``, as OSWorld's clients run their actions
through ``/execute``; the modules named in ``hidden_modules`` do not import from there. The system's
``/usr/bin/python3`` is untouched.

What the host writes into a jail's private folder (a host temp folder, which the sandbox sees read-only at
:data:`SHIM_DIR`) comes from files of the package: the supervisor is
:mod:`agentrl.envs.osworld.runtime.programs.supervisor`, the import hook of that ``python3``
:mod:`~agentrl.envs.osworld.runtime.programs.hide_modules`, and ``sudo``, its ``apt.conf`` and the ``python``
launcher are ``jail_files/sudo.sh``, ``jail_files/apt.conf`` and ``jail_files/python.sh`` (package data).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any

from agentrl.core.errors import SandboxUnavailable
from agentrl.envs.osworld.runtime import programs

__all__ = ["SUDO_SHIM", "Jail", "JailProcess", "ProcInfo", "bwrap_available", "site_dirs", "write_python_shim"]

MAX_FRAME = 64 * 1024 * 1024
FILE_SIZE_BYTES = 1024**3
"""The largest file a process of the desktop may write (``RLIMIT_FSIZE``)."""
TMP_SIZE_BYTES = 1024**3
"""The size of the jail's private ``/tmp`` (a tmpfs, so it counts against memory)."""
OUTPUT_CAP = 1_000_000
OSWORLD_HOME = "/home/user"
"""OSWorld's VM HOME, which its task files name in commands; inside the jail it is the desktop's HOME too."""
# Host files a root-run jail could read by owner permission, masked with an empty file.
_MASKED = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
_SYSTEM_DIRS = ("/usr", "/etc", "/sys", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_READ_ONLY = ("/var/lib/dbus", "/var/cache/fontconfig", "/var/lib/fontconfig", "/usr/share/fonts")
SHIM_DIR = "/tmp/.agentrl-bin"


def _jail_file(name: str) -> str:
    """The text of ``jail_files/<name>`` (package data): what the host writes into a jail's private folder."""
    return (resources.files("agentrl.envs.osworld.runtime") / "jail_files" / name).read_text(encoding="utf-8")


SUDO_SHIM = _jail_file("sudo.sh")
"""The jail's ``sudo`` (``jail_files/sudo.sh``): no password, and nothing more than the sandbox already has."""
APT_CONF = _jail_file("apt.conf")
"""``APT_CONFIG`` of the package tools under that ``sudo`` (``jail_files/apt.conf``)."""
_PYTHON_SHIM = _jail_file("python.sh")


def bwrap_available() -> str | None:
    """Path of ``bwrap`` if it is installed, else ``None``."""
    import shutil

    return shutil.which("bwrap")


def _interpreter() -> str:
    """A real Python binary (not a shell shim), to run the supervisor and the pyautogui worker."""
    exe = sys.executable
    try:
        with open(exe, "rb") as handle:
            is_script = handle.read(2) == b"#!"
    except OSError:
        is_script = True
    if is_script:
        exe = getattr(sys, "_base_executable", "") or exe
    return os.path.realpath(exe)


PACKAGE_DIR = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
"""The agentrl package's folder: hidden inside the jail (see :func:`hidden_dirs`)."""


def hidden_dirs(bound: Sequence[str], package_dir: str | None = None) -> list[str]:
    """Folders to cover with an empty tmpfs inside the jail: the agentrl package, where a bound folder holds it.

    A wheel install puts agentrl inside ``site-packages``, which the jail binds (its Python imports pyautogui
    from there); the package carries the tasks' files and their oracles, which an agent must not read. Nothing
    in the jail imports agentrl (its programs are handed over as text: :mod:`.programs`).

    >>> hidden_dirs(["/venv/lib/python3.11/site-packages"], "/venv/lib/python3.11/site-packages/agentrl")
    ['/venv/lib/python3.11/site-packages/agentrl']
    >>> hidden_dirs(["/venv/lib/python3.11/site-packages"], "/src/agentrl")  # an editable checkout is not bound
    []
    """
    package_dir = PACKAGE_DIR if package_dir is None else package_dir
    return [package_dir] if any(package_dir.startswith(folder.rstrip(os.sep) + os.sep) for folder in bound) else []


def python_dirs() -> list[str]:
    """The folders this Python needs inside the sandbox: its prefixes and its import path's packages."""
    dirs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
    dirs.add(os.path.dirname(os.path.dirname(_interpreter())))
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry) and os.path.isdir(entry):
            dirs.add(os.path.realpath(entry))
    if os.path.realpath(sys.executable) != sys.executable:  # a venv's bin/python is a link: keep its folder
        dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(sys.executable))))
    out: list[str] = []
    for path in sorted(dirs, key=len):
        if path in ("/", "/usr", "/usr/local") or path.startswith("/usr/"):
            continue  # already there with /usr
        if not any(path == kept or path.startswith(kept + os.sep) for kept in out):
            out.append(path)
    return out


@dataclass(frozen=True)
class ProcInfo:
    """A process inside the jail: its pid and parent's pid there, state letter and command line."""

    pid: int
    ppid: int
    state: str
    argv: tuple[str, ...]


class JailProcess:
    """A process started in a :class:`Jail`; the subset of ``subprocess.Popen`` the desktop uses.

    ``pid`` is the process's id inside the jail (what the process itself and ``ps`` there see).
    """

    def __init__(self, jail: Jail, pid: int, args: Sequence[str]) -> None:
        self._jail = weakref.ref(jail)
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None
        self._done = threading.Event()

    def _exited(self, rc: int) -> None:
        self.returncode = rc
        self._done.set()

    def poll(self) -> int | None:
        """The exit code (negative: the signal), or ``None`` while it runs."""
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit; raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int, *, group: bool = False) -> None:
        """Signal the process (its whole process group with ``group``); a no-op once it exited."""
        jail = self._jail()
        if jail is not None and self.returncode is None:
            jail.kill(self.pid, sig, group=group)

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the process's group (each jailed process leads its own session and group)."""
        self.send_signal(sig, group=True)

    def __repr__(self) -> str:
        return f"JailProcess(pid={self.pid}, args={self.args[:3]!r}, returncode={self.returncode})"


@dataclass
class _State:
    """What the finalizer needs; holds no reference to the jail."""

    proc: subprocess.Popen[bytes] | None = None
    sock: socket.socket | None = None
    reader: threading.Thread | None = None
    procs: dict[int, JailProcess] = field(default_factory=dict)
    exits: dict[int, int] = field(default_factory=dict)  # exits that came before the spawn reply was handled
    replies: dict[int, dict[str, Any]] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)
    dead: bool = False
    supervisor_pid: int = -1
    sandboxed: bool = False


def _children(pid: int) -> list[int]:
    """The host pids of ``pid``'s children (``/proc/<pid>/task/<tid>/children``)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/task/{tid}/children") as handle:
            out += [int(child) for child in handle.read().split()]
    return out


def _shutdown(state: _State, grace_s: float = 0.2) -> None:
    """End the jail and every process in it; returns once they are all gone.

    Sandboxed, with no grace: the PID namespace's init (bwrap's child, pid 1 there) gets SIGKILL, and the kernel
    kills every process of the namespace (nested namespaces included) and reaps them before that init is gone;
    bwrap outside waits for it, so its exit means the namespace is empty. With a grace (or unsandboxed, where
    there is no namespace), the supervisor first sends SIGTERM and kills its descendants itself.
    """
    sock, proc = state.sock, state.proc
    if sock is not None and (grace_s > 0 or not state.sandboxed):
        with contextlib.suppress(OSError):
            data = json.dumps({"op": "shutdown", "grace": grace_s}).encode()
            sock.sendall(struct.pack(">I", len(data)) + data)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace_s + 2.0)
    if proc is not None:
        if state.sandboxed and proc.poll() is None:
            for init in _children(proc.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(init, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # bwrap, its init and the supervisor: the namespace dies with its init
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
    state.sock = None
    _mark_dead(state)


def _mark_dead(state: _State) -> None:
    with state.cond:
        state.dead = True
        for proc in state.procs.values():
            if proc.returncode is None:
                proc._exited(-signal.SIGKILL)
        state.procs.clear()
        state.cond.notify_all()


def _read_loop(state: _State, sock: socket.socket) -> None:
    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    try:
        while True:
            (size,) = struct.unpack(">I", exact(4))
            if size > MAX_FRAME:
                raise EOFError
            msg = json.loads(exact(size))
            with state.cond:
                if msg.get("event") == "exit":
                    pid, rc = int(msg["pid"]), int(msg["rc"])
                    proc = state.procs.pop(pid, None)
                    if proc is not None:
                        proc._exited(rc)
                    else:
                        state.exits[pid] = rc
                elif msg.get("event") == "ready":
                    state.supervisor_pid = int(msg["pid"])
                    state.replies[-1] = msg
                else:
                    state.replies[int(msg.get("id", -2))] = msg
                state.cond.notify_all()
    except (EOFError, OSError, ValueError):
        pass
    _mark_dead(state)


def site_dirs() -> list[str]:
    """The ``site-packages``/``dist-packages`` folders on this Python's import path (where pyautogui lives)."""
    out: list[str] = []
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry) and os.path.isdir(entry):
            real = os.path.realpath(entry)
            if real not in out:
                out.append(real)
    return out


def write_python_shim(folder: str | os.PathLike[str], *, hidden_modules: Sequence[str] = ()) -> list[str]:
    """Put ``python`` and ``python3`` in ``folder``: this Python, with :func:`site_dirs` importable.

    ``folder/venv`` is a virtual environment of this interpreter (``pyvenv.cfg``, ``bin/python3`` a link
    to the real binary) whose ``site-packages`` has a ``.pth`` file adding each site folder (their own
    ``.pth`` files processed); ``folder/python`` and ``folder/python3`` are scripts that run it. Nothing
    leaks into the environment of the processes it starts (no ``PYTHONPATH``). Returns the names written.

    ``hidden_modules``: top-level modules that must not import from those site folders (a module found
    elsewhere on ``sys.path`` still imports): the desktop's ``python3`` looks like OSWorld's VM's,
    not like the server's environment.

    >>> import subprocess, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     names = write_python_shim(tmp)
    ...     code = "import sys; print(sys.prefix)"
    ...     out = subprocess.run([tmp + "/python", "-c", code], capture_output=True, text=True).stdout
    >>> (names, out.strip() == tmp + "/venv")
    (['python', 'python3', 'venv'], True)
    """
    root = Path(folder)
    venv = root / "venv"
    exe = _interpreter()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (venv / "bin").mkdir(exist_ok=True)
    (venv / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(exe)}\ninclude-system-site-packages = false\nversion = {version}\n",
        encoding="utf-8",
    )
    lines = [f"import site; site.addsitedir({path!r})" for path in site_dirs()]
    (site / "agentrl-desktop.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    hider = site / "zz-agentrl-hidden.pth"
    if hidden_modules:  # after agentrl-desktop.pth (.pth files run in name order); programs/hide_modules.py
        (site / "_agentrl_hidden_modules.py").write_text(programs.source("hide_modules"), encoding="utf-8")
        call = f"_agentrl_hidden_modules.install({sorted(set(hidden_modules))!r}, {site_dirs()!r})"
        hider.write_text(f"import _agentrl_hidden_modules; {call}\n", encoding="utf-8")
    elif hider.exists():
        hider.unlink()
    link = venv / "bin" / "python3"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(exe)
    for name in ("python", "python3"):
        (root / name).write_text(_PYTHON_SHIM, encoding="utf-8")
        (root / name).chmod(0o755)
    for path in (venv, *venv.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    return ["python", "python3", "venv"]


class Jail:
    """A supervisor that starts, lists and kills every process of one desktop, in one sandbox.

    Args:
        home: the desktop's HOME, the one writable folder besides ``writable`` and a private ``/tmp``.
        writable: more host folders bound read-write at the same path (the desktop's bus sockets).
        readable: host files or folders bound read-only at the same path (the X socket, Xauthority).
        mounts: ``(host path, path in the sandbox, writable)`` binds elsewhere (a private package
            database at ``/var/lib/dpkg``); only under bubblewrap (unsandboxed they are left out).
        hidden_modules: modules the sandbox's ``python3`` does not import from the server's packages
            (:func:`write_python_shim`).
        sandbox: ``True`` requires bubblewrap; ``False`` runs the supervisor as a plain child (inside a
            container, the container is the boundary); ``None`` uses bubblewrap where installed.
        startup_timeout_s: how long the supervisor may take to answer.

    Attributes: ``sandboxed``, ``isolation_warning`` (``""`` when sandboxed), ``host_pid`` (the host pid
    of the outermost process: bwrap, or the supervisor when unsandboxed).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as home, Jail(home) as jail:
    ...     rc, out, err = jail.run(["sh", "-c", "echo hi; sudo -S id -u >/dev/null </dev/null && echo root-ok"])
    >>> (rc, out.split())
    (0, ['hi', 'root-ok'])
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        *,
        writable: Sequence[str | os.PathLike[str]] = (),
        readable: Sequence[str | os.PathLike[str]] = (),
        mounts: Sequence[tuple[str | os.PathLike[str], str, bool]] = (),
        hidden_modules: Sequence[str] = (),
        sandbox: bool | None = None,
        startup_timeout_s: float = 20.0,
    ) -> None:
        self.home = Path(home)
        self.writable = [Path(p) for p in writable]
        self.readable = [Path(p) for p in readable]
        self.mounts = [(Path(src), str(dest), bool(rw)) for src, dest, rw in mounts]
        self.startup_timeout_s = float(startup_timeout_s)
        bwrap = bwrap_available()
        if sandbox is True and bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not installed; install with: sudo apt-get install -y bubblewrap"
            )
        self._bwrap = bwrap if sandbox is not False else None
        self.sandboxed = self._bwrap is not None
        self.isolation_warning = (
            ""
            if self.sandboxed
            else "isolation is off: the desktop's commands run as plain child processes"
            + (" (install bubblewrap to sandbox them)" if bwrap is None else "")
        )
        self._shim = Path(tempfile.mkdtemp(prefix="agentrl-jail-bin-"))
        (self._shim / "sudo").write_text(SUDO_SHIM, encoding="utf-8")
        (self._shim / "sudo").chmod(0o755)
        (self._shim / "apt.conf").write_text(APT_CONF, encoding="utf-8")
        # programs/supervisor.py, run from this folder, which the sandbox sees read-only (see _argv)
        (self._shim / "supervisor.py").write_text(programs.source("supervisor"), encoding="utf-8")
        # python/python3 with pyautogui importable, first on every PATH
        write_python_shim(self._shim, hidden_modules=hidden_modules)
        self._shim.chmod(0o755)
        self._shim_path = SHIM_DIR if self.sandboxed else str(self._shim)
        self._send_lock = threading.Lock()
        self._next_id = 0
        self._state = _State()
        self._finalizer = weakref.finalize(self, _finalize, self._state, self._shim)
        try:
            self._start()
        except SandboxUnavailable as exc:
            if sandbox is not None or self._bwrap is None:
                raise
            # bwrap is installed but cannot run here (no user namespaces, as in an unprivileged container):
            # run unsandboxed, and say so, rather than have no desktop at all.
            self._bwrap, self.sandboxed, self._shim_path = None, False, str(self._shim)
            self.isolation_warning = (
                f"isolation is off: bubblewrap could not start here ({exc}); "
                "the desktop's commands run as plain child processes"
            )
            self._state = _State()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _finalize, self._state, self._shim)
            self._start()

    # ------------------------------------------------------------------ start and stop
    def _argv(self, fd: int) -> list[str]:
        script = (SHIM_DIR if self._bwrap is not None else str(self._shim)) + "/supervisor.py"
        py = [_interpreter(), "-I", script, str(fd), str(FILE_SIZE_BYTES)]
        if self._bwrap is None:
            return py
        # uid 1000 inside (OSWorld's "user"), mapped to ours outside: apps that act differently as root
        # (xterm's pty chown, Chromium's sandbox) see an ordinary user, and nothing gains a capability.
        argv = [self._bwrap, "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000"]
        argv += ["--die-with-parent", "--cap-drop", "ALL"]
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        for path in _SYSTEM_READ_ONLY:
            if os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        for path in _MASKED:
            if os.path.exists(path):
                argv += ["--ro-bind", "/dev/null", path]
        for key in Path("/etc/ssh").glob("ssh_host_*_key") if os.access("/etc/ssh", os.R_OK) else []:
            argv += ["--ro-bind", "/dev/null", str(key)]
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_SIZE_BYTES), "--tmpfs", "/tmp"]
        argv += ["--size", str(TMP_SIZE_BYTES // 4), "--tmpfs", "/var/tmp"]
        argv += ["--size", str(64 * 1024**2), "--tmpfs", "/run"]
        bound = python_dirs()
        for folder in bound:
            argv += ["--ro-bind", folder, folder]
        for readable in self.readable:
            if readable.exists():
                argv += ["--ro-bind", str(readable), str(readable)]
                bound.append(os.path.realpath(readable))
        for hidden in hidden_dirs(bound):  # the tasks and their oracles ship in the package
            argv += ["--tmpfs", hidden]
        for writable in [self.home, *self.writable]:
            argv += ["--bind", str(writable), str(writable)]
        for src, dest, rw in self.mounts:
            if src.exists():
                argv += ["--bind" if rw else "--ro-bind", str(src), dest]
        if str(self.home) != OSWORLD_HOME:  # OSWorld's commands name its VM's HOME: the same folder there
            argv += ["--bind", str(self.home), OSWORLD_HOME]
        argv += ["--ro-bind", str(self._shim), SHIM_DIR, "--remount-ro", "/", "--chdir", str(self.home), "--"]
        return argv + py

    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        log = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(
                self._argv(child.fileno()),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(child.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            parent.close()
            child.close()
            log.close()
            raise SandboxUnavailable(f"could not start the desktop's sandbox: {exc}") from exc
        finally:
            with contextlib.suppress(OSError):
                child.close()
        self._state.proc, self._state.sock = proc, parent
        self._state.sandboxed = self._bwrap is not None
        reader = threading.Thread(target=_read_loop, args=(self._state, parent), name="agentrl-jail", daemon=True)
        self._state.reader = reader
        reader.start()
        with self._state.cond:
            self._state.cond.wait_for(
                lambda: -1 in self._state.replies or self._state.dead, timeout=self.startup_timeout_s
            )
            ready = self._state.replies.pop(-1, None)
        if ready is None:
            _shutdown(self._state)
            log.seek(0)
            message = log.read(4000).decode(errors="replace").strip()[-1500:]
            raise SandboxUnavailable(f"the desktop's sandbox did not start: {message or 'no answer'}")
        log.close()

    @property
    def host_pid(self) -> int | None:
        """The host pid of bwrap (or of the supervisor when unsandboxed); ``None`` once closed."""
        proc = self._state.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def alive(self) -> bool:
        """Whether the supervisor still answers (it died with its sandbox otherwise)."""
        return not self._state.dead and self.host_pid is not None

    def close(self, grace_s: float = 0.2) -> None:
        """Kill every process of the jail, then the jail; returns once they are all gone. Idempotent.

        ``grace_s``: how long the processes have after SIGTERM before SIGKILL. With ``0`` a sandboxed jail's
        PID namespace is killed at once (the desktop's reset).
        """
        if self._finalizer.alive:
            self._finalizer.detach()
            _shutdown(self._state, grace_s)
            import shutil

            shutil.rmtree(self._shim, ignore_errors=True)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return not self._finalizer.alive

    # ------------------------------------------------------------------ requests
    def _request(self, msg: dict[str, Any], fds: Sequence[int] = (), timeout_s: float = 30.0) -> dict[str, Any]:
        if self.closed or self._state.dead or self._state.sock is None:
            raise SandboxUnavailable("the desktop's sandbox is gone; reset the desktop")
        with self._send_lock:
            self._next_id += 1
            ident = self._next_id
            data = json.dumps({**msg, "id": ident}).encode()
            frame = struct.pack(">I", len(data))
            try:
                if fds:
                    self._state.sock.sendmsg(
                        [frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
                    )
                else:
                    self._state.sock.sendall(frame)
                self._state.sock.sendall(data)
            except OSError as exc:
                raise SandboxUnavailable(f"the desktop's sandbox is gone: {exc}") from exc
        with self._state.cond:
            self._state.cond.wait_for(lambda: ident in self._state.replies or self._state.dead, timeout=timeout_s)
            reply = self._state.replies.pop(ident, None)
        if reply is None:
            died = " (it died)" if self._state.dead else ""
            raise SandboxUnavailable(f"the desktop's sandbox did not answer{died}")
        return reply

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
        pass_fds: Mapping[int, int] | None = None,
        infra: bool = False,
        file_op: Sequence[str] | None = None,
    ) -> JailProcess:
        """Start ``argv`` in the jail, in its own session; returns at once.

        ``stdin``/``stdout``/``stderr`` are host file descriptors (``None``: ``/dev/null``) and
        ``pass_fds`` maps a descriptor number in the child to a host descriptor; the caller keeps and
        closes its own. ``env`` is the whole environment (the jail's ``sudo`` goes first on ``PATH``).
        ``infra`` processes themselves survive :meth:`killall` (not what they start); :meth:`close` ends them.

        Raises:
            FileNotFoundError: ``argv[0]`` cannot be executed in the jail.
            SandboxUnavailable: the jail is gone.
        """
        if not argv and file_op is None:
            raise ValueError("argv must not be empty")
        fds: list[int] = []
        stdio: list[int | None] = []
        for fd in (stdin, stdout, stderr):
            if fd is None:
                stdio.append(None)
            else:
                stdio.append(len(fds))
                fds.append(fd)
        extra = []
        for target, fd in (pass_fds or {}).items():
            extra.append([len(fds), int(target)])
            fds.append(fd)
        environ = dict(env if env is not None else {"PATH": "/usr/bin:/bin"})
        environ["PATH"] = self._shim_path + os.pathsep + environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        msg: dict[str, Any] = {
            "op": "spawn",
            "argv": [str(a) for a in argv],
            "env": environ,
            "cwd": str(cwd if cwd is not None else self.home),
            "stdio": stdio,
            "pass_fds": extra,
            "infra": bool(infra),
        }
        if file_op is not None:
            msg["file_op"] = [str(part) for part in file_op]
        # Register before the reply can be read, so an early exit event finds its process.
        reply = self._request(msg, fds)
        if "error" in reply:
            raise FileNotFoundError(f"cannot start {argv[0] if argv else 'file operation'}: {reply['error']}")
        proc = JailProcess(self, int(reply["pid"]), argv)
        with self._state.cond:
            early = self._state.exits.pop(proc.pid, None)
            if early is not None:
                proc._exited(early)
            elif self._state.dead:
                proc._exited(-signal.SIGKILL)
            else:
                self._state.procs[proc.pid] = proc
        return proc

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_s: float = 120.0,
        input: bytes | None = None,
        cap: int = OUTPUT_CAP,
        file_op: Sequence[str] | None = None,
    ) -> tuple[int | None, str, str]:
        """Run ``argv`` to completion: ``(exit code, or None past the deadline; stdout; stderr)``.

        At the deadline the whole process group is killed. Output is capped at ``cap`` bytes each.
        A command that cannot start gives exit code 127 and the reason in stderr.
        """
        rc, out, err = self.run_bytes(
            argv, env=env, cwd=cwd, timeout_s=timeout_s, input=input, cap=cap, file_op=file_op
        )
        return rc, out.decode(errors="replace"), err.decode(errors="replace")

    def run_bytes(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_s: float = 120.0,
        input: bytes | None = None,
        cap: int = OUTPUT_CAP,
        file_op: Sequence[str] | None = None,
    ) -> tuple[int | None, bytes, bytes]:
        """:meth:`run` with the output as bytes."""
        with contextlib.ExitStack() as stack:
            out_file: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())
            err_file: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())
            in_r: int | None = None
            writer: threading.Thread | None = None
            if input is not None:
                in_r, in_w = os.pipe()
                # Closed here once, whichever way this returns. Not `callback(_close_quietly, in_r)`: that keeps
                # the number after the close below, and a second close of a number another thread has reused
                # since closes that thread's file (a desktop's HTTP socket, a file being uploaded).
                def close_read_end() -> None:
                    if in_r is not None:
                        _close_quietly(in_r)

                stack.callback(close_read_end)
                payload = bytes(input)

                def feed() -> None:
                    with contextlib.suppress(OSError), open(in_w, "wb", closefd=True) as handle:
                        handle.write(payload)

                writer = threading.Thread(target=feed, daemon=True)
            try:
                proc = self.spawn(
                    argv,
                    env=env,
                    cwd=cwd,
                    stdin=in_r,
                    stdout=out_file.fileno(),
                    stderr=err_file.fileno(),
                    file_op=file_op,
                )
            except BaseException as exc:  # the writer never started: its end of the pipe is ours to close
                if input is not None:
                    _close_quietly(in_w)
                if isinstance(exc, FileNotFoundError):
                    return 127, b"", str(exc).encode()
                raise
            if writer is not None:
                writer.start()
            if in_r is not None:
                _close_quietly(in_r)
                in_r = None
            rc: int | None
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill_group(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
                rc = None
            if writer is not None:
                writer.join(timeout=1)
            out = _read_capped(out_file, cap)
            err = _read_capped(err_file, cap)
            if rc is None:
                err += f"\ntimed out after {timeout_s:g}s".encode()
            return rc, out, err

    def kill(self, pid: int, sig: int = signal.SIGKILL, *, group: bool = False) -> None:
        """Send ``sig`` to jail pid ``pid`` (its process group with ``group``); gone processes are ignored."""
        with contextlib.suppress(SandboxUnavailable):
            self._request({"op": "kill", "pid": int(pid), "sig": int(sig), "group": bool(group)})

    def killall(self, grace_s: float = 1.0) -> list[int]:
        """Kill every process but the infra ones themselves (SIGTERM, ``grace_s``, then SIGKILL); the pids left."""
        reply = self._request({"op": "killall", "grace": float(grace_s)}, timeout_s=grace_s + 30.0)
        return [int(pid) for pid in reply.get("left", [])]

    def clean_scratch(self) -> None:
        """Empty the sandbox's private ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` (the bound paths stay).

        A no-op unsandboxed: there ``/tmp`` is the container's own, shared with the server. (The desktop does not
        need it: each of its episodes has a new jail, whose private folders are new.)
        """
        if not self.sandboxed:
            return
        keep = [str(p) for p in (self.home, *self.writable, *self.readable)] + [SHIM_DIR, *python_dirs()]
        roots = ["/tmp", "/var/tmp", "/run", "/dev/shm"]
        self._request({"op": "clean", "roots": roots, "keep": keep}, timeout_s=60.0)

    def ps(self) -> list[ProcInfo]:
        """Every process the jail sees (inside the sandbox: only its own), the supervisor included."""
        reply = self._request({"op": "ps"})
        return [ProcInfo(int(p[0]), int(p[1]), str(p[2]), tuple(p[3])) for p in reply.get("procs", [])]

    def descends_from(self, pid: int, ancestor: int) -> bool:
        """Whether jail pid ``pid`` is ``ancestor`` or one of its descendants (in the live process tree)."""
        parents = {p.pid: p.ppid for p in self.ps()}
        for _ in range(64):
            if pid == ancestor:
                return True
            parent = parents.get(pid)
            if parent is None or parent <= 1:
                return False
            pid = parent
        return False

    def __enter__(self) -> Jail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "bwrap" if self.sandboxed else "unsandboxed"
        return f"Jail(home={str(self.home)!r}, {mode}, host_pid={self.host_pid})"


def _finalize(state: _State, shim: Path) -> None:
    import shutil

    _shutdown(state)
    shutil.rmtree(shim, ignore_errors=True)


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _read_capped(handle: IO[bytes], cap: int) -> bytes:
    handle.seek(0)
    data = handle.read(cap + 1)
    if len(data) > cap:
        return data[:cap] + f"\n... [output truncated at {cap} bytes]".encode()
    return data
