"""A read-only SQLite sandbox for text-to-SQL agents.

Every episode works on its own private copy of the database file (``shutil.copyfile`` into a private
temp directory: a few milliseconds for a 10 MB file), opened read-only through a ``file:...?mode=ro``
URI. Several independent layers keep the source database byte-identical and the host safe:

* the copy, not the source, is opened, and it is opened read-only;
* an authorizer that *allows* only reading (``SELECT``, reads, functions, recursive CTEs and a short
  list of schema pragmas) and denies everything else: writes, DDL, ``ATTACH``/``DETACH`` (hence
  ``VACUUM INTO``), transactions, writing pragmas, ``load_extension()``;
* extension loading disabled and ``SQLITE_LIMIT_LENGTH`` / ``SQLITE_LIMIT_ATTACHED`` lowered;
* a progress-handler deadline per statement and a cap on fetched rows;
* only one statement per request.

``mode="process"`` additionally runs the queries in a persistent child process (``spawn``), so a
query stuck in native code cannot block the environment's thread: when the worker misses its
deadline it is killed and a fresh one is started on the next request.

>>> import sqlite3, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "demo.sqlite")
>>> con = sqlite3.connect(path)
>>> _ = con.executescript("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');")
>>> con.commit(); con.close()
>>> with SQLiteSandbox(max_rows=1) as box:
...     box.load(path)
...     print(box.execute(ExecutionRequest("SELECT id, name FROM t ORDER BY id")).output)
...     print(box.execute(ExecutionRequest("DELETE FROM t")).error)
id | name
---+-----
1  | a
... (1 more rows)
not authorized
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentrl.core.errors import SandboxClosed, SandboxMisuse, SandboxOptionError, SandboxUnavailable
from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult

__all__ = ["QueryOutcome", "SQLiteSandbox", "count_statements", "render_table"]

# Pragmas that only read the schema; any pragma outside this list, and any pragma with a "= value",
# is denied (journal_mode, writable_schema, optimize, wal_checkpoint... all have side effects).
_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "collation_list", "database_list",
})
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                              getattr(sqlite3, "SQLITE_RECURSIVE", 33)})
_MAX_VALUE_BYTES = 16 * 1024 * 1024  # SQLITE_LIMIT_LENGTH: no zeroblob(1e9) memory bombs
_PROGRESS_OPS = 1000  # VM instructions between deadline checks: ~10-50 µs, so overshoot is negligible
_KILL_GRACE_S = 1.0  # process mode: how long past the deadline before the worker is killed


@dataclass(frozen=True)
class QueryOutcome:
    """The untruncated result of :meth:`SQLiteSandbox.query` (for scoring, not for observations).

    Attributes:
        columns: the result's column names.
        rows: the rows, at most ``max_fetch_rows`` of them.
        error: sqlite's error message verbatim (or ours for "result too large"), ``None`` on success.
        timed_out: the deadline interrupted the query.

    >>> QueryOutcome(("x",), [(1,)]).ok
    True
    """

    columns: tuple[str, ...] = ()
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """The query ran to completion."""
        return self.error is None


def count_statements(sql: str) -> int:
    r"""Count the non-empty SQL statements in ``sql`` (``;`` outside quotes and comments).

    >>> count_statements("SELECT 1")
    1
    >>> count_statements("SELECT ';'; -- x; y\n SELECT 2;")
    2
    >>> count_statements("  ; /* only a comment */ ")
    0
    """
    count = 0
    has_content = False
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = sql.find(close, i + 1)
            i = n if j < 0 else j + 1
            has_content = True
            continue
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if ch == ";":
            count += has_content
            has_content = False
        elif not ch.isspace():
            has_content = True
        i += 1
    return count + has_content


def _authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    # Allow-list, not deny-list: an action sqlite adds in a later version is denied by default.
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _READ_PRAGMAS else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def _connect(path: str) -> sqlite3.Connection:
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    with contextlib.suppress(AttributeError, sqlite3.NotSupportedError):
        con.enable_load_extension(False)
    with contextlib.suppress(AttributeError):  # Connection.setlimit is Python >= 3.11
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
        con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    con.set_authorizer(_authorizer)
    return con


def _run_query(con: sqlite3.Connection, sql: str, timeout_s: float, max_fetch_rows: int) -> QueryOutcome:
    """Run one statement with a deadline; never raises for the statement's content."""
    if not isinstance(sql, str) or not sql.strip():
        return QueryOutcome(error="empty query")
    if "\x00" in sql:
        return QueryOutcome(error="the query contains a NUL character")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        return QueryOutcome(error=f"the query is not valid UTF-8: {exc.reason}")
    n = count_statements(sql)
    if n > 1:
        return QueryOutcome(error=f"one statement per query; got {n}")
    deadline = time.monotonic() + timeout_s
    expired = False

    def progress() -> int:
        nonlocal expired
        if time.monotonic() > deadline:
            expired = True
            return 1
        return 0

    con.set_progress_handler(progress, _PROGRESS_OPS)
    cur = con.cursor()
    try:
        cur.execute(sql)
        columns = tuple(d[0] for d in cur.description or ())
        rows: list[tuple[Any, ...]] = []
        while True:
            chunk = cur.fetchmany(1000)
            if not chunk:
                break
            rows.extend(chunk)
            if len(rows) > max_fetch_rows:
                return QueryOutcome(columns, [], f"result too large (more than {max_fetch_rows} rows)")
        return QueryOutcome(columns, rows)
    except Exception as exc:  # the agent's SQL must never crash the env
        if expired:
            return QueryOutcome(error=f"timed out after {timeout_s:g} s", timed_out=True)
        return QueryOutcome(error=str(exc) or type(exc).__name__)
    finally:
        with contextlib.suppress(Exception):
            cur.close()
        con.set_progress_handler(None, 0)


