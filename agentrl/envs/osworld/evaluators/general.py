"""OSWorld's general getters and metrics: files, commands, JSON, lists and text, for every domain.

OSWorld keeps these in ``getters/general.py``, ``getters/file.py`` and ``metrics/general.py``.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`, or
anything with its methods); metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) ->
float``, and its semantics: ``result`` is what the task's *result* getter returned (a local file path for
``vm_file``, a string for ``vm_command_line``/``vm_terminal_output``, a directory tree for ``list_directory``);
the second argument is what the *expected* getter returned, which for a ``"rule"`` getter is the ``rules`` dict
of the task JSON. Scores are floats in ``[0, 1]``; a ``None`` result scores 0.

:func:`match_value_to_rule` is OSWorld's value-against-rule match (``{"method": ..., "ref": ...}``), used by
``check_json`` here and by the Thunderbird and VLC modules.
"""

from __future__ import annotations

import builtins
import difflib
import functools
import json
import operator
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "accessibility_tree",
    "list_directory",
    "vm_command_line",
    "vm_file",
    "vm_terminal_output",
    "GETTERS",
    "METRICS",
    "check_direct_json_object",
    "check_directory_entries",
    "check_include_exclude",
    "check_json",
    "check_list",
    "compare_text_file",
    "exact_match",
    "fuzzy_match",
    "infeasible",
    "is_in_list",
    "literal_match",
    "match_value_to_rule",
]

def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """Match ``value`` against ``{"method": ..., "ref": ...}`` as OSWorld's ``_match_value_to_rule`` does.

    Methods: ``re[.FLAG...]`` (regex search), ``eq ne le lt ge gt``, ``approx:THRESHOLD``,
    ``range.XY`` (X, Y in ``e``/``t``: ``ref[0] <=/< value <=/< ref[1]``), ``str_list_eq``,
    ``str_set_eq`` (comma-separated string vs a list).

    >>> match_value_to_rule("Dark Theme", {"method": "re.I", "ref": "dark"})
    True
    >>> match_value_to_rule(4, {"method": "eq", "ref": 4})
    True
    >>> match_value_to_rule("3.1", {"method": "approx:0.2", "ref": 3})
    True
    >>> match_value_to_rule(5, {"method": "range.te", "ref": [4, 5]})
    True
    >>> match_value_to_rule("b,a", {"method": "str_set_eq", "ref": ["a", "b"]})
    True
    """
    method: str = rule["method"]
    ref = rule["ref"]
    if method.startswith("re"):
        flags = (getattr(re, name) for name in method.split(".")[1:])
        flag = functools.reduce(operator.or_, flags, re.RegexFlag(0))
        return re.search(ref, str(value), flag) is not None
    if method in {"eq", "ne", "le", "lt", "ge", "gt"}:
        return bool(getattr(operator, method)(value, ref))
    if method.startswith("approx"):
        threshold = float(method.split(":")[1])
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        return abs(number - float(ref)) <= threshold
    if method.startswith("range."):
        left, right = method[6], method[7]
        return bool(getattr(operator, "l" + left)(ref[0], value) and getattr(operator, "l" + right)(value, ref[1]))
    if method in {"str_list_eq", "str_set_eq"}:
        container = getattr(builtins, method[4:-3])
        return bool(container(str(value).strip("\"'").split(",")) == container(ref))
    raise NotImplementedError(f"unknown rule method {method!r}")


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


def infeasible(result: Any = None, expected: Any = None, **options: Any) -> float:
    """Placeholder for OSWorld's ``"infeasible"`` func: scored by ``evaluate`` from the last action.

    >>> infeasible()
    0.0
    """
    return 0.0


