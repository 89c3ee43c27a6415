"""OSWorld's Thunderbird's profile (prefs.js, msgFilterRules.dat, folders) and its metrics.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``.
The two dicts below are merged by :mod:`agentrl.envs.osworld.evaluators`.

What is here, by OSWorld name:

* getter ``cache_file``: a file that a setup/postconfig ``execute``/``command`` step wrote into the evaluation
  cache folder through its ``stdout``/``stderr`` parameter (``{"type": "cache_file", "path": "wmctrl.out"}``);
* ``check_thunderbird_prefs``: ``user_pref("name", value);`` lines of ``prefs.js`` against method/ref rules;
* ``check_thunderbird_filter``: the filters of a ``msgFilterRules.dat`` against expected/unexpected records;
* ``check_thunderbird_folder``: the messages of mbox folder files against gold folder files;
* ``check_csv``: the records of a CSV file against expected/unexpected records;
* ``run_sqlite3``: the first value of an SQL query on a SQLite file (Thunderbird's ``global-messages-db.sqlite``);
* ``check_accessibility_tree``: CSS selectors or XPath over the accessibility-tree XML
  (:mod:`agentrl.envs.osworld.a11y`), with an optional text check.
"""

from __future__ import annotations

import csv
import json
import logging
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.evaluators.general import match_value_to_rule

__all__ = [
    "GETTERS",
    "METRICS",
    "cache_file",
    "check_accessibility_tree",
    "check_csv",
    "check_thunderbird_filter",
    "check_thunderbird_folder",
    "check_thunderbird_prefs",
    "indel_ratio",
    "parse_filter_rules",
    "parse_prefs",
    "run_sqlite3",
    "split_mbox",
]

_log = logging.getLogger(__name__)


_INSTALL_HINT = "install with: pip install 'agentrl-gym[osworld-office]'"


def cache_file(client: Any, spec: Mapping[str, Any]) -> str:
    r"""OSWorld's ``cache_file`` getter: the local path of ``spec["path"]`` inside ``client.cache_dir``.

    The file is one a setup or postconfig ``execute``/``command`` step wrote with its ``stdout`` (or
    ``stderr``) parameter, e.g. ``{"type": "execute", "parameters": {"command": ["wmctrl", "-lx"],
    "stdout": "wmctrl.out"}}`` then ``{"type": "cache_file", "path": "wmctrl.out"}``. Nothing is fetched:
    OSWorld's getter only asserts that the file exists.

    >>> import tempfile, types
    >>> client = types.SimpleNamespace(cache_dir=Path(tempfile.mkdtemp()))
    >>> _ = (client.cache_dir / "wmctrl.out").write_text("0x01 0 gnome-terminal-server.Gnome-terminal\n")
    >>> Path(cache_file(client, {"type": "cache_file", "path": "wmctrl.out"})).name
    'wmctrl.out'

    Raises:
        FileNotFoundError: the file is not in the cache folder (the evaluator scores the metric 0, saying so).
        ValueError: ``path`` is not a relative path that stays inside the cache folder.
    """
    name = spec.get("path")
    if not isinstance(name, str) or not name:
        raise ValueError(f"cache_file needs a non-empty 'path' relative to the cache folder, got {name!r}")
    root = Path(client.cache_dir).resolve()
    local = (root / name).resolve()
    # A task file must not read the host's files through "../" or an absolute path.
    if local == root or not local.is_relative_to(root):
        raise ValueError(f"cache_file path {name!r} leaves the cache folder {root}")
    if not local.is_file():
        raise FileNotFoundError(
            f'cache file {name!r} is not in {root}: a setup/postconfig execute step with "stdout": {name!r} writes it'
        )
    return str(local)


