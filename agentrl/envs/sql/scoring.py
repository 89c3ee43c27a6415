"""Execution accuracy for text-to-SQL: Spider's and BIRD's rules, and test-suite accuracy.

* :func:`results_match` follows the official Spider ``exec_eval`` (``result_eq``): same number of
  columns, rows compared as multisets (as lists when ``order_matters``), and a permutation of the
  prediction's columns is allowed. Values are normalised first (floats rounded to 6 decimals, floats
  that are whole numbers become ints, so ``1 == 1.0`` and ``0.1 + 0.2 == 0.3``).
* :func:`bird_match` is BIRD's rule: ``set(pred) == set(gold)``.
* :func:`perturbed_copies` builds distilled-test-suite-style variants of a database (rows dropped,
  values shuffled and jittered) so that :func:`score_sql` over ``[original, *copies]`` catches a
  query that is right by accident (a hard-coded literal, ``WHERE id = 7`` instead of a max...).

Both queries run through :class:`~agentrl.sandboxes.sqlite.SQLiteSandbox` (read-only copies, deadline).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import random
import shutil
import sqlite3
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from agentrl.core.verify import Score
from agentrl.sandboxes.sqlite import SQLiteSandbox, count_statements

__all__ = ["bird_match", "normalize_value", "perturbed_copies", "results_match", "score_sql"]

_FLOAT_DECIMALS = 6
_MAX_PERMUTATIONS = 10_000  # bound on the column-permutation search (Spider bounds it too)
_DROP_FRACTION = 0.2
_MIN_ROWS_TO_DROP = 5  # tiny tables keep all rows, or most gold results would become empty


def normalize_value(value: Any) -> Any:
    """Normalise one cell for comparison.

    >>> normalize_value(0.1 + 0.2) == normalize_value(0.3)
    True
    >>> normalize_value(1.0), normalize_value(True), normalize_value(None), normalize_value("a")
    (1, 1, None, 'a')
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return value
        value = round(value, _FLOAT_DECIMALS)
        return int(value) if value.is_integer() else value
    return value


def _normalize_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(normalize_value(v) for v in row) for row in rows]


def _sort_key(value: Any) -> tuple[str, str]:
    # Mixed types (None, int, str, bytes) are not orderable in Python; Spider sorts by str + type too.
    return (type(value).__name__, repr(value))


def results_match(pred_rows: Sequence[Sequence[Any]], gold_rows: Sequence[Sequence[Any]], *,
                  order_matters: bool) -> bool:
    """Spider execution match: equal as multisets of rows (lists if ``order_matters``), up to a column permutation.

    Args:
        pred_rows: the predicted query's rows.
        gold_rows: the gold query's rows.
        order_matters: compare row order too (Spider: the gold query has ``ORDER BY``).

    >>> results_match([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], order_matters=False)
    True
    >>> results_match([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], order_matters=True)
    False
    >>> results_match([("a", 1)], [(1, "a")], order_matters=True)  # columns may be permuted
    True
    >>> results_match([(1,), (1,)], [(1,)], order_matters=False)  # multisets, not sets
    False
    >>> results_match([(1, 2)], [(1,)], order_matters=False)
    False
    >>> results_match([(0.1 + 0.2, 1.0)], [(0.3, 1)], order_matters=False)
    True
    """
    pred = _normalize_rows(pred_rows)
    gold = _normalize_rows(gold_rows)
    if not pred and not gold:
        return True
    if len(pred) != len(gold):
        return False
    ncols = len(gold[0])
    if any(len(r) != ncols for r in pred) or any(len(r) != ncols for r in gold):
        return False
    gold_counter = Counter(gold)
    if not order_matters and Counter(tuple(sorted(r, key=_sort_key)) for r in pred) != Counter(
            tuple(sorted(r, key=_sort_key)) for r in gold):
        return False  # quick rejection, as in Spider: the rows' values differ whatever the permutation
    # Candidate prediction columns for each gold column: same multiset of values (necessary for both
    # multiset and ordered equality of the permuted rows), which prunes the search to a handful.
    gold_cols = [Counter(r[i] for r in gold) for i in range(ncols)]
    pred_cols = [Counter(r[j] for r in pred) for j in range(ncols)]
    candidates = [[j for j in range(ncols) if pred_cols[j] == gold_cols[i]] for i in range(ncols)]
    if any(not c for c in candidates):
        return False
    tried = 0
    perm: list[int] = []
    used: set[int] = set()

    def search(i: int) -> bool:
        nonlocal tried
        if i == ncols:
            tried += 1
            permuted = [tuple(row[j] for j in perm) for row in pred]
            return permuted == gold if order_matters else Counter(permuted) == gold_counter
        for j in candidates[i]:
            if j in used or tried >= _MAX_PERMUTATIONS:
                continue
            perm.append(j)
            used.add(j)
            if search(i + 1):
                return True
            perm.pop()
            used.discard(j)
        return False

    return search(0)


