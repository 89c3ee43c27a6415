"""Env workers that run each env in its own child process, so that a hung or crashed env can be killed.

The parent talks to each child over a :func:`multiprocessing.Pipe`: it sends ``("start"|"reset"|
"step"|"close", argument)`` and the child answers ``("ok", result)`` or ``("error", text)``. The
blocking wait for the answer runs in one small thread per worker, which also watches the child's
sentinel, so the event loop never blocks and a dead child is reported at once
(:class:`~agentrl.rollout.errors.EnvWorkerError`), never waited for.

With the default ``"spawn"`` start method the child is a fresh interpreter: ``env_fn`` must be
picklable (``functools.partial(gym.make, "AgentRL/SQL-v0")``, an env class, a module-level
function; not a lambda or a closure), and building the env happens in the child.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import multiprocessing
import multiprocessing.connection
import pickle
import queue
import signal
import threading
import traceback
from collections.abc import Callable
from typing import Any

from agentrl.rollout.errors import EnvWorkerError
from agentrl.rollout.workers import EnvFactory, StepResult, TrackedWorkers, describe_env

__all__ = ["EnvWorkerError", "ProcessWorker", "ProcessWorkers"]

#: How long ``close`` lets the child close its env before killing it.
CLOSE_TIMEOUT_S = 5.0

# Every child not yet reaped. Children are not daemonic (an env may start processes of its own,
# like the SQLite sandbox), so multiprocessing's exit handler would join them, forever for a hung
# one; ours, registered later, runs first and kills them.
_LIVE: set[multiprocessing.process.BaseProcess] = set()
_LIVE_LOCK = threading.Lock()


@atexit.register
def _kill_live_children() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    for process in live:
        try:
            if process.is_alive():
                process.kill()
            process.join(timeout=1.0)
        except Exception:
            pass


def _format_exception(exc: BaseException) -> tuple[str, str]:
    """``("Type: message", full traceback)`` of an exception raised in the child."""
    summary = f"{type(exc).__name__}: {exc}"
    return summary, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def _child_main(conn: multiprocessing.connection.Connection, env_fn: EnvFactory) -> None:
    """The child's loop: run commands on the env until ``close`` or until the parent goes away."""
    # Ctrl-C reaches the whole process group; the parent decides when the env goes away.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = None
    try:
        while True:
            try:
                command, argument = conn.recv()
            except (EOFError, OSError):  # the parent closed its end or died
                return
            try:
                if command == "start":
                    if env is None:
                        env = env_fn()
                    result: Any = describe_env(env)
                elif command == "reset":
                    seed, options = argument
                    result = _require(env).reset(seed=seed, options=options)
                elif command == "step":
                    result = _require(env).step(argument)
                elif command == "close":
                    env, closing = None, env
                    if closing is not None:
                        closing.close()
                    conn.send(("ok", None))
                    return
                else:
                    raise ValueError(f"unknown command {command!r}")
                conn.send(("ok", result))
            except Exception as exc:
                conn.send(("error", _format_exception(exc)))
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:
                pass
        conn.close()


def _require(env: Any) -> Any:
    if env is None:
        raise RuntimeError("the env is not built; send 'start' first")
    return env


def _died_message(process: multiprocessing.process.BaseProcess) -> str:
    process.join(timeout=1.0)  # the sentinel fires on exit; reaping may lag a moment
    code = process.exitcode
    if code is None:
        how = "closed its pipe"
    elif code < 0:
        try:
            how = f"was killed by signal {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            how = f"was killed by signal {-code} (exit code {code})"
    else:
        how = f"died with exit code {code}"
    return f"the env process (pid {process.pid}) {how}"


