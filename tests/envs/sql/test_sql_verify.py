from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from agentrl.envs.sql.verify import bird_match, perturbed_copies, results_match, score_sql


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scoring") / "school.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE dept(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
        CREATE TABLE student(id INTEGER PRIMARY KEY, name TEXT, age INTEGER, gpa REAL,
                             dept_id INTEGER REFERENCES dept(id));
        """
    )
    con.executemany("INSERT INTO dept VALUES (?, ?)", [(i, f"dept{i}") for i in range(1, 6)])
    con.executemany("INSERT INTO student VALUES (?, ?, ?, ?, ?)",
                    [(i, f"s{i}", 18 + i % 10, round(2.0 + (i * 37 % 200) / 100, 2), i % 5 + 1)
                     for i in range(1, 201)])
    con.commit()
    con.close()
    return path


# -- results_match ---------------------------------------------------------------------------------


def test_ordering() -> None:
    gold = [(1,), (2,), (3,)]
    assert results_match([(3,), (1,), (2,)], gold, order_matters=False)
    assert not results_match([(3,), (1,), (2,)], gold, order_matters=True)
    assert results_match([(1,), (2,), (3,)], gold, order_matters=True)


def test_duplicates_are_a_multiset() -> None:
    assert not results_match([(1,), (2,), (2,)], [(1,), (1,), (2,)], order_matters=False)
    assert results_match([(2,), (1,), (2,)], [(2,), (2,), (1,)], order_matters=False)
    assert not results_match([(1,)], [(1,), (1,)], order_matters=False)


def test_column_permutation() -> None:
    gold = [(1, "a", 2.5), (2, "b", 3.5)]
    pred = [("b", 3.5, 2), ("a", 2.5, 1)]
    assert results_match(pred, gold, order_matters=False)
    assert not results_match(pred, gold, order_matters=True)
    assert results_match([("a", 2.5, 1), ("b", 3.5, 2)], gold, order_matters=True)
    # each column matches as a multiset but the rows pair values differently
    assert not results_match([(1, "b"), (2, "a")], [(1, "a"), (2, "b")], order_matters=False)
    # same values in two columns: the permutation search must try both
    assert results_match([(1, 1, 2), (1, 2, 1)], [(1, 2, 1), (1, 1, 2)], order_matters=True)


def test_nulls() -> None:
    assert results_match([(None, 1)], [(None, 1)], order_matters=True)
    assert not results_match([(None,)], [(0,)], order_matters=False)
    assert results_match([(1, None), (None, "x")], [(None, "x"), (1, None)], order_matters=False)


def test_floats_and_ints() -> None:
    # the official rules compare raw values; the generated mode normalises them
    assert not results_match([(0.1 + 0.2,)], [(0.3,)], order_matters=False)
    assert results_match([(0.1 + 0.2,)], [(0.3,)], order_matters=False, normalize=True)
    assert results_match([(1,)], [(1.0,)], order_matters=True)
    assert results_match([(2.0, "x")], [("x", 2)], order_matters=True)
    assert not results_match([(0.30001,)], [(0.3,)], order_matters=False, normalize=True)


def test_column_count_and_empty() -> None:
    assert not results_match([(1, 2)], [(1,)], order_matters=False)
    assert not results_match([(1,)], [(1, 1)], order_matters=False)
    assert results_match([], [], order_matters=False)
    assert not results_match([], [(1,)], order_matters=False)
    assert not results_match([(1,)], [], order_matters=False)


def test_wide_permutation_search_is_bounded() -> None:
    row = tuple(range(12))
    assert results_match([row[::-1]], [row], order_matters=True)
    same = [(1,) * 12, (1,) * 12]
    assert results_match(same, same, order_matters=False)


def test_bird_set_semantics() -> None:
    assert bird_match([(1,), (1,), (2,)], [(2,), (1,)])
    assert bird_match([(2,), (1,)], [(1,), (2,)])
    assert not bird_match([("a", 1)], [(1, "a")])
    assert not bird_match([(1,)], [(1,), (2,)])


# -- score_sql -------------------------------------------------------------------------------------


def test_score_sql_breakdown(db: Path) -> None:
    gold = "SELECT name FROM student WHERE age > 25 ORDER BY id"
    s = score_sql("SELECT name FROM student WHERE age >= 26 ORDER BY id", gold, [db], order_matters=True)
    assert s.value == 1.0 and s.success and dict(s.breakdown) == {"format": 1.0, "executes": 1.0, "matches": 1.0}
    s = score_sql("SELECT name FROM student WHERE age > 25 ORDER BY id DESC", gold, [db], order_matters=True)
    assert dict(s.breakdown) == {"format": 1.0, "executes": 1.0, "matches": 0.0}
    assert score_sql("SELECT name FROM student WHERE age > 25 ORDER BY id DESC", gold, [db],
                     order_matters=False).value == 1.0
    s = score_sql("SELECT nme FROM student", gold, [db], order_matters=False)
    assert dict(s.breakdown) == {"format": 1.0, "executes": 0.0, "matches": 0.0}
    for empty in ["", "   ", "-- nothing"]:
        s = score_sql(empty, gold, [db], order_matters=False)
        assert dict(s.breakdown) == {"format": 0.0, "executes": 0.0, "matches": 0.0}
    s = score_sql("DELETE FROM student", gold, [db], order_matters=False)
    assert s.breakdown["executes"] == 0.0


def test_score_sql_timeout_and_bad_gold(db: Path) -> None:
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"
    s = score_sql(runaway, "SELECT 1", [db], order_matters=False, timeout_s=0.3)
    assert s.value == 0.0 and s.breakdown["executes"] == 0.0 and "timed out" in s.detail
    with pytest.raises(ValueError, match="gold query failed"):
        score_sql("SELECT 1", "SELECT * FROM nope", [db], order_matters=False)


def test_score_sql_bird_mode(db: Path) -> None:
    gold = "SELECT DISTINCT dept_id FROM student"
    assert score_sql("SELECT dept_id FROM student", gold, [db], order_matters=False, mode="bird").value == 1.0
    assert score_sql("SELECT dept_id FROM student", gold, [db], order_matters=False, mode="generated").value == 0.0
    # Spider's default removes DISTINCT from both queries
    assert score_sql("SELECT dept_id FROM student", gold, [db]).value == 1.0


# -- test-suite accuracy ---------------------------------------------------------------------------


def test_perturbed_copies_deterministic_cached_and_source_untouched(db: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    a = perturbed_copies(db, 3, seed=7, out_dir=tmp_path / "a")
    b = perturbed_copies(db, 3, seed=7, out_dir=tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    mtimes = [p.stat().st_mtime_ns for p in a]
    assert perturbed_copies(db, 3, seed=7, out_dir=tmp_path / "a") == a
    assert [p.stat().st_mtime_ns for p in a] == mtimes  # cached, not rebuilt
    c = perturbed_copies(db, 1, seed=8, out_dir=tmp_path / "a")
    assert c[0].read_bytes() != a[0].read_bytes()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    for p in a:
        con = sqlite3.connect(p)
        schema = con.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
        n = con.execute("SELECT count(*) FROM student").fetchone()[0]
        dangling = con.execute(
            "SELECT count(*) FROM student WHERE dept_id NOT IN (SELECT id FROM dept)").fetchone()[0]
        con.close()
        assert schema == sqlite3.connect(db).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
        assert 120 < n < 200 and dangling == 0


def test_test_suite_catches_literal_answers(db: Path, tmp_path: Path) -> None:
    suite = [db, *perturbed_copies(db, 3, seed=0, out_dir=tmp_path)]
    gold = "SELECT max(gpa) FROM student"
    con = sqlite3.connect(db)
    best = con.execute(gold).fetchone()[0]
    best_id = con.execute("SELECT id FROM student ORDER BY gpa DESC, id LIMIT 1").fetchone()[0]
    con.close()
    literal = f"SELECT {best}"
    assert score_sql(literal, gold, [db], order_matters=False, mode="generated").value == 1.0
    assert score_sql(literal, gold, suite, order_matters=False, mode="generated").value == 0.0
    gold_name = "SELECT name FROM student ORDER BY gpa DESC, id LIMIT 1"
    by_id = f"SELECT name FROM student WHERE id = {best_id}"
    assert score_sql(by_id, gold_name, [db], order_matters=False, mode="generated").value == 1.0
    assert score_sql(by_id, gold_name, suite, order_matters=False, mode="generated").value == 0.0
    # a correct query stays correct on every copy
    right = "SELECT gpa FROM student ORDER BY gpa DESC LIMIT 1"
    assert score_sql(right, gold, suite, order_matters=False, mode="generated").value == 1.0
    join_gold = "SELECT d.name, count(*) FROM student s JOIN dept d ON s.dept_id = d.id GROUP BY d.name"
    join_pred = "SELECT count(*), (SELECT name FROM dept WHERE id = dept_id) FROM student GROUP BY dept_id"
    assert score_sql(join_pred, join_gold, suite, order_matters=False, mode="generated").value == 1.0
