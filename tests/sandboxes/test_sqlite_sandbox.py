from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import pytest

from agentrl.sandboxes.base import ExecutionRequest, Sandbox
from agentrl.sandboxes.sqlite import SQLiteSandbox, count_statements

MODES = ["thread", "process"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
        CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customer(id), amount REAL);
        """
    )
    con.executemany("INSERT INTO customer VALUES (?, ?, ?)",
                    [(i, f"name{i}" + ("x" * 300 if i == 1 else ""), f"city{i % 7}") for i in range(1, 2001)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, i % 2000 + 1, i * 1.5) for i in range(1, 2001)])
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module", params=MODES)
def box(request: pytest.FixtureRequest, db_path: Path):
    sandbox = SQLiteSandbox(mode=request.param, timeout_s=0.5, max_rows=5, max_cell_chars=20)
    sandbox.load(db_path)
    yield sandbox
    sandbox.close()


def run(box: SQLiteSandbox, sql: str, timeout_s: float | None = None):
    return box.execute(ExecutionRequest(sql, timeout_s))


def test_protocol_and_basic_query(box: SQLiteSandbox) -> None:
    assert isinstance(box, Sandbox)
    res = run(box, "SELECT id, name FROM customer WHERE id <= 2 ORDER BY id")
    assert res.ok and res.error is None and not res.timed_out
    lines = res.output.splitlines()
    assert lines[0].split() == ["id", "|", "name"]
    assert lines[2].startswith("1  | name1xxx") and lines[2].endswith("...")  # cell truncated
    assert res.truncated
    assert "(0 rows)" in run(box, "SELECT * FROM customer WHERE id < 0").output


def test_row_cap_marker(box: SQLiteSandbox) -> None:
    res = run(box, "SELECT id FROM customer")
    assert res.ok and res.output.endswith("... (1995 more rows)")
    assert len(res.output.splitlines()) == 2 + 5 + 1


def test_query_untruncated(box: SQLiteSandbox) -> None:
    out = box.query("SELECT id, name FROM customer ORDER BY id")
    assert out.ok and out.columns == ("id", "name") and len(out.rows) == 2000
    assert len(out.rows[0][1]) == 305


@pytest.mark.parametrize("sql", [
    "DELETE FROM customer",
    "INSERT INTO customer VALUES (9999, 'x', 'y')",
    "UPDATE customer SET name = 'x'",
    "DROP TABLE orders",
    "CREATE TABLE z(a)",
    "ALTER TABLE customer ADD COLUMN q",
    "PRAGMA writable_schema=1",
    "PRAGMA journal_mode=WAL",
    "ATTACH DATABASE '/tmp/agentrl_sqlite_attack' AS y",
    "DETACH DATABASE main",
    "SELECT load_extension('x')",
    "VACUUM INTO '/tmp/agentrl_sqlite_vacuum'",
    "BEGIN",
])
def test_attacks_denied_and_source_untouched(box: SQLiteSandbox, db_path: Path, sql: str) -> None:
    before = _sha(db_path)
    res = run(box, sql)
    assert not res.ok and res.error
    assert _sha(db_path) == before
    assert not os.path.exists("/tmp/agentrl_sqlite_vacuum")
    assert run(box, "SELECT count(*) FROM customer").output.splitlines()[2] == "2000"


def test_schema_pragmas_allowed(box: SQLiteSandbox) -> None:
    res = run(box, "PRAGMA table_info(customer)")
    assert res.ok and "name" in res.output
    assert run(box, "SELECT name FROM sqlite_master WHERE type = 'table'").ok


def test_runaway_cte_times_out(box: SQLiteSandbox, db_path: Path) -> None:
    start = time.monotonic()
    res = run(box, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c")
    assert res.timed_out and not res.ok and "timed out" in (res.error or "")
    assert time.monotonic() - start < 3
    assert run(box, "SELECT 1").ok  # still usable


def test_cartesian_join_times_out(box: SQLiteSandbox) -> None:
    res = run(box, "SELECT count(*) FROM customer a, customer b, orders c")
    assert res.timed_out
    assert box.query("SELECT count(*) FROM customer a, customer b, orders c", 0.3).timed_out


def test_million_rows_too_large(box: SQLiteSandbox) -> None:
    sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000000) SELECT x FROM c"
    res = run(box, sql, 5.0)
    assert not res.ok and "result too large" in (res.error or "")
    assert "result too large" in (box.query(sql, 5.0).error or "")


def test_multiple_statements(box: SQLiteSandbox) -> None:
    res = run(box, "SELECT 1; SELECT 2; SELECT 3")
    assert not res.ok and res.error == "one statement per query; got 3"
    assert run(box, "SELECT 1;").ok
    assert run(box, "SELECT 1; -- trailing comment").ok


@pytest.mark.parametrize("sql", ["", "   ", "SELECT '\ud800'", "SELECT 'a\x00b'", "hello there, show me the tables",
                                 "SELECT * FROM nope"])
def test_garbage_is_an_error_observation(box: SQLiteSandbox, sql: str) -> None:
    res = run(box, sql)
    assert not res.ok and res.error and res.output == ""


def test_syntax_error_is_verbatim(box: SQLiteSandbox) -> None:
    assert run(box, "hello there").error == 'near "hello": syntax error'
    assert run(box, "SELECT * FROM nope").error == "no such table: nope"


def test_count_statements() -> None:
    assert count_statements("SELECT 'a;b'; SELECT \"c;\"") == 2
    assert count_statements("SELECT 1 /* ; */") == 1


@pytest.mark.parametrize("mode", MODES)
def test_reset_gives_fresh_copy_and_close_cleans(db_path: Path, mode: str) -> None:
    box = SQLiteSandbox(mode=mode)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        box.execute(ExecutionRequest("SELECT 1"))
    box.load(db_path)
    first = box._copy
    box.reset()
    assert box._copy != first and first is not None and not os.path.exists(first)
    assert box.execute(ExecutionRequest("SELECT count(*) FROM orders")).ok
    tmpdir = box._tmpdir
    assert tmpdir is not None and os.path.isdir(tmpdir)
    box.close()
    box.close()
    assert not os.path.exists(tmpdir)
    with pytest.raises(RuntimeError):
        box.execute(ExecutionRequest("SELECT 1"))


def test_process_mode_kills_stuck_worker(db_path: Path) -> None:
    with SQLiteSandbox(mode="process", timeout_s=0.2) as box:
        box.load(db_path)
        assert box._call_worker(("sleep", 30.0), 0.2) is None  # stuck "native" call: killed
        assert box._worker is None
        res = box.execute(ExecutionRequest("SELECT count(*) FROM customer"))
        assert res.ok and "2000" in res.output