def bird_match(pred_rows: Sequence[Sequence[Any]], gold_rows: Sequence[Sequence[Any]]) -> bool:
    """BIRD execution match: ``set(pred) == set(gold)`` (order and duplicates ignored, no column permutation).

    >>> bird_match([(1, "a"), (1, "a"), (2, "b")], [(2, "b"), (1, "a")])
    True
    >>> bird_match([("a", 1)], [(1, "a")])
    False
    """
    return {tuple(r) for r in pred_rows} == {tuple(r) for r in gold_rows}


def _is_sql(text: str) -> bool:
    return isinstance(text, str) and count_statements(text) > 0


def score_sql(pred_sql: str, gold_sql: str, db_paths: Sequence[str | os.PathLike[str]], *, order_matters: bool,
              mode: Literal["spider", "bird"] = "spider", timeout_s: float = 30.0) -> Score:
    """Execution accuracy of ``pred_sql`` against ``gold_sql`` on every database in ``db_paths``.

    ``breakdown``: ``format`` (the prediction is non-empty SQL), ``executes`` (it ran without error on
    every database), ``matches`` (its result matched gold's on every database; also ``value``).
    Pass ``[original, *perturbed_copies(...)]`` for test-suite accuracy.

    Raises:
        ValueError: the *gold* query failed on a database (a dataset or harness bug, not the agent's).

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.sqlite")
    >>> con = sqlite3.connect(path); _ = con.execute("CREATE TABLE t(x)"); con.commit(); con.close()
    >>> score_sql("SELECT count(*) FROM t", "SELECT count(x) FROM t", [path], order_matters=False).value
    1.0
    >>> dict(score_sql("SELECT nope", "SELECT 1", [path], order_matters=False).breakdown)
    {'format': 1.0, 'executes': 0.0, 'matches': 0.0}
    """
    if not db_paths:
        raise ValueError("score_sql needs at least one database")
    if not _is_sql(pred_sql):
        return Score(0.0, {"format": 0.0, "executes": 0.0, "matches": 0.0}, "empty prediction")
    matches = True
    with SQLiteSandbox(timeout_s=timeout_s) as box:
        for path in db_paths:
            box.load(path)
            gold = box.query(gold_sql, timeout_s)
            if not gold.ok:
                raise ValueError(f"gold query failed on {path}: {gold.error}\n{gold_sql}")
            pred = box.query(pred_sql, timeout_s)
            if not pred.ok:
                kind = "timed out" if pred.timed_out else "error"
                return Score(0.0, {"format": 1.0, "executes": 0.0, "matches": 0.0},
                             f"prediction {kind} on {Path(path).name}: {pred.error}")
            if matches:
                ok = (bird_match(pred.rows, gold.rows) if mode == "bird"
                      else results_match(pred.rows, gold.rows, order_matters=order_matters))
                if not ok:
                    matches = False
                    detail = f"result differs from gold on {Path(path).name}"
    if matches:
        return Score(1.0, {"format": 1.0, "executes": 1.0, "matches": 1.0}, f"matches on {len(db_paths)} database(s)")
    return Score(0.0, {"format": 1.0, "executes": 1.0, "matches": 0.0}, detail)


# -- test-suite databases -----------------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _jitter(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + rng.randint(-max(1, abs(value) // 10), max(1, abs(value) // 10))
    if isinstance(value, float):
        out = value * (1 + rng.uniform(-0.1, 0.1))
        # Keep the precision the data had (prices with 2 decimals stay with 2 decimals).
        return round(out, 2) if round(value, 2) == value else out
    return value


