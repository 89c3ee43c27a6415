"""The SQL verifier: execution accuracy under the official Spider and BIRD rules, and test-suite accuracy.

:class:`SQLVerifier` is the env's verifier; it picks the rules by the task's ``metadata["mode"]`` and calls
:func:`score_sql`, the pure comparison of two queries on a list of databases.

Three scoring modes (``score_sql(mode=...)``):

* ``"spider"``: the official Spider test-suite evaluator (``exec_eval.eval_exec_match`` with its defaults,
  repository ``taoyds/test-suite-sql-eval``, files ``exec_eval.py`` and ``parse.py``):

  1. both queries are post-processed: ``> =``, ``< =``, ``! =`` become ``>=``, ``<=``, ``!=``
     (:func:`postprocess_sql`) and ``YEAR(CURDATE())`` becomes ``2020`` (:func:`replace_cur_year`);
  2. unless ``keep_distinct``, every ``DISTINCT`` keyword is removed from both queries, also inside
     ``COUNT(DISTINCT ...)``, and only their first statement is kept (:func:`remove_distinct`);
  3. row order matters only when the (processed) gold query contains ``order by`` (:func:`spider_order_matters`);
  4. results are compared raw, no rounding (:func:`spider_result_eq`): both empty match; a different
     number of rows or of columns does not; each row's values sorted by ``str(value) + str(type(value))``
     must agree (as lists when order matters, as sets otherwise: a quick rejection that the official
     code applies, with its quirks); then some permutation of the prediction's columns must make the
     two results equal as lists (order matters) or as multisets of rows;
  5. the queries run on every file whose name contains ``.sqlite`` in the gold database's folder
     (the distilled test suite, :func:`spider_test_suite`); the prediction must match on all of them;
  6. with ``plug_value``, the gold query's literal values are also plugged into the prediction's value
     slots in every way (:func:`plug_values`) and any plugged variant that matches counts.

* ``"bird"``: BIRD's official ``evaluation.py`` (``AlibabaResearch/DAMO-ConvAI``, ``bird/llm/src/evaluation.py``):
  ``set(predicted_res) == set(ground_truth_res)`` on ``<db_id>.sqlite`` (:func:`bird_match`); a
  prediction that fails or times out scores 0.

* ``"generated"``: our rules for the generated databases: Spider's comparison after normalising values
  (floats rounded to 6 decimals, whole floats become ints: :func:`normalize_value`), ``DISTINCT`` kept,
  the task's own ``order_matters``; :func:`perturbed_copies` builds distilled-test-suite-style variants
  (rows dropped, values shuffled and jittered) to catch a query that is right by accident.

Deliberate differences from the official scripts, all for safety: both queries run through
:class:`~agentrl.sandboxes.sqlite.SQLiteSandbox` (read-only copy, deadline, one statement, at most
100,000 rows fetched), so a data-changing prediction is an error rather than an empty result, and TEXT
that is not valid UTF-8 is an error rather than decoded with ``errors="ignore"``; a gold query that
fails raises :class:`ValueError` (a dataset bug); the column-permutation search and the value plugging
are bounded (:data:`MAX_PERMUTATIONS`, :data:`MAX_PLUGGED`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
import random
import re
import shutil
import sqlite3
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agentrl.core.task import Task
from agentrl.core.verify import Score
from agentrl.sandboxes.sqlite import SQLiteSandbox, count_statements

__all__ = [
    "MAX_PERMUTATIONS",
    "MAX_PLUGGED",
    "SQLVerifier",
    "bird_match",
    "normalize_value",
    "perturbed_copies",
    "plug_values",
    "postprocess_sql",
    "remove_distinct",
    "replace_cur_year",
    "results_match",
    "score_sql",
    "spider_order_matters",
    "spider_result_eq",
    "spider_test_suite",
]

ScoringMode = Literal["spider", "bird", "generated"]

_FLOAT_DECIMALS = 6
MAX_PERMUTATIONS = 100_000
"""Column permutations tried at most per comparison (the official search is unbounded)."""
MAX_PLUGGED = 1_000
"""Value-plugged variants of a prediction tried at most with ``plug_value`` (the official is unbounded)."""
_DROP_FRACTION = 0.2
_MIN_ROWS_TO_DROP = 5  # tiny tables keep all rows, or most gold results would become empty


# -- query preprocessing (Spider) ---------------------------------------------------------------------


def postprocess_sql(sql: str) -> str:
    """Join the spaced comparison operators ``> =``, ``< =``, ``! =`` (Spider's ``postprocess``).

    >>> postprocess_sql("SELECT * FROM t WHERE a > = 3 AND b ! = 2")
    'SELECT * FROM t WHERE a >= 3 AND b != 2'
    """
    return sql.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


def replace_cur_year(sql: str) -> str:
    """Replace MySQL's ``YEAR(CURDATE())`` by ``2020``, as Spider's executor does before running a query.

    >>> replace_cur_year("SELECT name FROM p WHERE YEAR(CURDATE()) - born > 30")
    'SELECT name FROM p WHERE 2020- born > 30'
    """
    return _CUR_YEAR.sub("2020", sql)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _lex(sql: str) -> Iterator[tuple[str, str]]:
    """Split SQL into ``(kind, text)`` pieces that join back to ``sql``.

    Kinds: ``str`` ('...'), ``qname`` ("...", `...`, [...]), ``comment``, ``word``, ``number``, ``other``.
    """
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = i + 1
            while True:
                k = sql.find(close, j)
                if k < 0:
                    k = n - 1
                    break
                if close != "]" and k + 1 < n and sql[k + 1] == close:  # doubled quote: an escaped quote
                    j = k + 2
                    continue
                break
            yield ("str" if ch == "'" else "qname"), sql[i:k + 1]
            i = k + 1
            continue
        if sql.startswith("--", i) or sql.startswith("/*", i):
            end = sql.find("\n", i) if sql[i] == "-" else sql.find("*/", i + 2)
            k = n if end < 0 else (end + (1 if sql[i] == "-" else 2))
            yield "comment", sql[i:k]
            i = k
            continue
        m = _WORD.match(sql, i)
        if m:
            yield "word", m.group()
            i = m.end()
            continue
        m = _NUMBER.match(sql, i)
        if m:
            yield "number", m.group()
            i = m.end()
            continue
        yield "other", ch
        i += 1


def remove_distinct(sql: str) -> str:
    """Remove every ``DISTINCT`` keyword, as Spider does by default (``parse.remove_distinct``).

    String literals, quoted names and comments are kept. Like the official function, which parses
    the text and keeps its first statement only, anything after the first ``;`` is dropped.

    >>> remove_distinct("SELECT DISTINCT name FROM t")
    'SELECT  name FROM t'
    >>> remove_distinct("SELECT count(distinct name) FROM t WHERE x = 'distinct'; SELECT 2")
    "SELECT count( name) FROM t WHERE x = 'distinct';"
    """
    out: list[str] = []
    for kind, text in _lex(sql):
        if not (kind == "word" and text.lower() == "distinct"):
            out.append(text)
        if kind == "other" and text == ";":
            break
    return "".join(out)


def spider_order_matters(gold_sql: str) -> bool:
    """Spider's rule: row order matters when the gold query contains ``order by`` (any case, one space).

    >>> spider_order_matters("SELECT a FROM t ORDER BY a"), spider_order_matters("SELECT max(a) FROM t")
    (True, False)
    """
    return "order by" in gold_sql.lower()


def _value_slots(sql: str) -> tuple[list[str], list[int], list[str]]:
    """Pieces of ``sql``, the indices of its literal values (strings, quoted names, numbers), the values."""
    pieces: list[str] = []
    slots: list[int] = []
    for kind, text in _lex(sql):
        if kind in ("str", "number") or (kind == "qname" and text.startswith('"')):
            slots.append(len(pieces))
        pieces.append(text)
    return pieces, slots, [pieces[i] for i in slots]


def plug_values(gold_sql: str, pred_sql: str, limit: int = MAX_PLUGGED) -> Iterator[str]:
    """Variants of ``pred_sql`` with the gold query's literal values plugged into its value slots.

    Spider's ``plug_value`` option (``parse.get_all_preds_for_execution``): the values are the gold
    query's string literals (single- or double-quoted) and numbers; every slot of the prediction takes
    every gold value, in every combination (at most ``limit`` variants).

    >>> list(plug_values("SELECT a FROM t WHERE b = 'x'", "SELECT a FROM t WHERE b = 'y'"))
    ["SELECT a FROM t WHERE b = 'x'"]
    >>> sorted(plug_values("SELECT a FROM t WHERE b > 3 AND c = 'z'", "SELECT a FROM t WHERE b > 4"))
    ["SELECT a FROM t WHERE b > 'z'", 'SELECT a FROM t WHERE b > 3']
    """
    gold_values = sorted(set(_value_slots(gold_sql)[2]))
    pieces, slots, _ = _value_slots(pred_sql)
    if not slots or not gold_values:
        return
    for values in itertools.islice(itertools.product(gold_values, repeat=len(slots)), limit):
        out = list(pieces)
        for index, value in zip(slots, values, strict=True):
            out[index] = value
        yield "".join(out)


def spider_test_suite(db_path: str | os.PathLike[str]) -> list[Path]:
    """Every file whose name contains ``.sqlite`` in ``db_path``'s folder, sorted (Spider's test suite).

    The official evaluator runs both queries on each of them: ``database/<db_id>/<db_id>.sqlite`` plus
    the distilled test-suite databases placed next to it.
    """
    folder = Path(db_path).parent
    return sorted(p for p in folder.iterdir() if ".sqlite" in p.name and p.is_file())


# -- result comparison ------------------------------------------------------------------------------


def normalize_value(value: Any) -> Any:
    """Normalise one cell for the ``"generated"`` mode (never in the official modes).

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


