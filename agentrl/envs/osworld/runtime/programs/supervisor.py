"""The jail's supervisor: the one process every command, app and action of a desktop is started from.

Runs where: inside the desktop's sandbox (bubblewrap; its PID namespace's first process after bwrap's init), or as
a plain child of the server when the jail is unsandboxed. :class:`~agentrl.envs.osworld.runtime.jail.Jail` copies
this file's bytes into the jail's private folder (a host temp folder, seen read-only at ``/tmp/.agentrl-bin`` in
the sandbox, which cannot write it) and runs ``python -I <that folder>/supervisor.py <control socket fd> <max file
size in bytes>``. Standard library only: ``agentrl`` is not importable in the sandbox.

Why a separate file: it is a whole program (the other end of :class:`~agentrl.envs.osworld.runtime.jail.Jail`'s
protocol), so ruff, mypy and the import graph read it as one; importing it runs nothing.

The protocol, on the control socket: frames of a 4-byte big-endian length and UTF-8 JSON, file descriptors
passed along with a request's frame (``SCM_RIGHTS``). A request carries ``op`` and ``id``; its reply carries the
``id``. Ops: ``spawn`` (argv, env, cwd, the standard streams and ``pass_fds`` as indexes of the passed
descriptors, ``infra``; or ``file_op``: read, list or write a file as the sandbox sees it), ``kill``, ``killall``
(every descendant but the infra processes), ``clean`` (empty scratch folders), ``ps`` and ``shutdown``. Events,
unasked: ``{"event": "ready", "pid"}`` once, then ``{"event": "exit", "pid", "rc"}`` for each spawned process.
"""

from __future__ import annotations

import array
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import socket
import struct
import sys
import time
import traceback

_PR_SET_CHILD_SUBREAPER = 36

Table = dict[int, tuple[int, str, list[str]]]
"""``pid -> (parent pid, state letter, argv)`` of every process in ``/proc``."""


