"""A thread pool whose threads never keep the process alive: a hung env call cannot block the exit.

:class:`concurrent.futures.ThreadPoolExecutor` joins its threads when the interpreter exits, even after
``shutdown(wait=False)``. The engine abandons an env whose call hangs (a step past its deadline, a close
that never returns) and moves on; with that pool the run then finished, printed its summary, and the process
never exited. Here the threads are daemons. At exit, calls still running get :data:`EXIT_GRACE_S` in all to
finish (an abandoned env's ``close`` cleaning up its sandbox), then they are left behind.

>>> pool = DaemonThreadPool(2, thread_name_prefix="demo")
>>> pool.submit(sum, [1, 2, 3]).result()
6
>>> pool.shutdown()
"""

from __future__ import annotations

import atexit
import concurrent.futures
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["EXIT_GRACE_S", "DaemonThreadPool"]

T = TypeVar("T")

#: seconds that calls still running at the interpreter's exit get to finish, over every pool together
EXIT_GRACE_S = 10.0

_WorkItem = tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_pools: weakref.WeakSet[DaemonThreadPool] = weakref.WeakSet()


class DaemonThreadPool(concurrent.futures.Executor):
    """Up to ``max_workers`` daemon threads, started as work arrives and reused when idle.

    A drop-in :class:`concurrent.futures.Executor` (``loop.run_in_executor`` takes it).
    """

    def __init__(self, max_workers: int, thread_name_prefix: str = "agentrl-pool") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._max_workers = int(max_workers)
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[_WorkItem | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._shut = False
        _pools.add(self)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        """Run ``fn(*args, **kwargs)`` in a pool thread; its future."""
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new calls after shutdown")
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # wake the next thread too
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del item, future
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking calls; ``cancel_futures`` cancels the queued ones, ``wait`` joins the threads."""
        with self._lock:
            self._shut = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            self._queue.put(None)
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()

    def _join(self, deadline: float) -> None:
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))


@atexit.register
def _join_at_exit() -> None:
    """Give the calls still running in every pool :data:`EXIT_GRACE_S` in all, then let the process go."""
    deadline = time.monotonic() + EXIT_GRACE_S
    for pool in list(_pools):
        pool.shutdown(wait=False)  # idle threads end; a running call has until the deadline
        pool._join(deadline)
