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

Fork server (``zygote``; bubblewrap *and* root, the default there). An RL loop resets constantly,
and a fresh interpreter that imports numpy and sympy costs about 0.25 CPU-seconds per episode, so
sessions are forked instead from a warm template (a few CPU-milliseconds):

* One *template* per process and configuration (interpreter, pre-imports), shared by every sandbox
  of that configuration, under bubblewrap as above (read-only minimal root, no network, its own pid,
  ipc and uts namespaces). Its launcher (bwrap's command, host root with CAP_SETUID/CAP_SETGID only)
  forks it into a new *user namespace* whose uid/gid map the launcher writes: an identity map of a
  private block of host uids, the template's uid ``A`` and 255 session uids. The launcher then drops
  to ``A`` (no capability left) and only waits. The template holds capabilities inside that user
  namespace only (on the host it is the unprivileged uid ``A``); it imports numpy/sympy, freezes its
  heap for the garbage collector (``gc.freeze``: sessions then copy few of its pages, and forks stay
  cheap), turns non-dumpable and serves requests on a socket.
* Per sandbox, a *branch*: a fork of the template with its own network namespace (loopback only)
  and a slice of the session uids; it forks that sandbox's sessions, so sandboxes fork in parallel.
  The template keeps a few branches forked ahead while idle, so a new sandbox rarely waits for one.
* Per episode, a *session*: a fork of the branch that unshares its own mount and IPC namespaces,
  mounts fresh size-capped tmpfs on ``/scratch``, ``/tmp`` and ``/dev/shm``, drops to its own uid
  ``B`` (no other live session has it), clears every capability (bounding, permitted, effective,
  ambient), sets no_new_privs and the rlimits, and serves the usual requests on pipes the host passed
  in. ``reset()`` kills it (every process of uid ``B``; the uid is reused only once none is left)
  and a spare session (forked during the episode) takes its place while the branch forks the next.

What each guarantee rests on: a session cannot signal, ptrace or read the memory or environment of
the template, its branch or its launcher because they run under another uid (``A``, or host root for
bubblewrap's own pid 1) and it has no capability (``kill``/``ptrace`` need the same uid or
CAP_KILL/CAP_SYS_PTRACE); the template is also non-dumpable. Nothing survives an episode: globals
and modules live in the killed process, files in its tmpfs (its own mount namespace), SysV IPC in its
IPC namespace, processes under its uid (all killed, the uid cannot be changed back). RLIMIT_NPROC
counts per session (its own uid). Sessions of one sandbox share a network namespace (like the
episodes of one worker did), sessions of different sandboxes do not; all share the template's pid
namespace, so they can see (not touch) each other's processes in ``/proc``. Without root (no
2-uid map) or without bubblewrap, every worker is a fresh interpreter as described above.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import select
import shutil
import site
import socket
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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

__all__ = ["FORK_SERVER_IDLE_S", "PythonSandbox", "shutdown_fork_servers"]

_WORKER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")
_SANDBOX_WORKER_PATH = "/agentrl_worker.py"
_SCRATCH = "/scratch"
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")
_UID_BASE = 2_000_000_000
_UIDS_PER_PROCESS = 8192
_TEMPLATE_UIDS = 1024  # per fork server: the template's uid + 1023 session uids, shared out to branches
_SPARE_BRANCHES = 4  # branches a fork server keeps forked ahead, for the next sandboxes
_BRANCH_UIDS = 1 + 4  # session uids per branch of a default sandbox (pool_size 1): see PythonSandbox
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


def _uid_base() -> int:
    # 8192 slots per process id (modulo 2**18) keep the largest uid (about 4.15e9) below 2**32 - 1;
    # two processes whose ids collide modulo 2**18 skip each other's uids (no live process may have one).
    return _UID_BASE + (os.getpid() % (1 << 18)) * _UIDS_PER_PROCESS


