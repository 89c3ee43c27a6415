"""Wait for the desktop to hold still: the screen unchanged and its apps idle, instead of a fixed pause.

After an action an app may redraw at once (a key in xterm), after a few frames (a menu), or after
loading (a dialog listing a folder, a page). A fixed pause is too long for the first and too short for
the last. :func:`settle` polls two cheap signals until both have been quiet for ``quiet_s``:

* the screen: the raw frame compared with the previous one (an X ``GetImage``, no encoding);
* the desktop's processes: the time each of their threads spent on a CPU or waiting for one
  (``/proc/<pid>/task/<tid>/schedstat``), so an app that is still working (or is runnable but was
  preempted by a busy machine, or is blocked on the disk) keeps the wait going even while the screen
  has not changed yet.

An app may also answer late with its CPU idle meanwhile: LibreOffice Calc paints a key's effect about
0.1 s after the key, from a timer. So while the screen still equals the one from before the action
(``unchanged``), nothing has answered yet and the quiet must last ``answer_s`` instead; once the screen
has changed, ``quiet_s`` applies. An action with no visible effect costs ``answer_s``.

It returns at ``max_s`` at the latest (an app that never idles: an animation, a busy loop). The X
server itself is not counted: our own screen grabs keep it busy; what it draws shows on the screen.
The text caret does not blink on this desktop (``vm_state.GTK_SETTINGS``), or the screen would never
hold still.

>>> frames = iter([b"a", b"b", b"b", b"b", b"b"])
>>> result = settle(lambda: next(frames), lambda: 0, max_s=1.0, quiet_s=0.0, poll_s=0.0)
>>> result.settled, result.frame
(True, b'b')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ANSWER_S", "ProcessActivity", "SettleResult", "settle", "thread_state"]

Frame = TypeVar("Frame")

#: a poll's CPU time (busy + waiting to run) above this share of the poll's wall time means "still working"
BUSY_FRACTION = 0.05

#: how long the desktop must hold still while the screen still shows what it showed before the action.
#: LibreOffice Calc, on 2 cores, goes quiet for 40-80 ms after a key before it paints the answer; 0.1 s is
#: also the fixed pause the settle replaced, so an action that changes nothing costs no more than before.
ANSWER_S = 0.1


@dataclass(frozen=True)
class SettleResult(Generic[Frame]):
    """The last frame, how long the wait took, whether the desktop held still (``False``: ``max_s`` ran out)."""

    frame: Frame
    waited_s: float
    settled: bool
    polls: int


class ProcessActivity:
    """The CPU time of a tree of processes (every thread's time on and waiting for a CPU), in nanoseconds.

    ``roots`` gives the host pids at the top of the tree (the desktop's sandbox, its window manager); their
    descendants are found again on every call, so apps started meanwhile count.

    >>> activity = ProcessActivity(lambda: [os.getpid()])
    >>> activity() > 0
    True
    """

    def __init__(self, roots: Callable[[], Iterable[int | None]]) -> None:
        self.roots = roots

    def _walk(self) -> Iterator[tuple[int, list[str]]]:
        """Each process of the tree with its threads' ids; children are found through every thread."""
        queue = [pid for pid in self.roots() if pid]
        index = 0
        while index < len(queue):
            pid = queue[index]
            index += 1
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:  # gone: no threads
                tids = []
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/children") as handle:
                        queue.extend(int(child) for child in handle.read().split())
                except (OSError, ValueError):
                    continue
            yield pid, tids

    def pids(self) -> list[int]:
        """The roots and every descendant (``/proc/<pid>/task/<tid>/children``)."""
        return [pid for pid, _ in self._walk()]

    def __call__(self) -> int:
        """The nanoseconds every thread of the tree has spent on a CPU or runnable and waiting for one.

        A thread blocked on the disk (state ``D``: a dialog listing a folder on a busy machine) spends no
        CPU time, yet it is working: while one is, the count also grows by the wall time between calls.
        """
        total = 0
        for pid, tids in self._walk():
            for tid in tids:
                task = f"/proc/{pid}/task/{tid}"
                try:
                    with open(f"{task}/schedstat") as handle:
                        on_cpu, waiting, _ = handle.read().split()
                    total += int(on_cpu) + int(waiting)
                    with open(f"{task}/stat") as handle:
                        if thread_state(handle.read()) == "D":
                            total += time.monotonic_ns()
                except (OSError, ValueError):
                    continue
        return total


def thread_state(stat: str) -> str:
    """The state letter of a ``/proc/<pid>/task/<tid>/stat`` line (``R``, ``S``, ``D``...; ``""`` if unreadable).

    The command name, in parentheses, may itself hold spaces and parentheses: the state follows the last ``)``.

    >>> thread_state("4242 (Web Content (x)) D 1 4242 4242 0 -1")
    'D'
    >>> thread_state("garbled")
    ''
    """
    _, close, rest = stat.rpartition(")")
    fields = rest.split()
    return fields[0] if close and fields else ""


def settle(
    grab: Callable[[], Frame],
    activity: Callable[[], int],
    *,
    max_s: float = 1.0,
    quiet_s: float = 0.02,
    poll_s: float = 0.005,
    busy_fraction: float = BUSY_FRACTION,
    unchanged: Frame | None = None,
    answer_s: float = ANSWER_S,
) -> SettleResult[Frame]:
    """Poll ``grab`` and ``activity`` until the frame and the CPU time have both been still for ``quiet_s``.

    ``grab()`` returns something comparable with ``==`` (the raw screen bytes); ``activity()`` a growing
    count of nanoseconds (:class:`ProcessActivity`). A poll is still when its frame equals the previous
    one and the CPU time grew by at most ``busy_fraction`` of the poll's wall time. ``unchanged``: the
    frame from before the action, if known; while the screen still equals it, the stillness must last
    ``answer_s`` (at least ``quiet_s``). Returns the last frame at the latest after ``max_s``.

    >>> frames = iter([b"before"] * 100)  # the action changed nothing: the wait lasts answer_s
    >>> result = settle(lambda: next(frames), lambda: 0, quiet_s=0.0, poll_s=0.01, unchanged=b"before",
    ...                 answer_s=0.05)
    >>> result.settled, result.waited_s >= 0.05
    (True, True)
    """
    unanswered_s = max(quiet_s, answer_s)
    start = previous_at = still_since = time.perf_counter()
    frame = grab()
    busy = activity()
    polls = 0
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= max_s:
            return SettleResult(frame, elapsed, False, polls)
        if poll_s > 0:
            time.sleep(min(poll_s, max_s - elapsed))
        polls += 1
        next_frame, next_busy = grab(), activity()
        now = time.perf_counter()
        if next_frame != frame or next_busy - busy > busy_fraction * (now - previous_at) * 1e9:
            still_since = now
        elif now - still_since >= (quiet_s if unchanged is None or next_frame != unchanged else unanswered_s):
            return SettleResult(next_frame, now - start, True, polls)
        frame, busy, previous_at = next_frame, next_busy, now
