"""The ``docker`` sandbox tier: a warm pool of locked-down containers, one persistent worker in each.

Each container runs the same worker program as :class:`agentrl.sandboxes.python.PythonSandbox`
(``_worker.py``) as its main process (pid 1), and the worker speaks its framed protocol over the
container's attached stdin/stdout: one hijacked connection to the engine per container, multiplexed
with Docker's 8-byte stream headers. So a call is one round trip through the engine (about a
millisecond), not a ``docker exec`` or a container start.

Containers: no network (``network_mode="none"``), read-only root, a size-capped ``/tmp`` tmpfs (mode
0700, owned by uid 1000) as the only writable place (and the cwd), memory/CPU/pids limits in the
cgroup, uid 1000, every capability dropped, ``no-new-privileges``, and the worker's rlimits (address
space, CPU seconds, file size) inside. A call past its deadline, or a container that dies, is killed
and replaced by a warm spare.

The pool and the request protocol are :mod:`agentrl.sandboxes.pool`, shared with the process tier;
this module starts the containers and is their transport (the attached stream).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
import uuid
import weakref
from typing import Any, Literal

from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
from agentrl.sandboxes.pool import (
    DEFAULT_PREIMPORT,
    MAX_FRAME,
    MODES,
    STARTUP_TIMEOUT_S,
    ChannelCorrupt,
    PooledSandbox,
    WorkerPool,
    await_ready,
    check_option,
)

__all__ = ["DockerSandbox"]

_LABEL = "agentrl.sandbox"
_OWNER_LABEL = "agentrl.sandbox.owner"
_UID = 1000  # the image's ``sandbox`` user: the worker and the code run as it, and it owns /tmp
_NPROC = 4096  # per-uid and shared by every container on the host: the pids cgroup is the real cap
_DIED = "the container died and was replaced"


class _Container:
    """One started container, its attached socket and the demultiplexed stdout buffer: a pool ``WorkerTransport``."""

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
        """Whether the stream is open (the worker is the container's pid 1: its exit ends the stream)."""
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
        if len(self.out) > MAX_FRAME + 16:
            raise ChannelCorrupt("too much data on the control channel")

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

    def read(self, n: int, deadline: float) -> bytes:
        """Read exactly ``n`` bytes of the worker's stdout."""
        while len(self.out) < n:
            self._pump(deadline)
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def pending(self) -> bool:
        """Whether the worker wrote to stdout unasked."""
        with contextlib.suppress(TimeoutError):
            self._pump(None)
        return bool(self.out)

    def write(self, data: bytes, deadline: float) -> None:
        """Write ``data`` to the worker's stdin."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            _, w, _ = select.select([], [self.sock], [], left)
            if not w:
                raise TimeoutError
            try:
                n = self.sock.send(view[: 1 << 20], socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                continue
            view = view[n:]

    def state(self) -> dict:
        """The engine's view of the container (``Running``, ``ExitCode``, ``OOMKilled``...)."""
        with contextlib.suppress(Exception):
            return dict(self.client.api.inspect_container(self.id).get("State") or {})
        return {}

    def exit_reason(self) -> str:
        """How the container ended, from the engine (asked before the container is removed)."""
        state = {}
        for _ in range(20):  # the engine notices the exit a moment after the stream ends
            state = self.state()
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


def _finalize(pool: WorkerPool, client: Any, owner: str) -> None:
    pool.close()
    _remove_labelled(client, owner)


class DockerSandbox(PooledSandbox):
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
        SandboxOptionError: an unknown ``mode``.

    """

    isolation_level = "docker"
    _restart_note = "the interpreter was restarted in a new container"
    _corrupt_note = "; the container was replaced"
    _lost_note = {"session": "; its variables are lost", "stateless": ""}

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
        preimport: tuple[str, ...] | list[str] = DEFAULT_PREIMPORT,
    ) -> None:
        """Connect to the engine, make sure of the image, and start warming containers."""
        check_option("mode", mode, MODES)
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
        self._pool: WorkerPool[_Container] = WorkerPool(self._spawn, max(0, int(pool_size)))
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
            # owned by the sandbox uid and private to it, like the other tiers' scratch: the worker must
            # be able to give it back its mode after code locked it (root's 1777 /tmp: EPERM)
            tmpfs={"/tmp": f"size={self.tmpfs_mb}m,mode=0700,uid={_UID},gid={_UID}"},
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
            user=f"{_UID}:{_UID}",
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
            await_ready(box, time.monotonic() + STARTUP_TIMEOUT_S)
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

    def __repr__(self) -> str:
        """Show the image and the mode."""
        return f"DockerSandbox(image={self.image!r}, mode={self.mode!r})"