def _unordered_row(row: Sequence[Any]) -> tuple[Any, ...]:
    # Spider sorts a row's values by str(value) + str(type(value)): 1 and 1.0 sort differently.
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def spider_result_eq(gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]], *,
                     order_matters: bool) -> bool:
    """Spider's denotation equality (``exec_eval.result_eq``), values compared raw.

    >>> spider_result_eq([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], order_matters=False)
    True
    >>> spider_result_eq([(1, "a"), (2, "b")], [(2, "b"), (1, "a")], order_matters=True)
    False
    >>> spider_result_eq([(1, "a")], [("a", 1)], order_matters=True)  # columns may be permuted
    True
    >>> spider_result_eq([(1,)], [(1,), (1,)], order_matters=False)  # multisets, not sets
    False
    >>> spider_result_eq([(0.3,)], [(0.1 + 0.2,)], order_matters=False)  # raw values
    False
    """
    gold = [tuple(r) for r in gold_rows]
    pred = [tuple(r) for r in pred_rows]
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    ncols = len(gold[0])
    if len(pred[0]) != ncols:
        return False
    gold_unordered = [_unordered_row(r) for r in gold]
    pred_unordered = [_unordered_row(r) for r in pred]
    if order_matters:
        if gold_unordered != pred_unordered:
            return False
    elif set(gold_unordered) != set(pred_unordered):
        return False
    # Prediction column j can stand for gold column i only if all its values occur in gold column i.
    gold_sets = [{r[i] for r in gold} for i in range(ncols)]
    pred_sets = [{r[j] for r in pred} for j in range(ncols)]
    candidates = [[j for j in range(ncols) if pred_sets[j] <= gold_sets[i]] for i in range(ncols)]
    if any(not c for c in candidates):
        return False
    gold_counter = Counter(gold) if not order_matters else None
    tried = 0
    perm: list[int] = []
    used: set[int] = set()

    def search(i: int) -> bool:
        nonlocal tried
        if i == ncols:
            tried += 1
            permuted = [tuple(row[j] for j in perm) for row in pred]
            return permuted == gold if gold_counter is None else Counter(permuted) == gold_counter
        for j in candidates[i]:
            if j in used or tried >= MAX_PERMUTATIONS:
                continue
            perm.append(j)
            used.add(j)
            if search(i + 1):
                return True
            perm.pop()
            used.discard(j)
        return False

    return search(0)