def _cell(value: Any, max_chars: int) -> tuple[str, bool]:
    if value is None:
        text = "NULL"
    elif isinstance(value, bytes):
        text = "x'" + value[: max_chars].hex() + "'"
    else:
        text = str(value)
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(text) > max_chars:
        return text[: max_chars - 3] + "...", True
    return text, False


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], max_rows: int,
                 max_cell_chars: int) -> tuple[str, bool]:
    r"""Render rows as an aligned text table; returns ``(text, truncated)``.

    >>> print(render_table(["a", "b"], [(1, None), (22, "x")], 5, 10)[0])
    a  | b
    ---+-----
    1  | NULL
    22 | x
    >>> render_table(["a"], [], 5, 10)[0]
    'a\n-\n(0 rows)'
    """
    truncated = False
    cells: list[list[str]] = []
    for row in rows[:max_rows]:
        line = []
        for value in row:
            text, cut = _cell(value, max_cell_chars)
            truncated |= cut
            line.append(text)
        cells.append(line)
    header = [_cell(c, max_cell_chars)[0] for c in columns]
    widths = [max([len(header[i])] + [len(r[i]) for r in cells]) for i in range(len(header))]
    out = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
           "-+-".join("-" * w for w in widths)]
    out += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    if not rows:
        out.append("(0 rows)")
    elif len(rows) > max_rows:
        truncated = True
        out.append(f"... ({len(rows) - max_rows} more rows)")
    return "\n".join(out), truncated


def _execute_on(con: sqlite3.Connection, sql: str, timeout_s: float, max_fetch_rows: int, max_rows: int,
                max_cell_chars: int) -> tuple[bool, str, str | None, bool, bool]:
    """``(ok, output, error, timed_out, truncated)``: what :meth:`SQLiteSandbox.execute` reports."""
    outcome = _run_query(con, sql, timeout_s, max_fetch_rows)
    if not outcome.ok:
        return False, "", outcome.error, outcome.timed_out, False
    if not outcome.columns:  # e.g. a statement that returns nothing
        return True, "", None, False, False
    text, truncated = render_table(outcome.columns, outcome.rows, max_rows, max_cell_chars)
    return True, text, None, False, truncated


