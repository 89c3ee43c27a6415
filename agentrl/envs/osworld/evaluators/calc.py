"""OSWorld's LibreOffice Calc metric ``compare_table`` (``metrics/table.py``), pure and desktop-free.

Workbooks (``.xlsx`` through openpyxl, ``.csv`` and ``.ods`` read directly) are compared sheet by sheet after
normalization: numbers rounded to ``precision`` places, empty trailing rows and columns dropped. The ``rules``
options pick sheets (``sheet_idx0``/``sheet_idx1``, OSWorld's ``RI0``/``EI0`` indices) and checks.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled

__all__ = [
    "GETTERS",
    "METRICS",
    "compare_table",
]

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


GETTERS: dict[str, Callable[..., Any]] = {
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "compare_table": compare_table,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