def _perturb(con: sqlite3.Connection, rng: random.Random) -> None:
    tables = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    fks: dict[str, list[tuple[str, str, str]]] = {}  # child table -> [(child col, parent table, parent col)]
    for t in tables:
        fks[t] = [(r[3], r[2], r[4]) for r in con.execute(f"PRAGMA foreign_key_list({_quote(t)})")]
    # Values some child row points at: those parent rows are kept and those columns left alone.
    referenced: dict[tuple[str, str], set[Any]] = {}
    for child, refs in fks.items():
        for ccol, ptable, pcol in refs:
            if pcol is None:  # REFERENCES parent (no column): the parent's primary key
                pk = [r[1] for r in con.execute(f"PRAGMA table_info({_quote(ptable)})") if r[5]]
                pcol = pk[0] if pk else "rowid"
            vals = {r[0] for r in con.execute(f"SELECT {_quote(ccol)} FROM {_quote(child)}") if r[0] is not None}
            referenced.setdefault((ptable, pcol), set()).update(vals)
    for t in tables:
        info = list(con.execute(f"PRAGMA table_info({_quote(t)})"))
        try:
            con.execute(f"SELECT rowid FROM {_quote(t)} LIMIT 1")
        except sqlite3.OperationalError:
            continue  # WITHOUT ROWID table: left as is
        keyish = {r[1] for r in info if r[5]} | {c for c, _, _ in fks[t]} | {c for (pt, c) in referenced if pt == t}
        for (idx_name, unique) in [(r[1], r[2]) for r in con.execute(f"PRAGMA index_list({_quote(t)})")]:
            if unique:
                keyish |= {r[2] for r in con.execute(f"PRAGMA index_info({_quote(idx_name)})")}
        # 1. drop ~20% of the rows that no foreign key points at
        ref_cols = [(c, vals) for (pt, c), vals in referenced.items() if pt == t]
        cols_sql = ", ".join(["rowid"] + [_quote(c) for c, _ in ref_cols])
        rows = list(con.execute(f"SELECT {cols_sql} FROM {_quote(t)} ORDER BY rowid"))
        if len(rows) >= _MIN_ROWS_TO_DROP:
            drop = [(r[0],) for r in rows
                    if not any(r[k + 1] in vals for k, (_, vals) in enumerate(ref_cols))
                    and rng.random() < _DROP_FRACTION]
            con.executemany(f"DELETE FROM {_quote(t)} WHERE rowid = ?", drop)
        # 2. shuffle and jitter the values of each non-key column
        for r in info:
            col = r[1]
            if col in keyish:
                continue
            data = list(con.execute(f"SELECT rowid, {_quote(col)} FROM {_quote(t)} ORDER BY rowid"))
            if len(data) < 2:
                continue
            values = [v for _, v in data]
            rng.shuffle(values)
            if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                values = [_jitter(v, rng) for v in values]
            con.execute("SAVEPOINT col")
            try:
                con.executemany(f"UPDATE {_quote(t)} SET {_quote(col)} = ? WHERE rowid = ?",
                                [(v, rid) for (rid, _), v in zip(data, values, strict=True)])
                con.execute("RELEASE col")
            except sqlite3.DatabaseError:  # CHECK / NOT NULL constraint: keep this column as it was
                con.execute("ROLLBACK TO col")
                con.execute("RELEASE col")


def perturbed_copies(db_path: str | os.PathLike[str], n: int, seed: int,
                     out_dir: str | os.PathLike[str]) -> list[Path]:
    """``n`` perturbed variants of ``db_path`` (same schema, different data), deterministic and cached.

    Each copy drops ~20% of the rows of each table (rows that a foreign key points at are kept),
    shuffles the values within each non-key column and jitters numbers. Primary keys, foreign keys,
    referenced and unique columns are left alone so that joins still work. Copies are cached in
    ``out_dir`` under a name derived from the source's sha256, ``seed`` and the index.

    >>> import sqlite3, tempfile, os
    >>> d = tempfile.mkdtemp(); path = os.path.join(d, "d.sqlite")
    >>> con = sqlite3.connect(path)
    >>> _ = con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v REAL)")
    >>> _ = con.executemany("INSERT INTO t(v) VALUES (?)", [(i * 1.5,) for i in range(50)])
    >>> con.commit(); con.close()
    >>> a = perturbed_copies(path, 2, seed=0, out_dir=os.path.join(d, "ts"))
    >>> a == perturbed_copies(path, 2, seed=0, out_dir=os.path.join(d, "ts"))
    True
    >>> len(a), all(p.exists() for p in a)
    (2, True)
    """
    source = Path(db_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    digest = _file_digest(source)[:16]
    paths: list[Path] = []
    for i in range(n):
        target = out / f"{source.stem}-{digest}-s{seed}-{i}.sqlite"
        if not target.exists():
            tmp = out / f".{target.name}.{uuid.uuid4().hex}.tmp"
            shutil.copyfile(source, tmp)
            try:
                con = sqlite3.connect(tmp, isolation_level=None)
                try:
                    con.execute("BEGIN")
                    _perturb(con, random.Random(f"agentrl-sql:{seed}:{i}"))
                    con.execute("COMMIT")
                finally:
                    con.close()
                os.replace(tmp, target)  # atomic: a concurrent caller never sees a half-written copy
            finally:
                with contextlib.suppress(OSError):
                    os.remove(tmp)
        paths.append(target)
    return paths
