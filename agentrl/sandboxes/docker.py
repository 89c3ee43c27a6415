"""The ``docker`` sandbox tier: a warm pool of locked-down containers, one persistent worker in each.

Each container runs the same worker program as :class:`agentrl.sandboxes.python.PythonSandbox`
(``_worker.py``) as its main process (pid 1), and the worker speaks its framed protocol over the
container's attached stdin/stdout: one hijacked connection to the engine per container, multiplexed
with Docker's 8-byte stream headers. So a call is one round trip through the engine (about a
millisecond), not a ``docker exec`` or a container start.

Containers: no network (``network_mode="none"``), read-only root, a size-capped ``/tmp`` tmpfs as the
only writable place (and the cwd), memory/CPU/pids limits in the cgroup, uid 1000, every capability
dropped, ``no-new-privileges``, and the worker's rlimits (address space, CPU seconds, file size)
inside. A call past its deadline, or a container that dies, is killed and replaced by a warm spare.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
import threading
import time
import uuid
import weakref
from typing import Any, Literal

from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, FinalizedSandbox
from agentrl.sandboxes.python import _DEFAULT_PREIMPORT, _Pool

__all__ = ["DockerSandbox"]

_MAGIC = b"AGRL"
_HEADER = struct.Struct(">4sI")
_MAX_RESPONSE = 64 * 1024 * 1024
_STARTUP_TIMEOUT_S = 120.0
_LABEL = "agentrl.sandbox"
_OWNER_LABEL = "agentrl.sandbox.owner"
_NPROC = 4096  # per-uid and shared by every container on the host: the pids cgroup is the real cap
_DIED = "the container died and was replaced"


class _Corrupt(Exception):
    pass


class _Container:
    """One started container, its attached socket and the demultiplexed stdout buffer."""

    def __init__(self, client: Any, container_id: str, sock: Any, response: Any) -> None:
        self.client = client
        self.id = container_id
        self._io = sock
        self._response = response  # keeps the hijacked HTTP connection open
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._raw = bytearray()
        self.out = bytearray()
        self.err = bytearray()
        self.eof = False
        self.dead = False
        self.info: dict = {}

    def alive(self) -> bool:
        return not self.dead and not self.eof

    def fileno(self) -> int:
        return self.sock.fileno()

    # -- the attached stream ---------------------------------------------------------------
    def _demux(self) -> None:
        raw = self._raw
        while len(raw) >= 8:
            size = int.from_bytes(raw[4:8], "big")
            if len(raw) < 8 + size:
                break
            stream, payload = raw[0], bytes(raw[8 : 8 + size])
            del raw[: 8 + size]
            if stream == 1:
                self.out += payload
            elif stream == 2 and len(self.err) < 65536:
                self.err += payload[: 65536 - len(self.err)]
        if len(self.out) > _MAX_RESPONSE + 16:
            raise _Corrupt("too much data on the control channel")

    def _pump(self, deadline: float | None) -> None:
        """Read once (waiting until ``deadline``; ``None``: only what is there now)."""
        if self.eof:
            raise EOFError
        left = 0.0 if deadline is None else deadline - time.monotonic()
        if deadline is not None and left <= 0:
            raise TimeoutError
        r, _, _ = select.select([self.sock], [], [], max(left, 0.0))
        if not r:
            if deadline is None:
                return
            raise TimeoutError
        try:
            chunk = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.eof = True
            raise EOFError from exc
        if not chunk:
            self.eof = True
            raise EOFError
        self._raw += chunk
        self._demux()

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self.out) < n:
            self._pump(deadline)
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def recv(self, deadline: float) -> dict:
        magic, length = _HEADER.unpack(self._take(_HEADER.size, deadline))
        if magic != _MAGIC or length > _MAX_RESPONSE:
            raise _Corrupt("bad frame header")
        try:
            msg = json.loads(self._take(length, deadline).decode("utf-8", errors="replace"))
        except ValueError as exc:
            raise _Corrupt("bad frame body") from exc
        if not isinstance(msg, dict):
            raise _Corrupt("bad frame body")
        return msg

    def unsolicited(self) -> bool:
        with contextlib.suppress(TimeoutError):
            self._pump(None)
        return bool(self.out)

    def send(self, msg: dict, deadline: float) -> None:
        body = json.dumps(msg, ensure_ascii=True).encode("ascii")
        data = memoryview(_HEADER.pack(_MAGIC, len(body)) + body)
        while data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            _, w, _ = select.select([], [self.sock], [], left)
            if not w:
                raise TimeoutError
            try:
                n = self.sock.send(data[: 1 << 20], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            data = data[n:]

    def state(self) -> dict:
        with contextlib.suppress(Exception):
            return dict(self.client.api.inspect_container(self.id).get("State") or {})
        return {}

    def kill(self) -> None:
        """Close the stream and remove the container (and everything running in it)."""
        if self.dead:
            return
        self.dead = True
        for obj in (self.sock, self._io, self._response):
            with contextlib.suppress(Exception):
                obj.close()
        with contextlib.suppress(Exception):
            self.client.api.remove_container(self.id, force=True, v=True)


def _remove_labelled(client: Any, owner: str) -> None:
    with contextlib.suppress(Exception):
        for c in client.api.containers(all=True, filters={"label": f"{_OWNER_LABEL}={owner}"}):
            with contextlib.suppress(Exception):
                client.api.remove_container(c["Id"], force=True, v=True)


def _finalize(pool: _Pool, client: Any, owner: str) -> None:
    pool.close()
    _remove_labelled(client, owner)


class DockerSandbox(FinalizedSandbox):
    r"""Run untrusted Python in warm, locked-down Docker containers (same semantics as PythonSandbox).

    Args:
        client: a ``docker.DockerClient``; ``docker.from_env()`` (``DOCKER_HOST``) when ``None``.
        image: an image with ``python3`` and the worker (see :func:`agentrl.sandboxes.dockerd.ensure_image`);
            built on the engine when ``None``.
        pool_size: spare containers kept started and warm (reset and replacements swap one in).
        timeout_s: default wall-clock deadline per call; past it the container is killed and replaced.
        cpu_s: CPU seconds per call (``RLIMIT_CPU``); defaults to ``timeout_s``.
        memory_mb: address space user code may add (``RLIMIT_AS``); the container's memory cgroup is
            this plus the tmpfs plus 64 MB, so the rlimit trips first (``MemoryError``).
        cpus: CPU share of the container (``nano_cpus``).
        pids: processes and threads in the container (pids cgroup).
        tmpfs_mb: size of ``/tmp``, the only writable directory (and the cwd).
        max_file_mb: ``RLIMIT_FSIZE`` (and the cap on raw captured output).
        max_output_chars: output is cut to this many characters, with a visible marker.
        mode: ``"session"`` keeps variables until :meth:`reset`; ``"stateless"`` runs each call in a
            fork of the warm worker.
        preimport: modules imported once per container before any user code (missing ones skipped).

    Attributes:
        isolation: human-readable description of what is in force.
        isolation_level: ``"docker"``.

    Raises:
        DependencyNotInstalled: the ``docker`` SDK is missing (``pip install 'agentrl-gym[docker]'``).
        SandboxUnavailable: no engine answers, or the image cannot be built.

    """

    isolation_level = "docker"

    def __init__(
        self,
        *,
        client: Any = None,
        image: str | None = None,
        pool_size: int = 1,
        timeout_s: float = 10.0,
        cpu_s: float | None = None,
        memory_mb: int = 512,
        cpus: float = 1.0,
        pids: int = 64,
        tmpfs_mb: int = 64,
        max_file_mb: int = 16,
        max_output_chars: int = 8000,
        mode: Literal["session", "stateless"] = "session",
        preimport: tuple[str, ...] | list[str] = _DEFAULT_PREIMPORT,
    ) -> None:
        """Connect to the engine, make sure of the image, and start warming containers."""
        if mode not in ("session", "stateless"):
            raise ValueError(f"mode must be 'session' or 'stateless', not {mode!r}")
        try:
            import docker
        except ImportError as exc:
            raise DependencyNotInstalled("docker", extra="docker") from exc
        self._docker = docker
        if client is None:
            try:
                client = docker.from_env(timeout=120)
                client.ping()
            except Exception as exc:
                raise SandboxUnavailable(
                    f"no Docker engine answers ({exc}); start one (sudo apt-get install -y docker.io; "
                    f"agentrl.sandboxes.dockerd.PrivateDockerDaemon) and set DOCKER_HOST"
                ) from exc
        self.client = client
        if image is None:
            from agentrl.sandboxes.dockerd import ensure_image

            image = ensure_image(client)
        self.image = image
        self.mode = mode
        self.timeout_s = float(timeout_s)
        self.cpu_s = float(cpu_s if cpu_s is not None else timeout_s)
        self.memory_mb = int(memory_mb)
        self.cpus = float(cpus)
        self.pids = int(pids)
        self.tmpfs_mb = int(tmpfs_mb)
        self.max_file_mb = int(max_file_mb)
        self.max_output_chars = int(max_output_chars)
        self.preimport = tuple(preimport)
        self._owner = uuid.uuid4().hex
        self._lock = threading.RLock()
        self._closed = False
        self.isolation = (
            f"docker ({self.image}): no network, read-only root, {self.tmpfs_mb} MB tmpfs /tmp as the only "
            f"writable place, memory {self.memory_mb} MB (+cgroup cap), {self.cpus:g} CPU, {self.pids} pids, "
            f"uid 1000, all capabilities dropped, no-new-privileges, rlimits (CPU {self.cpu_s:g}s, "
            f"file {self.max_file_mb} MB), {self.timeout_s:g}s deadline per call"
        )
        self._pool = _Pool(self._spawn, max(0, int(pool_size)))
        self._finalizer = weakref.finalize(self, _finalize, self._pool, client, self._owner)

    # -- containers ------------------------------------------------------------------------
    def _spawn(self) -> _Container:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONIOENCODING": "utf-8:backslashreplace",
            "USER": "sandbox",
            "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        cfg = {
            "mode": self.mode,
            "process_mode": False,
            "drop_to": None,
            "kill_others": True,
            "env": env,
            "preimport": list(self.preimport),
            "site_dirs": ["/usr/lib/python3/dist-packages"],  # Debian's numpy and sympy (python -S skips site)
            "max_file_mb": self.max_file_mb,
            "max_processes": _NPROC,
            "memory_mb": self.memory_mb,
            "parent_pid": 0,
            "scratch": "/tmp",
            "scratch_mb": self.tmpfs_mb,
            "keep_paths": [],
            "hide_dirs": [],
        }
        mem = self.memory_mb + self.tmpfs_mb + 64
        ulimit = self._docker.types.Ulimit
        api = self.client.api
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"size={self.tmpfs_mb}m,mode=1777"},
            mem_limit=f"{mem}m",
            memswap_limit=f"{mem}m",
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=self.pids,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            shm_size=f"{max(1, self.tmpfs_mb // 4)}m",
            ulimits=[ulimit(name="nproc", soft=_NPROC, hard=_NPROC), ulimit(name="core", soft=0, hard=0)],
            init=False,
            auto_remove=False,
        )
        created = api.create_container(
            self.image,
            command=[json.dumps(cfg)],
            stdin_open=True,
            tty=False,
            user="1000:1000",
            working_dir="/tmp",
            environment=env,
            network_disabled=True,
            host_config=host_config,
            labels={_LABEL: "1", _OWNER_LABEL: self._owner},
        )
        cid = created["Id"]
        box: _Container | None = None
        try:
            sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            box = _Container(self.client, cid, sock, getattr(sock, "_response", None))
            api.start(cid)
            ready = box.recv(time.monotonic() + _STARTUP_TIMEOUT_S)
            if not ready.get("ready"):
                raise OSError("unexpected first message")
            box.info = ready
        except Exception as exc:
            err = bytes(box.err).decode("utf-8", "replace")[-2000:] if box is not None else ""
            if box is not None:
                box.kill()
            else:
                with contextlib.suppress(Exception):
                    api.remove_container(cid, force=True, v=True)
            raise SandboxUnavailable(
                f"the sandbox container failed to start ({exc!r}); image {self.image}; stderr: {err or '<empty>'}"
            ) from exc
        return box

    def _active(self) -> _Container:
        pool = self._pool
        active = pool.active
        if active is None or active.dead:
            active = pool.take(_STARTUP_TIMEOUT_S)
        return active

    def _replace(self, box: _Container) -> None:
        box.kill()  # synchronously: nothing the timed-out code started keeps running
        with self._pool.cond:
            if self._pool.active is box:
                self._pool.active = None
            self._pool.cond.notify_all()

    # -- public API --------------------------------------------------------------------------
    def reset(self) -> None:
        """Throw the container (its variables and /tmp) away and switch to a warm spare."""
        with self._lock:
            self._check_open()
            old, self._pool.active = self._pool.active, None
            self._pool.discard(old)
            with self._pool.cond:
                self._pool.cond.notify_all()

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run ``request.code`` in the active container; never raises because of what the code does."""
        with self._lock:
            self._check_open()
            start = time.monotonic()
            timeout = self.timeout_s if request.timeout_s is None else float(request.timeout_s)
            box = self._active()
            deadline = time.monotonic() + timeout
            nonce = uuid.uuid4().hex
            code = request.code
            if isinstance(code, (bytes, bytearray)):
                code = bytes(code).decode("utf-8", errors="replace")
            msg = {
                "nonce": nonce,
                "code": str(code),
                "cpu_s": min(self.cpu_s, timeout),
                "max_output_chars": self.max_output_chars,
            }
            try:
                if box.unsolicited():
                    raise _Corrupt("unsolicited data on the control channel")
                box.send(msg, deadline)
                resp = box.recv(deadline)
                if resp.get("nonce") != nonce:
                    raise _Corrupt("reply does not match the request")
            except TimeoutError:
                self._replace(box)
                return ExecutionResult(
                    ok=False,
                    output="",
                    timed_out=True,
                    latency_s=time.monotonic() - start,
                    error=f"timed out after {timeout:g}s; the interpreter was restarted in a "
                    f"new container and its variables are lost",
                )
            except (OSError, EOFError, ValueError, _Corrupt) as exc:
                why = self._why_died(box, exc)
                self._replace(box)
                lost = "; its variables are lost" if self.mode == "session" else ""
                return ExecutionResult(ok=False, output="", error=why + lost, latency_s=time.monotonic() - start)
            output = resp.get("output") or ""
            if not isinstance(output, str):
                output = str(output)
            error = resp.get("error")
            return ExecutionResult(
                ok=bool(resp.get("ok")),
                output=output,
                error=None if error is None else str(error),
                truncated=bool(resp.get("truncated")),
                latency_s=time.monotonic() - start,
            )

    def _why_died(self, box: _Container, exc: BaseException) -> str:
        if isinstance(exc, _Corrupt):
            return f"the code corrupted the sandbox's control channel ({exc}); the container was replaced"
        state = {}
        for _ in range(20):  # the engine notices the exit a moment after the stream ends
            state = box.state()
            if not state.get("Running", False):
                break
            time.sleep(0.01)
        details = []
        if state.get("OOMKilled"):
            details.append("out of memory")
        code = state.get("ExitCode")
        if isinstance(code, int) and not state.get("Running", False):
            details.append(f"exit status {code}" if code < 128 else f"killed by signal {code - 128}")
        return _DIED + (f" ({', '.join(details)})" if details else "")

    def __repr__(self) -> str:
        """Show the image and the mode."""
        return f"DockerSandbox(image={self.image!r}, mode={self.mode!r})"
