"""The results file of a benchmark run: one JSON object per line, appended atomically.

``<out>/results.jsonl`` holds one line per finished episode. Each line is written with a single
``os.write`` on an ``O_APPEND`` descriptor followed by ``fsync``, so a run killed at any moment
(even with SIGKILL) leaves every earlier episode intact and at most one truncated last line.
Reading never fails on a bad line: it is reported with its line number and skipped, and the
episode it would have held simply runs again.

An episode that ended in an error says whose error it was (:func:`error_class`): ``"infrastructure"``
(the env could not be made, its reset or step raised, it ended with ``done_reason="env_error"``, a
sandbox was unavailable: nothing the agent did) or ``"agent"`` (the agent raised, missed its deadline
or gave an action the env refused). The runner plays infrastructure errors again on the next identical
command; agent errors only with ``--retry-errors``. :func:`group_errors` groups errors by reason for
the summary and the report. ``<out>/skipped.json`` (:class:`SkipLog`) remembers the envs a command
skipped because a system part they need is missing.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "results.jsonl")
>>> store = ResultStore(path)
>>> store.append({"key": "a", "env_id": "E", "reward": 1.0})
>>> with open(path, "a") as f:
...     _ = f.write('{"key": "b", "rew')  # what a kill mid-write could leave
>>> loaded = store.load()
>>> list(loaded.records), [(p.line, p.reason[:9]) for p in loaded.problems]
(['a'], [(2, 'not valid')])
>>> store.append({"key": "b", "env_id": "E", "reward": 0.0})  # starts on a fresh line
>>> list(store.load().records)
['a', 'b']
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.core.serialize import json_safe

__all__ = [
    "AGENT",
    "INFRASTRUCTURE",
    "REQUIRED_FIELDS",
    "RESULTS_FILE",
    "SKIPS_FILE",
    "ErrorGroup",
    "LineProblem",
    "LoadedResults",
    "ResultStore",
    "RunLock",
    "SkipLog",
    "episode_label",
    "error_class",
    "group_errors",
    "json_safe",
    "load_run",
    "reason_key",
]

RESULTS_FILE = "results.jsonl"
SKIPS_FILE = "skipped.json"

#: the two kinds of errors (``record["error_class"]``)
INFRASTRUCTURE = "infrastructure"
AGENT = "agent"

#: fields a line must have to count as an episode
REQUIRED_FIELDS = ("key", "env_id", "reward")


@dataclass(frozen=True)
class LineProblem:
    """A line of a results file that was skipped, and why."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}; line skipped"