def check_direct_json_object(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """Compare a JSON object (or its text, single quotes allowed) with ``rules["expected"]``, key by key.

    Default: every expected key's value equals the result's. ``expect_in_result``: a list value passes
    when one of its items is in the result's list; a string value when it is a substring of the
    result's value; other types fail. Anything malformed scores 0.

    >>> check_direct_json_object({"from": "NYC", "to": "LA", "x": 1}, {"expected": {"from": "NYC", "to": "LA"}})
    1.0
    >>> check_direct_json_object("{'name': 'Carl Smith'}", {"expected": {"name": "Carl"}, "expect_in_result": True})
    1.0
    >>> check_direct_json_object({"tags": ["a", "b"]}, {"expected": {"tags": ["c"]}, "expect_in_result": True})
    0.0
    """
    try:
        if isinstance(result, str):
            result = json.loads(result.strip().replace("'", '"'))
        if result is None:
            return 0.0
        expected = rules["expected"]
        if not rules.get("expect_in_result", False):
            return float(all(expected[key] == result.get(key) for key in expected))
        for key, want in expected.items():
            have = result.get(key)
            if isinstance(want, list):
                if not (isinstance(have, list) and any(item in have for item in want)):
                    return 0.0
            elif isinstance(want, str):
                if have is None or want not in have:
                    return 0.0
            else:
                return 0.0
        return 1.0
    except (ValueError, TypeError, AttributeError, KeyError):
        return 0.0


def _vm_file(client: Any, path: str, dest: str | None) -> str | None:
    data = client.read_file(path)
    if data is None:
        return None
    name = Path(dest or Path(path).name or "file").name  # never escape the cache dir
    local = client.cache_dir / name
    local.write_bytes(data)
    return str(local)


def vm_file(client: Any, spec: Mapping[str, Any]) -> str | list[str | None] | None:
    """OSWorld's ``vm_file``: one file's local path (in ``client.cache_dir``), or with ``multi`` the chosen ones.

    With ``multi`` every file is fetched and the ``gives`` indices (default ``[0]``) are returned, a lone one
    as itself; ``time_suffix`` adds today's date (``time_format``, default ``%Y_%m_%d``) before a single
    file's extension. A file that is not there gives ``None``.
    """
    path, dest = spec.get("path"), spec.get("dest")
    if not (spec.get("multi") or isinstance(path, list)):
        if spec.get("time_suffix"):
            stamp = time.strftime(str(spec.get("time_format") or "%Y_%m_%d"))
            path, dest = (_with_suffix(str(x), stamp) if x is not None else x for x in (path, dest))
        return _vm_file(client, str(path), dest)
    paths = list(path) if isinstance(path, list) else [path]
    dests = list(dest) if isinstance(dest, list) else [None] * len(paths)
    gives = set(spec.get("gives") or [0])
    fetched = [_vm_file(client, str(p), d) for p, d in zip(paths, dests, strict=True)]
    chosen = [local for i, local in enumerate(fetched) if i in gives]
    return chosen[0] if len(chosen) == 1 else chosen


def _with_suffix(name: str, stamp: str) -> str:
    """``name`` with ``stamp`` before its extension, as OSWorld's ``time_suffix`` does (first dot; none: unchanged).

    >>> _with_suffix("/home/user/Desktop/speedtest.csv", "2026_12_02")
    '/home/user/Desktop/speedtest2026_12_02.csv'
    """
    head, dot, tail = name.partition(".")
    return f"{head}{stamp}.{tail.split('.')[0]}" if dot else name


def vm_command_line(client: Any, spec: Mapping[str, Any]) -> str | None:
    """OSWorld's ``vm_command_line``: the command's stdout; ``None`` when it could not run."""
    result = client.execute(spec["command"], shell=bool(spec.get("shell", False)))
    return result["output"] if result.get("returncode") is not None else None


def list_directory(client: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """OSWorld's ``list_directory``: the tree ``{"name", "type", "children"}`` under ``spec["path"]``."""
    return client.list_directory(str(spec["path"]))


def vm_terminal_output(client: Any, spec: Mapping[str, Any]) -> str | None:
    """OSWorld's ``vm_terminal_output``: the active terminal's text, ``None`` when there is none."""
    return client.terminal_output()


def accessibility_tree(client: Any, spec: Mapping[str, Any]) -> str | None:
    """OSWorld's ``accessibility_tree``: the AT-SPI tree as OSWorld's XML, ``None`` when it is unavailable."""
    return client.accessibility_tree()


GETTERS: dict[str, Callable[..., Any]] = {
    "accessibility_tree": accessibility_tree,
    "list_directory": list_directory,
    "vm_command_line": vm_command_line,
    "vm_file": vm_file,
    "vm_terminal_output": vm_terminal_output,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_direct_json_object": check_direct_json_object,
    "check_directory_entries": check_directory_entries,
    "check_include_exclude": check_include_exclude,
    "check_json": check_json,
    "check_list": check_list,
    "compare_text_file": compare_text_file,
    "exact_match": exact_match,
    "fuzzy_match": fuzzy_match,
    "infeasible": infeasible,
    "is_in_list": is_in_list,
    "literal_match": literal_match,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
