"""OSWorld's metric functions, pure and desktop-free.

Each metric keeps OSWorld's signature, ``metric(result, expected_or_rules, **options) -> float``, and
its semantics: ``result`` is what the task's *result* getter returned (a local file path for
``vm_file``, a string for ``vm_command_line``/``vm_terminal_output``, a directory tree for
``list_directory``); the second argument is what the *expected* getter returned, which for a
``"rule"`` getter is the ``rules`` dict of the task JSON. Scores are floats in ``[0, 1]``; a ``None``
result scores 0.

:data:`METRICS` maps OSWorld's metric names to the functions here.
"""

from __future__ import annotations

import csv
import difflib
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.app_evaluators import APP_METRICS
from agentrl.envs.osworld.chrome_metrics import CHROME_METRICS
from agentrl.envs.osworld.metrics_docx import DOCX_METRICS
from agentrl.envs.osworld.metrics_pptx import PPTX_METRICS
from agentrl.envs.osworld.rule_match import match_value_to_rule

__all__ = [
    "METRICS",
    "check_directory_entries",
    "check_include_exclude",
    "check_json",
    "check_list",
    "compare_table",
    "compare_text_file",
    "exact_match",
    "fuzzy_match",
    "infeasible",
    "is_in_list",
    "literal_match",
    "match_value_to_rule",
]


