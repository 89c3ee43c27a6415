"""The pooled-interpreter protocol, once: warm workers, framed requests, deadlines, results.

Two tiers run our worker program (``_worker.py``) and talk to it the same way:
:class:`~agentrl.sandboxes.python.PythonSandbox` (a subprocess, under bubblewrap when installed) over a
pair of pipes, and :class:`~agentrl.sandboxes.docker.DockerSandbox` (the worker is the container's main
process) over the container's attached stream. What differs is how a worker starts, how bytes reach it,
how it is killed and how its death is explained: that is a :class:`WorkerTransport`. Everything else
lives here:

* framing: a message is ``b"AGRL"``, a big-endian ``uint32`` length and an ASCII JSON object (at most
  64 MiB); the worker's first message is ``{"ready": true, ...}``;
* :class:`WorkerPool`: one *active* worker plus ``size`` warm spares, all started by one long-lived
  thread; a dead or discarded worker is killed in the background while a spare takes over;
* :class:`PooledSandbox`: ``reset()`` swaps in a spare; ``execute()`` sends the code with a fresh nonce,
  reads the reply against one deadline, and maps the outcome into an
  :class:`~agentrl.sandboxes.base.ExecutionResult`: a reply (``ok``/``output``/``error``/``truncated``),
  a timeout (the worker and everything it started are killed and replaced), or a dead worker or a
  corrupted channel (unsolicited bytes, a bad frame, a reply to another nonce: killed and replaced);
  ``run_program()`` (stateless mode) runs one whole program the same way (``op: "run"``), see
  :mod:`agentrl.sandboxes.program`.

>>> from agentrl.sandboxes.python import PythonSandbox
>>> issubclass(PythonSandbox, PooledSandbox)
True
>>> decode_header(encode_frame({"a": 1})[:HEADER.size])
8
"""

from __future__ import annotations

import json
import struct
import threading
import time
import uuid
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from agentrl.core.choices import did_you_mean
from agentrl.core.errors import AgentRLError, SandboxOptionError, SandboxUnavailable
from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, FinalizedSandbox
from agentrl.sandboxes.program import ProgramRequest, ProgramResult

__all__ = [
    "DEFAULT_PREIMPORT",
    "HEADER",
    "MAGIC",
    "MAX_FRAME",
    "MODES",
    "STARTUP_TIMEOUT_S",
    "ChannelCorrupt",
    "PooledSandbox",
    "WorkerPool",
    "WorkerTransport",
    "await_ready",
    "check_option",
    "decode_header",
    "encode_frame",
    "recv_frame",
    "send_frame",
]

MAGIC = b"AGRL"
HEADER = struct.Struct(">4sI")
MAX_FRAME = 64 * 1024 * 1024
STARTUP_TIMEOUT_S = 120.0
MODES = ("session", "stateless")
#: how long past a program's own deadline the host waits for the worker's answer (files, cleanup)
_PROGRAM_GRACE_S = 10.0
#: fetched files of one program run, in bytes before base64 (a reply frame is at most MAX_FRAME)
_MAX_FETCH_BYTES = 16 * 1024 * 1024
DEFAULT_PREIMPORT = ("math", "fractions", "itertools", "functools", "collections", "numpy", "sympy")


class ChannelCorrupt(AgentRLError):
    """The control channel carries something the protocol does not allow (the code wrote to it)."""


class WorkerTransport(Protocol):
    """One started worker and the byte channel to it; what a tier implements for the pool.

    ``read`` and ``write`` raise ``TimeoutError`` past ``deadline`` (a ``time.monotonic()`` value),
    ``EOFError`` or ``OSError`` when the worker is gone, and may raise :class:`ChannelCorrupt`.
    """

    info: dict
    """The worker's ready message (its pid, what it pre-imported...)."""
    dead: bool
    """``kill()`` has been called."""

    def alive(self) -> bool:
        """Whether the worker still runs and its channel is open."""
        ...

    def pending(self) -> bool:
        """Whether bytes the worker sent unasked are waiting (between calls: a corrupted channel)."""
        ...

    def write(self, data: bytes, deadline: float) -> None:
        """Write all of ``data`` to the worker."""
        ...

    def read(self, n: int, deadline: float) -> bytes:
        """Read exactly ``n`` bytes from the worker."""
        ...

    def kill(self) -> None:
        """Kill the worker and everything it started and release its resources; idempotent."""
        ...

    def exit_reason(self) -> str:
        """Why the worker is gone, in words for the agent (exit status, signal, out of memory...)."""
        ...