def _live_uids() -> set[int]:
    found = set()
    for pid in _pids():
        with contextlib.suppress(OSError):
            found.add(os.stat(f"/proc/{pid}").st_uid)
    return found


def _alloc_uid_block(n: int) -> int:
    """Reserve ``n`` consecutive uids no process uses (a fork server's template and session uids)."""
    with _uid_lock:
        base = _uid_base()
        live: set[int] | None = None
        # From the top of this process's range down: single worker uids are handed out from the bottom.
        for start in range(_UIDS_PER_PROCESS - n, -1, -n):
            block = range(base + start, base + start + n)
            if any(u in _uids_in_use for u in block):
                continue
            if live is None:
                live = _live_uids()
            if any(u in live for u in block):
                continue
            _uids_in_use.update(block)
            return base + start
    raise SandboxUnavailable(f"no {n} free consecutive worker uids left in this process")


def _release_uid_block(first: int, n: int) -> None:
    with _uid_lock:
        _uids_in_use.difference_update(range(first, first + n))


def _alloc_uid() -> int:
    """Pick a uid no process uses: per-worker uids make RLIMIT_NPROC and kill(-1) per worker."""
    with _uid_lock:
        for _ in range(_UIDS_PER_PROCESS):
            uid = _uid_base() + next(_uid_counter) % _UIDS_PER_PROCESS
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
        return _pending(self.resp_r)

    def write(self, data: bytes, deadline: float) -> None:
        """Write ``data`` to the request pipe (non-blocking, so a full pipe cannot outlast ``deadline``)."""
        _write_all(self.req_w, data, deadline)

    def read(self, n: int, deadline: float) -> bytes:
        """Read exactly ``n`` bytes from the reply pipe."""
        return _read_exact(self.resp_r, n, deadline)

    def exit_reason(self) -> str:
        """How the interpreter ended, from its exit status."""
        return _exit_words(self.proc.poll())  # type: ignore[attr-defined]

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


def _pending(fd: int) -> bool:
    r, _, _ = select.select([fd], [], [], 0)
    return bool(r)


def _write_all(fd: int, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    os.set_blocking(fd, False)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            _wait(fd, deadline, write=True)
            continue
        view = view[n:]


def _exit_words(status: int | None) -> str:
    """``status`` as ``Popen.returncode`` has it: negative for a signal."""
    if status is None or status == 0:
        return "the interpreter exited"
    if status < 0:
        return f"the interpreter was killed by signal {-status}"
    return f"the interpreter exited with status {status}"


# -- the fork server (zygote) ------------------------------------------------------------------
class _ForkServer:
    """What the template and its branches share: one request at a time over a ``SOCK_SEQPACKET`` socket."""

    sock: socket.socket | None
    lock: threading.Lock
    closed: bool
    broken = False
    owner: int  # the pid of the process that started it

    def alive(self) -> bool:
        """Whether it (and so every session it forked) still runs."""
        raise NotImplementedError

    def stderr_tail(self) -> str:
        """The end of what the fork server wrote to stderr (for error messages)."""
        raise NotImplementedError

    def _recv(self, deadline: float) -> dict:
        """One reply; file descriptors passed with it (a branch's socket) come as ``msg["fds"]``."""
        assert self.sock is not None
        _wait(self.sock.fileno(), deadline)
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 4)
        try:
            if not data:
                raise EOFError("the fork server closed its socket")
            msg = json.loads(data.decode("utf-8", "replace"))
            if not isinstance(msg, dict):
                raise ValueError("bad message from the fork server")
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        msg["fds"] = list(fds)
        return msg

    def request(self, msg: dict, fds: list[int] | None = None, timeout: float = 30.0) -> dict:
        """Send one request and wait for its reply; ``OSError`` when the fork server is gone."""
        with self.lock:
            if self.closed or self.broken or self.sock is None:
                raise OSError("the fork server is closed")
            if os.getpid() != self.owner:
                # A forked copy of this process must not speak on its parent's socket.
                raise OSError("the fork server belongs to the parent process")
            data = json.dumps(msg).encode("ascii")
            try:
                if fds:
                    socket.send_fds(self.sock, [data], fds)
                else:
                    self.sock.send(data)
                return self._recv(time.monotonic() + timeout)
            except (OSError, EOFError, ValueError, TimeoutError):
                self.broken = True  # gone, hung or out of step: never used again
                raise

    def fork(self, session_cfg: dict) -> _Session:
        """Fork a session and return its transport (not yet ready: the caller awaits its ready message)."""
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        sid = next(_child_ids)
        try:
            reply = self.request({"op": "fork", "id": sid, "cfg": session_cfg}, [req_r, resp_w])
        except BaseException:
            for fd in (req_w, resp_r):
                os.close(fd)
            raise
        finally:
            os.close(req_r)
            os.close(resp_w)
        if "error" in reply:
            for fd in (req_w, resp_r):
                os.close(fd)
            raise SandboxUnavailable(f"the sandbox fork server could not fork a session: {reply['error']}")
        return _Session(self, sid, req_w, resp_r, int(reply["uids"][0]))