def exact_match(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 if ``result == rules["expected"]``.

    >>> exact_match("42", {"expected": "42"})
    1.0
    >>> exact_match("42\n", {"expected": "42"})
    0.0
    """
    return float(result == rules["expected"])


def fuzzy_match(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Similarity ratio in ``[0, 1]`` of ``result`` and ``rules["expected"]`` (OSWorld: ``fuzz.ratio / 100``).

    >>> fuzzy_match("hello", {"expected": "hello"})
    1.0
    >>> round(fuzzy_match("hello", {"expected": "help"}), 3)
    0.667
    >>> fuzzy_match(None, {"expected": "x"})
    0.0
    """
    if result is None:
        return 0.0
    return difflib.SequenceMatcher(None, str(result), str(rules["expected"])).ratio()


def check_include_exclude(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 if every ``rules["include"]`` item is ``in result`` and no ``rules["exclude"]`` item is.

    >>> check_include_exclude("total 3 files", {"include": ["3 files"], "exclude": ["error"]})
    1.0
    >>> check_include_exclude("error: 3 files", {"include": ["3 files"], "exclude": ["error"]})
    0.0
    >>> check_include_exclude(None, {"include": []})
    0.0
    """
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(item in result for item in include) and all(item not in result for item in exclude))


def is_in_list(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """1 if ``rules["expected"] in result`` (``result`` a list, or a string for substring search).

    >>> is_in_list(["a.txt", "b.txt"], {"expected": "b.txt"})
    1.0
    >>> is_in_list(["a.txt"], {"expected": "b.txt"})
    0.0
    """
    if result is None:
        return 0.0
    return float(rules["expected"] in result)


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Compare as strings (``type="str"``, default) or element-wise as lists (``type="list"``).

    Options: ``type`` (``"str"`` | ``"list"``), ``ignore_case`` (bool).

    >>> literal_match(3, "3")
    1.0
    >>> literal_match("Yes", "yes", ignore_case=True)
    1.0
    >>> literal_match(["A", 1], ["a", "1"], type="list", ignore_case=True)
    1.0
    >>> literal_match("x", ["x"], type="list")
    0.0
    """
    literal_type = options.get("type", "str")
    ignore_case = options.get("ignore_case", False)

    def norm(value: Any) -> str:
        return str(value).lower() if ignore_case else str(value)

    if literal_type == "str":
        return float(norm(result) == norm(expected))
    if literal_type == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        if len(result) != len(expected):
            return 0.0
        return float([norm(v) for v in result] == [norm(v) for v in expected])
    raise NotImplementedError(f"literal_match: unsupported type {literal_type!r}; use 'str' or 'list'")


_MISSING = object()


def _read_key_path(data: Any, keys: Any) -> Any:
    if isinstance(keys, str):
        keys = [keys]
    value = data
    for key in keys:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return value


def check_json(result: Any, rules: Mapping[str, Any], is_yaml: bool = False, **options: Any) -> float:
    """Check key paths of a JSON (or YAML) file, or an already-parsed object, against rules.

    ``rules = {"expect": [{"key": [k1, k2, ...], "method": m, "ref": v}, ...], "unexpect": [...]}``:
    every ``expect`` rule must hold (a missing key scores 0) and no ``unexpect`` rule may hold
    (a missing key counts as not holding). See :func:`match_value_to_rule` for the methods.

    >>> settings = {"editor": {"fontSize": 14, "theme": "dark"}}
    >>> check_json(settings, {"expect": [{"key": ["editor", "fontSize"], "method": "eq", "ref": 14}]})
    1.0
    >>> check_json(settings, {"unexpect": [{"key": ["editor", "theme"], "method": "eq", "ref": "dark"}]})
    0.0
    >>> check_json(settings, {"expect": [{"key": ["missing"], "method": "eq", "ref": 1}]})
    0.0
    """
    if result is None:
        return 0.0
    if isinstance(result, (str, Path)):
        text = Path(result).read_text(encoding="utf-8")
        if is_yaml:
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    else:
        data = result
    for rule in rules.get("expect", []):
        value = _read_key_path(data, rule["key"])
        if value is _MISSING or not match_value_to_rule(value, rule):
            return 0.0
    for rule in rules.get("unexpect", []):
        value = _read_key_path(data, rule["key"])
        if value is not _MISSING and match_value_to_rule(value, rule):
            return 0.0
    return 1.0


def check_list(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""Lines of the file at ``result``: every ``expect`` regex matches some line, no ``unexpect`` regex any.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("alpha\nbeta\n")
    >>> check_list(f.name, {"expect": ["^beta$"], "unexpect": ["gamma"]})
    1.0
    >>> check_list(f.name, {"expect": ["gamma"]})
    0.0
    >>> os.unlink(f.name)
    """
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    with open(result, encoding="utf-8") as handle:
        for line in handle:
            for i, pattern in enumerate(expect):
                found[i] = found[i] or pattern.search(line) is not None
            if any(pattern.search(line) is not None for pattern in unexpect):
                return 0.0
    return float(all(found))


def _tree_names(tree: Any) -> list[str]:
    """Relative paths of every entry below a ``list_directory`` tree (``{"name", "type", "children"}``)."""
    names: list[str] = []

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for child in node.get("children") or []:
            path = f"{prefix}{child['name']}"
            names.append(path)
            if child.get("type") == "directory":
                walk(child, path + "/")

    walk(tree, "")
    return names


def check_directory_entries(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """AgentRL addition for the ``list_directory`` getter: entries that must / must not exist.

    ``result`` is OSWorld's directory tree ``{"name", "type": "directory", "children": [...]}``;
    ``rules = {"include": [...], "exclude": [...]}`` hold paths relative to the listed directory.

    >>> tree = {"name": "out", "type": "directory", "children": [
    ...     {"name": "a.txt", "type": "file"},
    ...     {"name": "sub", "type": "directory", "children": [{"name": "b.txt", "type": "file"}]}]}
    >>> check_directory_entries(tree, {"include": ["a.txt", "sub/b.txt"], "exclude": ["c.txt"]})
    1.0
    >>> check_directory_entries(tree, {"include": ["b.txt"]})
    0.0
    """
    if result is None:
        return 0.0
    names = set(_tree_names(result))
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    return float(all(n in names for n in include) and all(n not in names for n in exclude))


def _normalize_text(text: str, ignore_blanks: bool, ignore_case: bool) -> str:
    if ignore_blanks:
        text = re.sub(r"[\t\n]", " ", text).strip()
        text = re.sub(r"\s+", " ", text)
    if ignore_case:
        text = text.lower()
    return text


def compare_text_file(result: Any, expected: Any, **options: Any) -> float:
    r"""1 if the two text files are equal; options ``ignore_blanks`` and ``ignore_case``.

    >>> import tempfile, os
    >>> paths = []
    >>> for text in ("Hello  World\n", "hello world"):
    ...     with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...         _ = f.write(text)
    ...     paths.append(f.name)
    >>> compare_text_file(*paths)
    0.0
    >>> compare_text_file(*paths, ignore_blanks=True, ignore_case=True)
    1.0
    >>> for p in paths: os.unlink(p)
    """
    if not result:
        return 0.0
    ignore_blanks = options.get("ignore_blanks", False)
    ignore_case = options.get("ignore_case", False)
    actual = _normalize_text(Path(result).read_text(encoding="utf-8"), ignore_blanks, ignore_case)
    wanted = _normalize_text(Path(expected).read_text(encoding="utf-8"), ignore_blanks, ignore_case)
    return float(actual == wanted)


# -- tables ------------------------------------------------------------------------------------

Sheets = dict[str, list[list[Any]]]


def _load_workbook(path: Any) -> Sheets:
    """Sheet name -> rows (header row first). A CSV file is one sheet named ``Sheet1``."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is installed in the dev environment
        pd = None
    if suffix == ".csv":
        if pd is not None:
            frame = pd.read_csv(path)
            return {"Sheet1": [list(frame.columns), *frame.values.tolist()]}
        with open(path, newline="", encoding="utf-8") as handle:
            return {"Sheet1": [list(row) for row in csv.reader(handle)]}
    if suffix in {".xlsx", ".xlsm"}:
        try:
            import openpyxl  # noqa: F401
        except ImportError as error:
            raise DependencyNotInstalled("openpyxl", command="pip install openpyxl") from error
        if pd is None:  # pragma: no cover
            raise DependencyNotInstalled("pandas", command="pip install pandas")
        frames = pd.read_excel(path, sheet_name=None)
        return {name: [list(f.columns), *f.values.tolist()] for name, f in frames.items()}
    raise NotImplementedError(f"compare_table: unsupported table format {suffix!r}; use .csv or .xlsx")


def _normalize_cell(value: Any, precision: int) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        stripped = value.strip()
        if stripped == "":
            return None
        try:
            value = float(stripped)
        except ValueError:
            return value
    if isinstance(value, (int, float)):
        return round(float(value), precision)
    try:  # numpy scalars
        return round(float(value), precision)
    except (TypeError, ValueError):
        return str(value)


def _normalize_sheet(rows: list[list[Any]], precision: int) -> list[tuple[Any, ...]]:
    return [tuple(_normalize_cell(cell, precision) for cell in row) for row in rows]


def _parse_sheet_idx(idx: Any, result: Sheets, expected: Sheets | None) -> list[list[Any]] | None:
    """OSWorld's sheet index: ``0`` == ``"RI0"`` == ``"RNSheet1"`` (result) | ``"EI0"`` == ``"ENSheet1"``."""
    if isinstance(idx, int):
        idx = f"RI{idx}"
    book_key, kind, rest = str(idx)[0], str(idx)[1], str(idx)[2:]
    book = result if book_key == "R" else expected if book_key == "E" else None
    if book is None or kind not in {"I", "N"}:
        raise ValueError(f"compare_table: unrecognized sheet index {idx!r}; use e.g. 'RI0', 'EI0', 'RNSheet1'")
    if kind == "N":
        return book.get(rest)
    names = list(book)
    index = int(rest)
    return book[names[index]] if 0 <= index < len(names) else None


def compare_table(result: Any, expected: Any = None, **options: Any) -> float:
    r"""Compare CSV/XLSX tables like OSWorld's ``compare_table`` (sheet names and sheet data).

    ``options["rules"]`` is a list of ``{"type": "sheet_name"}`` (same sheet names) and
    ``{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0", "precision": 4}`` (cell values
    equal after rounding numbers to ``precision`` digits). Without rules, every sheet must match.
    XLSX needs ``openpyxl``; a missing result file scores 0.

    >>> import tempfile, os
    >>> paths = []
    >>> for text in ("name,score\nann,1.00001\nbob,2\n", "name,score\nann,1\nbob,2.0\n"):
    ...     with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...         _ = f.write(text)
    ...     paths.append(f.name)
    >>> compare_table(*paths, rules=[{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}])
    1.0
    >>> compare_table(*paths, rules=[{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "precision": 6}])
    0.0
    >>> compare_table(None, paths[1])
    0.0
    >>> for p in paths: os.unlink(p)
    """
    if result is None:
        return 0.0
    try:
        result_book = _load_workbook(result)
    except (FileNotFoundError, OSError, ValueError):
        return 0.0
    expected_book = _load_workbook(expected) if expected is not None else None
    rules = options.get("rules")
    if not rules:
        if expected_book is None or list(result_book) != list(expected_book):
            return 0.0
        rules = [
            {"type": "sheet_data", "sheet_idx0": f"RI{i}", "sheet_idx1": f"EI{i}"} for i in range(len(result_book))
        ]
    for rule in rules:
        kind = rule.get("type")
        if kind == "sheet_name":
            if expected_book is None or list(result_book) != list(expected_book):
                return 0.0
        elif kind == "sheet_data":
            precision = int(rule.get("precision", 4))
            sheet0 = _parse_sheet_idx(rule["sheet_idx0"], result_book, expected_book)
            sheet1 = _parse_sheet_idx(rule["sheet_idx1"], result_book, expected_book)
            if sheet0 is None or sheet1 is None:
                return 0.0
            if _normalize_sheet(sheet0, precision) != _normalize_sheet(sheet1, precision):
                return 0.0
        else:
            raise NotImplementedError(
                f"compare_table: rule type {kind!r} is not supported; supported: sheet_name, sheet_data"
            )
    return 1.0


def infeasible(result: Any = None, expected: Any = None, **options: Any) -> float:
    """Placeholder for OSWorld's ``"infeasible"`` func: scored by ``evaluate`` from the last action.

    >>> infeasible()
    0.0
    """
    return 0.0


METRICS: dict[str, Callable[..., float]] = {
    "check_directory_entries": check_directory_entries,
    "check_include_exclude": check_include_exclude,
    "check_json": check_json,
    "check_list": check_list,
    "compare_table": compare_table,
    "compare_text_file": compare_text_file,
    "exact_match": exact_match,
    "fuzzy_match": fuzzy_match,
    "infeasible": infeasible,
    "is_in_list": is_in_list,
    "literal_match": literal_match,
}
"""OSWorld metric name -> function."""

METRICS.update(DOCX_METRICS)  # Writer metrics (python-docx), agentrl.envs.osworld.metrics_docx
METRICS.update(PPTX_METRICS)  # Impress metrics (python-pptx), agentrl.envs.osworld.metrics_pptx
METRICS.update(CHROME_METRICS)  # Chrome's URL and tab metrics, agentrl.envs.osworld.chrome_metrics
METRICS.update(APP_METRICS)  # the app modules' metrics, agentrl.envs.osworld.app_evaluators


def _with_this_table(metric: Callable[..., float]) -> Callable[..., float]:
    """``metric`` with ``metrics=METRICS`` handed in; its name and docstring kept (``__wrapped__`` is it)."""

    @functools.wraps(metric)
    def bound(result: Any, expected: Any, **options: Any) -> float:
        return metric(result, expected, metrics=METRICS, **options)

    return bound


# compare_archive sends each member through another metric (text, docx, image...): it is handed this whole
# table here rather than importing it, so no app module imports this one.
METRICS["compare_archive"] = _with_this_table(APP_METRICS["compare_archive"])