def rc_of(status: int) -> int:
    """The exit code of a wait status; minus the signal for a process killed by one."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def table() -> Table:
    """Every process this supervisor sees (inside the sandbox: only the sandbox's)."""
    procs: Table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = [p.decode(errors="replace") for p in f.read().split(b"\0") if p]
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[1].split()
        procs[int(name)] = (int(rest[1]), rest[0], cmd)
    return procs


def signal_all(pids: list[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids``; the ones gone (or not ours) are skipped."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def clean(roots: list[str], keep: list[str]) -> None:
    """Empty the scratch folders ``roots``, keeping the bound paths ``keep`` (mount points) and the folders above."""
    kept = set(keep)
    above = set()
    for path in kept:
        while path not in ("/", ""):
            path = os.path.dirname(path)
            above.add(path)

    def walk(folder: str) -> None:
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for name in names:
            path = os.path.join(folder, name)
            if path in kept:
                continue
            if path in above and os.path.isdir(path) and not os.path.islink(path):
                walk(path)
            elif os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass

    for root in roots:
        walk(root)


def _home_path(path: str, home: str) -> str:
    real = os.path.realpath(path)
    home = os.path.realpath(home)
    if real != home and not real.startswith(home + os.sep):
        raise PermissionError(f"uploads go under the desktop's HOME ({home}); got {path}")
    return real


def _tree(path: str, depth: int = 0) -> dict:
    if not os.path.isdir(path) or os.path.islink(path) or depth > 32:
        return {"name": os.path.basename(path), "type": "file"}
    try:
        names = sorted(os.listdir(path))
    except OSError:
        names = []
    kids = [_tree(os.path.join(path, n), depth + 1) for n in names]
    return {"name": os.path.basename(path), "type": "directory", "children": kids}


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def file_op(kind: str, path: str, home: str) -> int:
    """Read, list or write ``path``; runs in a forked child with fds 0/1/2 set, and the exit code says what happened.

    0: done; 2: no such file or folder; 3: a write outside ``home``; 4: an unknown operation.
    """
    if kind == "read":
        if not os.path.isfile(path):
            os.write(2, f"file not found: {path}".encode())
            return 2
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    return 0
                _write_all(chunk)
    if kind == "list":
        if not os.path.isdir(path):
            os.write(2, f"directory not found: {path}".encode())
            return 2
        _write_all(json.dumps(_tree(path)).encode())
        return 0
    if kind == "write":
        try:
            real = _home_path(path, home)
        except PermissionError as e:
            os.write(2, str(e).encode())
            return 3
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "wb") as out:
            while True:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    return 0
                out.write(chunk)
    os.write(2, f"unknown file operation {kind!r}".encode())
    return 4


class Supervisor:
    """The supervisor's state: its control socket, the processes it started and the pipe its signals wake it by."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.me = os.getpid()
        self.tracked: dict[int, bool] = {}  # pid -> infra?
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *a: None)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    def send(self, obj: dict) -> None:
        """Send one frame to the host."""
        data = json.dumps(obj).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)

    def recv_exact(self, n: int, fds: list[int]) -> bytes:
        """``n`` bytes from the host; the file descriptors passed with them are appended to ``fds``."""
        buf = bytearray()
        while len(buf) < n:
            msg, anc, _flags, _addr = self.sock.recvmsg(n - len(buf), socket.CMSG_SPACE(64 * 4))
            if not msg:
                raise EOFError
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(data[: len(data) - len(data) % got.itemsize])
                    fds.extend(got)
            buf += msg
        return bytes(buf)

    def reap(self) -> None:
        """Reap every child that exited; the host hears of the ones it started."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.tracked:
                del self.tracked[pid]
                self.send({"event": "exit", "pid": pid, "rc": rc_of(status)})

    def targets(self, procs: Table) -> list[int]:
        """Every live descendant of this supervisor but the infra processes themselves: what they started dies too."""
        children: dict[int, list[int]] = {}
        for pid, (ppid, _state, _cmd) in procs.items():
            children.setdefault(ppid, []).append(pid)
        infra = {pid for pid, is_infra in self.tracked.items() if is_infra}
        out, todo = [], list(children.get(self.me, []))
        while todo:
            pid = todo.pop()
            if pid not in infra and procs[pid][1] != "Z":
                out.append(pid)
            todo.extend(children.get(pid, []))
        return out

    def killall(self, grace: float) -> list[int]:
        """SIGTERM the targets, wait up to ``grace``, then SIGSTOP and SIGKILL them in rounds; the pids left."""
        if grace > 0:
            left = self.targets(table())
            signal_all(left, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while left and time.monotonic() < deadline:
                time.sleep(0.01)
                self.reap()
                left = self.targets(table())
        for _ in range(200):
            left = self.targets(table())
            if not left:
                break
            signal_all(left, signal.SIGSTOP)  # freeze first: a fork loop cannot outrun the kill
            signal_all(self.targets(table()), signal.SIGKILL)
            time.sleep(0.005)
            self.reap()
        self.reap()
        return self.targets(table())

    def spawn(self, msg: dict, fds: list[int]) -> dict:
        """Fork and exec the request's command (or run its file operation) in a new session; its pid or an error."""
        stdio = msg.get("stdio") or [None, None, None]
        extra = msg.get("pass_fds") or []
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(err_r)
                self.sock.close()
                signal.set_wakeup_fd(-1)
                for sig in (signal.SIGCHLD, signal.SIGPIPE):
                    signal.signal(sig, signal.SIG_DFL)
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for target, index in enumerate(stdio):
                    os.dup2(fds[index] if index is not None else null, target)
                keep = {0, 1, 2, err_w}
                for index, target in extra:
                    os.dup2(fds[index], target)
                    os.set_inheritable(target, True)
                    keep.add(target)
                for fd in [*fds, null, self.wake_r, self.wake_w]:
                    if fd not in keep:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                if msg.get("cwd"):
                    os.chdir(msg["cwd"])
                if "file_op" in msg:
                    os.close(err_w)
                    code = 5
                    try:
                        code = file_op(*msg["file_op"])
                    except BaseException as e:
                        os.write(2, f"{type(e).__name__}: {e}".encode())
                    os._exit(code)
                env = msg.get("env") or {}
                os.execvpe(msg["argv"][0], msg["argv"], env)
            except BaseException as e:
                try:
                    os.write(err_w, f"{type(e).__name__}: {e}".encode()[:2000])
                except OSError:
                    pass
            os._exit(127)
        os.close(err_w)
        for fd in fds:
            os.close(fd)
        failure = b""
        while True:
            chunk = os.read(err_r, 4096)
            if not chunk:
                break
            failure += chunk
        os.close(err_r)
        if failure:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            return {"error": failure.decode(errors="replace")}
        self.tracked[pid] = bool(msg.get("infra"))
        return {"pid": pid}

    def handle(self, msg: dict, fds: list[int]) -> dict:
        """The reply to one request (the descriptors passed with it are closed, or handed to the spawned process)."""
        op = msg.get("op")
        if op == "spawn":
            return self.spawn(msg, fds)
        for fd in fds:
            os.close(fd)
        if op == "kill":
            try:
                (os.killpg if msg.get("group") else os.kill)(int(msg["pid"]), int(msg["sig"]))
            except (ProcessLookupError, PermissionError) as e:
                return {"error": str(e)}
            return {}
        if op == "killall":
            return {"left": self.killall(float(msg.get("grace", 1.0)))}
        if op == "clean":
            clean(msg.get("roots", []), msg.get("keep", []))
            return {}
        if op == "ps":
            procs = [[pid, ppid, state, cmd] for pid, (ppid, state, cmd) in table().items()]
            return {"procs": procs, "me": self.me}
        return {"error": f"unknown op {op!r}"}

    def serve(self) -> None:
        """Answer the host's requests until it closes the socket or asks for a shutdown; then kill every process."""
        self.send({"event": "ready", "pid": self.me})
        sock_fd = self.sock.fileno()
        while True:
            ready, _, _ = select.select([sock_fd, self.wake_r], [], [])
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 4096)
                except BlockingIOError:
                    pass
                self.reap()
            if sock_fd in ready:
                fds: list[int] = []
                try:
                    (n,) = struct.unpack(">I", self.recv_exact(4, fds))
                    msg = json.loads(self.recv_exact(n, fds))
                except (EOFError, ConnectionError, ValueError):
                    break
                if msg.get("op") == "shutdown":
                    for pid in list(self.tracked):
                        self.tracked[pid] = False
                    self.killall(float(msg.get("grace", 0.2)))
                    break
                try:
                    reply = self.handle(msg, fds)
                except Exception:
                    reply = {"error": traceback.format_exc()[-2000:]}
                reply["id"] = msg.get("id")
                self.send(reply)
                self.reap()
        for pid in list(self.tracked):
            self.tracked[pid] = False
        self.killall(0)


def main(argv: list[str]) -> None:
    """``argv``: ``[<program>, <control socket fd>, <max file size in bytes>]``."""
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    fsize = int(argv[2])
    try:  # every process of the desktop inherits it: one file cannot fill the disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    except (ValueError, OSError):
        pass
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans come to us
    except Exception:
        pass
    Supervisor(sock).serve()


if __name__ == "__main__":
    main(sys.argv)