class _CallThread:
    """One daemon thread that runs calls in order, for one worker.

    Not a ``ThreadPoolExecutor``: the interpreter joins those threads at exit, before any
    ``atexit`` handler runs, so a thread waiting on a hung child would block exit forever.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="agentrl-envproc", daemon=True).start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((future, fn, args))
        return future

    def stop(self) -> None:
        """End the thread after the calls already submitted."""
        self._queue.put(None)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)


class ProcessWorker:
    """One env in its own child process; made by :class:`ProcessWorkers`.

    ``start`` launches the child and builds the env there; ``reset``/``step`` round-trip over the
    pipe. An exception in the env is re-raised here as
    :class:`~agentrl.rollout.errors.EnvWorkerError` with the child's ``"Type: message"`` (the
    full remote traceback is on its ``remote_traceback`` attribute); a child that dies raises
    :class:`~agentrl.rollout.errors.EnvWorkerError` saying how it died.
    """

    def __init__(self, env_fn: EnvFactory, context: Any) -> None:  # a multiprocessing context (spawn or fork)
        self._env_fn = env_fn
        self._context = context
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: multiprocessing.connection.Connection | None = None
        self._executor: _CallThread | None = None
        self._busy = False
        self._closed = False
        self._release: Callable[[], None] | None = None  # set by the factory: forget this worker
        self.system_prompt = ""
        self.stop_sequences: tuple[str, ...] = ()
        self.action_problem: str | None = None  # read from describe_env by start()

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` before ``start``)."""
        return None if self._process is None else self._process.pid

    @property
    def process(self) -> multiprocessing.process.BaseProcess | None:
        """The child process (``None`` before ``start``)."""
        return self._process

    # -- the worker thread's side -------------------------------------------------------------

    def _roundtrip(self, command: str, argument: Any) -> Any:
        """Send one command and wait for its answer or for the child's death (in the worker thread)."""
        process, conn = self._process, self._conn
        assert process is not None and conn is not None
        if process.pid is None:
            self._busy = False
            raise EnvWorkerError("the env process was never started (the worker was abandoned while starting)")
        try:
            try:
                conn.send((command, argument))
            except (BrokenPipeError, ConnectionResetError, OSError) as exc:
                raise EnvWorkerError(_died_message(process)) from exc
            ready = multiprocessing.connection.wait([conn, process.sentinel])
            try:
                if conn not in ready and not conn.poll():
                    raise EnvWorkerError(_died_message(process))
                status, payload = conn.recv()
            except (EOFError, OSError) as exc:
                raise EnvWorkerError(_died_message(process)) from exc
        finally:
            self._busy = False
        if status == "error":
            summary, remote_traceback = payload
            raise EnvWorkerError(f"the env raised {summary}", remote_traceback)
        return payload

    def _reap(self, graceful: bool, timeout: float) -> None:
        """Close the env (when ``graceful``), kill the child if it lingers, join it, close the pipe."""
        process, conn = self._process, self._conn
        if process is None or conn is None:
            return
        if process.pid is None:  # never started
            conn.close()
            return
        try:
            if graceful and process.is_alive():
                try:
                    conn.send(("close", None))
                    if multiprocessing.connection.wait([conn, process.sentinel], timeout) and conn.poll():
                        conn.recv()
                except (EOFError, OSError):
                    pass
                process.join(timeout)
            if process.is_alive():
                process.kill()
            process.join()
        finally:
            conn.close()
            with _LIVE_LOCK:
                _LIVE.discard(process)

    # -- the event loop's side ----------------------------------------------------------------

    async def _call(self, command: str, argument: Any = None) -> Any:
        if self._closed:
            raise EnvWorkerError("the worker was closed or abandoned")
        if self._process is None or self._executor is None:
            raise EnvWorkerError("the worker is not started; await start() first")
        self._busy = True  # cleared by the worker thread when the answer (or the death) is in
        return await asyncio.wrap_future(self._executor.submit(self._roundtrip, command, argument))

    async def start(self) -> None:
        """Launch the child process, build the env there and read :func:`describe_env`."""
        if self._closed:
            raise EnvWorkerError("the worker was closed or abandoned")
        if self._process is None:
            parent_conn, child_conn = self._context.Pipe(duplex=True)
            process = self._context.Process(
                target=_child_main, args=(child_conn, self._env_fn), name="agentrl-env", daemon=False
            )
            # Known before the launch, so that abandon() or shutdown() during it still reaps the child.
            self._process, self._conn, self._executor = process, parent_conn, _CallThread()
            try:
                await asyncio.wrap_future(self._executor.submit(self._launch, child_conn))
            except Exception:
                if process.pid is None:  # it never started (env_fn could not be sent, ...)
                    self._closed = True
                    self._finish(graceful=False)
                    self._forget()
                raise
        description = await self._call("start")
        self.system_prompt = description["system_prompt"]
        self.stop_sequences = description["stop_sequences"]
        self.action_problem = description["action_problem"]

    def _launch(self, child_conn: multiprocessing.connection.Connection) -> None:
        """Start the child (in the worker thread: spawning takes a while), unless already abandoned."""
        process = self._process
        assert process is not None
        try:
            if not self._closed:
                process.start()
                with _LIVE_LOCK:
                    _LIVE.add(process)
        finally:
            child_conn.close()  # the child holds its own copy; ours would hide the child's EOF

    async def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """``env.reset(seed=seed, options=options)`` in the child."""
        return await self._call("reset", (seed, options))

    async def step(self, action: str) -> StepResult:
        """``env.step(action)`` in the child."""
        return await self._call("step", action)

    def abandon(self) -> None:
        """Kill the child (SIGKILL) without waiting; it is joined in the worker thread."""
        if self._closed:
            return
        self._closed = True
        if self._process is not None:
            try:
                self._process.kill()
            except (OSError, ValueError, AttributeError):  # already gone, or never started
                pass
        self._finish(graceful=False)
        self._forget()

    def _forget(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def _finish(self, graceful: bool) -> concurrent.futures.Future[None] | None:
        """Queue the reaping after whatever runs in the worker thread; free the thread afterwards."""
        executor, self._executor = self._executor, None
        if executor is None:
            return None
        future = executor.submit(self._reap, graceful, CLOSE_TIMEOUT_S)
        executor.stop()
        return future

    async def close(self) -> None:
        """Ask the child to close the env, wait up to 5 s, then kill it; idempotent."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        if process is None:
            self._forget()
            return
        if self._busy:  # a call is still running (a hang whose await was cancelled): no graceful close
            process.kill()
        future = self._finish(graceful=not self._busy)
        if future is None:
            self._forget()
            return
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), CLOSE_TIMEOUT_S + 1.0)
        except asyncio.TimeoutError:  # queued behind a hung call: kill, and the queue drains
            process.kill()
            await asyncio.wrap_future(future)
        finally:
            self._forget()

    def _kill_now(self) -> None:
        """Kill and join the child at once (for :meth:`ProcessWorkers.shutdown`)."""
        self._closed = True
        process = self._process
        if process is not None and process.pid is not None:
            if process.is_alive():
                process.kill()
            process.join(timeout=5.0)
        self._finish(graceful=False)


class ProcessWorkers(TrackedWorkers):
    """Workers whose envs each run in a child process of this one.

    Args:
        env_fn: builds one env; must be picklable unless ``start_method`` is ``"fork"``
            (``functools.partial(gym.make, "AgentRL/SQL-v0", **kwargs)`` or an env class).
        start_method: the :mod:`multiprocessing` start method: ``"spawn"`` (default, safe with
            threads and CUDA), ``"forkserver"`` or ``"fork"``.

    Example:
        >>> import functools
        >>> from agentrl.rollout.workloads import LatencyEnv
        >>> factory = ProcessWorkers(functools.partial(LatencyEnv, max_turns=2))
        >>> worker = factory.make()
        >>> factory.shutdown()
    """

    def __init__(self, env_fn: EnvFactory, *, start_method: str = "spawn") -> None:
        if not callable(env_fn):
            raise TypeError(f"env_fn must be a callable that builds an env, got {env_fn!r}")
        self._context = multiprocessing.get_context(start_method)
        if start_method != "fork":
            try:
                pickle.dumps(env_fn)
            except Exception as exc:
                raise TypeError(
                    f"env_fn {env_fn!r} cannot be pickled, so a {start_method!r} child process cannot receive it "
                    f"({type(exc).__name__}: {exc}); pass a picklable callable instead of a lambda or a closure, "
                    "e.g. functools.partial(gym.make, env_id, **kwargs) or the env class itself"
                ) from exc
        self.env_fn = env_fn
        self.start_method = start_method
        super().__init__()

    def make(self) -> ProcessWorker:
        """A new worker; its child process starts with ``await worker.start()``."""
        return self._track(ProcessWorker(self.env_fn, self._context))

    def shutdown(self) -> None:
        """Kill every child process still alive and join it; idempotent."""
        for worker in self._take_all():
            worker._kill_now()
