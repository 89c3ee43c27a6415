"""A pool of persistent, pre-forked Python workers for untrusted (LLM-written) code.

Starting an isolated interpreter costs 50-100 ms (and about a second once numpy and sympy are
imported); a warm worker answers a trivial snippet over a pipe in well under a millisecond. So a
:class:`PythonSandbox` keeps one *active* worker plus ``pool_size`` warm spares: ``reset()`` and
the replacement of a killed worker just swap in a spare while another one warms up in the
background. The pool and the request protocol are :mod:`agentrl.sandboxes.pool`, shared with the
Docker tier; this module starts the workers and is their transport (a pair of pipes).

Isolation, strongest available first:

* ``bwrap`` (bubblewrap): fresh pid/net/ipc/uts namespaces, a minimal read-only root (``/usr``,
  the Python installation and its site-packages only), private size-capped ``/tmp`` and
  ``/scratch`` tmpfs, and rlimits. Running as root, the worker then drops to a private uid so that
  ``RLIMIT_NPROC`` is enforced (the kernel never enforces it for uid 0).
* ``process``: a plain subprocess with rlimits and a clean environment. Running as root it also
  gets a private network namespace, a private mount namespace in which ``/root``, ``/home`` and
  the temp directories are hidden behind empty tmpfs, and a private uid. Not running as root it has
  only what an unprivileged user can do (see :attr:`PythonSandbox.isolation`).

Worker uids: each worker gets its own uid (``2_000_000_000 + ...``, no passwd entry) instead of
sharing ``nobody``: the per-uid process limit then applies per worker, and one sandbox's code can
neither signal nor starve another sandbox's worker.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import site
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Literal

from agentrl.core.errors import SandboxUnavailable
from agentrl.sandboxes.pool import (
    DEFAULT_PREIMPORT,
    MODES,
    STARTUP_TIMEOUT_S,
    ChannelCorrupt,
    PooledSandbox,
    WorkerPool,
    await_ready,
    check_option,
)

__all__ = ["PythonSandbox"]

_WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_SANDBOX_WORKER_PATH = "/agentrl_worker.py"
_SCRATCH = "/scratch"
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
_UID_BASE = 2_000_000_000
_UIDS_PER_PROCESS = 1024
_uid_lock = threading.Lock()
_uid_counter = itertools.count()
_uids_in_use: set[int] = set()


def _is_root() -> bool:
    return os.geteuid() == 0


def _real_python() -> str:
    """Return the interpreter binary itself: a pyenv shim or venv symlink would need more of the host."""
    return os.path.realpath(sys.executable)


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _pids_of_uid(uid: int) -> list[int]:
    found = []
    for pid in _pids():
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(pid)
    return found


def _pids_in_session(sid: int) -> list[int]:
    found = []
    for pid in _pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            fields = stat[stat.rindex(b")") + 2:].split()
            if int(fields[3]) == sid:
                found.append(pid)
    return found


def _alloc_uid() -> int:
    """Pick a uid no process uses: per-worker uids make RLIMIT_NPROC and kill(-1) per worker."""
    with _uid_lock:
        # 1024 slots per process id keep the largest uid (about 3.07e9) below 2**32 - 1.
        for _ in range(_UIDS_PER_PROCESS):
            uid = _UID_BASE + (os.getpid() % (1 << 20)) * _UIDS_PER_PROCESS + next(_uid_counter) % _UIDS_PER_PROCESS
            if uid not in _uids_in_use and not _pids_of_uid(uid):
                _uids_in_use.add(uid)
                return uid
    raise SandboxUnavailable(f"no free worker uid: more than {_UIDS_PER_PROCESS} live workers in this process")


def _release_uid(uid: int | None) -> None:
    if uid is not None:
        with _uid_lock:
            _uids_in_use.discard(uid)


_bwrap_cache: dict[str, bool] = {}


def _bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _bwrap_supports_size(bwrap: str) -> bool:
    if bwrap not in _bwrap_cache:
        import subprocess

        try:
            out = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _bwrap_cache[bwrap] = "--size" in out
    return _bwrap_cache[bwrap]


def _site_dirs() -> list[str]:
    dirs = []
    with contextlib.suppress(AttributeError):
        dirs.extend(site.getsitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def _clean_env(home: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8:backslashreplace", "USER": "sandbox",
           "MPLBACKEND": "Agg"}
    env.update({v: "1" for v in _THREAD_VARS})
    return env


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass
class _Worker:
    """One started interpreter (bwrap or plain subprocess) and its protocol pipes: a pool ``WorkerTransport``."""

    proc: object
    req_w: int
    resp_r: int
    scratch: str
    uid: int | None
    ns_init: int | None  # host pid of the pid namespace's init (bwrap)
    kill_by_uid: bool
    info: dict = field(default_factory=dict)
    dead: bool = False

    def alive(self) -> bool:
        """Whether the interpreter still runs (and was not killed)."""
        return not self.dead and self.proc.poll() is None  # type: ignore[attr-defined]

    def pending(self) -> bool:
        """Whether the worker wrote to the reply pipe unasked."""
        r, _, _ = select.select([self.resp_r], [], [], 0)
        return bool(r)

    def write(self, data: bytes, deadline: float) -> None:
        """Write ``data`` to the request pipe (non-blocking, so a full pipe cannot outlast ``deadline``)."""
        fd = self.req_w
        view = memoryview(data)
        os.set_blocking(fd, False)
        while view:
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                _wait(fd, deadline, write=True)
                continue
            view = view[n:]

    def read(self, n: int, deadline: float) -> bytes:
        """Read exactly ``n`` bytes from the reply pipe."""
        return _read_exact(self.resp_r, n, deadline)

    def exit_reason(self) -> str:
        """How the interpreter ended, from its exit status."""
        status = self.proc.poll()  # type: ignore[attr-defined]
        if status is None or status == 0:
            return "the interpreter exited"
        if status < 0:
            return f"the interpreter was killed by signal {-status}"
        return f"the interpreter exited with status {status}"

    def kill(self) -> None:
        """Kill the worker and everything it spawned, reap it, remove its scratch dir."""
        if self.dead:
            return
        self.dead = True
        proc = self.proc
        for fd in (self.req_w, self.resp_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.ns_init is not None:
            # pid 1 of a pid namespace dying takes every process of the namespace with it.
            with contextlib.suppress(OSError):
                os.kill(self.ns_init, 9)
        leader = proc.pid  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if self.kill_by_uid and self.uid is not None:
                others = [p for p in _pids_of_uid(self.uid) if p != leader]
            else:
                others = [p for p in _pids_in_session(leader) if p != leader]
            if not others:
                break
            # The leader (bwrap, or the worker's reaper) stays alive until its descendants are
            # gone, so that it, not the host's pid 1, reaps them.
            for pid in others:
                with contextlib.suppress(OSError):
                    os.kill(pid, 9)
            time.sleep(0.005)
        with contextlib.suppress(OSError):
            os.kill(leader, 9)
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)  # type: ignore[attr-defined]
        shutil.rmtree(self.scratch, ignore_errors=True)
        _release_uid(self.uid)


class PythonSandbox(PooledSandbox):
    r"""Run untrusted Python in warm, isolated, resource-limited worker processes.

    Args:
        mode: ``"session"`` keeps variables across :meth:`execute` calls (like a notebook kernel)
            until :meth:`reset`; ``"stateless"`` runs every call in fresh globals. In stateless mode
            the worker is a template that never runs user code itself: each call runs in a fork of
            it (copy-on-write, about a millisecond), so nothing a call does (globals, monkeypatched
            modules, cwd, leftover processes, which are killed) reaches the next call, and the
            warm worker is always reused. Files in the scratch directory do persist until reset().
        timeout_s: default wall-clock deadline per call; on expiry the worker and everything it
            spawned are killed and replaced by a spare.
        cpu_s: CPU seconds per call (``RLIMIT_CPU``); defaults to ``timeout_s``.
        memory_mb: address space that user code may add on top of the warm interpreter.
        max_processes: ``RLIMIT_NPROC`` (enforced per worker when running as root, see module doc).
        max_file_mb: ``RLIMIT_FSIZE``: larger writes fail with ``OSError(EFBIG)``; this also caps
            the raw captured output. Scratch space is a tmpfs of ``4 * max_file_mb`` (at least 64 MB)
            where a tmpfs can be mounted.
        max_output_chars: output is cut to this many characters, with a visible marker.
        isolation: ``"bwrap"``, ``"process"``, or ``"auto"`` (bwrap when installed).
        preimport: modules imported once per worker before any user code (missing ones skipped).
        pool_size: spare workers kept started and warm.

    Attributes:
        isolation: human-readable description of the isolation in force.
        isolation_level: ``"bwrap"`` or ``"process"``.

    Raises:
        SandboxUnavailable: ``isolation="bwrap"`` without a working bubblewrap.
        SandboxOptionError: an unknown ``mode`` or ``isolation``.

    Example:
        >>> from agentrl.sandboxes.base import ExecutionRequest
        >>> with PythonSandbox(preimport=("math",)) as box:
        ...     print(box.execute(ExecutionRequest("x = 6 * 7; x")).output)
        ...     print(box.execute(ExecutionRequest("x + 1")).output)
        42
        <BLANKLINE>
        43
        <BLANKLINE>

    """

    def __init__(
        self,
        *,
        mode: Literal["session", "stateless"] = "session",
        timeout_s: float = 10.0,
        cpu_s: float | None = None,
        memory_mb: int = 1024,
        max_processes: int = 32,
        max_file_mb: int = 16,
        max_output_chars: int = 8000,
        isolation: Literal["auto", "bwrap", "process"] = "auto",
        preimport: tuple[str, ...] | list[str] = DEFAULT_PREIMPORT,
        pool_size: int = 1,
    ) -> None:
        """Validate the options and start warming workers in the background (see the class doc)."""
        check_option("mode", mode, MODES)
        check_option("isolation", isolation, ("auto", "bwrap", "process"))
        self.mode = mode
        self.timeout_s = float(timeout_s)
        self.cpu_s = float(cpu_s if cpu_s is not None else timeout_s)
        self.memory_mb = int(memory_mb)
        self.max_processes = int(max_processes)
        self.max_file_mb = int(max_file_mb)
        self.max_output_chars = int(max_output_chars)
        self.preimport = tuple(preimport)
        self.pool_size = max(0, int(pool_size))
        self._root = _is_root()
        bwrap = _bwrap_path()
        if isolation == "bwrap" and bwrap is None:
            raise SandboxUnavailable("isolation='bwrap' but bubblewrap is not installed; "
                                     "install it with: apt-get install bubblewrap")
        self._bwrap = bwrap if isolation != "process" else None
        self.isolation_level: str = "bwrap" if self._bwrap else "process"
        self.isolation: str = self._describe()
        self._lock = threading.RLock()
        self._closed = False
        self._pool: WorkerPool[_Worker] = WorkerPool(self._spawn, self.pool_size)
        self._finalizer = weakref.finalize(self, WorkerPool.close, self._pool)
        if isolation == "bwrap":
            # Fail now, with the fix, rather than at the first execute().
            try:
                self._pool.take(STARTUP_TIMEOUT_S)
            except BaseException:
                self.close()
                raise

    # -- description -------------------------------------------------------------------------
    def _describe(self) -> str:
        limits = (f"rlimits (cpu {self.cpu_s:g}s, +{self.memory_mb} MB address space, {self.max_processes} "
                  f"processes, {self.max_file_mb} MB files), wall clock {self.timeout_s:g}s")
        if self._bwrap:
            uid = "private uid per worker" if self._root else "unprivileged user namespace"
            return (f"bubblewrap: no network, read-only minimal root (/usr + Python), private /tmp and "
                    f"/scratch tmpfs, pid/ipc/uts namespaces, no capabilities, {uid}, {limits}")
        if self._root:
            return (f"process: private network namespace (no network), private mount namespace hiding "
                    f"/root, /home and temp dirs, private uid per worker, no_new_privs, {limits}; host "
                    f"filesystem otherwise visible read-only to that uid, shared pid namespace "
                    f"(install bubblewrap for full isolation: apt-get install bubblewrap)")
        return (f"process: {limits}, clean environment, no_new_privs, network namespace if unprivileged user "
                f"namespaces are allowed; NOT isolated: runs as your user, can read your files, "
                f"children that call setsid() escape cleanup "
                f"(install bubblewrap for full isolation: apt-get install bubblewrap)")

    # -- starting workers --------------------------------------------------------------------
    def _keep_paths(self) -> list[str]:
        paths = [sys.base_prefix, *_site_dirs()]
        cfg = os.path.join(sys.prefix, "pyvenv.cfg")
        if sys.prefix != sys.base_prefix and os.path.exists(cfg):
            paths.append(cfg)
        out: list[str] = []
        for p in sorted({os.path.realpath(p) for p in paths}, key=len):
            if not any(_under(p, q) for q in out) and not _under(p, "/usr"):
                out.append(p)
        return out

    def _bwrap_argv(self, python: str, info_fd: int | None = None) -> list[str]:
        """Build the bubblewrap command line up to (and including) the interpreter path."""
        assert self._bwrap is not None
        argv = [self._bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if self._root:
            # No user namespace: its uid 0 maps to host root, for which RLIMIT_NPROC is not
            # enforced. The worker keeps only what it needs to drop to its own uid.
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            argv += ["--unshare-user"]
        argv += ["--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
            if os.path.islink(top):
                argv += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                argv += ["--ro-bind", top, top]
        argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        size = str(max(64, 4 * self.max_file_mb) * 1024 * 1024)
        sized = ["--size", size] if _bwrap_supports_size(self._bwrap) else []
        # The private /tmp comes before the Python binds: a venv or interpreter that lives under
        # /tmp (a fresh clone in a temp dir) must be mounted on top of it, not hidden by it.
        argv += ["--perms", "1777", *sized, "--tmpfs", "/tmp"]
        made = {"/", "/usr", "/tmp", "/proc", "/dev", _SCRATCH}
        for path in self._keep_paths():
            parents = []
            parent = os.path.dirname(path)
            while parent not in made and parent != "/":
                parents.append(parent)
                parent = os.path.dirname(parent)
            for d in reversed(parents):
                # bwrap creates missing parents 0700; uid-dropped code must traverse them.
                argv += ["--perms", "0755", "--dir", d]
                made.add(d)
            argv += ["--ro-bind", path, path]
        argv += ["--ro-bind", _WORKER_FILE, _SANDBOX_WORKER_PATH, "--proc", "/proc", "--dev", "/dev"]
        argv += ["--perms", "1777", *sized, "--tmpfs", _SCRATCH, "--chdir", _SCRATCH]
        if info_fd is not None:
            argv += ["--info-fd", str(info_fd)]
        return [*argv, python]

    def _spawn(self) -> _Worker:
        import subprocess

        python = _real_python()
        uid = _alloc_uid() if self._root else None
        scratch = tempfile.mkdtemp(prefix="agentrl-scratch-")
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        info_r = info_w = -1
        errfile = tempfile.TemporaryFile()
        closers = [req_r, resp_w]
        try:
            if uid is not None:
                os.chown(scratch, uid, uid)
            os.chmod(scratch, 0o700)
            bw = self._bwrap is not None
            home = _SCRATCH if bw else scratch
            cfg = {
                "req_fd": req_r, "resp_fd": resp_w, "mode": self.mode, "process_mode": not bw,
                "drop_to": uid, "kill_others": bw or uid is not None, "env": _clean_env(home),
                "preimport": list(self.preimport), "site_dirs": _site_dirs(),
                "max_file_mb": self.max_file_mb, "max_processes": self.max_processes,
                "memory_mb": self.memory_mb, "parent_pid": os.getpid(), "scratch": scratch,
                "scratch_mb": max(64, 4 * self.max_file_mb), "keep_paths": [*self._keep_paths(), _WORKER_FILE],
                "hide_dirs": [d for d in ("/root", "/home", "/tmp", "/var/tmp", "/dev/shm", "/run/lock",
                                          os.path.expanduser("~")) if d != "/"],
            }
            pass_fds = [req_r, resp_w]
            if bw:
                info_r, info_w = os.pipe()
                closers.append(info_w)
                pass_fds.append(info_w)
                argv = [*self._bwrap_argv(python, info_w), "-I", "-S", "-B", _SANDBOX_WORKER_PATH, json.dumps(cfg)]
                cwd = "/"
            else:
                # Process mode as root: the worker chdirs into its tmpfs scratch itself.
                argv = [python, "-I", "-S", "-B", _WORKER_FILE, json.dumps(cfg)]
                cwd = scratch
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errfile,
                                    pass_fds=pass_fds, cwd=cwd, env=_clean_env(home), start_new_session=True)
        except BaseException:
            for fd in (req_r, req_w, resp_r, resp_w, info_r, info_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            shutil.rmtree(scratch, ignore_errors=True)
            _release_uid(uid)
            errfile.close()
            raise
        for fd in closers:
            os.close(fd)
        ns_init = None
        worker = _Worker(proc, req_w, resp_r, scratch, uid, None, kill_by_uid=uid is not None)
        try:
            if info_r >= 0:
                info = _read_all(info_r, time.monotonic() + STARTUP_TIMEOUT_S)
                with contextlib.suppress(ValueError):
                    ns_init = int(json.loads(info.decode("utf-8", "replace"))["child-pid"])
                worker.ns_init = ns_init
            await_ready(worker, time.monotonic() + STARTUP_TIMEOUT_S)
        except (OSError, EOFError, ValueError, TimeoutError, ChannelCorrupt) as exc:
            worker.kill()
            errfile.seek(0)
            err = errfile.read().decode("utf-8", "replace").strip()[-2000:]
            errfile.close()
            how = ("bubblewrap failed to start the worker; check that bubblewrap works here "
                   "(apt-get install bubblewrap) or pass isolation='process'") if self._bwrap else \
                "the sandbox worker failed to start"
            raise SandboxUnavailable(f"{how}: {exc!r}; stderr: {err or '<empty>'}") from exc
        finally:
            if info_r >= 0:
                with contextlib.suppress(OSError):
                    os.close(info_r)
        errfile.close()
        return worker

    def __repr__(self) -> str:
        """Show the mode and the isolation level."""
        return f"PythonSandbox(mode={self.mode!r}, isolation_level={self.isolation_level!r})"


def _wait(fd: int, deadline: float, write: bool = False) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    if write:
        _, w, _ = select.select([], [fd], [], left)
        if not w:
            raise TimeoutError
    else:
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            raise TimeoutError


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    chunks = []
    while n:
        _wait(fd, deadline)
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_all(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        _wait(fd, deadline)
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