def results_match(pred_rows: Sequence[Sequence[Any]], gold_rows: Sequence[Sequence[Any]], *,
                  order_matters: bool, normalize: bool = False) -> bool:
    """Spider execution match of two results (:func:`spider_result_eq`), values normalised if ``normalize``.

    >>> results_match([(0.1 + 0.2, 1.0)], [(0.3, 1)], order_matters=False)
    False
    >>> results_match([(0.1 + 0.2, 1.0)], [(0.3, 1)], order_matters=False, normalize=True)
    True
    """
    if normalize:
        pred_rows = [tuple(normalize_value(v) for v in r) for r in pred_rows]
        gold_rows = [tuple(normalize_value(v) for v in r) for r in gold_rows]
    return spider_result_eq(gold_rows, pred_rows, order_matters=order_matters)


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


def score_sql(pred_sql: str, gold_sql: str, db_paths: Sequence[str | os.PathLike[str]], *,
              order_matters: bool | None = None, mode: ScoringMode = "spider", keep_distinct: bool = False,
              plug_value: bool = False, timeout_s: float = 30.0) -> Score:
    """Execution accuracy of ``pred_sql`` against ``gold_sql`` on every database in ``db_paths``.

    Args:
        pred_sql: the prediction.
        gold_sql: the gold query.
        db_paths: the databases; for Spider's rules pass :func:`spider_test_suite` of the gold database.
        order_matters: ``None`` (default): Spider's rule on the processed gold query; ``"generated"``
            mode callers pass the task's flag. BIRD ignores order.
        mode: ``"spider"``, ``"bird"`` or ``"generated"`` (see the module docstring).
        keep_distinct: Spider only: keep ``DISTINCT`` (the official default removes it).
        plug_value: Spider only: also try the gold query's values plugged into the prediction.
        timeout_s: deadline per query.

    ``breakdown``: ``format`` (the prediction is non-empty SQL), ``executes`` (it ran without error on
    every database), ``matches`` (its result matched gold's on every database; also ``value``).

    Raises:
        ValueError: the *gold* query failed on a database (a dataset or harness bug, not the agent's),
            or an unknown mode.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.sqlite")
    >>> con = sqlite3.connect(path); _ = con.execute("CREATE TABLE t(x)"); con.commit(); con.close()
    >>> score_sql("SELECT count(*) FROM t", "SELECT count(x) FROM t", [path]).value
    1.0
    >>> dict(score_sql("SELECT nope", "SELECT 1", [path]).breakdown)
    {'format': 1.0, 'executes': 0.0, 'matches': 0.0}
    """
    if mode not in ("spider", "bird", "generated"):
        raise ValueError(f"mode must be 'spider', 'bird' or 'generated', got {mode!r}")
    if not db_paths:
        raise ValueError("score_sql needs at least one database")
    if not _is_sql(pred_sql):
        return Score(0.0, {"format": 0.0, "executes": 0.0, "matches": 0.0}, "empty prediction")
    candidates: list[str] = [pred_sql]
    if mode == "spider":
        pred_sql, gold_sql = replace_cur_year(postprocess_sql(pred_sql)), replace_cur_year(postprocess_sql(gold_sql))
        if not keep_distinct:
            pred_sql, gold_sql = remove_distinct(pred_sql), remove_distinct(gold_sql)
        if order_matters is None:
            order_matters = spider_order_matters(gold_sql)
        candidates = [pred_sql]
        if plug_value:
            candidates += [q for q in plug_values(gold_sql, pred_sql) if q != pred_sql]
    order = bool(order_matters)
    golds: dict[int, list[tuple[Any, ...]]] = {}
    first_failure = ""
    executed_everywhere = False
    with SQLiteSandbox(timeout_s=timeout_s) as box:
        for attempt, candidate in enumerate(candidates):
            passes, runs, detail = True, True, ""
            for index, path in enumerate(db_paths):
                box.load(path)
                if index not in golds:
                    gold = box.query(gold_sql, timeout_s)
                    if not gold.ok:
                        raise ValueError(f"gold query failed on {path}: {gold.error}\n{gold_sql}")
                    golds[index] = gold.rows
                pred = box.query(candidate, timeout_s)
                if not pred.ok:
                    kind = "timed out" if pred.timed_out else "error"
                    passes, runs = False, False
                    detail = f"prediction {kind} on {Path(path).name}: {pred.error}"
                    break
                if not passes:
                    continue  # already wrong: only finding out whether it runs everywhere
                if mode == "bird":
                    ok = bird_match(pred.rows, golds[index])
                else:
                    ok = results_match(pred.rows, golds[index], order_matters=order, normalize=mode == "generated")
                if not ok:
                    passes, detail = False, f"result differs from gold on {Path(path).name}"
                    if attempt:
                        break  # a plugged variant: no breakdown needed
            if passes:
                how = " (gold values plugged in)" if attempt else ""
                return Score(1.0, {"format": 1.0, "executes": 1.0, "matches": 1.0},
                             f"matches on {len(db_paths)} database(s){how}")
            if not attempt:
                first_failure, executed_everywhere = detail, runs
    executes = 1.0 if executed_everywhere else 0.0
    return Score(0.0, {"format": 1.0, "executes": executes, "matches": 0.0}, first_failure)


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