_child_ids = itertools.count(1)


class _Branch(_ForkServer):
    """One sandbox's fork server: a fork of the template with its own network namespace and uids."""

    def __init__(self, template: _Template, cid: int, sock: socket.socket) -> None:
        self.template = template
        self.cid = cid
        self.sock = sock
        self.lock = threading.Lock()
        self.closed = False
        self.owner = os.getpid()

    def alive(self) -> bool:
        """Whether the branch still serves (its template runs and it has not hung up)."""
        return not self.closed and not self.broken and self.template.alive()

    def stderr_tail(self) -> str:
        """What the template and its branches wrote to stderr."""
        return self.template.stderr_tail()

    def close(self) -> None:
        """Hang up: the branch kills its sessions and exits; the template frees its uids."""
        with self.lock:
            if self.closed or os.getpid() != self.owner:
                return
            self.closed = True
            if self.sock is not None:
                self.sock.close()


class _Template(_ForkServer):
    """A pre-imported interpreter under bubblewrap that forks one isolated session per worker.

    Shared by every :class:`PythonSandbox` of this process with the same interpreter, pre-imports
    and bubblewrap; see the "Fork server" part of :class:`PythonSandbox`'s doc for the isolation.
    It speaks JSON over a ``SOCK_SEQPACKET`` socket: ``fork`` (with the session's two pipe ends passed
    as ``SCM_RIGHTS``), ``kill`` and ``status``, one request at a time.
    """

    capacity = _TEMPLATE_UIDS - 1

    def __init__(self, argv_prefix: list[str], python: str, cfg: dict) -> None:
        self.argv_prefix = argv_prefix
        self.python = python
        self.cfg = cfg
        self.lock = threading.Lock()
        self.owner = os.getpid()
        self.start_lock = threading.Lock()
        self.started = False
        self.start_error: BaseException | None = None
        self.closed = False
        self.reserved = 0
        self.users = 0
        self.proc: object = None
        self.sock = None
        self.ns_init: int | None = None
        self.first_uid: int | None = None
        self.errfile: object = None
        self.info: dict = {}
        self.idle_generation = 0

    # -- life cycle --------------------------------------------------------------------------
    def ensure_started(self) -> None:
        """Start the template once (callers racing for it wait for the first)."""
        with self.start_lock:
            if self.start_error is not None:
                raise self.start_error
            if not self.started:
                try:
                    # bwrap's --die-with-parent fires when the *thread* that started it exits: start
                    # it from one thread that lives as long as this process, not a sandbox's thread.
                    _starter().submit(self._start).result()
                except BaseException as exc:
                    self.start_error = exc
                    raise
                self.started = True

    def _start(self) -> None:
        import subprocess

        try:
            first = _alloc_uid_block(_TEMPLATE_UIDS)
        except SandboxUnavailable:
            # Idle fork servers (other configurations, kept warm) hold uid blocks: stop them, retry.
            shutdown_fork_servers()
            first = _alloc_uid_block(_TEMPLATE_UIDS)
        self.first_uid = first
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_r, info_w = os.pipe()
        self.errfile = tempfile.TemporaryFile()
        cfg = {**self.cfg, "zygote": True, "ctl_fd": child.fileno(), "first_uid": first,
               "uid_count": _TEMPLATE_UIDS, "scratch_dir": _SCRATCH, "spare_branches": _SPARE_BRANCHES}
        argv = [*self.argv_prefix, "--info-fd", str(info_w), self.python, "-I", "-S", "-B", _SANDBOX_WORKER_PATH,
                json.dumps(cfg)]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.errfile, pass_fds=[child.fileno(), info_w], cwd="/",
                                         env=cfg["env"], start_new_session=True)
        except BaseException:
            for fd in (info_r, info_w):
                os.close(fd)
            parent.close()
            child.close()
            self.close()
            raise
        os.close(info_w)
        child.close()
        self.sock = parent
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            info = _read_all(info_r, deadline)
            with contextlib.suppress(ValueError, KeyError):
                self.ns_init = int(json.loads(info.decode("utf-8", "replace"))["child-pid"])
            ready = self._recv(deadline)
            if not ready.get("ready"):
                raise OSError(f"unexpected first message from the fork server: {ready!r}")
            self.info = ready
        except (OSError, EOFError, ValueError, TimeoutError) as exc:
            err = self.stderr_tail()
            self.close()
            raise SandboxUnavailable(f"the sandbox fork server failed to start under bubblewrap: {exc!r}; "
                                     f"stderr: {err or '<empty>'} (pass zygote=False for one fresh "
                                     f"interpreter per worker)") from exc
        finally:
            os.close(info_r)

    def alive(self) -> bool:
        """Whether the template (and with it every session it forked) still runs."""
        return (self.started and not self.closed and not self.broken
                and self.proc.poll() is None)  # type: ignore[attr-defined]

    def stderr_tail(self) -> str:
        """The end of what the template and bubblewrap wrote to stderr (for error messages)."""
        with contextlib.suppress(Exception):
            self.errfile.seek(0)  # type: ignore[attr-defined]
            return self.errfile.read().decode("utf-8", "replace").strip()[-2000:]  # type: ignore[attr-defined]
        return ""

    def close(self) -> None:
        """Kill the template's pid namespace (every session dies with it) and release its uids."""
        with self.lock:
            if self.closed or os.getpid() != self.owner:
                return  # a forked copy of this process leaves its parent's fork server alone
            self.closed = True
        if self.ns_init is not None:
            with contextlib.suppress(OSError):
                os.kill(self.ns_init, 9)
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                self.proc.wait(timeout=10)  # type: ignore[attr-defined]
        if self.sock is not None:
            self.sock.close()
        if self.errfile is not None:
            with contextlib.suppress(Exception):
                self.errfile.close()  # type: ignore[attr-defined]
        if self.first_uid is not None:
            _release_uid_block(self.first_uid, _TEMPLATE_UIDS)
            self.first_uid = None

    def branch(self, uids: int) -> _Branch:
        """A branch: a fork server for one sandbox, with ``uids`` session uids of its own.

        The template hands over one it forked ahead of time when it has one, with its socket.
        """
        cid = next(_child_ids)
        reply = self.request({"op": "branch", "id": cid, "uids": uids})
        fds = reply.get("fds") or []
        if "error" in reply or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise SandboxUnavailable(f"the sandbox fork server could not fork a branch: "
                                     f"{reply.get('error', 'no socket came with the reply')}")
        return _Branch(self, cid, socket.socket(fileno=fds[0]))