def _match_record(pattern: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """OSWorld's ``_match_record``: every key of ``pattern`` is in ``item`` with an equal value.

    >>> _match_record({"a": "1"}, {"a": "1", "b": "2"}), _match_record({"a": "1"}, {"b": "2"})
    (True, False)
    """
    return all(key in item and item[key] == value for key, value in pattern.items())


def _score_records(records: Sequence[Mapping[str, Any]], rules: Mapping[str, Any]) -> float:
    """1 iff each ``rules["expect"]`` record matches some record and no ``rules["unexpect"]`` record matches any."""
    expect = list(rules.get("expect", []))
    unexpect = list(rules.get("unexpect", []))
    found = [any(_match_record(pattern, record) for record in records) for pattern in expect]
    banned = any(_match_record(pattern, record) for pattern in unexpect for record in records)
    missing = [pattern for pattern, ok in zip(expect, found, strict=True) if not ok]
    if missing:
        _log.info("records: no record matches %s", missing)
    if banned:
        _log.info("records: an unexpected record is present")
    return float(not missing and not banned)


def _read_text(path: Any) -> str:
    """The file's text as UTF-8 (undecodable bytes replaced, so a stray 8-bit byte cannot fail a metric)."""
    return Path(path).read_bytes().decode("utf-8", errors="replace")


# Firefox/Thunderbird write one ``user_pref("name", value);`` per line; the value is JSON-compatible
# (strings with \" \\ \n escapes, integers, true/false).
_PREF_LINE = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')


def parse_prefs(text: str) -> dict[str, Any]:
    r"""The ``user_pref`` lines of a ``prefs.js`` text as ``{name: value}`` (a later line wins; others skipped).

    A value that is not JSON is kept as its raw text (OSWorld's ``json.loads`` would raise on it).

    >>> parse_prefs('// Mozilla User Preferences\nuser_pref("a.b", true);\nuser_pref("c", "x\\"y");\n')
    {'a.b': True, 'c': 'x"y'}
    """
    prefs: dict[str, Any] = {}
    for line in text.splitlines():
        found = _PREF_LINE.match(line.strip())
        if found is None:
            continue
        raw = found.group("val")
        try:
            prefs[found.group("key")] = json.loads(raw)
        except ValueError:
            prefs[found.group("key")] = raw
    return prefs


def check_thunderbird_prefs(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 iff every ``expect`` pref is set and matches its rule, and no set ``unexpect`` pref matches its rule.

    ``result``: the path of ``prefs.js``; ``rules = {"expect": {name: {"method", "ref"}}, "unexpect": {...}}``
    (methods of :func:`~agentrl.envs.osworld.evaluators.general.match_value_to_rule`). A pref absent from ``prefs.js``
    (Thunderbird writes only the non-default ones) fails its ``expect`` rule and passes its ``unexpect`` rule;
    a name in both lists is checked as ``expect`` only (OSWorld's ``if/elif``).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as f:
    ...     _ = f.write('user_pref("mail.identity.id1.auto_quote", false);\n')
    >>> check_thunderbird_prefs(f.name, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}})
    1.0
    >>> check_thunderbird_prefs(f.name, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": True}}})
    0.0
    """
    if result is None:
        return 0.0
    prefs = parse_prefs(_read_text(result))
    expect: Mapping[str, Any] = rules.get("expect", {})
    unexpect: Mapping[str, Any] = rules.get("unexpect", {})
    for key, rule in expect.items():
        if key not in prefs:
            _log.info("check_thunderbird_prefs: %s is not set in prefs.js", key)
            return 0.0
        if not match_value_to_rule(prefs[key], rule):
            _log.info("check_thunderbird_prefs: %s = %r does not match %s", key, prefs[key], rule)
            return 0.0
    for key, rule in unexpect.items():
        if key in prefs and key not in expect and match_value_to_rule(prefs[key], rule):
            _log.info("check_thunderbird_prefs: %s = %r matches the unexpected %s", key, prefs[key], rule)
            return 0.0
    return 1.0


_FILTER_LINE = re.compile(r'^(?P<key>[A-Za-z]+)="(?P<val>.*)"$')


# One condition term: ``AND (subject,contains,discount)``, ``OR (from,is,"a, b")``, or ``ALL``.
_CONDITION = re.compile(r"""\b(?:AND|OR) \([\w ]+,[\w ']+,(?:".+"|[^)]+)\)|\bALL\b""")


_FILTER_KEYS = ("name", "enabled", "type", "action", "actionValue")


def _unescape_filter_value(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\")


def parse_filter_rules(text: str) -> list[dict[str, Any]]:
    r"""The filters of a ``msgFilterRules.dat`` text, as OSWorld reads them.

    Each filter is ``{"name", "enabled", "type", "action", "actionValue", "condition": [terms]}``; a filter
    ends at its ``condition=`` line (Thunderbird writes it last). With several actions the last one is kept.

    >>> rules = ('version="9"\nlogging="no"\nname="Promo"\nenabled="yes"\ntype="17"\n'
    ...          'action="Move to folder"\nactionValue="mailbox://nobody@Local%20Folders/Promotions"\n'
    ...          'condition="AND (subject,contains,discount) OR (from,is,\\"a, b\\")"\n')
    >>> parse_filter_rules(rules)[0]["condition"]
    ['AND (subject,contains,discount)', 'OR (from,is,"a, b")']
    """
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in text.splitlines():
        found = _FILTER_LINE.match(line.rstrip("\r"))
        if found is None:
            continue
        key, value = found.group("key"), _unescape_filter_value(found.group("val"))
        if key == "name":
            current = {"name": value}
        elif key in _FILTER_KEYS:
            current[key] = value
        elif key == "condition":
            current["condition"] = _CONDITION.findall(value)
            filters.append(current)
            current = {}
    return filters


def check_thunderbird_filter(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 iff every ``expect`` record matches some filter and no ``unexpect`` record matches any filter.

    ``result``: the path of ``msgFilterRules.dat``; ``rules = {"expect": [{key: value}], "unexpect": [...]}``
    where keys are those of :func:`parse_filter_rules` (``"condition"`` compares the list of terms).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as f:
    ...     _ = f.write('version="9"\nlogging="no"\nname="Fwd"\nenabled="yes"\ntype="17"\naction="Forward"\n'
    ...                 'actionValue="a@b.org"\ncondition="ALL"\n')
    >>> check_thunderbird_filter(f.name, {"expect": [{"enabled": "yes", "action": "Forward", "condition": ["ALL"]}]})
    1.0
    >>> check_thunderbird_filter(f.name, {"unexpect": [{"action": "Forward"}]})
    0.0
    """
    if result is None:
        return 0.0
    return _score_records(parse_filter_rules(_read_text(result)), rules)


# An mbox message starts at a line "From <sender or -> <date>"; Thunderbird writes "From - <date>" and
# escapes body lines starting with "From " as ">From ", so such a line always starts a message.
_MBOX_SEPARATOR = re.compile(r"^From ", re.M)


_MOZ_STATUS = re.compile(r"^X-Mozilla-Status:\s*([0-9A-Fa-f]+)\s*$", re.M)


_EXPUNGED = 0x0008  # nsMsgMessageFlags::Expunged: deleted, awaiting compaction


def split_mbox(text: str) -> list[str]:
    r"""The messages of an mbox text, each without its ``From `` separator line (whose date is the copy time).

    >>> split_mbox("From - Mon Jan 15 10:00:00 2024\nSubject: a\n\nhi\nFrom - Tue Jan 16 10:00:01 2024\nSubject: b")
    ['Subject: a\n\nhi', 'Subject: b']
    """
    text = text.replace("\r\n", "\n")
    starts = [m.start() for m in _MBOX_SEPARATOR.finditer(text)]
    messages: list[str] = []
    for i, start in enumerate(starts):
        chunk = text[start : starts[i + 1] if i + 1 < len(starts) else len(text)]
        body = chunk.split("\n", 1)[1] if "\n" in chunk else ""
        if body.strip():
            messages.append(body.strip())
    return messages


def _is_deleted(message: str) -> bool:
    found = _MOZ_STATUS.search(message)
    return found is not None and bool(int(found.group(1), 16) & _EXPUNGED)


def _folder_messages(path: Any, options: Mapping[str, Any]) -> list[str]:
    messages: list[str] = []
    for message in split_mbox(_read_text(path)):
        if options.get("remove_deleted", True) and _is_deleted(message):
            continue
        if options.get("ignore_status", False):
            message = re.sub(r"^X-Mozilla-Status\d?:.*(?:\n|$)", "", message, flags=re.M)
        if options.get("ignore_keys", False):
            message = re.sub(r"^X-Mozilla-Keys:.*(?:\n|$)", "", message, flags=re.M)
        messages.append(message.strip())
    if options.get("remove_duplicate", True):
        messages = list(set(messages))
    return sorted(messages)


def check_thunderbird_folder(result: Any, reference: Any, **options: Any) -> float:
    r"""1 iff each result mbox folder file holds the same messages as its gold file (in any order).

    ``result``/``reference``: a path, or parallel lists of paths (``vm_file``/``cloud_file`` with ``multi``).
    Options (OSWorld's): ``remove_deleted`` (default true: skip messages whose ``X-Mozilla-Status`` has the
    expunged flag 0x0008), ``remove_duplicate`` (default true: compare sets, else multisets),
    ``ignore_status`` (drop ``X-Mozilla-Status``/``Status2`` lines), ``ignore_keys`` (drop ``X-Mozilla-Keys``).

    Departure, on purpose: OSWorld's code splits on ``"FROM - "`` (Thunderbird writes ``"From - "``) and keeps
    only the empty pieces (``if mail.strip(): continue``), so it scores 1 for any two readable files. This
    compares the messages its docstring describes, split at the mbox ``From `` lines (whose dates, the time a
    message was copied in, are left out). Lists of different lengths score 0.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for name, subjects in (("Bills", "ab"), ("gold", "ba"), ("other", "a")):
    ...     with open(os.path.join(d, name), "w") as f:
    ...         _ = f.write("".join(f"From - Mon Jan 15 10:00:00 2024\nSubject: {s}\n\nhi\n" for s in subjects))
    >>> check_thunderbird_folder(os.path.join(d, "Bills"), os.path.join(d, "gold"))
    1.0
    >>> check_thunderbird_folder(os.path.join(d, "other"), os.path.join(d, "gold"))
    0.0
    """
    if result is None or reference is None:
        return 0.0
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    references = list(reference) if isinstance(reference, (list, tuple)) else [reference]
    if len(results) != len(references):
        _log.info("check_thunderbird_folder: %d result files for %d gold files", len(results), len(references))
        return 0.0
    for pred, gold in zip(results, references, strict=True):
        if pred is None or gold is None:
            return 0.0
        if _folder_messages(pred, options) != _folder_messages(gold, options):
            _log.info("check_thunderbird_folder: %s does not hold the messages of %s", pred, gold)
            return 0.0
    return 1.0


def check_csv(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""1 iff each ``expect`` record matches some row of the CSV file and no ``unexpect`` record matches any row.

    Rows are read by header (``csv.DictReader``); a record matches a row when every key of it is a column
    with that exact (string) value.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...     _ = f.write("url,user,password\nimap://outlook.office365.com,a@b.org,pw\n")
    >>> check_csv(f.name, {"expect": [{"url": "imap://outlook.office365.com", "user": "a@b.org"}]})
    1.0
    >>> check_csv(f.name, {"unexpect": [{"user": "a@b.org"}]})
    0.0
    """
    if result is None:
        return 0.0
    rows = list(csv.DictReader(_read_text(result).splitlines()))
    return _score_records(rows, rules)


def run_sqlite3(result: Any, rules: Mapping[str, Any], **options: Any) -> float:
    """The first column of the first row of ``rules["sql"]`` run on the SQLite file ``result`` (NULL -> 0).

    Real tasks ask a yes/no question (``select sum(1) > 0 from ...``), so the score is 0 or 1; other numbers
    are clamped to ``[0, 1]``. A missing file, a failing query, no row or a non-number scores 0.

    >>> import sqlite3, tempfile, os
    >>> db = os.path.join(tempfile.mkdtemp(), "global-messages-db.sqlite")
    >>> with sqlite3.connect(db) as con:
    ...     _ = con.execute("create table messages (id integer, folderID integer)")
    ...     _ = con.execute("insert into messages values (1, 13)")
    >>> run_sqlite3(db, {"sql": "select sum(1) > 0 from messages where folderID = 13"})
    1.0
    >>> run_sqlite3(db, {"sql": "select sum(1) > 0 from messages where folderID = 14"})
    0.0
    """
    if result is None:
        return 0.0
    sql = rules["sql"]
    if not Path(result).is_file():  # sqlite3.connect would create an empty database
        _log.info("run_sqlite3: no database at %s", result)
        return 0.0
    connection = sqlite3.connect(str(result))
    try:
        row = connection.execute(sql).fetchone()
    except sqlite3.Error as exc:
        _log.info("run_sqlite3: %s failed: %s", sql, exc)
        return 0.0
    finally:
        connection.close()
    if not row:
        return 0.0
    try:
        value = float(row[0] or 0)
    except (TypeError, ValueError):
        _log.info("run_sqlite3: %r is not a number", row[0])
        return 0.0
    return min(max(value, 0.0), 1.0)


# OSWorld's own namespace URIs for the tree's prefixes (its older servers' XML uses these).
_OSWORLD_NS = {
    "st": "uri:deskat:state.at-spi.gnome.org",
    "attr": "uri:deskat:attributes.at-spi.gnome.org",
    "cp": "uri:deskat:component.at-spi.gnome.org",
    "doc": "uri:deskat:document.at-spi.gnome.org",
    "docattr": "uri:deskat:attributes.document.at-spi.gnome.org",
    "txt": "uri:deskat:text.at-spi.gnome.org",
    "val": "uri:deskat:value.at-spi.gnome.org",
    "act": "uri:deskat:action.at-spi.gnome.org",
}


def indel_ratio(a: str, b: str | None) -> float:
    """Like rapidfuzz's ``fuzz.ratio / 100``: ``2 * LCS(a, b) / (len(a) + len(b))`` (1 for two empty strings).

    >>> indel_ratio("hello", "help"), indel_ratio("abc", None), indel_ratio("", "")
    (0.6666666666666666, 0.0, 1.0)
    """
    if b is None:
        return 0.0
    total = len(a) + len(b)
    if total == 0:
        return 1.0
    if not a or not b:
        return 0.0
    # Bit-parallel LCS length (Allison-Dix / Hyyro): one big-int step per character of b.
    masks: dict[str, int] = {}
    for i, char in enumerate(a):
        masks[char] = masks.get(char, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for char in b:
        match = row & masks.get(char, 0)
        row = ((row + match) | (row - match)) & full
    lcs = len(a) - bin(row).count("1")
    return 2.0 * lcs / total


def _namespaces(root: Any) -> dict[str, str]:
    """The prefixes the rules use -> URIs: the document's own declarations, else agentrl's, else OSWorld's."""
    from agentrl.envs.osworld.a11y import NAMESPACES

    declared = {prefix: uri for prefix, uri in root.nsmap.items() if prefix}
    for element in root.iter():  # declarations below the root (rare, but legal XML)
        if isinstance(element.tag, str):
            declared.update({p: u for p, u in element.nsmap.items() if p and p not in declared})
        if len(declared) >= len(NAMESPACES):
            break
    uris = set(declared.values())
    if uris & set(_OSWORLD_NS.values()):
        return {**_OSWORLD_NS, **declared}
    return {**NAMESPACES, **declared}


def _leading_text(element: Any) -> str | None:
    """A BeautifulSoup element's text before its first child element (lxml's ``element.text``), or None if empty."""
    from bs4 import NavigableString, Tag

    parts: list[str] = []
    for child in element.children:
        if isinstance(child, Tag):
            break
        if isinstance(child, NavigableString):
            parts.append(str(child))
    return "".join(parts) or None


def check_accessibility_tree(result: Any, rules: Sequence[Mapping[str, Any]], **options: Any) -> float:
    """The product over ``rules`` of each rule's score on the accessibility-tree XML ``result``.

    Each rule selects elements with ``"xpath"`` (lxml XPath; takes priority) or ``"selectors"`` (CSS
    selectors joined by ``", "``; namespaced attributes as ``[attr|id=tabmail-tabs]``); no element scores
    0. With ``"text"``, the rule scores the best match of an element's text (the text before its first
    child) against it: equality when ``"exact"`` (default true), else rapidfuzz's ratio
    (:func:`indel_ratio`). Without ``"text"`` a rule that selects something scores 1.

    >>> from agentrl.envs.osworld.a11y import NAMESPACES
    >>> xml = (f'<desktop-frame xmlns:attr="{NAMESPACES["attr"]}"><application name="Thunderbird">'
    ...        '<page-tab-list attr:id="tabmail-tabs"><page-tab name="About Profiles">About Profiles</page-tab>'
    ...        '</page-tab-list></application></desktop-frame>')
    >>> rule = 'application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>page-tab[name="About Profiles"]'
    >>> check_accessibility_tree(xml, [{"selectors": [rule]}])
    1.0
    >>> check_accessibility_tree(xml, [{"xpath": "//page-tab", "text": "About Config", "exact": True}])
    0.0
    """
    if result is None:
        return 0.0
    try:
        import lxml.etree
        import soupsieve
        from bs4 import BeautifulSoup
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"check_accessibility_tree needs lxml and beautifulsoup4; {_INSTALL_HINT}"
        ) from exc
    data = result.encode("utf-8") if isinstance(result, str) else bytes(result)
    root = lxml.etree.fromstring(data, parser=lxml.etree.XMLParser(huge_tree=True))
    namespaces = _namespaces(root)
    soup: Any = None
    total = 1.0
    for rule in rules:
        texts: list[str | None]
        if "xpath" in rule:
            found = root.xpath(rule["xpath"], namespaces=namespaces)
            elements = [e for e in found if isinstance(e, lxml.etree._Element)] if isinstance(found, list) else []
            texts = [e.text or None for e in elements]
        elif "selectors" in rule:
            if soup is None:  # CSS through soupsieve (bs4's selector engine); lxml's needs cssselect
                soup = BeautifulSoup(data, "lxml-xml")
            selected = soupsieve.select(", ".join(rule["selectors"]), soup, namespaces=namespaces)
            texts = [_leading_text(e) for e in selected]
        else:
            raise ValueError("check_accessibility_tree: a rule needs 'xpath' or 'selectors'")
        if not texts:
            _log.info("check_accessibility_tree: nothing matches %s", rule.get("xpath", rule.get("selectors")))
            return 0.0
        if "text" in rule:
            want = str(rule["text"])
            if rule.get("exact", True):
                score = max(float(text == want) for text in texts)
            else:
                score = max(indel_ratio(want, text) for text in texts)
        else:
            score = 1.0
        total *= score
    return float(total)


GETTERS: dict[str, Callable[..., Any]] = {
    "cache_file": cache_file,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_accessibility_tree": check_accessibility_tree,
    "check_csv": check_csv,
    "check_thunderbird_filter": check_thunderbird_filter,
    "check_thunderbird_folder": check_thunderbird_folder,
    "check_thunderbird_prefs": check_thunderbird_prefs,
    "run_sqlite3": run_sqlite3,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
