"""Procedural text-to-SQL questions over the generated databases.

Each question is an English template filled with values drawn from the actual database, paired
with its gold SQL. Difficulty levels follow Spider's hardness buckets loosely:

0. the easy tier: one table and a column that the question names (``SELECT name FROM products``,
   ``SELECT COUNT(*) FROM customers``), so that a small model (the embedded SmolLM2-135M) can
   score above zero; the env shows only that table's schema (``metadata["schema_tables"]``);
1. selection and filters;
2. aggregation, ``ORDER BY`` / ``LIMIT``;
3. ``GROUP BY`` / ``HAVING`` and joins over two tables;
4. joins over three or four tables and nested queries;
5. set operations (``UNION`` / ``INTERSECT`` / ``EXCEPT``) and nesting with aggregation.

Every question is checked by running its gold SQL: the result must be non-empty (and not a lone
``NULL`` or ``0``), and a "top N" question must have no tie at or above the boundary. A failing draw
is discarded and the next one is taken from the same generator, so a question is still a pure
function of its id ``"sql/<schema>/db<dbseed>/d<difficulty>/<qseed>"``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.choices import check_level, level_range
from agentrl.core.errors import AgentRLError, UnknownTask
from agentrl.core.task import Task
from agentrl.envs.sql.databases import SCHEMAS, check_schema, database_path

__all__ = ["DIFFICULTIES", "EASY", "ID_PREFIX", "ProceduralSQLSource", "generate_question", "parse_task_id"]

ID_PREFIX = "sql"
DIFFICULTIES: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
EASY = 0  # the easy tier: one table, the column named in the question
_MAX_TRIES = 200


@dataclass(frozen=True)
class _Spec:
    """How the generic templates talk about one schema."""

    ent: str  # main entity table
    ent_pk: str
    ent_name: str  # its name column
    name_label: str  # "names", "titles", "flight numbers"
    sg: str
    pl: str
    text: tuple[str, str]  # (column, label) of a categorical column
    nums: tuple[tuple[str, str], ...]  # (column, label) of NOT NULL numeric columns
    fk: str  # ent column referencing the parent
    parent: str
    parent_pk: str
    parent_pl: str
    in_parent: str  # "in the category '{}'"
    fact: str  # table linking ent and other
    fact_ent: str
    fact_other: str
    fact_num: tuple[str, str]
    fact_noun: str  # "reviews"
    verb: str  # "reviewed"  (other <verb> a <sg>)
    never: str  # "have never been reviewed" (said of ent)
    other: str
    other_pk: str
    other_sg: str
    other_pl: str
    other_text: tuple[str, str]


_SPECS: dict[str, _Spec] = {
    "shop": _Spec(
        "products", "product_id", "name", "names", "product", "products", ("brand", "brand"),
        (("price", "price"), ("stock", "stock level")), "category_id", "categories", "category_id", "categories",
        "in the category '{}'", "reviews", "product_id", "customer_id", ("stars", "number of stars"), "reviews",
        "reviewed", "have never been reviewed", "customers", "customer_id", "customer", "customers", ("city", "city"),
    ),
    "school": _Spec(
        "courses", "course_id", "title", "titles", "course", "courses", ("level", "level"),
        (("credits", "number of credits"), ("capacity", "capacity")), "department_id", "departments",
        "department_id", "departments", "offered by the department '{}'", "enrollments", "course_id", "student_id",
        ("score", "score"), "enrollments", "enrolled in", "have no enrolled students", "students", "student_id",
        "student", "students", ("hometown", "hometown"),
    ),
    "hospital": _Spec(
        "doctors", "doctor_id", "name", "names", "doctor", "doctors", ("specialty", "specialty"),
        (("salary", "salary"), ("years_experience", "years of experience")), "department_id", "departments",
        "department_id", "departments", "in the department '{}'", "appointments", "doctor_id", "patient_id",
        ("fee", "fee"), "appointments", "had an appointment with", "have never had an appointment", "patients",
        "patient_id", "patient", "patients", ("city", "city"),
    ),
    "airline": _Spec(
        "flights", "flight_id", "flight_no", "flight numbers", "flight", "flights", ("status", "status"),
        (("distance_km", "distance in kilometres"), ("duration_min", "duration in minutes")), "airline_id",
        "airlines", "airline_id", "airlines", "operated by the airline '{}'", "bookings", "flight_id",
        "passenger_id", ("price", "ticket price"), "bookings", "booked", "have never been booked", "passengers",
        "passenger_id", "passenger", "passengers", ("nationality", "nationality"),
    ),
    "library": _Spec(
        "books", "book_id", "title", "titles", "book", "books", ("genre", "genre"),
        (("pages", "number of pages"), ("price", "price"), ("publication_year", "publication year")), "author_id",
        "authors", "author_id", "authors", "written by the author '{}'", "loans", "book_id", "member_id",
        ("late_fee", "late fee"), "loans", "borrowed", "have never been borrowed", "members", "member_id", "member",
        "members", ("city", "city"),
    ),
}  # fmt: skip


class _Reject(AgentRLError):
    """Raised when a draw does not make a good question; draw again."""


# --------------------------------------------------------------------------------------------
# helpers


def _lit(v: Any) -> str:
    """An SQL literal for a value read from the database."""
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(v)


def _show(v: Any) -> str:
    """A value as the question text spells it."""
    return f"'{v}'" if isinstance(v, str) else str(v)


class _Ctx:
    """A read-only connection plus the generator, with small query helpers."""

    def __init__(self, con: sqlite3.Connection, rng: np.random.Generator, spec: _Spec) -> None:
        self.con, self.rng, self.s = con, rng, spec

    def pick(self, options: Sequence[Any]) -> Any:
        if not options:
            raise _Reject
        return options[int(self.rng.integers(len(options)))]

    def values(self, table: str, col: str) -> list[Any]:
        rows = self.con.execute(f"SELECT DISTINCT {col} FROM {table} WHERE {col} IS NOT NULL ORDER BY {col}")
        return [r[0] for r in rows]

    def threshold(self, table: str, col: str) -> Any:
        """A value of the column at a random quantile in [0.2, 0.9]."""
        vals = self.values(table, col)
        return vals[int(len(vals) * self.rng.uniform(0.2, 0.9))] if vals else self.pick([])

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.con.execute(sql).fetchall()

    def parent_name(self) -> str:
        s = self.s
        return self.pick(self.values(s.parent, "name"))


Template = Callable[[_Ctx], tuple[str, str, bool]]

# --------------------------------------------------------------------------------------------
# templates: each returns (question, gold_sql, order_matters) or raises _Reject


def _t0_column(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col = c.pick((s.ent_name, s.text[0], *(n for n, _ in s.nums)))
    return (
        f"List the {col} of every row of the table {s.ent}: select the column {col} from the table {s.ent}.",
        f"SELECT {col} FROM {s.ent}",
        False,
    )


def _t0_name(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    table = c.pick((s.other, s.parent))
    return (
        f"List the names of all the {table}: select the column name from the table {table}.",
        f"SELECT name FROM {table}",
        False,
    )


def _t0_count(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    table = c.pick((s.ent, s.other, s.parent))
    return (
        f"How many rows does the table {table} have? Count the rows of the table {table}.",
        f"SELECT COUNT(*) FROM {table}",
        False,
    )


def _t1_text(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    v = c.pick(c.values(s.ent, s.text[0]))
    return (
        f"List the {s.name_label} of all {s.pl} whose {s.text[1]} is {_show(v)}.",
        f"SELECT {s.ent_name} FROM {s.ent} WHERE {s.text[0]} = {_lit(v)}",
        False,
    )


def _t1_num(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    x = c.threshold(s.ent, col)
    more = bool(c.rng.integers(2))
    return (
        f"List the {s.name_label} of {s.pl} with a {label} {'greater' if more else 'less'} than {x}.",
        f"SELECT {s.ent_name} FROM {s.ent} WHERE {col} {'>' if more else '<'} {_lit(x)}",
        False,
    )


def _t1_both(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    v = c.pick(c.values(s.ent, s.text[0]))
    x = c.threshold(s.ent, col)
    return (
        f"Show the {s.name_label} and {label} of {s.pl} whose {s.text[1]} is {_show(v)} and whose {label} is at "
        f"least {x}.",
        f"SELECT {s.ent_name}, {col} FROM {s.ent} WHERE {s.text[0]} = {_lit(v)} AND {col} >= {_lit(x)}",
        False,
    )


def _t1_other(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    v = c.pick(c.values(s.other, s.other_text[0]))
    return (
        f"What are the names of the {s.other_pl} whose {s.other_text[1]} is {_show(v)}?",
        f"SELECT name FROM {s.other} WHERE {s.other_text[0]} = {_lit(v)}",
        False,
    )


def _t2_count(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    v = c.pick(c.values(s.ent, s.text[0]))
    return (
        f"How many {s.pl} have the {s.text[1]} {_show(v)}?",
        f"SELECT COUNT(*) FROM {s.ent} WHERE {s.text[0]} = {_lit(v)}",
        False,
    )


def _t2_agg(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    word, fn = c.pick((("average", "AVG"), ("maximum", "MAX"), ("minimum", "MIN"), ("total", "SUM")))
    v = c.pick(c.values(s.ent, s.text[0]))
    return (
        f"What is the {word} {label} of {s.pl} whose {s.text[1]} is {_show(v)}?",
        f"SELECT {fn}({col}) FROM {s.ent} WHERE {s.text[0]} = {_lit(v)}",
        False,
    )


def _t2_top(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    n = int(c.rng.integers(3, 8))
    high = bool(c.rng.integers(2))
    order = "DESC" if high else "ASC"
    keys = [r[0] for r in c.rows(f"SELECT {col} FROM {s.ent} ORDER BY {col} {order} LIMIT {n + 1}")]
    if len(set(keys)) != len(keys):  # a tie inside the top N or at its boundary: ambiguous
        raise _Reject
    direction = "highest to lowest" if high else "lowest to highest"
    return (
        f"List the {s.name_label} and {label} of the {n} {s.pl} with the {'highest' if high else 'lowest'} "
        f"{label}, ordered from {direction}.",
        f"SELECT {s.ent_name}, {col} FROM {s.ent} ORDER BY {col} {order} LIMIT {n}",
        True,
    )


def _t3_group(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    return (
        f"For each {s.text[1]}, how many {s.pl} are there? Show the {s.text[1]} and the count.",
        f"SELECT {s.text[0]}, COUNT(*) FROM {s.ent} GROUP BY {s.text[0]}",
        False,
    )


def _t3_having(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    counts = sorted({r[0] for r in c.rows(f"SELECT COUNT(*) FROM {s.other} GROUP BY {s.other_text[0]}")})
    if len(counts) < 2:
        raise _Reject
    k = c.pick(counts[:-1])
    return (
        f"Which {s.other_text[1]} values are shared by more than {k} {s.other_pl}?",
        f"SELECT {s.other_text[0]} FROM {s.other} GROUP BY {s.other_text[0]} HAVING COUNT(*) > {k}",
        False,
    )


def _t3_join(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    p = c.parent_name()
    return (
        f"List the {s.name_label} of all {s.pl} {s.in_parent.format(p)}.",
        f"SELECT T1.{s.ent_name} FROM {s.ent} AS T1 JOIN {s.parent} AS T2 ON T1.{s.fk} = T2.{s.parent_pk} "
        f"WHERE T2.name = {_lit(p)}",
        False,
    )


def _t3_join_group(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    word, fn = c.pick((("average", "AVG"), ("maximum", "MAX"), ("number of", "COUNT")))
    if fn == "COUNT":
        q, expr = f"For each of the {s.parent_pl}, show its name and the number of its {s.pl}.", "COUNT(*)"
    else:
        q, expr = (
            f"For each of the {s.parent_pl}, show its name and the {word} {label} of its {s.pl}.",
            f"{fn}(T1.{col})",
        )
    return (
        q,
        f"SELECT T2.name, {expr} FROM {s.ent} AS T1 JOIN {s.parent} AS T2 ON T1.{s.fk} = T2.{s.parent_pk} "
        f"GROUP BY T2.{s.parent_pk}",
        False,
    )


def _t3_fact_having(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    k = int(c.rng.integers(3, 7))
    return (
        f"List the names of the {s.other_pl} with at least {k} {s.fact_noun}.",
        f"SELECT T1.name FROM {s.other} AS T1 JOIN {s.fact} AS T2 ON T1.{s.other_pk} = T2.{s.fact_other} "
        f"GROUP BY T1.{s.other_pk} HAVING COUNT(*) >= {k}",
        False,
    )


def _join4(s: _Spec) -> str:
    return (
        f"FROM {s.other} AS T1 JOIN {s.fact} AS T2 ON T1.{s.other_pk} = T2.{s.fact_other} "
        f"JOIN {s.ent} AS T3 ON T2.{s.fact_ent} = T3.{s.ent_pk} JOIN {s.parent} AS T4 ON T3.{s.fk} = T4.{s.parent_pk}"
    )


def _t4_join4(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    p = c.parent_name()
    w = c.pick(c.values(s.other, s.other_text[0]))
    return (
        f"List the distinct names of {s.other_pl} whose {s.other_text[1]} is {_show(w)} and who {s.verb} a "
        f"{s.sg} {s.in_parent.format(p)}.",
        f"SELECT DISTINCT T1.name {_join4(s)} WHERE T4.name = {_lit(p)} AND T1.{s.other_text[0]} = {_lit(w)}",
        False,
    )


def _t4_join3(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    p = c.parent_name()
    join = (
        f"FROM {s.fact} AS T1 JOIN {s.ent} AS T2 ON T1.{s.fact_ent} = T2.{s.ent_pk} "
        f"JOIN {s.parent} AS T3 ON T2.{s.fk} = T3.{s.parent_pk} WHERE T3.name = {_lit(p)}"
    )
    if c.rng.integers(2):
        return f"How many {s.fact_noun} are there for {s.pl} {s.in_parent.format(p)}?", f"SELECT COUNT(*) {join}", False
    return (
        f"What is the average {s.fact_num[1]} of the {s.fact_noun} for {s.pl} {s.in_parent.format(p)}?",
        f"SELECT AVG(T1.{s.fact_num[0]}) {join}",
        False,
    )


def _t4_above_avg(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    v = c.pick(c.values(s.ent, s.text[0]))
    return (
        f"List the {s.name_label} of {s.pl} whose {s.text[1]} is {_show(v)} and whose {label} is above the "
        f"average {label} of all {s.pl}.",
        f"SELECT {s.ent_name} FROM {s.ent} WHERE {s.text[0]} = {_lit(v)} AND {col} > (SELECT AVG({col}) FROM {s.ent})",
        False,
    )


def _t4_never(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    return (
        f"List the {s.name_label} of the {s.pl} that {s.never}.",
        f"SELECT {s.ent_name} FROM {s.ent} WHERE {s.ent_pk} NOT IN (SELECT {s.fact_ent} FROM {s.fact})",
        False,
    )


def _t4_best_parent(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    high = bool(c.rng.integers(2))
    order = "DESC" if high else "ASC"
    base = (
        f"FROM {s.ent} AS T1 JOIN {s.parent} AS T2 ON T1.{s.fk} = T2.{s.parent_pk} GROUP BY T2.{s.parent_pk} "
        f"ORDER BY AVG(T1.{col}) {order}"
    )
    keys = [r[0] for r in c.rows(f"SELECT AVG(T1.{col}) {base} LIMIT 2")]
    if len(keys) == 2 and keys[0] == keys[1]:
        raise _Reject
    return (
        f"Which of the {s.parent_pl} has the {'highest' if high else 'lowest'} average {label} of its {s.pl}? "
        "Give its name.",
        f"SELECT T2.name {base} LIMIT 1",
        False,
    )


def _t5_union(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    v = c.pick(c.values(s.ent, s.text[0]))
    p = c.parent_name()
    return (
        f"List the {s.name_label} of {s.pl} whose {s.text[1]} is {_show(v)} or that are {s.in_parent.format(p)}.",
        f"SELECT {s.ent_name} FROM {s.ent} WHERE {s.text[0]} = {_lit(v)} UNION SELECT T1.{s.ent_name} FROM {s.ent} "
        f"AS T1 JOIN {s.parent} AS T2 ON T1.{s.fk} = T2.{s.parent_pk} WHERE T2.name = {_lit(p)}",
        False,
    )


def _t5_intersect(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    names = c.values(s.parent, "name")
    a = c.pick(names)
    b = c.pick([n for n in names if n != a])
    return (
        f"Which {s.other_pl} {s.verb} both a {s.sg} {s.in_parent.format(a)} and a {s.sg} "
        f"{s.in_parent.format(b)}? Give their names.",
        f"SELECT T1.name {_join4(s)} WHERE T4.name = {_lit(a)} INTERSECT SELECT T1.name {_join4(s)} "
        f"WHERE T4.name = {_lit(b)}",
        False,
    )


def _t5_except(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    a = c.parent_name()
    w = c.pick(c.values(s.other, s.other_text[0]))
    return (
        f"List the names of {s.other_pl} whose {s.other_text[1]} is {_show(w)} but who never {s.verb} a {s.sg} "
        f"{s.in_parent.format(a)}.",
        f"SELECT name FROM {s.other} WHERE {s.other_text[0]} = {_lit(w)} EXCEPT SELECT T1.name {_join4(s)} "
        f"WHERE T4.name = {_lit(a)}",
        False,
    )


def _t5_nested_agg(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    col, label = c.pick(s.nums)
    return (
        f"Which {s.parent_pl} have an average {label} of their {s.pl} above the overall average {label} of all "
        f"{s.pl}? Give their names.",
        f"SELECT T2.name FROM {s.ent} AS T1 JOIN {s.parent} AS T2 ON T1.{s.fk} = T2.{s.parent_pk} "
        f"GROUP BY T2.{s.parent_pk} HAVING AVG(T1.{col}) > (SELECT AVG({col}) FROM {s.ent})",
        False,
    )


def _t5_fact_above_avg(c: _Ctx) -> tuple[str, str, bool]:
    s = c.s
    return (
        f"List the names of the {s.other_pl} who have more {s.fact_noun} than the average number of "
        f"{s.fact_noun} per {s.other_sg} (counting only {s.other_pl} with at least one).",
        f"SELECT T1.name FROM {s.other} AS T1 JOIN {s.fact} AS T2 ON T1.{s.other_pk} = T2.{s.fact_other} "
        f"GROUP BY T1.{s.other_pk} HAVING COUNT(*) > (SELECT AVG(cnt) FROM (SELECT COUNT(*) AS cnt FROM {s.fact} "
        f"GROUP BY {s.fact_other}))",
        False,
    )


_TEMPLATES: dict[int, tuple[Template, ...]] = {
    0: (_t0_column, _t0_name, _t0_count),
    1: (_t1_text, _t1_num, _t1_both, _t1_other),
    2: (_t2_count, _t2_agg, _t2_top),
    3: (_t3_group, _t3_having, _t3_join, _t3_join_group, _t3_fact_having),
    4: (_t4_join4, _t4_join3, _t4_above_avg, _t4_never, _t4_best_parent),
    5: (_t5_union, _t5_intersect, _t5_except, _t5_nested_agg, _t5_fact_above_avg),
}

# --------------------------------------------------------------------------------------------
# public API


def _check_difficulty(difficulty: object) -> int:
    return check_level(difficulty, DIFFICULTIES)


def _good_result(rows: list[tuple[Any, ...]]) -> bool:
    if not rows:
        return False
    if len(rows) == 1 and len(rows[0]) == 1 and rows[0][0] in (None, 0):
        return False
    return True


def generate_question(
    schema: str, db_seed: int, difficulty: int, seed: int, cache_dir: str | os.PathLike[str] | None = None
) -> Task:
    """Generate one question, deterministically in ``(schema, db_seed, difficulty, seed)``.

    Args:
        schema: one of :data:`~agentrl.envs.sql.databases.SCHEMAS`.
        db_seed: which generated database of that schema (built and cached on first use).
        difficulty: 0 (the easy tier) to 5 (see the module docstring).
        seed: a non-negative integer.
        cache_dir: where databases are cached (default ``$AGENTRL_CACHE`` or ``~/.cache/agentrl``).

    Returns:
        A :class:`~agentrl.core.task.Task` with id ``"sql/<schema>/db<db_seed>/d<difficulty>/<seed>"``,
        the gold SQL as ``answer`` and one oracle action ``"<solution>GOLD</solution>"``.

    Raises:
        ValueError: an unknown schema or difficulty (with a suggestion) or a negative seed.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     task = generate_question("shop", 0, 2, seed=5, cache_dir=d)
    ...     task.id, task.metadata["db_id"], task == generate_question("shop", 0, 2, seed=5, cache_dir=d)
    ('sql/shop/db0/d2/5', 'shop-0', True)
    """
    schema = check_schema(schema)
    difficulty = _check_difficulty(difficulty)
    if int(seed) < 0 or int(db_seed) < 0:
        raise ValueError(f"seeds must be non-negative, got seed={seed!r}, db_seed={db_seed!r}")
    seed, db_seed = int(seed), int(db_seed)
    path = database_path(schema, db_seed, cache_dir)
    rng = np.random.default_rng([zlib.crc32(schema.encode()), db_seed, difficulty, seed])
    spec = _SPECS[schema]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ctx = _Ctx(con, rng, spec)
        templates = _TEMPLATES[difficulty]
        for _ in range(_MAX_TRIES):
            template = templates[int(rng.integers(len(templates)))]
            try:
                question, sql, order_matters = template(ctx)
            except _Reject:
                continue
            if _good_result(con.execute(sql).fetchall()):
                break
        else:  # pragma: no cover - the templates are built to succeed well before this
            raise RuntimeError(f"could not generate a question for {schema}/db{db_seed}/d{difficulty}/{seed}")
    finally:
        con.close()
    return Task(
        id=f"{ID_PREFIX}/{schema}/db{db_seed}/d{difficulty}/{seed}",
        prompt=question,
        answer=sql,
        family=schema,
        difficulty=difficulty,
        oracle_actions=(f"<solution>{sql}</solution>",),
        metadata={
            "db_path": str(path),
            "db_id": f"{schema}-{db_seed}",
            "gold_sql": sql,
            "order_matters": order_matters,
            "schema": schema,
            # the easy tier shows only the table the question names
            **({"schema_tables": [sql.rsplit(" FROM ", 1)[1]]} if difficulty == EASY else {}),
        },
    )


_ID_PATTERN = re.compile(r"^sql/(?P<schema>[^/]+)/db(?P<db>\d+)/d(?P<difficulty>\d+)/(?P<seed>\d+)$")


def parse_task_id(task_id: str) -> tuple[str, int, int, int]:
    """Split an id into ``(schema, db_seed, difficulty, seed)``.

    Raises:
        UnknownTask: the id is not ``"sql/<schema>/db<dbseed>/d<0-5>/<seed>"``; the message says why.

    >>> parse_task_id("sql/school/db1/d3/42")
    ('school', 1, 3, 42)
    """
    form = "procedural SQL ids look like 'sql/<schema>/db<dbseed>/d<0-5>/<seed>', e.g. 'sql/shop/db0/d3/17'"
    match = _ID_PATTERN.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise UnknownTask(task_id, hint=form)
    schema, difficulty = match["schema"], int(match["difficulty"])
    try:
        check_schema(schema)
        _check_difficulty(difficulty)
    except ValueError as exc:
        raise UnknownTask(task_id, hint=f"{exc}; {form}") from None
    return schema, int(match["db"]), difficulty, int(match["seed"])


class ProceduralSQLSource:
    """An endless source of text-to-SQL questions on generated databases (implements ``TaskSource``).

    Args:
        schemas: the schemas to draw from (default: all of :data:`~agentrl.envs.sql.databases.SCHEMAS`).
        difficulty: a fixed difficulty, or an inclusive range ``(lo, hi)`` drawn uniformly.
        db_seeds: the database seeds to draw from.
        cache_dir: where databases are cached.

    Raises:
        ValueError: an unknown schema or difficulty (with a suggestion), or empty choices.

    ``sample`` draws the schema, the database seed, the difficulty and a question seed from ``rng``
    only; ``get`` regenerates any valid id.
    """

    def __init__(
        self,
        schemas: Sequence[str] | None = None,
        difficulty: int | tuple[int, int] = (1, 3),
        db_seeds: Sequence[int] = (0, 1, 2),
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if schemas is None:
            schemas = SCHEMAS
        if isinstance(schemas, str):
            schemas = (schemas,)
        self.schemas: tuple[str, ...] = tuple(check_schema(s) for s in schemas)
        if not self.schemas:
            raise ValueError(f"schemas must not be empty; choose from: {', '.join(SCHEMAS)}")
        self.difficulty_range: tuple[int, int] = level_range(difficulty, DIFFICULTIES)
        self.db_seeds: tuple[int, ...] = tuple(int(s) for s in db_seeds)
        if not self.db_seeds or min(self.db_seeds) < 0:
            raise ValueError(f"db_seeds must be a non-empty list of non-negative ints, got {db_seeds!r}")
        self.cache_dir = None if cache_dir is None else Path(cache_dir)

    def __repr__(self) -> str:
        return (
            f"ProceduralSQLSource(schemas={list(self.schemas)!r}, difficulty={self.difficulty_range!r}, "
            f"db_seeds={list(self.db_seeds)!r})"
        )

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw a schema, a database seed, a difficulty and a question seed from ``rng``."""
        schema = self.schemas[int(rng.integers(len(self.schemas)))]
        db_seed = self.db_seeds[int(rng.integers(len(self.db_seeds)))]
        lo, hi = self.difficulty_range
        difficulty = int(rng.integers(lo, hi + 1))
        seed = int(rng.integers(0, 2**31))
        return generate_question(schema, db_seed, difficulty, seed, self.cache_dir)

    def get(self, task_id: str) -> Task:
        """Regenerate a task from its id (``"sql/<schema>/db<dbseed>/d<difficulty>/<seed>"``).

        Raises:
            UnknownTask: a malformed id, an unknown schema or a difficulty outside 0..5.
        """
        return generate_question(*parse_task_id(task_id), cache_dir=self.cache_dir)