_templates_lock = threading.Lock()
_templates: dict[tuple, list[_Template]] = {}
_starter_executor: list = []


def _forget_fork_servers_in_child() -> None:
    """In a forked copy of this process (multiprocessing, AsyncVectorEnv): start from scratch.

    The parent's fork servers, their sockets and the thread that starts them belong to the parent
    (a lock may even have been held by another thread at the fork): leave them all alone.
    """
    global _templates_lock, _templates, _uid_lock
    _templates_lock = threading.Lock()
    _uid_lock = threading.Lock()
    _templates = {}
    _starter_executor.clear()


os.register_at_fork(after_in_child=_forget_fork_servers_in_child)


def _starter() -> ThreadPoolExecutor:
    """The one long-lived thread that starts every fork server."""
    with _templates_lock:
        if not _starter_executor:
            _starter_executor.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentrl-fork-server"))
        return _starter_executor[0]
#: seconds a fork server with no sandbox left stays up, so that the next sandbox (the next env made)
#: starts warm; ``AGENTRL_FORK_SERVER_IDLE_S=0`` stops it with its last sandbox
FORK_SERVER_IDLE_S = float(os.environ.get("AGENTRL_FORK_SERVER_IDLE_S", "30"))


def shutdown_fork_servers() -> int:
    """Stop every fork server no sandbox uses now (idle ones wait ``FORK_SERVER_IDLE_S`` otherwise).

    Returns how many were stopped. A fork server also stops with this process (bubblewrap's
    ``--die-with-parent``).
    """
    with _templates_lock:
        idle = [(key, t) for key, group in _templates.items() for t in group
                if t.users <= 0 or t.owner != os.getpid()]
        for key, t in idle:
            _templates[key].remove(t)
            if not _templates[key]:
                del _templates[key]
    for _, t in idle:
        t.close()
    return len(idle)