W = TypeVar("W", bound=WorkerTransport)


# -- framing -----------------------------------------------------------------------------------
def encode_frame(msg: dict) -> bytes:
    """One framed message: magic, length, ASCII JSON."""
    body = json.dumps(msg, ensure_ascii=True).encode("ascii")
    return HEADER.pack(MAGIC, len(body)) + body


def decode_header(header: bytes) -> int:
    """The body length a frame header announces; :class:`ChannelCorrupt` for a bad header."""
    magic, length = HEADER.unpack(header)
    if magic != MAGIC or length > MAX_FRAME:
        raise ChannelCorrupt("bad frame header")
    return int(length)


def send_frame(worker: WorkerTransport, msg: dict, deadline: float) -> None:
    """Write ``msg`` to ``worker`` as one frame."""
    worker.write(encode_frame(msg), deadline)


def recv_frame(worker: WorkerTransport, deadline: float) -> dict:
    """Read one frame from ``worker``: a JSON object, else :class:`ChannelCorrupt`."""
    length = decode_header(worker.read(HEADER.size, deadline))
    try:
        msg = json.loads(worker.read(length, deadline).decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise ChannelCorrupt("bad frame body") from exc
    if not isinstance(msg, dict):
        raise ChannelCorrupt("bad frame body")
    return msg


def await_ready(worker: WorkerTransport, deadline: float) -> dict:
    """Wait for a freshly started worker's ready message, keep it in ``worker.info`` and return it."""
    ready = recv_frame(worker, deadline)
    if not ready.get("ready"):
        raise OSError("unexpected first message")
    worker.info = ready
    return ready


def check_option(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise :class:`SandboxOptionError` naming them.

    >>> check_option("mode", "sesion", MODES)
    Traceback (most recent call last):
    ...
    agentrl.core.errors.SandboxOptionError: mode must be 'session' or 'stateless', not 'sesion'; did you mean 'session'?
    """
    if value in choices:
        return str(value)
    names = [repr(c) for c in choices]
    allowed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    raise SandboxOptionError(f"{name} must be {allowed}, not {value!r}{did_you_mean(value, choices)}")


# -- the pool ----------------------------------------------------------------------------------
def _kill_discarded(worker: WorkerTransport) -> None:
    """Kill a worker nothing waits on (reset): through its ``kill_soon()`` when the transport has one.

    ``kill_soon`` may return before every process is gone (the fork server finishes the job in the
    background), so the next spare starts sooner; a timeout's ``replace`` still uses ``kill()``.
    """
    kill_soon = getattr(worker, "kill_soon", None)
    if kill_soon is not None:
        kill_soon()
    else:
        worker.kill()


class WorkerPool(Generic[W]):
    """One active worker and ``size`` warm spares; kept apart from the sandbox for its weakref finalizer.

    Args:
        spawn: starts one worker and returns it once it is ready (raises when it cannot).
        size: spare workers kept started and warm.
    """

    def __init__(self, spawn: Callable[[], W], size: int) -> None:
        self._spawn = spawn
        self.size = size
        self.cond = threading.Condition()
        self.spares: list[W] = []
        self.starting = 0
        self.error: BaseException | None = None
        self.closed = False
        self.active: W | None = None
        self.doomed: list[W] = []
        # One long-lived thread starts every worker: the workers' parent-death signal fires when
        # the *thread* that forked them exits, so short-lived threads would kill them.
        self.thread = threading.Thread(target=self._loop, name="agentrl-sandbox-spawner", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.closed and not self.doomed and len(self.spares) + self.starting >= self.size + (
                        1 if self.active is None else 0):
                    self.cond.wait()
                if self.closed:
                    doomed, self.doomed = self.doomed, []
                    break
                doomed, self.doomed = self.doomed, []
                need = len(self.spares) + self.starting < self.size + (1 if self.active is None else 0)
                if need:
                    self.starting += 1
            for w in doomed:
                _kill_discarded(w)
            if not need:
                continue
            try:
                worker = self._spawn()
            except BaseException as exc:
                with self.cond:
                    self.error = exc
                    self.starting -= 1
                    self.cond.notify_all()
                return
            with self.cond:
                self.starting -= 1
                if self.closed:
                    doomed = [worker]
                else:
                    self.spares.append(worker)
                    doomed = []
                self.cond.notify_all()
            for w in doomed:
                w.kill()
        for w in doomed:
            w.kill()

    def take(self, timeout: float) -> W:
        """Make a warm spare the active worker (waiting for one to be ready) and return it."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                while self.spares:
                    w = self.spares.pop(0)
                    if w.alive():
                        self.active = w
                        self.cond.notify_all()
                        return w
                    self.doomed.append(w)
                if self.error is not None:
                    raise self.error
                if self.closed:
                    raise SandboxUnavailable("sandbox is closed")
                self.cond.notify_all()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SandboxUnavailable("no sandbox worker became ready in time")
                self.cond.wait(min(left, 1.0))

    def current(self) -> W:
        """The active worker, or a spare made active when there is none (or it was killed)."""
        active = self.active
        if active is None or active.dead:
            active = self.take(STARTUP_TIMEOUT_S)
        return active

    def discard(self, w: W | None) -> None:
        """Kill in the background: the caller gets its spare without waiting for the cleanup."""
        if w is None:
            return
        with self.cond:
            if self.closed or not self.thread.is_alive():
                w_now = True
            else:
                self.doomed.append(w)
                self.cond.notify_all()
                w_now = False
        if w_now:
            w.kill()

    def retire_active(self) -> None:
        """Drop the active worker (killed in the background); the next call takes a warm spare."""
        old, self.active = self.active, None
        self.discard(old)
        with self.cond:
            self.cond.notify_all()

    def replace(self, worker: W) -> None:
        """Kill ``worker`` now (nothing it started keeps running) and let a spare take its place."""
        worker.kill()
        with self.cond:
            if self.active is worker:
                self.active = None
            self.cond.notify_all()

    def close(self) -> None:
        """Kill every worker and stop the spawner thread; idempotent."""
        with self.cond:
            if self.closed:
                return
            self.closed = True
            workers = self.spares + self.doomed + ([self.active] if self.active else [])
            self.spares, self.doomed, self.active = [], [], None
            self.cond.notify_all()
        for w in workers:
            w.kill()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=STARTUP_TIMEOUT_S)


# -- the sandbox -------------------------------------------------------------------------------
class PooledSandbox(FinalizedSandbox):
    """What the process/bubblewrap and Docker tiers share: ``reset`` and ``execute`` over a :class:`WorkerPool`.

    A subclass sets ``mode``, ``timeout_s``, ``cpu_s``, ``max_output_chars``, ``self._pool`` (a
    :class:`WorkerPool` over its :class:`WorkerTransport`) and what :class:`FinalizedSandbox` needs, and
    words its failures with ``_restart_note`` (after a timeout), ``_corrupt_note`` (after a corrupted
    channel) and ``_lost_note`` (per mode, after a dead worker or a corrupted channel).
    """

    mode: str
    timeout_s: float
    cpu_s: float
    max_output_chars: int
    _pool: WorkerPool
    _restart_note = "the interpreter was restarted"
    _corrupt_note = ""
    _lost_note = {"session": "; it was restarted and its variables are lost", "stateless": "; it was restarted"}

    def reset(self) -> None:
        """Throw the interpreter (its variables and scratch files) away and switch to a warm spare."""
        with self._lock:
            self._check_open()
            self._pool.retire_active()

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run ``request.code`` in the active worker; never raises because of what the code does.

        Args:
            request: the code, and optionally a per-call ``timeout_s``.

        Returns:
            The result: ``output`` holds stdout+stderr and, notebook style, the repr of a trailing
            expression; ``error`` the traceback tail of user errors, or what happened to the worker.

        """
        with self._lock:
            self._check_open()
            start = time.monotonic()
            timeout = self.timeout_s if request.timeout_s is None else float(request.timeout_s)
            worker = self._pool.current()
            deadline = time.monotonic() + timeout
            nonce = uuid.uuid4().hex
            code = request.code
            if isinstance(code, (bytes, bytearray)):
                code = bytes(code).decode("utf-8", errors="replace")
            msg = {"nonce": nonce, "code": str(code), "cpu_s": min(self.cpu_s, timeout),
                   "max_output_chars": self.max_output_chars}
            try:
                resp = _round_trip(worker, msg, deadline)
            except TimeoutError:
                self._pool.replace(worker)
                return ExecutionResult(ok=False, output="", timed_out=True, latency_s=time.monotonic() - start,
                                       error=f"timed out after {timeout:g}s; {self._restart_note} "
                                             f"and its variables are lost")
            except (OSError, EOFError, ValueError, ChannelCorrupt) as exc:
                # Explain before killing: the exit status (or the container's state) is read first.
                if isinstance(exc, ChannelCorrupt):
                    why = f"the code corrupted the sandbox's control channel ({exc}){self._corrupt_note}"
                else:
                    why = worker.exit_reason()
                self._pool.replace(worker)
                return ExecutionResult(ok=False, output="", error=why + self._lost_note[self.mode],
                                       latency_s=time.monotonic() - start)
            output = resp.get("output") or ""
            if not isinstance(output, str):
                output = str(output)
            error = resp.get("error")
            return ExecutionResult(ok=bool(resp.get("ok")), output=output,
                                   error=None if error is None else str(error),
                                   truncated=bool(resp.get("truncated")), latency_s=time.monotonic() - start)

    def run_program(self, program: ProgramRequest) -> ProgramResult:
        """Run one whole program (Python or bash) in a fresh folder of a stateless sandbox.

        The worker forks, writes ``program.files``, feeds ``stdin``, enforces the deadline itself (so
        the output so far and the fetched files come back after a timeout too), kills every process
        of the run and removes its folder. Needs ``mode="stateless"``.

        Raises:
            SandboxOptionError: the sandbox is in session mode.
        """
        import base64

        if self.mode != "stateless":
            raise SandboxOptionError("run_program needs a sandbox made with mode='stateless' (each run is a "
                                     "fork of a clean interpreter); this one is in session mode")
        with self._lock:
            self._check_open()
            start = time.monotonic()
            timeout = max(float(program.timeout_s), 0.001)
            worker = self._pool.current()
            # The worker keeps the deadline; ours is a backstop for a worker that hangs.
            deadline = time.monotonic() + timeout + _PROGRAM_GRACE_S
            nonce = uuid.uuid4().hex
            msg = {"op": "run", "nonce": nonce, "language": program.language, "code": program.code,
                   "stdin": program.stdin, "timeout_s": timeout, "cpu_s": min(self.cpu_s, timeout),
                   "memory_mb": program.memory_mb, "max_output_chars": int(program.max_output_chars),
                   "files": {path: base64.b64encode(bytes(data)).decode("ascii")
                             for path, data in program.files.items()},
                   "fetch": list(program.fetch_files), "max_fetch_bytes": _MAX_FETCH_BYTES}
            try:
                resp = _round_trip(worker, msg, deadline)
            except TimeoutError:
                self._pool.replace(worker)
                return ProgramResult(return_code=None, timed_out=True, execution_time_s=time.monotonic() - start,
                                     error=f"the sandbox did not answer within {timeout:g}s + "
                                           f"{_PROGRAM_GRACE_S:g}s; {self._restart_note}")
            except (OSError, EOFError, ValueError, ChannelCorrupt) as exc:
                why = (f"the sandbox's control channel was corrupted ({exc})" if isinstance(exc, ChannelCorrupt)
                       else worker.exit_reason())
                self._pool.replace(worker)
                return ProgramResult(return_code=None, execution_time_s=time.monotonic() - start,
                                     error=why + self._lost_note["stateless"])
        rc = resp.get("return_code")
        files: dict[str, bytes] = {}
        for path, data in (resp.get("files") or {}).items():
            try:
                files[str(path)] = base64.b64decode(str(data), validate=True)
            except ValueError:
                continue
        error = resp.get("error")
        return ProgramResult(
            return_code=rc if isinstance(rc, int) else None,
            stdout=str(resp.get("stdout") or ""),
            stderr=str(resp.get("stderr") or ""),
            timed_out=bool(resp.get("timed_out")),
            execution_time_s=float(resp.get("elapsed_s") or 0.0),
            files=files,
            error=None if error is None else str(error),
            truncated=bool(resp.get("truncated")),
        )


def _round_trip(worker: WorkerTransport, msg: dict, deadline: float) -> dict:
    """Send one request frame and read its reply, checking the channel before and the nonce after.

    Raises:
        ChannelCorrupt: data arrived unasked, or the reply is not this request's.
        TimeoutError, OSError, EOFError, ValueError: from the framing.
    """
    if worker.pending():
        raise ChannelCorrupt("unsolicited data on the control channel")
    send_frame(worker, msg, deadline)
    resp = recv_frame(worker, deadline)
    if resp.get("nonce") != msg["nonce"]:
        raise ChannelCorrupt("reply does not match the request")
    return resp
