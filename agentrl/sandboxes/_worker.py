"""The program that runs inside a :class:`agentrl.sandboxes.python.PythonSandbox` worker.

It is started by the parent with one argument, a JSON configuration, and speaks a framed
protocol on two inherited pipe fds (never on stdout: user code may write anything to fd 1/2).
Every frame is ``MAGIC + 4-byte big-endian length + UTF-8 JSON``.

Standard library only, and it must not import ``agentrl``: inside bubblewrap the project directory
is not mounted. This file is not a public API.
"""

from __future__ import annotations

import ast
import builtins
import ctypes
import io
import json
import linecache
import os
import resource
import signal
import struct
import sys
import time
import traceback

MAGIC = b"AGRL"
_HEADER = struct.Struct(">4sI")
_MAX_REQUEST = 256 * 1024 * 1024

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_CLONE_NEWIPC = 0x08000000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_libc = ctypes.CDLL(None, use_errno=True)


class CPUTimeExceeded(BaseException):
    """Raised by the SIGXCPU handler; BaseException so ``except Exception`` in user code won't eat it."""


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    def enc(s):
        return (None if s is None else s.encode())
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)), "prctl")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _private_mounts(cfg: dict) -> None:
    """Process mode as root: hide homes and temp dirs behind empty tmpfs, re-expose what we need.

    The Python installation may live under /root (pyenv), which uid-dropped code could not traverse
    anyway, so it is bind-mounted back read-only; the scratch directory becomes a size-capped tmpfs
    owned by the worker's uid, so user code cannot fill the host disk.
    """
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
    keep = [p for p in cfg["keep_paths"] if os.path.exists(p)]
    fds = {p: os.open(p, os.O_PATH) for p in keep}
    for hide in cfg["hide_dirs"]:
        if not os.path.isdir(hide) or os.path.islink(hide):
            continue
        _mount("tmpfs", hide, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m")
    for path, fd in fds.items():
        if not any(_under(path, h) for h in cfg["hide_dirs"]):
            continue
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None)
        _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)
    for fd in fds.values():
        os.close(fd)
    scratch = cfg["scratch"]
    uid = cfg["drop_to"]
    os.makedirs(scratch, 0o700, exist_ok=True)
    _mount("tmpfs", scratch, "tmpfs", _MS_NOSUID | _MS_NODEV,
           f"mode=0700,uid={uid},gid={uid},size={cfg['scratch_mb']}m")
    os.chdir(scratch)


class _Capture:
    """fd 1 and 2 point at one memfd, so output of C code and of child processes is captured too."""

    def __init__(self, max_file_bytes: int) -> None:
        self.fd = os.memfd_create("agentrl-output", 0)
        self.max_file_bytes = max_file_bytes

    def start(self) -> None:
        try:
            os.fstat(self.fd)
        except OSError:  # user code closed it in a previous call
            self.fd = os.memfd_create("agentrl-output", 0)
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.dup2(self.fd, 1)
        os.dup2(self.fd, 2)
        # Raw FileIO + write_through keeps stdout and stderr interleaved in the order written.
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", write_through=True)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr  # type: ignore[misc]

    def finish(self, max_chars: int) -> tuple[str, bool]:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            size = os.fstat(self.fd).st_size
            data = os.pread(self.fd, min(size, self.max_file_bytes + 1024), 0)
        except OSError:
            return "", False
        text = data.decode("utf-8", errors="replace")
        if len(text) <= max_chars:
            return text, False
        more = len(text) - max_chars
        return text[:max_chars] + f"\n... [output truncated: {more} more characters]", True


def _format_exc(exc: BaseException) -> str:
    tb = exc.__traceback__
    # Drop this file's frames: the user should see their own code, not the sandbox machinery.
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        lines = traceback.format_exception(type(exc), exc, tb)
    except BaseException:
        return f"{type(exc).__name__}: <unprintable exception>"
    text = "".join(lines).rstrip()
    if len(text) > 3000:
        text = "...\n" + text[-3000:]
    return text