atexit.register(shutdown_fork_servers)


def _lease_template(key: tuple, need: int, make: Callable[[], _Template]) -> _Template:
    """A running template for ``key`` with room for ``need`` more live sessions (started if none has)."""
    with _templates_lock:
        for t in _templates.get(key, []):
            if (t.owner == os.getpid() and not t.closed and (t.alive() or not t.started)
                    and t.reserved + need <= t.capacity):
                break
        else:
            t = make()
            _templates.setdefault(key, []).append(t)
        t.reserved += need
        t.users += 1
    try:
        t.ensure_started()
    except BaseException:
        _return_template(key, t, need)
        raise
    return t


def _return_template(key: tuple, t: _Template, need: int) -> None:
    """Give back a lease; a template nobody uses stops after ``FORK_SERVER_IDLE_S`` (now if it died)."""
    with _templates_lock:
        t.reserved -= need
        t.users -= 1
        if t.users > 0:
            return
        if t.alive() and FORK_SERVER_IDLE_S > 0:
            t.idle_generation += 1
            timer = threading.Timer(FORK_SERVER_IDLE_S, _expire_template, (key, t, t.idle_generation))
            timer.daemon = True
            try:
                timer.start()
                return
            except RuntimeError:  # interpreter shutdown: no new threads
                pass
        _forget_template(key, t)
    t.close()


def _forget_template(key: tuple, t: _Template) -> None:
    group = _templates.get(key, [])
    if t in group:
        group.remove(t)
    if not group:
        _templates.pop(key, None)


def _expire_template(key: tuple, t: _Template, generation: int) -> None:
    with _templates_lock:
        if t.users > 0 or t.idle_generation != generation:
            return  # leased again meanwhile
        _forget_template(key, t)
    t.close()