def _worker_main(conn: Any) -> None:  # pragma: no cover - runs in the child process
    """Process-mode worker: a loop of ``(op, *args)`` requests over a pipe."""
    con: sqlite3.Connection | None = None
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op = msg[0]
        try:
            if op == "open":
                if con is not None:
                    con.close()
                con = _connect(msg[1])
                conn.send(("ok", None))
            elif op == "query":
                assert con is not None
                conn.send(("ok", _run_query(con, *msg[1:])))
            elif op == "execute":
                assert con is not None
                conn.send(("ok", _execute_on(con, *msg[1:])))
            elif op == "sleep":  # test hook: simulates a query stuck in native code
                time.sleep(msg[1])
                conn.send(("ok", None))
            elif op == "close":
                if con is not None:
                    con.close()
                conn.send(("ok", None))
                return
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class _Worker:
    """A persistent spawned child that owns the read-only connection (process mode)."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="agentrl-sqlite")
        self.proc.start()
        child.close()

    def call(self, msg: tuple[Any, ...], wait_s: float) -> tuple[bool, Any]:
        """Send ``msg``; ``(True, reply)``, or ``(False, None)`` when the worker missed ``wait_s``."""
        self.conn.send(msg)
        if not self.conn.poll(wait_s):
            return False, None
        status, payload = self.conn.recv()
        if status != "ok":
            raise SandboxUnavailable(f"the SQLite worker process failed: {payload}")
        return True, payload

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.kill()
        self.proc.join(5)
        with contextlib.suppress(Exception):
            self.conn.close()


class SQLiteSandbox:
    """A :class:`~agentrl.sandboxes.base.Sandbox` that runs read-only SQL on a private copy of a database.

    Args:
        timeout_s: default deadline per statement.
        max_rows: rows rendered in an observation (the rest become ``... (N more rows)``).
        max_cell_chars: characters per rendered cell.
        max_fetch_rows: rows fetched at most; more is an error ("result too large").
        mode: ``"thread"`` runs queries in the caller's thread (deadline by progress handler);
            ``"process"`` runs them in a persistent spawned worker that is killed if it overruns.

    >>> box = SQLiteSandbox()
    >>> "read-only" in box.isolation
    True
    >>> box.close(); box.close()
    """

    def __init__(self, *, timeout_s: float = 5.0, max_rows: int = 50, max_cell_chars: int = 200,
                 max_fetch_rows: int = 100_000, mode: Literal["thread", "process"] = "thread") -> None:
        if mode not in ("thread", "process"):
            raise SandboxOptionError(f"mode must be 'thread' or 'process', not {mode!r}")
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.max_cell_chars = max_cell_chars
        self.max_fetch_rows = max_fetch_rows
        self.mode = mode
        self.isolation = (
            "sqlite: private per-episode copy opened read-only (mode=ro URI); allow-list authorizer "
            "(SELECT/read/functions/recursive CTEs and schema pragmas only: no writes, DDL, ATTACH, "
            "VACUUM INTO, transactions, writing pragmas, load_extension); extensions disabled; "
            f"one statement per query; {timeout_s:g} s progress-handler deadline; at most "
            f"{max_fetch_rows} rows fetched"
            + ("; queries run in a spawned worker process, killed if it overruns" if mode == "process" else
               "; queries run in the caller's thread")
        )
        self._lock = threading.RLock()
        self._tmpdir: str | None = None
        self._source: Path | None = None
        self._copy: str | None = None
        self._con: sqlite3.Connection | None = None
        self._worker: _Worker | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    def load(self, db_path: str | os.PathLike[str]) -> None:
        """Use ``db_path`` as the source database from now on and start a fresh episode on a copy of it."""
        source = Path(db_path)
        if not source.is_file():
            raise FileNotFoundError(f"no SQLite database at {source}")
        with self._lock:
            self._check_open()
            self._source = source
            self.reset()

    def reset(self) -> None:
        """Drop the current copy and reconnect to a fresh copy of the source database."""
        with self._lock:
            self._check_open()
            if self._source is None:
                return  # nothing loaded yet: nothing to forget
            self._drop_copy()
            if self._tmpdir is None:
                self._tmpdir = tempfile.mkdtemp(prefix="agentrl-sqlite-")
            copy = os.path.join(self._tmpdir, f"{uuid.uuid4().hex}.sqlite")
            shutil.copyfile(self._source, copy)
            self._copy = copy
            if self.mode == "thread":
                self._con = _connect(copy)
            else:
                self._open_in_worker()

    def close(self) -> None:
        """Close the connection, stop the worker and delete the temp files; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._drop_copy()
            if self._worker is not None:
                with contextlib.suppress(Exception):
                    self._worker.call(("close",), 2.0)
                self._worker.kill()
                self._worker = None
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None

    def __enter__(self) -> SQLiteSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- running ---------------------------------------------------------------------------------

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run one statement and render its result as a text table (the observation)."""
        timeout_s = self.timeout_s if request.timeout_s is None else request.timeout_s
        start = time.perf_counter()
        args = (request.code, timeout_s, self.max_fetch_rows, self.max_rows, self.max_cell_chars)
        with self._lock:
            self._check_ready()
            if self.mode == "thread":
                assert self._con is not None
                ok, output, error, timed_out, truncated = _execute_on(self._con, *args)
            else:
                reply = self._call_worker(("execute", *args), timeout_s)
                if reply is None:
                    ok, output, error, timed_out, truncated = (
                        False, "", f"timed out after {timeout_s:g} s (worker killed)", True, False)
                else:
                    ok, output, error, timed_out, truncated = reply
        return ExecutionResult(ok=ok, output=output, error=error, timed_out=timed_out,
                               latency_s=time.perf_counter() - start, truncated=truncated)

    def query(self, sql: str, timeout_s: float | None = None) -> QueryOutcome:
        """Run one statement and return all its rows (up to ``max_fetch_rows``), for scoring."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        with self._lock:
            self._check_ready()
            if self.mode == "thread":
                assert self._con is not None
                return _run_query(self._con, sql, timeout_s, self.max_fetch_rows)
            reply = self._call_worker(("query", sql, timeout_s, self.max_fetch_rows), timeout_s)
            if reply is None:
                return QueryOutcome(error=f"timed out after {timeout_s:g} s (worker killed)", timed_out=True)
            return reply

    # -- internals -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed("SQLiteSandbox")

    def _check_ready(self) -> None:
        self._check_open()
        if self._copy is None:
            raise SandboxMisuse("SQLiteSandbox has no database: call load(db_path) first")

    def _drop_copy(self) -> None:
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None
        if self._copy is not None:
            with contextlib.suppress(OSError):
                os.remove(self._copy)
            self._copy = None

    def _open_in_worker(self) -> None:
        if self._worker is None or not self._worker.proc.is_alive():
            self._worker = _Worker()
        ok, _ = self._worker.call(("open", self._copy), 60.0)  # first call includes the spawn
        if not ok:
            self._worker.kill()
            self._worker = None
            raise SandboxUnavailable("the SQLite worker process did not start within 60 s")

    def _call_worker(self, msg: tuple[Any, ...], timeout_s: float) -> Any:
        """The worker's reply, or ``None`` when it overran and was killed (a fresh one is started)."""
        if self._worker is None or not self._worker.proc.is_alive():
            self._open_in_worker()
        assert self._worker is not None
        try:
            done, reply = self._worker.call(msg, timeout_s + _KILL_GRACE_S)
        except (EOFError, OSError, BrokenPipeError):
            done, reply = False, None
        if not done:
            # The progress handler did not fire (native code, or the worker died): kill it so the
            # env's thread is free again, and reopen the same copy in a fresh worker.
            self._worker.kill()
            self._worker = None  # a fresh worker reopens the same copy on the next call
            return None
        return reply