# -- the env's verifier ---------------------------------------------------------------------------------


class SQLVerifier:
    """Execution accuracy: the official Spider or BIRD rules for those datasets, ours for generated ones.

    The task's ``metadata["mode"]`` picks the rules (see the module docstring):

    * ``"spider"``: the official test-suite evaluator's defaults; both queries run on every ``.sqlite``
      file in the gold database's folder (``database/<db_id>/``: the distilled test suite);
    * ``"bird"``: BIRD's ``set(pred) == set(gold)`` on ``<db_id>.sqlite``;
    * ``"generated"`` (tasks without a mode): Spider's comparison with floats rounded, the task's order flag.

    With ``test_suite=n`` the queries also run on ``n`` perturbed copies of the database (our test
    suite, meant for generated databases): a query that is right on the original by accident scores 0.

    Args:
        test_suite: how many perturbed copies to also compare on (0: none).
        timeout_s: deadline per query while scoring.
        cache_dir: where perturbed copies are kept (they are reused across episodes).
        keep_distinct: Spider's ``keep_distinct`` option (default False: ``DISTINCT`` is removed).
        plug_value: Spider's ``plug_value`` option (default False).
        folder_suite: Spider: run on every ``.sqlite`` in the database's folder (default True, as the
            official evaluator does); False: the task's database only.

    >>> import sqlite3, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.sqlite")
    >>> con = sqlite3.connect(path); _ = con.execute("CREATE TABLE t(x)"); con.commit(); con.close()
    >>> task = Task("t", "How many rows?", "", metadata={"db_path": path, "gold_sql": "SELECT count(*) FROM t"})
    >>> SQLVerifier()(task, "SELECT count(x) FROM t", {}).value, SQLVerifier()(task, "SELECT 7", {}).value
    (1.0, 0.0)
    """

    def __init__(self, test_suite: int = 0, timeout_s: float = 30.0, cache_dir: str | None = None, *,
                 keep_distinct: bool = False, plug_value: bool = False, folder_suite: bool = True) -> None:
        self.test_suite = test_suite
        self.timeout_s = timeout_s
        self.keep_distinct = keep_distinct
        self.plug_value = plug_value
        self.folder_suite = folder_suite
        self.cache_dir = Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / f"agentrl-sql-{os.getuid()}"
        self._copies: dict[str, list[Path]] = {}

    def database_paths(self, task: Task) -> list[Path]:
        """The databases ``task``'s queries are compared on: its test suite, then any perturbed copies."""
        source = Path(task.metadata["db_path"])
        paths = [source]
        if task.metadata.get("mode") == "spider" and self.folder_suite:
            paths = [source, *(p for p in spider_test_suite(source) if p.resolve() != source.resolve())]
        if self.test_suite <= 0:
            return paths
        key = str(source)
        if key not in self._copies:
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            out = self.cache_dir / f"{source.stem}-{digest}"
            out.mkdir(parents=True, exist_ok=True)
            self._copies[key] = list(perturbed_copies(source, self.test_suite, seed=0, out_dir=out))
        return [*paths, *self._copies[key]]

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Score a submitted query; never raises on the query's content."""
        mode = str(task.metadata.get("mode", "generated"))
        return score_sql(
            answer,
            str(task.metadata["gold_sql"]),
            self.database_paths(task),
            order_matters=bool(task.metadata.get("order_matters", False)) if mode == "generated" else None,
            mode=mode,  # type: ignore[arg-type]
            keep_distinct=self.keep_distinct,
            plug_value=self.plug_value,
            timeout_s=self.timeout_s,
        )