@dataclass
class _Session:
    """One episode's interpreter, forked from a :class:`_Template`: a pool ``WorkerTransport``."""

    template: _ForkServer
    sid: int
    req_w: int
    resp_r: int
    uid: int
    info: dict = field(default_factory=dict)
    dead: bool = False

    def alive(self) -> bool:
        """Whether the session still runs: its template runs and it has not closed its reply pipe."""
        if self.dead or not self.template.alive():
            return False
        poller = select.poll()
        poller.register(self.resp_r, select.POLLIN)
        return not any(ev & (select.POLLHUP | select.POLLERR) for _, ev in poller.poll(0))

    def pending(self) -> bool:
        """Whether the session wrote to the reply pipe unasked (a closed pipe is a dead session, not that)."""
        poller = select.poll()
        poller.register(self.resp_r, select.POLLIN)
        events = [ev for _, ev in poller.poll(0)]
        return bool(events) and not any(ev & (select.POLLHUP | select.POLLERR) for ev in events)

    def write(self, data: bytes, deadline: float) -> None:
        """Write ``data`` to the request pipe."""
        _write_all(self.req_w, data, deadline)

    def read(self, n: int, deadline: float) -> bytes:
        """Read exactly ``n`` bytes from the reply pipe."""
        return _read_exact(self.resp_r, n, deadline)

    def exit_reason(self) -> str:
        """How the session ended, from the exit status its template reaped."""
        if not self.template.alive():
            return "the sandbox's fork server died"
        try:
            status = self.template.request({"op": "status", "id": self.sid, "wait_s": 1.0}).get("status")
        except (OSError, EOFError, ValueError, TimeoutError):
            return "the interpreter exited"
        if not isinstance(status, int):
            return "the interpreter exited"
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return _exit_words(code)

    def kill(self) -> None:
        """Kill every process of the session (all run under its uid) and wait until they are gone."""
        self._kill(wait=True)

    def kill_soon(self) -> None:
        """Kill the session's interpreter; the template reaps it and frees its uid in the background."""
        self._kill(wait=False)

    def _kill(self, wait: bool) -> None:
        if self.dead:
            return
        self.dead = True
        for fd in (self.req_w, self.resp_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.template.alive():
            with contextlib.suppress(OSError, EOFError, ValueError, TimeoutError):
                self.template.request({"op": "kill", "id": self.sid, "wait": wait})


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
        pool_size: spare workers kept started and warm (for fork-server sessions too: a spare is
            forked during the episode, so the next episode's first call does not wait for the fork).
        zygote: fork each worker (episode) from a shared pre-imported template (see "Fork server" in
            the module doc): ``None`` (default) where bubblewrap and root allow it, ``True`` to
            require it, ``False`` for one fresh interpreter per worker. The fork server of a
            configuration stays up :data:`FORK_SERVER_IDLE_S` seconds after its last sandbox closes
            (:func:`shutdown_fork_servers` stops idle ones now).

    Attributes:
        isolation: human-readable description of the isolation in force.
        isolation_level: ``"bwrap"`` or ``"process"``.
        zygote: whether workers are fork-server sessions.

    Raises:
        SandboxUnavailable: ``isolation="bwrap"`` without a working bubblewrap; ``zygote=True``
            without bubblewrap and root.
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
        zygote: bool | None = None,
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
        self._root = _is_root()
        bwrap = _bwrap_path()
        if isolation == "bwrap" and bwrap is None:
            raise SandboxUnavailable("isolation='bwrap' but bubblewrap is not installed; "
                                     "install it with: apt-get install bubblewrap")
        self._bwrap = bwrap if isolation != "process" else None
        self.isolation_level: str = "bwrap" if self._bwrap else "process"
        can_fork = self._bwrap is not None and self._root
        if zygote and not can_fork:
            raise SandboxUnavailable("zygote=True needs bubblewrap and root (a user namespace mapping two "
                                     "uids); pass zygote=None to use it where it is available")
        self.zygote: bool = can_fork if zygote is None else bool(zygote)
        self.pool_size = max(0, int(pool_size))
        self.isolation: str = self._describe()
        self._lock = threading.RLock()
        self._closed = False
        # [key, template, uids, branch]: the fork server this sandbox leases (given back at close), how
        # many session uids its branch holds (the live sessions: active, spares, and a few being
        # killed in the background) and the branch that forks its sessions.
        self._lease: list = [None, None, self.pool_size + 4, None]
        self._pool: WorkerPool = WorkerPool(self._spawn, self.pool_size)
        self._finalizer = weakref.finalize(self, _close_sandbox, self._pool, self._lease)
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
        if self._bwrap and self.zygote:
            return (f"bubblewrap fork server: each session is forked from a pre-imported template and runs "
                    f"under its own uid (a user namespace maps the template's uid and one uid per session), "
                    f"in its own mount and ipc namespaces and its sandbox's own network namespace (no "
                    f"network), fresh /scratch, /tmp and /dev/shm tmpfs, no capabilities, no_new_privs; "
                    f"read-only minimal root (/usr + Python); cannot signal, ptrace or read the template "
                    f"(other uid, non-dumpable); {limits}")
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

    def _template_key(self) -> tuple:
        return (self._bwrap, _real_python(), self.preimport, tuple(self._keep_paths()), _WORKER_FILE)

    def _make_template(self) -> _Template:
        assert self._bwrap is not None
        python = _real_python()
        argv = self._bwrap_argv(python)[:-1]
        cfg = {"env": _clean_env(_SCRATCH), "preimport": list(self.preimport), "site_dirs": _site_dirs(),
               "branch_uids": _BRANCH_UIDS}
        return _Template(argv, python, cfg)

    def _template(self) -> _Branch:
        """Return the branch (of the leased fork server) that forks this sandbox's sessions; remade if dead."""
        key, template, need, branch = self._lease
        if branch is not None and branch.alive():
            return branch
        if branch is not None:
            self._lease[3] = None
            branch.close()
        if template is not None and not template.alive():
            self._lease[1] = None
            _return_template(key, template, need)
            template = None
        if template is None:
            key = self._template_key()
            template = _lease_template(key, need, self._make_template)
            self._lease[0], self._lease[1] = key, template
        branch = template.branch(need)
        self._lease[3] = branch
        return branch

    def _spawn(self) -> _Worker | _Session:
        if self.zygote:
            return self._spawn_session()
        return self._spawn_process()

    def _spawn_session(self) -> _Session:
        cfg = {"mode": self.mode, "max_file_mb": self.max_file_mb, "max_processes": self.max_processes,
               "memory_mb": self.memory_mb, "scratch_mb": max(64, 4 * self.max_file_mb)}
        for attempt in range(3):
            # A branch or template that died (or hangs) is marked broken by the failed request and
            # made again by _template(); their sessions are gone with them. That may happen while
            # this session starts, too: then it is started again.
            last = attempt == 2
            try:
                branch = self._template()
                session = branch.fork(cfg)
            except (OSError, EOFError, ValueError, TimeoutError):
                if last:
                    raise
                continue
            try:
                await_ready(session, time.monotonic() + STARTUP_TIMEOUT_S)
            except (OSError, EOFError, ValueError, TimeoutError, ChannelCorrupt) as exc:
                why = session.exit_reason()  # asks the branch: marks it broken if it is gone
                session.kill()
                if branch.alive() or last:
                    raise SandboxUnavailable(f"a sandbox session failed to start ({why}): {exc!r}; "
                                             f"stderr: {branch.stderr_tail() or '<empty>'}") from exc
                continue
            break
        return session

    def _spawn_process(self) -> _Worker:
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


def _close_sandbox(pool: WorkerPool, lease: list) -> None:
    """Kill the sandbox's workers, then close its branch and give back its lease on a fork server."""
    pool.close()
    key, template, need, branch = lease
    if branch is not None:
        lease[3] = None
        branch.close()
    if template is not None:
        lease[1] = None
        _return_template(key, template, need)


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