@dataclass
class LoadedResults:
    """Every usable episode of a results file, by key, in file order, plus the skipped lines."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[LineProblem] = field(default_factory=list)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)


class ResultStore:
    """Append-only JSON-lines file of episode records, keyed by ``record["key"]``.

    Args:
        path: the file (created on the first append, with its directory).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._lock = threading.Lock()  # the newline check and the write must not interleave

    # -- reading ---------------------------------------------------------------------------
    def load(self) -> LoadedResults:
        """Read every line; bad lines become :class:`LineProblem` entries instead of errors.

        A key seen twice keeps the first record, unless that one ended in an error and a later
        one is a retry (``--retry-errors``): then the later record wins. Other repeats are reported.
        """
        loaded = LoadedResults()
        if not self.path.exists():
            return loaded
        first_line: dict[str, int] = {}
        with open(self.path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if number == len(lines) and not raw:
                break  # the empty string after the final newline
            problem = _check_line(raw, last=number == len(lines))
            if isinstance(problem, str):
                if problem:
                    loaded.problems.append(LineProblem(str(self.path), number, problem))
                continue
            record = problem
            key = record["key"]
            previous = loaded.records.get(key)
            if previous is not None and not previous.get("error"):
                loaded.problems.append(
                    LineProblem(str(self.path), number, f"duplicate of the episode on line {first_line[key]}")
                )
                continue
            first_line[key] = number
            loaded.records[key] = record
        return loaded

    # -- writing ---------------------------------------------------------------------------
    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as one line, durably (``fsync``) and atomically with respect to kills.

        Raises:
            ValueError: the record has no ``key``.
            OSError: the line could not be written whole (for example, the disk is full).
        """
        if "key" not in record:
            raise ValueError("a result record needs a 'key'")
        line = (json.dumps(record, ensure_ascii=False, allow_nan=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            self._append_line(line)

    def _append_line(self, line: bytes) -> None:
        fd = self._open()
        # A run killed mid-write may have left a partial last line: start ours on a fresh one (in
        # the same write), so that the partial line stays one reported bad line and ours is intact.
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            # A short write leaves a partial line; the next load reports and skips it.
            raise OSError(f"short write to {self.path}: {written} of {len(line)} bytes")
        os.fsync(fd)

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fd

    def close(self) -> None:
        """Close the file descriptor (appending again reopens it)."""
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_line(raw: bytes, *, last: bool) -> dict[str, Any] | str:
    """The record of a line, or why it is unusable ("" for a blank line, which is not a problem)."""
    if not raw.strip():
        return ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (truncated: the run was probably killed while writing it)" if last else ""
        return f"not valid JSON{hint}: {exc.msg} at column {exc.colno}"
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    missing = [name for name in REQUIRED_FIELDS if name not in record]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    if not isinstance(record["key"], str):
        return "the 'key' field is not a string"
    reward = record["reward"]
    if not isinstance(reward, (int, float)) or isinstance(reward, bool) or not math.isfinite(reward):
        return "the 'reward' field is not a finite number"
    return record


def load_run(path: str | os.PathLike[str]) -> LoadedResults:
    """Load a run given its output directory or its results file.

    Raises:
        FileNotFoundError: there is no results file there.
    """
    target = Path(path)
    if target.is_dir():
        target = target / RESULTS_FILE
    if not target.exists():
        raise FileNotFoundError(f"no benchmark results at {target}")
    return ResultStore(target).load()


class RunLock:
    """An exclusive ``flock`` on ``<out>/.lock``: two runs appending to one directory would race.

    Args:
        directory: the run's output directory (created if missing).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ``RuntimeError`` when another process holds it."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError(
                f"another benchmark run is writing to {self.path.parent}; wait for it or use another --out"
            ) from None
        self._fd = fd

    def release(self) -> None:
        """Release the lock (the kernel also drops it when the process dies)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# -- errors: whose, and why --------------------------------------------------------------------------
def error_class(record: Mapping[str, Any]) -> str | None:
    """``"infrastructure"``, ``"agent"``, or ``None`` when the episode ended without an error.

    Records written before the field existed are classified by ``error_kind`` (``"env"``: infrastructure).

    >>> error_class({"error": "could not make the env: ...", "error_class": "infrastructure"})
    'infrastructure'
    >>> error_class({"error": "env.reset failed: ...", "error_kind": "env"}), error_class({"error": None})
    ('infrastructure', None)
    >>> error_class({"error": "agent did not act within 5s", "error_kind": "timeout"})
    'agent'
    """
    if not record.get("error"):
        return None
    stored = record.get("error_class")
    if stored in (INFRASTRUCTURE, AGENT):
        return str(stored)
    return INFRASTRUCTURE if record.get("error_kind") == "env" else AGENT


_HEX = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PATH = re.compile(r"(/tmp|/var/tmp)/[^\s:'\"),]+")


def reason_key(error: str) -> str:
    """What errors are grouped by: the first line, with numbers, hex ids and temp paths blanked.

    >>> reason_key("Xvfb :101 did not answer xdpyinfo within 12.5 s (load 3.1 on 2 CPUs)")
    'Xvfb :# did not answer xdpyinfo within # s (load # on # CPUs)'
    """
    first = (error.strip().splitlines() or [""])[0]
    first = _PATH.sub("<tmp>", first)
    first = _HEX.sub("<id>", first)
    return _NUMBER.sub("#", first)[:300]


def episode_label(record: Mapping[str, Any]) -> str:
    """How a person finds an episode: ``env seed S episode E[ attempt A] [key 1a2b3c4d]``.

    >>> episode_label({"env_id": "AgentRL/SQL-v0", "seed": 0, "episode": 3, "attempt": 0, "key": "1a2b3c4d5e6f"})
    'AgentRL/SQL-v0 seed 0 episode 3 [key 1a2b3c4d]'
    """
    attempt = record.get("attempt")
    again = f" attempt {attempt}" if isinstance(attempt, int) and attempt > 0 else ""
    return (f"{record.get('env_id')} seed {record.get('seed')} episode {record.get('episode')}{again} "
            f"[key {str(record.get('key', ''))[:8]}]")


@dataclass
class ErrorGroup:
    """Errors with one reason: their class, how many, the first message in full and a few episodes."""

    error_class: str
    reason: str
    message: str
    count: int = 0
    examples: list[str] = field(default_factory=list)


def group_errors(records: Iterable[Mapping[str, Any]], max_examples: int = 3) -> list[ErrorGroup]:
    """The errors of ``records`` grouped by class and :func:`reason_key`, infrastructure first, larger first.

    >>> groups = group_errors([{"error": "could not make the env: chromium is missing", "error_kind": "env",
    ...                         "env_id": "E", "seed": 0, "episode": i, "key": f"k{i}"} for i in range(4)])
    >>> [(g.error_class, g.count, len(g.examples)) for g in groups]
    [('infrastructure', 4, 3)]
    """
    groups: dict[tuple[str, str], ErrorGroup] = {}
    for record in records:
        kind = error_class(record)
        if kind is None:
            continue
        message = str(record["error"])
        key = (kind, reason_key(message))
        group = groups.setdefault(key, ErrorGroup(kind, key[1], message))
        group.count += 1
        if len(group.examples) < max_examples:
            group.examples.append(episode_label(record))
    return sorted(groups.values(), key=lambda g: (g.error_class != INFRASTRUCTURE, -g.count, g.reason))


# -- envs a command skipped ---------------------------------------------------------------------------
class SkipLog:
    """``<out>/skipped.json``: the envs skipped because a system part they need is missing.

    One entry per (env id, agent config, env kwargs): the missing parts, why, the command that installs
    them and the command that was skipped. An entry goes when that env runs for that agent again.
    Written atomically; the run holds :class:`RunLock` while it writes.

    >>> import tempfile
    >>> log = SkipLog(tempfile.mkdtemp())
    >>> log.record([{"env_id": "E", "agent": {"agent": "oracle"}, "env_kwargs": {}, "reason": "chromium is missing"}])
    >>> [entry["env_id"] for entry in log.load()]
    ['E']
    >>> log.forget(["E"], {"agent": "oracle"}, {})
    >>> log.load()
    []
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / SKIPS_FILE

    @staticmethod
    def _identity(env_id: Any, agent: Any, env_kwargs: Any) -> str:
        return json.dumps([env_id, agent, env_kwargs], sort_keys=True, default=str)

    def load(self) -> list[dict[str, Any]]:
        """Every entry (an unreadable file counts as empty: it is rewritten on the next change)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        entries = data.get("skipped") if isinstance(data, dict) else None
        return [e for e in entries if isinstance(e, dict) and "env_id" in e] if isinstance(entries, list) else []

    def _save(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if not entries and not self.path.exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"skipped": list(entries)}, indent=2, sort_keys=True, default=str) + "\n",
                       encoding="utf-8")
        os.replace(tmp, self.path)

    def record(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Add (or replace) entries, stamped with the time."""
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        fresh = {self._identity(e["env_id"], e.get("agent"), e.get("env_kwargs")): {**e, "at": now} for e in entries}
        kept = [e for e in self.load() if self._identity(e["env_id"], e.get("agent"), e.get("env_kwargs")) not in fresh]
        self._save(kept + list(fresh.values()))

    def forget(self, env_ids: Iterable[str], agent: Any, env_kwargs: Any) -> None:
        """Drop the entries of these envs for this agent config and env kwargs (they ran)."""
        gone = {self._identity(env_id, agent, env_kwargs) for env_id in env_ids}
        entries = self.load()
        kept = [e for e in entries if self._identity(e["env_id"], e.get("agent"), e.get("env_kwargs")) not in gone]
        if len(kept) != len(entries):
            self._save(kept)