class Worker:
    """The request loop. In session mode code runs here; in stateless mode in a fork per call."""

    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.req_fd = cfg["req_fd"]
        self.resp_fd = cfg["resp_fd"]
        self.main_pid = os.getpid()
        self.capture = _Capture(cfg["max_file_mb"] * 1024 * 1024)
        self.globals = self._fresh_globals()
        self.cell = 0
        self.kill_others = cfg["kill_others"]
        self.pid_ns = not cfg["process_mode"] and not cfg.get("shared_pid_ns")
        # A fork-server session shares its pid namespace with the template and other sessions: it
        # finds its own processes by its uid (unique to it), which is all that kill(-1) reaches.
        self.shared_pid_ns = bool(cfg.get("shared_pid_ns"))
        self.uid = os.getuid()
        self.forks_at_start = 0
        self.home = os.getcwd()  # the scratch directory: programs run in fresh folders under it

    @staticmethod
    def _fresh_globals() -> dict:
        return {"__name__": "__main__", "__builtins__": builtins}

    # -- framing ---------------------------------------------------------------------------
    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = os.read(self.req_fd, min(n, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> dict:
        magic, length = _HEADER.unpack(self._read_exact(_HEADER.size))
        if magic != MAGIC or length > _MAX_REQUEST:
            raise EOFError
        return json.loads(self._read_exact(length).decode("utf-8", errors="replace"))

    @staticmethod
    def frame(msg: dict) -> bytes:
        body = json.dumps(msg, ensure_ascii=True).encode("ascii")
        return _HEADER.pack(MAGIC, len(body)) + body

    def send(self, msg: dict, fd: int | None = None) -> None:
        data = memoryview(self.frame(msg))
        fd = self.resp_fd if fd is None else fd
        while data:
            data = data[os.write(fd, data):]

    # -- running code ----------------------------------------------------------------------
    def _set_cpu_limit(self, cpu_s: float) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(usage.ru_utime + usage.ru_stime + cpu_s) + 1
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        except (ValueError, OSError):
            pass

    def _exec(self, code: str, g: dict) -> tuple[bool, str | None]:
        self.cell += 1
        filename = f"<cell-{self.cell}>"
        try:
            try:
                tree = ast.parse(code, filename, "exec")
            except UnicodeEncodeError:
                # Lone surrogates cannot be encoded; inside a string literal the escaped form means
                # the same character, elsewhere it is a plain syntax error either way.
                code = code.encode("utf-8", "backslashreplace").decode("utf-8")
                tree = ast.parse(code, filename, "exec")
            if len(code) < 200_000:
                linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)  # type: ignore[attr-defined]
            exec(compile(tree, filename, "exec"), g)
            if last is not None:
                value = eval(compile(last, filename, "eval"), g)
                if value is not None:
                    g["_"] = value
                    sys.stdout.write(repr(value) + "\n")
            return True, None
        except SystemExit as exc:
            if os.getpid() != self.main_pid:
                os._exit(exc.code if isinstance(exc.code, int) else 1)
            if exc.code is None or exc.code == 0:
                return True, None
            return False, f"SystemExit: {exc.code!r}"
        except BaseException as exc:
            if os.getpid() != self.main_pid:
                os._exit(1)
            return False, _format_exc(exc)
        finally:
            # A process forked by user code must never come back here and speak the protocol.
            if os.getpid() != self.main_pid:
                os._exit(0)

    def _run(self, req: dict, g: dict) -> dict:
        if not self.pid_ns and self.kill_others:
            self.forks_at_start = _forks_since_boot()
        self.capture.start()
        self._set_cpu_limit(float(req.get("cpu_s", 10.0)))
        ok, error = self._exec(str(req.get("code", "")), g)
        output, truncated = self.capture.finish(int(req.get("max_output_chars", 8000)))
        return {"nonce": req.get("nonce"), "ok": ok, "output": output, "error": error, "truncated": truncated}

    def _cleanup_others(self) -> None:
        """No process outlives the call that started it (background forks, fork bombs)."""
        if not self.kill_others:
            self._reap()
            return
        if self.pid_ns:
            # Inside our pid namespace kill(-1, 0) fails with ESRCH once no other process (zombies
            # included) is left: one syscall in the common case.
            def others() -> bool:
                try:
                    os.kill(-1, 0)
                except OSError:
                    return False
                return True
        else:
            # In the host's pid namespace kill(-1, 0) also "finds" processes it may not signal, so
            # look for our uid in /proc, but only when something forked since the call began.
            if _forks_since_boot() == self.forks_at_start:
                self._reap()
                return

            def others() -> bool:
                if self.shared_pid_ns:
                    me = str(self.main_pid)
                    return any(p.isdigit() and p != me and _uid_of(p) == self.uid for p in os.listdir("/proc"))
                return any(pid != self.main_pid for pid in _pids_of_uid(self.uid))
        if not others():
            return
        for _ in range(2000):
            try:
                os.kill(-1, signal.SIGKILL)  # as our private uid / in our pid namespace: only ours
            except OSError:
                pass
            self._reap()
            if not others():
                return
            time.sleep(0.001)

    @staticmethod
    def _reap() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break

    def _run_stateless(self, req: dict) -> dict:
        out = os.memfd_create("agentrl-response", 0)
        before = _forks_since_boot()
        pid = os.fork()
        if pid == 0:
            try:
                self.main_pid = os.getpid()
                os.setpgid(0, 0)
                resp = self._run(req, self._fresh_globals())
                self.send(resp, fd=out)
            finally:
                os._exit(0)
        self.forks_at_start = before + 1  # our own fork; any further one means leftovers to look for
        _, status = os.waitpid(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        self._cleanup_others()
        data = os.pread(out, _MAX_REQUEST, 0)
        os.close(out)
        if len(data) > _HEADER.size:
            try:
                return json.loads(data[_HEADER.size:].decode("ascii"))
            except ValueError:
                pass
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            why = f"the code's process was killed by {name}"
            if sig == signal.SIGXCPU:
                why += " (CPU time limit)"
        else:
            why = f"the code exited its process (exit status {os.WEXITSTATUS(status)})"
        try:
            output, truncated = self.capture.finish(int(req.get("max_output_chars", 8000)))
        except BaseException:
            output, truncated = "", False
        return {"nonce": req.get("nonce"), "ok": False, "output": output, "error": why, "truncated": truncated}

    # -- whole programs (SandboxFusion's /run_code) ------------------------------------------
    def _run_program(self, req: dict) -> dict:
        """Run one program in a fork, in a fresh folder: files in, stdin, exit code, both streams, files out.

        The fork is made from this (never user-run) interpreter, as in :meth:`_run_stateless`; the
        deadline is enforced here, so that after a timeout the output so far and the fetched files still
        come back. Files are written and read by this process, which has the code's uid and mounts.
        """
        nonce = req.get("nonce")
        if self.cfg["mode"] != "stateless":
            return {"nonce": nonce, "error": "programs run only in a stateless sandbox (mode='stateless')"}
        language = req.get("language")
        bash = None
        if language == "bash":
            bash = _which("bash")
            if bash is None:
                return {"nonce": nonce, "error": "bash is not installed in this sandbox"}
        elif language != "python":
            return {"nonce": nonce, "error": f"language {language!r} is not run here; supported: python, bash"}
        run_dir = os.path.join(self.home, "run-" + str(nonce)[:16])
        fds: list = []
        try:
            _unlock_scratch(self.home, self.uid)  # a previous run may have locked it
            os.mkdir(run_dir, 0o700)
        except OSError as exc:
            return {"nonce": nonce, "error": f"could not make the run's working directory: {exc}"}
        try:
            return self._run_in(req, run_dir, bash, fds)
        except OSError as exc:  # no fork (process limit), no memfd...: the sandbox's failure, not the code's
            return {"nonce": nonce, "error": f"the sandbox could not run the program: {exc}"}
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            _remove_tree(run_dir)

    def _run_in(self, req: dict, run_dir: str, bash: str | None, fds: list) -> dict:
        """Write the files, fork the program, wait for it (or its deadline), collect streams and files."""
        nonce = req.get("nonce")
        error = _write_files(run_dir, req.get("files") or {})
        if error:
            return {"nonce": nonce, "error": error}
        for name in ("agentrl-stdout", "agentrl-stderr", "agentrl-stdin"):
            fds.append(os.memfd_create(name))
        out, err, inp = fds[:3]
        stdin = req.get("stdin")
        if stdin:
            data = str(stdin).encode("utf-8", "surrogatepass")
            while data:
                data = data[os.write(inp, data):]
            os.lseek(inp, 0, os.SEEK_SET)
        script = -1
        if bash is not None:
            script = os.memfd_create("agentrl-script")
            fds.append(script)
            data = str(req.get("code", "")).encode("utf-8", "surrogatepass")
            while data:
                data = data[os.write(script, data):]
        timeout = max(float(req.get("timeout_s", 10.0)), 0.001)
        before = _forks_since_boot()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                self._program_child(req, run_dir, out, err, inp, bash, script)
            finally:
                os._exit(70)
        self.forks_at_start = before + 1
        status, rusage, timed_out = _wait_until(pid, start + timeout)
        elapsed = time.monotonic() - start
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        self._cleanup_others()
        if os.WIFSIGNALED(status):
            return_code = -os.WTERMSIG(status)
            timed_out = timed_out or os.WTERMSIG(status) == signal.SIGXCPU
        else:
            return_code = os.WEXITSTATUS(status)
        cpu_s = float(req.get("cpu_s", timeout))
        if return_code != 0 and rusage is not None and rusage.ru_utime + rusage.ru_stime >= cpu_s:
            timed_out = True  # the CPU limit: Python turns its signal into an exception and fails
        cap = int(req.get("max_output_chars", 1_000_000))
        stdout, cut_out = self._read_capped(out, cap)
        stderr, cut_err = self._read_capped(err, cap)
        files, error = _fetch_files(run_dir, req.get("fetch") or [], int(req.get("max_fetch_bytes", 16 << 20)))
        return {"nonce": nonce, "return_code": None if timed_out else return_code, "timed_out": timed_out,
                "stdout": stdout, "stderr": stderr, "truncated": cut_out or cut_err, "elapsed_s": elapsed,
                "files": files, "error": error}

    def _read_capped(self, fd: int, max_chars: int) -> tuple[str, bool]:
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, min(size, self.capture.max_file_bytes + 1024), 0)
        except OSError:
            return "", False
        text = data.decode("utf-8", errors="replace")
        if len(text) <= max_chars:
            return text, False
        return text[:max_chars] + f"\n... [output truncated: {len(text) - max_chars} more characters]", True

    def _program_child(self, req: dict, run_dir: str, out: int, err: int, inp: int, bash: str | None,
                       script: int) -> None:
        """In the fork: the run's folder, streams and limits, then the program; never returns."""
        self.main_pid = os.getpid()
        os.setpgid(0, 0)
        os.chdir(run_dir)
        os.dup2(inp, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (self.req_fd, self.resp_fd):
            try:
                os.set_inheritable(fd, False)  # the control channel is not the program's
            except OSError:
                pass
        self._set_cpu_limit(float(req.get("cpu_s", req.get("timeout_s", 10.0))))
        memory_mb = req.get("memory_mb")
        if memory_mb is not None:
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cap = _vm_bytes() + int(memory_mb) * 1024 * 1024
            if soft == resource.RLIM_INFINITY or cap < soft:
                try:
                    hard = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
                    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
                except (ValueError, OSError):
                    pass
        if bash is not None:
            os.set_inheritable(script, True)
            signal.signal(signal.SIGXCPU, signal.SIG_DFL)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            try:
                os.execve(bash, ["bash", f"/proc/self/fd/{script}"], dict(os.environ))
            except OSError as exc:
                os.write(2, f"bash: cannot run: {exc}\n".encode())
                os._exit(127)
        sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                          buffering=1)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
        sys.argv = ["<run_code>"]
        os._exit(_run_script(str(req.get("code", ""))))

    def serve(self) -> None:
        while True:
            try:
                req = self.recv()
            except (EOFError, OSError, ValueError, struct.error):
                os._exit(0)
            if req.get("op") == "run":
                resp = self._run_program(req)
            elif self.cfg["mode"] == "stateless":
                resp = self._run_stateless(req)
            else:
                resp = self._run(req, self.globals)
                self._cleanup_others()
            try:
                self.send(resp)
            except OSError:
                os._exit(0)


def _which(name: str) -> str | None:
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        path = os.path.join(d or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _inside(run_dir: str, path: str) -> str | None:
    """The absolute form of relative ``path`` under ``run_dir``, or ``None`` when it would leave it."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\0" in path:
        return None
    full = os.path.normpath(os.path.join(run_dir, path))
    return full if full.startswith(run_dir + "/") else None


def _write_files(run_dir: str, files: dict) -> str | None:
    """Write ``{relative path: base64}`` under ``run_dir``; an error message, or ``None``."""
    import base64
    import binascii

    for path, content in files.items():
        full = _inside(run_dir, path)
        if full is None:
            return f"file path {path!r} is outside the run's working directory"
        try:
            data = base64.b64decode(str(content))
        except (binascii.Error, ValueError) as exc:
            return f"files[{path!r}] is not valid base64: {exc}"
        try:
            os.makedirs(os.path.dirname(full), 0o700, exist_ok=True)
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        except OSError as exc:
            return f"could not write files[{path!r}]: {exc.strerror or exc}"
    return None


def _fetch_files(run_dir: str, paths: list, budget: int) -> tuple[dict, str | None]:
    """``{path: base64}`` of the regular files among ``paths`` (missing ones left out), within ``budget`` bytes."""
    import base64
    import stat

    found: dict = {}
    for path in paths:
        full = _inside(run_dir, path)
        if full is None or path in found:
            continue
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO left by the code must not block us
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size > budget:
                return found, (f"fetch_files: {path!r} ({st.st_size} bytes) does not fit in what is left of the "
                               f"{budget} byte limit on fetched files")
            chunks, left = [], st.st_size + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)[: st.st_size]
        except OSError:
            continue
        finally:
            os.close(fd)
        budget -= len(data)
        found[path] = base64.b64encode(data).decode("ascii")
    return found, None


def _unlock_scratch(home: str, uid: int) -> None:
    """Give the scratch folder back its ``0700`` if the code (our uid) locked it; ``OSError`` if it cannot.

    A scratch folder another uid owns (say root's sticky ``/tmp``) is left as it is: the code, which
    runs as ``uid``, cannot have changed its mode, and we may not (``EPERM``).
    """
    if os.stat(home).st_uid == uid:
        os.chmod(home, 0o700)


def _remove_tree(path: str) -> None:
    """Remove a run's folder, even one whose subfolders the code made unreadable (they are our uid's)."""
    import shutil

    try:
        _unlock_scratch(os.path.dirname(path), os.getuid())  # the code may have locked it
    except OSError:
        pass
    try:
        os.chmod(path, 0o700)
        for root, dirs, _ in os.walk(path):  # top-down: each subfolder is opened up before it is entered
            for d in dirs:
                full = os.path.join(root, d)
                if not os.path.islink(full):
                    try:
                        os.chmod(full, 0o700)
                    except OSError:
                        pass
    except OSError:
        pass
    shutil.rmtree(path, ignore_errors=True)


def _wait_until(pid: int, deadline: float) -> tuple[int, resource.struct_rusage, bool]:
    """Wait for child ``pid`` until ``deadline`` (monotonic), then kill its group: (status, rusage, timed out)."""
    import select

    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    delay = 0.0002
    try:
        while True:
            wpid, status, rusage = os.wait4(pid, os.WNOHANG)
            if wpid == pid:
                return status, rusage, False
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if pidfd >= 0:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(left, delay))
                delay = min(delay * 2, 0.01)
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _, status, rusage = os.wait4(pid, 0)
    return status, rusage, True


def _run_script(code: str) -> int:
    """Run ``code`` as a script (``__main__``, no echo of a last expression); its exit status."""
    status = 0
    try:
        try:
            tree = compile(code, "<run_code>", "exec", dont_inherit=True)
        except UnicodeEncodeError:
            code = code.encode("utf-8", "backslashreplace").decode("utf-8")
            tree = compile(code, "<run_code>", "exec", dont_inherit=True)
        if len(code) < 200_000:
            linecache.cache["<run_code>"] = (len(code), None, code.splitlines(True), "<run_code>")
        exec(tree, {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as exc:
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code & 0xFF
        else:
            try:
                sys.stderr.write(f"{exc.code}\n")
            except BaseException:
                pass
            status = 1
    except BaseException as exc:
        try:
            sys.stderr.write(_format_exc(exc) + "\n")
        except BaseException:
            pass
        status = 1
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    return status


def _forks_since_boot() -> int:
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"processes "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return -1


def _pids_of_uid(uid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    found.append(int(name))
            except OSError:
                pass
    return found


def _xcpu_handler(signum: int, frame: object) -> None:
    raise CPUTimeExceeded("CPU time limit exceeded")


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _reaper(inner: int, fds: list[int]) -> None:
    """Process mode: a mini init (subreaper) so that orphans never become zombies of the host.

    It keeps the launching uid (root) and only ever calls waitpid: user code, running under its
    own uid, can neither signal it nor be spared by the parent's cleanup, which kills by uid.
    """
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    status = 0
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == inner:
            status = st
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


# -- the zygote: a pre-imported template that forks one isolated session per episode -------------
#
# Started by bubblewrap as host root with CAP_SETUID/CAP_SETGID only (no user namespace yet). The
# launcher (bwrap's command, pid 2) forks the template, which unshares a user namespace; the launcher
# writes its uid/gid map (an identity map of the host uids [first, first + count): the template's uid
# and the uids of the sessions), drops to the template's uid itself (no capability left anywhere) and
# waits. The template keeps every capability *inside that user namespace only* (none on the host),
# imports numpy/sympy once, freezes its heap for the garbage collector, turns non-dumpable and serves
# requests on a SOCK_SEQPACKET socket. Per sandbox it forks a *branch* (its own network namespace, a
# slice of the uids, its own socket); per episode the branch forks a session, which unshares its own
# mount and IPC namespaces, mounts a fresh size-capped tmpfs on /scratch, /tmp and /dev/shm, drops
# to its own uid, clears every capability (bounding, permitted, effective, ambient), sets
# no_new_privs and the rlimits, then runs the ordinary request loop (Worker) on the pipes the host
# passed in.


def _capset_zero() -> None:
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def _cap_last() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 40


def _loopback_up() -> None:
    import fcntl
    import socket as socket_mod

    with socket_mod.socket(socket_mod.AF_INET, socket_mod.SOCK_DGRAM) as s:
        ifr = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, ifr))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | _IFF_UP))


def _uid_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _session_main(tcfg: dict, scfg: dict, req_fd: int, resp_fd: int, uid: int, failed: list) -> None:
    """In the forked child: isolate, drop everything, then serve requests as an ordinary worker."""
    parent = os.getppid()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in (req_fd, resp_fd):
            try:
                os.close(fd)
            except OSError:
                pass
    _check(_libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC), "unshare")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
    size = int(scfg["scratch_mb"])
    flags = _MS_NOSUID | _MS_NODEV
    _mount("tmpfs", tcfg["scratch_dir"], "tmpfs", flags, f"mode=0700,uid={uid},gid={uid},size={size}m")
    # A venv or checkout under /tmp (a CI clone) must stay importable under the fresh /tmp: keep a handle
    # on each top-most import-path folder there, then bind it back read-only (lazy imports need it).
    under_tmp = sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)
                        and _under(os.path.realpath(p), "/tmp")}, key=len)
    keep: list = []
    for path in under_tmp:
        if not any(_under(path, kept) for kept in keep):
            keep.append(path)
    fds = {path: os.open(path, os.O_PATH) for path in keep}
    _mount("tmpfs", "/tmp", "tmpfs", flags, f"mode=1777,size={size}m")
    for path, fd in fds.items():
        os.makedirs(path, 0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None)
        _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", flags, "mode=1777,size=16m")
    os.chdir(tcfg["scratch_dir"])
    fsize = int(scfg["max_file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    nproc = int(scfg["max_processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    for cap in range(_cap_last() + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0),
                           ctypes.c_ulong(0)), "drop bounding capability")
    os.setresuid(uid, uid, uid)
    # The template's uid is not 0 in the user namespace, so changing uid kept the capabilities:
    # clear them all explicitly, and make sure no exec can bring any back.
    _capset_zero()
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    # Changing uid cleared the parent-death signal: a session never outlives its fork server.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
    cfg = {"req_fd": req_fd, "resp_fd": resp_fd, "mode": scfg["mode"], "process_mode": False, "kill_others": True,
           "shared_pid_ns": True, "max_file_mb": int(scfg["max_file_mb"])}
    worker = Worker(cfg)
    worker.capture.start()
    mem = _vm_bytes() + int(scfg["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    worker.send({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "failed_imports": failed,
                 "template_pid": os.getppid(), "zygote": True})
    worker.serve()


class Template:
    """A fork server: children keyed by the host's ids, each with uids of its own from a free list.

    The root template (started by :func:`_zygote_main`) forks *branches*, one per sandbox: a branch is
    a fork of it with its own network namespace, a slice of the uids and its own socket to the host,
    and it forks that sandbox's sessions. So forks run in parallel across sandboxes, and a session
    shares its network namespace only with the sessions of its own sandbox (like a worker did).
    """

    def __init__(self, cfg: dict, sock, failed: list, uids: list[int], spares: int = 0) -> None:
        self.cfg = cfg
        self.sock = sock
        self.failed = failed
        self.pid = os.getpid()
        self.free = list(uids)
        # The template keeps a few branches forked ahead (while idle), each with the host's end of
        # its socket ready to hand over: a sandbox then gets its branch without waiting for a fork.
        self.spare_target = spares
        self.spares: list[dict] = []  # {"cid", "pid", "uids", "host_fd"}
        self.spare_ids = 0
        self.children: dict[int, dict] = {}  # id -> {"pid", "uids", "status"}
        self.by_pid: dict[int, int] = {}
        self.dying: dict[int, dict] = {}  # killed, not yet known to be gone: their uids are not free yet

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            cid = self.by_pid.pop(pid, None)
            child = self.children.get(cid) if cid is not None else None
            if child is not None and cid is not None:
                child["status"] = status
                if child.get("branch"):
                    self.dying[cid] = child  # its uids are free once nothing runs under them

    def _take_uids(self, n: int) -> list[int] | None:
        deadline = time.monotonic() + 5.0
        while len(self.free) < n:
            # Sessions killed on reset may still be exiting: their uids come back within milliseconds.
            if not self.dying or time.monotonic() > deadline:
                return None
            self.sweep()
            if len(self.free) < n:
                time.sleep(0.001)
        taken, self.free = self.free[:n], self.free[n:]
        return taken

    def _start_child(self, cid: int, uids: list[int], fds: list, run, branch: bool = False) -> dict:
        pid = os.fork()
        if pid == 0:
            try:
                run()
            except BaseException:
                try:
                    traceback.print_exc()
                except BaseException:
                    pass
            os._exit(70)
        for fd in fds:
            os.close(fd)
        self.children[cid] = {"pid": pid, "uids": uids, "status": None, "branch": branch}
        self.by_pid[pid] = cid
        return {"pid": pid, "uids": uids}

    def fork(self, cid: int, scfg: dict, fds: list) -> dict:
        """A session: two pipe fds from the host; it runs under one uid of our free list."""
        if len(fds) != 2:
            return {"error": "expected two pipe fds", "close": fds}
        uids = self._take_uids(1)
        if uids is None:
            return {"error": "no free session uid (too many live sessions)", "close": fds}
        req_fd, resp_fd = fds
        return self._start_child(cid, uids, fds, lambda: _session_main(self.cfg, scfg, req_fd, resp_fd, uids[0],
                                                                      self.failed))

    def _fork_branch(self, cid: int, uids: list[int]) -> dict:
        import socket as socket_mod

        host, child = socket_mod.socketpair(socket_mod.AF_UNIX, socket_mod.SOCK_SEQPACKET)
        child_fd = child.detach()
        reply = self._start_child(cid, uids, [child_fd], lambda: _branch_main(self, child_fd, uids, host),
                                  branch=True)
        reply["host_fd"] = host.detach()
        return reply

    def branch(self, cid: int, count: int, fds: list) -> dict:
        """A branch: a fork server of its own with ``count`` of our uids; the host gets its socket."""
        if fds:
            return {"error": "unexpected fds", "close": fds}
        for spare in self.spares:
            if len(spare["uids"]) == count:
                self.spares.remove(spare)
                child = self.children.pop(spare["cid"])
                self.children[cid] = child
                self.by_pid[child["pid"]] = cid
                return {"pid": child["pid"], "uids": child["uids"], "send_fds": [spare["host_fd"]]}
        uids = self._take_uids(count)
        if uids is None:
            return {"error": f"no {count} free session uids (too many sandboxes on this fork server)"}
        reply = self._fork_branch(cid, uids)
        reply["send_fds"] = [reply.pop("host_fd")]
        return reply

    def add_spare(self) -> None:
        """Fork one more branch ahead of time (when idle), with the uid count last asked for."""
        count = int(self.cfg.get("branch_uids", 5))
        if len(self.free) < count:
            self.spare_target = len(self.spares)  # no room: stop trying
            return
        uids, self.free = self.free[:count], self.free[count:]
        self.spare_ids -= 1
        reply = self._fork_branch(self.spare_ids, uids)
        self.spares.append({"cid": self.spare_ids, "host_fd": reply["host_fd"], "uids": uids})

    def kill_soon(self, cid: int) -> dict:
        """SIGKILL the session's interpreter and leave the rest to :meth:`sweep` (between requests)."""
        child = self.children.get(cid)
        if child is None:
            return {"status": None}
        if child["status"] is None:
            try:
                os.kill(child["pid"], signal.SIGKILL)
            except OSError:
                pass
        self.dying[cid] = child
        return {"status": child["status"]}

    def _pids_by_uid(self, uids: set[int]) -> dict[int, list[int]]:
        left: dict[int, list[int]] = {}
        for p in os.listdir("/proc"):
            if p.isdigit():
                uid = _uid_of(p)
                if uid in uids:
                    left.setdefault(uid, []).append(int(p))
        return left

    def sweep(self) -> None:
        """Finish killed children: once nothing runs under a child's uids, free them.

        Only children whose own process has exited are checked (one scan of ``/proc`` for all of
        them): between calls a session has no other process (its request loop kills them), so
        the scan almost always finds nothing and the uids come back at once.
        """
        self.reap()
        exited = {cid: child for cid, child in self.dying.items() if child["status"] is not None}
        if not exited:
            return
        left = self._pids_by_uid({uid for child in exited.values() for uid in child["uids"]})
        for cid, child in exited.items():
            pids = [pid for uid in child["uids"] for pid in left.get(uid, [])]
            if pids or child["status"] is None:
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                continue
            del self.dying[cid]
            self.children.pop(cid, None)
            self.free.extend(child["uids"])

    def kill(self, cid: int) -> dict:
        """Kill every process of the child's uids (no process can change uid), reap it, free the uids."""
        child = self.children.get(cid)
        if child is None:
            return {"status": None}
        self.dying.pop(cid, None)
        uids = set(child["uids"])
        deadline = time.monotonic() + 10.0
        first = True
        while True:
            self.reap()
            left = self._pids_by_uid(uids)
            pids = [pid for found in left.values() for pid in found]
            if not pids and child["status"] is not None:
                break
            if first and child["status"] is None:
                # The common case: the session's own process only. Kill it and wait for it to exit.
                first = False
                for pid in [child["pid"], *pids]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                try:
                    _, status = os.waitpid(child["pid"], 0)
                    self.by_pid.pop(child["pid"], None)
                    child["status"] = status
                except ChildProcessError:
                    pass
                continue
            if time.monotonic() > deadline:
                return {"error": "the session's processes would not die", "status": child["status"]}
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.0005)
        del self.children[cid]
        self.free.extend(child["uids"])
        return {"status": child["status"]}

    def status(self, cid: int, wait_s: float) -> dict:
        child = self.children.get(cid)
        if child is None:
            return {"status": None}
        deadline = time.monotonic() + min(max(wait_s, 0.0), 5.0)
        while True:
            self.reap()
            if child["status"] is not None or time.monotonic() >= deadline:
                return {"status": child["status"]}
            time.sleep(0.001)

    def close_all(self) -> None:
        """The host hung up: kill every child (and so everything under our uids) before exiting."""
        for cid in list(self.children):
            self.kill(cid)

    def serve(self) -> None:
        import select
        import socket as socket_mod

        while True:
            if self.dying or len(self.spares) < self.spare_target:
                try:
                    ready, _, _ = select.select([self.sock], [], [], 0.05 if self.dying else 0.0)
                except InterruptedError:
                    ready = []
                if not ready:
                    self.sweep()
                    if len(self.spares) < self.spare_target:
                        self.add_spare()
                    continue
            try:
                data, fds, _, _ = socket_mod.recv_fds(self.sock, 1 << 20, 8)
            except InterruptedError:
                continue
            except OSError:
                data, fds = b"", []
            if not data:
                self.close_all()
                os._exit(0)
            try:
                msg = json.loads(data.decode("utf-8", "replace"))
                op = msg.get("op")
                cid = int(msg.get("id", -1))
                if op == "fork":
                    reply = self.fork(cid, msg["cfg"], list(fds))
                elif op == "branch":
                    reply = self.branch(cid, int(msg["uids"]), list(fds))
                elif op == "kill" and msg.get("wait", True):
                    reply = self.kill(cid)
                elif op == "kill":
                    reply = self.kill_soon(cid)
                elif op == "status":
                    reply = self.status(cid, float(msg.get("wait_s", 0.0)))
                else:
                    reply = {"error": f"unknown op {op!r}", "close": fds}
            except Exception as exc:  # a bug of ours: say so, keep serving
                reply = {"error": repr(exc), "close": fds}
            for fd in reply.pop("close", []):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.reap()
            send_fds = reply.pop("send_fds", [])
            try:
                if send_fds:
                    socket_mod.send_fds(self.sock, [json.dumps(reply).encode("ascii")], send_fds)
                else:
                    self.sock.send(json.dumps(reply).encode("ascii"))
            except OSError:
                self.close_all()
                os._exit(0)
            finally:
                for fd in send_fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass


def _branch_main(parent: Template, sock_fd: int, uids: list[int], host_end) -> None:
    """In a branch: forget the parent's sockets and children, get a network namespace, serve."""
    import socket as socket_mod

    parent.sock.close()
    host_end.close()
    for spare in parent.spares:
        try:
            os.close(spare["host_fd"])
        except OSError:
            pass
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent.pid:
        os._exit(1)
    _check(_libc.unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    try:
        _loopback_up()
    except OSError:
        pass
    sock = socket_mod.socket(fileno=sock_fd)
    Template(parent.cfg, sock, parent.failed, uids).serve()


def _template_main(cfg: dict) -> None:
    import site
    import socket as socket_mod

    for d in cfg["site_dirs"]:
        site.addsitedir(d)
    failed = []
    for name in cfg["preimport"]:
        try:
            __import__(name)
        except BaseException:
            failed.append(name)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, _xcpu_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Every object imported so far goes to the permanent generation: the sessions' garbage collector
    # then never walks (and so never copies on write) the template's heap, which keeps each session's
    # private memory small and the template's next fork fast (forks slow down as children dirty it).
    import gc

    gc.collect()
    gc.freeze()
    # Sessions run under other uids, but a process that cannot be dumped cannot be ptraced or have
    # its /proc/<pid>/mem or environ read even by a process of its own uid without CAP_SYS_PTRACE.
    _prctl(_PR_SET_DUMPABLE, 0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sock = socket_mod.socket(fileno=cfg["ctl_fd"])
    first = cfg["first_uid"]
    template = Template(cfg, sock, failed, list(range(first + 1, first + cfg["uid_count"])),
                        spares=int(cfg.get("spare_branches", 0)))
    sock.send(json.dumps({"ready": True, "template_pid": os.getpid(), "uid": os.getuid(),
                          "failed_imports": failed}).encode("ascii"))
    template.serve()


def _zygote_main(cfg: dict) -> None:
    """bwrap's command: set up the user namespace of the template, then only wait for it."""
    for key, value in cfg["env"].items():
        os.environ[key] = value
    first, count = cfg["first_uid"], cfg["uid_count"]
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        os.close(done_r)
        _check(_libc.unshare(_CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
        os.write(done_w, b"u")
        os.close(done_w)
        if os.read(go_r, 1) != b"g":
            os._exit(1)
        os.close(go_r)
        os.setgroups([])
        os.setresgid(first, first, first)
        os.setresuid(first, first, first)
        _template_main(cfg)
        os._exit(0)
    os.close(go_r)
    os.close(done_w)
    if os.read(done_r, 1) != b"u":
        os._exit(1)
    os.close(done_r)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(f"{first} {first} {count}\n")
    os.write(go_w, b"g")
    os.close(go_w)
    os.close(cfg["ctl_fd"])
    # Nothing left to do as root: become the template's uid, which drops every capability.
    os.setgroups([])
    os.setresgid(first, first, first)
    os.setresuid(first, first, first)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    cfg = json.loads(sys.argv[1])
    if cfg.get("zygote"):
        _zygote_main(cfg)
        return
    for key, value in cfg["env"].items():
        os.environ[key] = value
    if cfg["process_mode"]:
        if cfg["drop_to"] is not None:
            _check(_libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET), "unshare")
            _private_mounts(cfg)
        else:
            try:  # unprivileged: a user namespace lets us own a private, empty network namespace
                _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET), "unshare")
            except OSError:
                pass
    import site

    for d in cfg["site_dirs"]:
        site.addsitedir(d)
    failed = []
    for name in cfg["preimport"]:
        try:
            __import__(name)
        except BaseException:
            failed.append(name)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGXCPU, _xcpu_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = cfg["max_file_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    nproc = cfg["max_processes"]
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    fds = [cfg["req_fd"], cfg["resp_fd"]]
    if cfg["process_mode"]:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != cfg["parent_pid"]:
            os._exit(1)
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        inner = os.fork()
        if inner != 0:
            _reaper(inner, fds)
    drop = cfg["drop_to"]
    if drop is not None:
        os.setgroups([])
        os.setgid(drop)
        os.setuid(drop)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    if cfg["process_mode"]:
        # Changing uid cleared the parent-death signal; a worker must never outlive its reaper.
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:
            os._exit(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    worker = Worker(cfg)
    worker.capture.start()
    # The address-space cap is measured after the imports, so it is what *user code* may add.
    mem = _vm_bytes() + cfg["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    worker.send({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "failed_imports": failed})
    worker.serve()


if __name__ == "__main__":
    main()
