"""OSWorld's Chromium's profile (Preferences, Bookmarks, History, Cookies, extensions) and relative-time rules.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.server.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``; setup steps are
``step(client, parameters)``. The three dicts below are merged by :mod:`agentrl.envs.osworld.app_evaluators`.

OSWorld reads Google Chrome's profile files straight off the VM (``/file``), without talking to Chrome;
so does this module, from Debian's Chromium profile at :data:`PROFILE_ROOT`. The JSON files are parsed
here; the sqlite ones (``History``, ``Cookies``) are copied into ``client.cache_dir`` and opened with
:mod:`sqlite3`. A profile file that is missing makes its getter return ``None`` (the evaluator scores 0).

Getters: ``rule_relativeTime`` (no desktop: the task's rules with dates relative to today filled in),
``bookmarks``, ``default_search_engine``, ``profile_name``, ``data_delete_automacally``,
``new_startup_page``, ``enable_do_not_track``, ``enable_enhanced_safety_browsing``, ``chrome_font_size``,
``enabled_experiments``, ``cookie_data``, ``history``, ``find_unpacked_extension_path``,
``find_installed_extension_name``, ``shortcuts_on_desktop``. Setup steps: ``update_browse_history``
(rows written into the profile's ``History`` inside the desktop), ``chrome_close_tabs`` (over DevTools).

Not ported, as they need the internet: ``page_info``, ``pdf_from_url``, ``info_from_website``,
``gotoRecreationPage_and_get_html_content`` and the metric ``is_added_to_steam_cart`` (whose getter is
``page_info``).

>>> apply_time_format("{DoW}, {Month} {Day0D}, {Year}", datetime.date(2024, 3, 4))
'Mon, Mar 04, 2024'
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentrl.envs.osworld import cdp
from agentrl.envs.osworld.chrome import ChromeError, cdp_request
from agentrl.envs.osworld.chrome_metrics import compare_urls

__all__ = [
    "GETTERS",
    "METRICS",
    "PROFILE_DIR",
    "PROFILE_ROOT",
    "SETUP_STEPS",
    "apply_time_format",
    "check_enabled_experiments",
    "check_font_size",
    "check_history_deleted",
    "is_cookie_deleted",
    "is_expected_bookmarks",
    "is_expected_installed_extensions",
    "is_extension_installed",
    "is_shortcut_on_desktop",
    "relative_time_rules",
    "resolve_relative_day",
]

PROFILE_ROOT = "~/.config/chromium"
"""Chromium's user-data directory on the desktop (Debian's ``chromium``; ``Local State`` lives here).

OSWorld's VM runs Google Chrome, whose user-data directory is ``~/.config/google-chrome``; the files in
it (``Local State``, ``Default/Preferences``...) have the same names and formats in Chromium."""

PROFILE_DIR = f"{PROFILE_ROOT}/Default"
"""The default profile: ``Preferences``, ``Bookmarks``, ``History``, ``Cookies``, ``Extensions/``."""

_CHROME_EPOCH_OFFSET_S = 11_644_473_600
"""Seconds from 1601-01-01 (Chromium's timestamps: microseconds since then, UTC) to the Unix epoch."""


# --------------------------------------------------------------------------------------------------
# rule_relativeTime (OSWorld's getters/misc.py): pure, no desktop
# --------------------------------------------------------------------------------------------------

_DOW = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_FULL = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def apply_time_format(template: str, day: datetime.date) -> str:
    """Fill OSWorld's date placeholders in ``template`` with ``day`` (each placeholder's first occurrence only).

    ``{DoW}`` Mon, ``{Month}`` Mar, ``{DayD}`` 4, ``{Year}`` 2024, ``{Month0D}`` 03, ``{month}`` march,
    ``{MonthFull}`` March, ``{Day0D}`` 04; replaced in that order, once each, as OSWorld's
    ``apply_rules_to_timeFormat`` does.

    >>> apply_time_format("{Year}-{Month0D}-{DayD}", datetime.date(2024, 11, 5))
    '2024-11-5'
    >>> apply_time_format("{month}-weather", datetime.date(2024, 5, 1))
    'may-weather'
    """
    replacements = (
        ("{DoW}", _DOW[day.weekday()]),
        ("{Month}", _MONTH_ABBR[day.month - 1]),
        ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)),
        ("{Month0D}", f"{day.month:02d}"),
        ("{month}", _MONTH_FULL[day.month - 1].lower()),
        ("{MonthFull}", _MONTH_FULL[day.month - 1]),
        ("{Day0D}", f"{day.day:02d}"),
    )
    for placeholder, value in replacements:
        template = template.replace(placeholder, value, 1)
    return template


def _day_of_next_month(today: datetime.date, day: int) -> datetime.date:
    if today.month == 12:
        return datetime.date(today.year + 1, 1, day)
    return datetime.date(today.year, today.month + 1, day)


def resolve_relative_day(name: str, today: datetime.date, from_name: str | None = None) -> datetime.date:
    """The day OSWorld's relative-time ``name`` stands for, seen from ``today``.

    ``from_name``: the range's ``from`` when ``name`` is its ``to`` (``next Friday`` after ``next Monday``
    is the Friday of that next week). Each name means what OSWorld's ``get_rule_relativeTime`` computes,
    in whichever of ``from``/``to`` it appears (OSWorld knows some only on one side). One departure:
    ``first monday four months later`` in August is the first Monday of December (OSWorld's month
    arithmetic gives month 0 there and crashes).

    >>> today = datetime.date(2024, 3, 6)  # a Wednesday
    >>> resolve_relative_day("next Monday", today), resolve_relative_day("this Saturday", today)
    (datetime.date(2024, 3, 11), datetime.date(2024, 3, 9))
    >>> resolve_relative_day("next Friday", today, from_name="next Monday")
    datetime.date(2024, 3, 15)
    >>> resolve_relative_day("first monday four months later", datetime.date(2024, 8, 20))
    datetime.date(2024, 12, 2)

    Raises:
        ValueError: ``name`` is not one of OSWorld's relative times.
    """
    weekday = today.weekday()
    if name == "tomorrow":
        return today + datetime.timedelta(days=1)
    if name == "this month":
        return today
    if name in ("5th next month", "10th next month", "11th next month"):
        return _day_of_next_month(today, int(name.split("th", 1)[0]))
    if name == "next Monday":  # the coming Monday: a week on when today is a Monday
        return today + datetime.timedelta(days=7 - weekday)
    if name == "this Saturday":  # OSWorld: 5 - weekday days on (yesterday, on a Sunday)
        return today + datetime.timedelta(days=5 - weekday)
    if name == "this Sunday":
        return today + datetime.timedelta(days=6 - weekday)
    if name == "next Friday":
        if weekday < 4 and from_name == "next Monday":
            return today + datetime.timedelta(days=4 - weekday + 7)
        return today + datetime.timedelta(days=4 - weekday if weekday < 4 else 6 - weekday + 5)
    if name == "first monday four months later":
        month = today.month + 4
        first = datetime.date(today.year + (month > 12), (month - 1) % 12 + 1, 1)
        return first + datetime.timedelta(days=(7 - first.weekday()) % 7)
    raise ValueError(f"unknown relative time {name!r} (OSWorld's rule_relativeTime knows none such)")


def relative_time_rules(rules: Mapping[str, Any], today: datetime.date) -> dict[str, Any]:
    """A copy of ``rules`` whose ``expected`` dates are filled in for ``today`` (OSWorld's ``rule_relativeTime``).

    ``rules["relativeTime"]`` is ``{"from": NAME}`` (then ``expected["time"]`` is the template) or
    ``{"from": NAME, "to": NAME}`` (then ``expected["from"]`` and ``expected["to"]`` are).

    >>> rules = {"relativeTime": {"from": "tomorrow"}, "expected": {"start": "NYC", "time": "{DoW}, {Month} {DayD}"}}
    >>> relative_time_rules(rules, datetime.date(2024, 2, 29))["expected"]
    {'start': 'NYC', 'time': 'Fri, Mar 1'}
    """
    filled = copy.deepcopy(dict(rules))
    relative = filled["relativeTime"]
    expected = filled["expected"]
    if "to" not in relative:
        expected["time"] = apply_time_format(expected["time"], resolve_relative_day(relative["from"], today))
    else:
        start = resolve_relative_day(relative["from"], today)
        end = resolve_relative_day(relative["to"], today, from_name=relative["from"])
        expected["from"] = apply_time_format(expected["from"], start)
        expected["to"] = apply_time_format(expected["to"], end)
    return filled


def rule_relativeTime(client: Any, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The ``rules`` of ``spec`` with dates relative to today filled in (see :func:`relative_time_rules`).

    Today is the evaluating machine's local date, as OSWorld's ``datetime.now()``; ``client`` is unused.
    """
    return relative_time_rules(spec["rules"], datetime.date.today())


# --------------------------------------------------------------------------------------------------
# Reading the profile
# --------------------------------------------------------------------------------------------------


def _read_json(client: Any, path: str) -> dict[str, Any] | None:
    """The JSON object in the desktop file ``path``; ``None`` when it is missing or not a JSON object."""
    data = client.read_file(path)
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _preferences(client: Any) -> dict[str, Any] | None:
    return _read_json(client, f"{PROFILE_DIR}/Preferences")


def _dig(data: Mapping[str, Any], *keys: str) -> Any:
    """``data[k1][k2]...``, or ``None`` where a level is missing or not an object."""
    value: Any = data
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def default_search_engine(client: Any, spec: Mapping[str, Any]) -> str | None:
    """The default search engine's short name (``"Google"`` unless the user chose another), as OSWorld."""
    prefs = _preferences(client)
    if prefs is None:
        return None
    name = _dig(prefs, "default_search_provider_data", "template_url_data", "short_name")
    return str(name) if name is not None else "Google"


def profile_name(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``profile.name`` of ``Preferences`` (the name the user gave the profile)."""
    prefs = _preferences(client)
    name = _dig(prefs, "profile", "name") if prefs is not None else None
    return str(name) if name is not None else None


def _true_false(flag: Any) -> str:
    return "true" if flag else "false"


def enable_do_not_track(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``"true"`` when "Send a Do Not Track request" is on (``enable_do_not_track``), else ``"false"``."""
    prefs = _preferences(client)
    return None if prefs is None else _true_false(prefs.get("enable_do_not_track"))


def enable_enhanced_safety_browsing(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``"true"`` when Safe Browsing's Enhanced protection is on (``safebrowsing.enhanced``), else ``"false"``."""
    prefs = _preferences(client)
    return None if prefs is None else _true_false(_dig(prefs, "safebrowsing", "enhanced"))


def new_startup_page(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``"true"`` when Chromium opens the New Tab page on start-up, else ``"false"``.

    OSWorld's reading: no ``session`` key at all is a fresh profile (New Tab page), otherwise
    ``session.restore_on_startup`` must be 5 (New Tab page; 1 is "continue where you left off", 4 "open
    these pages").
    """
    prefs = _preferences(client)
    if prefs is None:
        return None
    if "session" not in prefs:
        return "true"
    return _true_false(_dig(prefs, "session", "restore_on_startup") == 5)


def data_delete_automacally(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``"true"`` when the profile has changed a content setting's default (OSWorld's test for "delete on close").

    Turning on "Delete data sites have saved to your device when you close all windows" writes
    ``profile.default_content_setting_values`` (``{"cookies": 4}``); OSWorld's Chrome had no such key
    before, so it tests that the key exists. Chromium (156 at least) writes its own bookkeeping flags
    there on first start (``{"has_migrated_local_network_access": true}``), so those ``has_migrated_*``
    entries are left out: only a real setting counts, or a fresh profile would pass untouched.
    """
    prefs = _preferences(client)
    if prefs is None:
        return None
    values = _dig(prefs, "profile", "default_content_setting_values")
    if not isinstance(values, Mapping):
        return "false"
    return _true_false(any(not str(key).startswith("has_migrated") for key in values))


_FONT_DEFAULTS = {"default_fixed_font_size": 13, "default_font_size": 16}
"""Chromium's default font sizes: ``Preferences`` only holds the sizes the user changed."""


def chrome_font_size(client: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``webkit.webprefs`` of ``Preferences`` over Chromium's defaults (``default_font_size`` 16...)."""
    prefs = _preferences(client)
    if prefs is None:
        return None
    webprefs = _dig(prefs, "webkit", "webprefs")
    return {**_FONT_DEFAULTS, **(dict(webprefs) if isinstance(webprefs, Mapping) else {})}


def enabled_experiments(client: Any, spec: Mapping[str, Any]) -> list[str] | None:
    """``browser.enabled_labs_experiments`` of ``Local State``: the chrome://flags entries set, ``NAME@OPTION``."""
    state = _read_json(client, f"{PROFILE_ROOT}/Local State")
    if state is None:
        return None
    flags = _dig(state, "browser", "enabled_labs_experiments")
    return [str(flag) for flag in flags] if isinstance(flags, list) else []


def bookmarks(client: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``roots`` of the profile's ``Bookmarks`` (``bookmark_bar``, ``other``, ``synced``); ``None`` with no file.

    Chromium writes ``Bookmarks`` only once a bookmark exists (OSWorld answers ``[]`` then; both score 0).
    """
    data = _read_json(client, f"{PROFILE_DIR}/Bookmarks")
    if data is None:
        return None
    roots = data.get("roots")
    return dict(roots) if isinstance(roots, Mapping) else {}


def _extension_settings(client: Any) -> dict[str, Any] | None:
    """``extensions.settings`` ({id: entry}) of ``Preferences`` and, where it holds some, ``Secure Preferences``."""
    prefs = _preferences(client)
    if prefs is None:
        return None
    settings: dict[str, Any] = {}
    for source in (prefs, _read_json(client, f"{PROFILE_DIR}/Secure Preferences") or {}):
        found = _dig(source, "extensions", "settings")
        if isinstance(found, Mapping):
            for ext_id, entry in found.items():
                if isinstance(entry, Mapping):
                    settings[str(ext_id)] = {**settings.get(str(ext_id), {}), **entry}
    return settings


def find_unpacked_extension_path(client: Any, spec: Mapping[str, Any]) -> list[str] | None:
    """The ``path`` of every extension in the profile (an unpacked one's is its folder, e.g. ``~/Desktop/x``).

    The metric (``is_in_list``) looks for the folder the task unpacked; entries without a path are
    skipped (OSWorld's getter fails on them).
    """
    settings = _extension_settings(client)
    if settings is None:
        return None
    return [str(entry["path"]) for entry in settings.values() if entry.get("path")]


def _manifest_name(client: Any, entry: Mapping[str, Any]) -> str | None:
    name = _dig(entry, "manifest", "name")
    if name is not None:
        return str(name)
    path = entry.get("path")  # no manifest kept in the prefs: read it from the extension's folder
    if not path:
        return None
    folder = str(path) if str(path).startswith("/") else f"{PROFILE_DIR}/Extensions/{path}"
    manifest = _read_json(client, f"{folder}/manifest.json")
    return str(manifest["name"]) if manifest and "name" in manifest else None


def find_installed_extension_name(client: Any, spec: Mapping[str, Any]) -> list[str] | None:
    """The manifest ``name`` of every extension in the profile (Chromium's own component ones included)."""
    settings = _extension_settings(client)
    if settings is None:
        return None
    names = (_manifest_name(client, entry) for entry in settings.values())
    return [name for name in names if name is not None]


def shortcuts_on_desktop(client: Any, spec: Mapping[str, Any]) -> dict[str, str] | None:
    """``{file name: text}`` of every ``.desktop`` file on ``~/Desktop`` (where "Create shortcut" puts one)."""
    tree = client.list_directory("~/Desktop")
    if tree is None:
        return None
    shortcuts: dict[str, str] = {}
    for child in tree.get("children") or []:
        name = str(child.get("name", ""))
        if child.get("type") == "file" and name.endswith(".desktop"):
            data = client.read_file(f"~/Desktop/{name}")
            if data is not None:
                shortcuts[name] = data.decode("utf-8", errors="replace")
    return shortcuts


def _copy_sqlite(client: Any, paths: tuple[str, ...], dest: str) -> Path | None:
    """Copy the first existing sqlite file of ``paths`` (with its ``-wal``, if any) into ``cache_dir/dest``."""
    for path in paths:
        data = client.read_file(path)
        if data is None:
            continue
        local = client.cache_dir / Path(dest).name  # never outside the cache dir
        local.write_bytes(data)
        wal = client.read_file(f"{path}-wal")  # commits not yet checkpointed, in a WAL-mode database
        wal_copy = Path(f"{local}-wal")
        if wal:
            wal_copy.write_bytes(wal)
        elif wal_copy.exists():
            wal_copy.unlink()
        return local
    return None


def _query(db: Path, sql: str) -> list[tuple[Any, ...]] | None:
    try:
        conn = sqlite3.connect(db)
        try:
            return [tuple(row) for row in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


def cookie_data(client: Any, spec: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """Every row of the profile's ``cookies`` table (``host_key`` is column 1), as OSWorld's ``SELECT *``.

    ``dest``: the copy's name in the cache dir (default ``Cookies``). Chromium keeps the file at
    ``Default/Cookies`` (older Chrome on some systems at ``Default/Network/Cookies``: tried second).
    """
    paths = (f"{PROFILE_DIR}/Cookies", f"{PROFILE_DIR}/Network/Cookies")
    local = _copy_sqlite(client, paths, str(spec.get("dest") or "Cookies"))
    return None if local is None else _query(local, "SELECT * FROM cookies")


def history(client: Any, spec: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """``(url, title, last_visit_time)`` of every row of the profile's ``History`` ``urls`` table.

    ``dest``: the copy's name in the cache dir (default ``History``).
    """
    local = _copy_sqlite(client, (f"{PROFILE_DIR}/History",), str(spec.get("dest") or "History"))
    return None if local is None else _query(local, "SELECT url, title, last_visit_time FROM urls")


# --------------------------------------------------------------------------------------------------
# Metrics (OSWorld's metrics/chrome.py, and vscode.py's is_extension_installed)
# --------------------------------------------------------------------------------------------------


def _bar_children(bookmarks: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    children = _dig(bookmarks, "bookmark_bar", "children")
    return [c for c in children if isinstance(c, Mapping)] if isinstance(children, list) else []


def is_expected_bookmarks(bookmarks: Any, rule: Mapping[str, Any]) -> float:
    """1 if the bookmarks bar is as ``rule`` says; ``bookmarks`` is the ``roots`` of Chromium's ``Bookmarks``.

    ``bookmark_bar_folders_names``: the bar's folders' names equal ``rule["names"]`` as sets;
    ``bookmark_bar_websites_urls``: the bar's links' URLs equal ``rule["urls"]`` as sets;
    ``liked_authors_websites_urls``: the bar has a folder "Liked Authors" whose links' URLs are, as a
    set, one pick from each of ``rule["urls"]`` (each item a URL or a list of a person's alternative URLs).

    >>> bar = {"bookmark_bar": {"children": [{"type": "folder", "name": "Favorites", "children": []},
    ...                                      {"type": "url", "name": "A", "url": "https://a.org/"}]}}
    >>> is_expected_bookmarks(bar, {"type": "bookmark_bar_folders_names", "names": ["Favorites"]})
    1.0
    >>> is_expected_bookmarks(bar, {"type": "bookmark_bar_websites_urls", "urls": ["https://b.org/"]})
    0.0

    Raises:
        ValueError: an unknown ``rule["type"]``.
    """
    if not bookmarks or not isinstance(bookmarks, Mapping):
        return 0.0
    children = _bar_children(bookmarks)
    kind = rule.get("type")
    if kind == "bookmark_bar_folders_names":
        names = {c.get("name") for c in children if c.get("type") == "folder"}
        return float(names == set(rule["names"]))
    if kind == "bookmark_bar_websites_urls":
        urls = {c.get("url") for c in children if c.get("type") == "url"}
        return float(urls == set(rule["urls"]))
    if kind == "liked_authors_websites_urls":
        folder = next((c for c in children if c.get("type") == "folder" and c.get("name") == "Liked Authors"), None)
        if folder is None:
            return 0.0
        liked = {
            c.get("url") for c in folder.get("children") or [] if isinstance(c, Mapping) and c.get("type") == "url"
        }
        groups = [[url] if isinstance(url, str) else list(url) for url in rule["urls"]]
        return float(any(set(pick) == liked for pick in itertools.product(*groups)))
    raise ValueError(f"is_expected_bookmarks: rule type {kind!r} is not supported")


def is_expected_installed_extensions(installed_extensions: Any, expected: Mapping[str, Any]) -> float:
    """1 if every name of ``expected["expected"]`` is among the installed extensions' names.

    >>> is_expected_installed_extensions(["Momentum", "Google Translate", "Chromium PDF Viewer"],
    ...                                  {"expected": ["Google Translate", "Momentum"]})
    1.0
    >>> is_expected_installed_extensions(["Momentum"], {"expected": ["Google Translate", "Momentum"]})
    0.0
    """
    if installed_extensions is None:
        return 0.0
    return float(set(expected["expected"]).issubset(set(installed_extensions)))


def is_extension_installed(actual: Any, rules: Mapping[str, Any], **options: Any) -> float:
    r"""OSWorld's VS Code metric: 1 if ``rules["expected"]`` is (``contain``) or is not (``not_contain``) in ``actual``.

    ``actual`` is a command's output (``code --list-extensions | grep NAME``, ``ls DIR | grep FILE``).

    >>> is_extension_installed("ms-python.python\n", {"type": "contain", "expected": "ms-python.python"})
    1.0
    >>> is_extension_installed("", {"type": "contain", "expected": "ms-python.python"})
    0.0
    >>> is_extension_installed("", {"type": "not_contain", "expected": "ms-python.python"})
    1.0

    Raises:
        ValueError: an unknown ``rules["type"]``.
    """
    if actual is None:
        return 0.0
    kind = rules.get("type")
    if kind == "contain":
        return float(rules["expected"] in actual)
    if kind == "not_contain":
        return float(rules["expected"] not in actual)
    raise ValueError(f"is_extension_installed: rule type {kind!r} is not supported (contain, not_contain)")


def is_cookie_deleted(cookie_data: Any, rule: Mapping[str, Any]) -> float:
    """1 if no cookie's ``host_key`` (column 1 of a ``cookies`` row) equals one of ``rule["domains"]``.

    Domains compare as OSWorld's ``compare_urls`` (so ``.amazon.com`` matches ``.amazon.com`` only, not
    ``www.amazon.com``).

    >>> rows = [(0, ".amazon.com", "", "session-id"), (0, ".example.org", "", "x")]
    >>> is_cookie_deleted(rows, {"type": "domains", "domains": [".amazon.com"]})
    0.0
    >>> is_cookie_deleted(rows[1:], {"type": "domains", "domains": [".amazon.com"]})
    1.0

    Raises:
        ValueError: an unknown ``rule["type"]``.
    """
    if cookie_data is None:
        return 0.0
    if rule.get("type") != "domains":
        raise ValueError(f"is_cookie_deleted: rule type {rule.get('type')!r} is not supported (domains)")
    hosts = [str(row[1]) for row in cookie_data]
    return float(not any(compare_urls(domain, host) for domain in rule["domains"] for host in hosts))


def is_shortcut_on_desktop(shortcuts: Any, rule: Mapping[str, Any]) -> float:
    r"""1 if a desktop shortcut's text has the line ``Name=<rule["name"]>`` (``rule["type"] == "name"``).

    >>> is_shortcut_on_desktop({"a.desktop": "[Desktop Entry]\nName=Play 2048\nExec=x\n"},
    ...                        {"type": "name", "name": "Play 2048"})
    1.0
    >>> is_shortcut_on_desktop({}, {"type": "name", "name": "Play 2048"})
    0.0

    Raises:
        ValueError: another ``rule["type"]`` (OSWorld supports none other).
    """
    if shortcuts is None:
        return 0.0
    if rule.get("type") != "name":
        raise ValueError(f"is_shortcut_on_desktop: rule type {rule.get('type')!r} is not supported (name)")
    line = f"Name={rule['name']}\n"
    return float(any(line in str(text) for text in shortcuts.values()))


def check_history_deleted(history_data: Any, rule: Mapping[str, Any]) -> float:
    """1 if no history row's URL (column 0) contains one of ``rule["keywords"]`` (``rule["type"] == "keywords"``).

    >>> rows = [("https://www.youtube.com/watch?v=1", "v", 0), ("https://www.bbc.co.uk/", "BBC", 0)]
    >>> check_history_deleted(rows, {"type": "keywords", "keywords": ["youtube"]})
    0.0
    >>> check_history_deleted(rows[1:], {"type": "keywords", "keywords": ["youtube"]})
    1.0

    Raises:
        ValueError: an unknown ``rule["type"]``.
    """
    if history_data is None:
        return 0.0
    if rule.get("type") != "keywords":
        raise ValueError(f"check_history_deleted: rule type {rule.get('type')!r} is not supported (keywords)")
    urls = [str(row[0]) for row in history_data]
    return float(not any(keyword in url for keyword in rule["keywords"] for url in urls))


def check_enabled_experiments(enabled_experiments: Any, rule: Mapping[str, Any]) -> float:
    """1 if the enabled flags' names (``NAME@OPTION`` less ``@OPTION``) equal ``rule["names"]``, in order.

    >>> check_enabled_experiments(["chrome-refresh-2023@2", "chrome-webui-refresh-2023@2"],
    ...                           {"type": "names", "names": ["chrome-refresh-2023", "chrome-webui-refresh-2023"]})
    1.0
    >>> check_enabled_experiments([], {"type": "names", "names": ["chrome-refresh-2023"]})
    0.0

    Raises:
        ValueError: an unknown ``rule["type"]``.
    """
    if enabled_experiments is None:
        return 0.0
    if rule.get("type") != "names":
        raise ValueError(f"check_enabled_experiments: rule type {rule.get('type')!r} is not supported (names)")
    names = [str(flag).split("@")[0] for flag in enabled_experiments]
    return float(names == list(rule["names"]))


def check_font_size(font_size: Any, rule: Mapping[str, Any]) -> float:
    """1 if ``font_size["default_font_size"]`` equals ``rule["value"]`` (``value``) or lies strictly in ``(min, max)``.

    >>> check_font_size({"default_font_size": 24}, {"type": "range", "min": 16, "max": 99999})
    1.0
    >>> check_font_size({"default_font_size": 16}, {"type": "range", "min": 16, "max": 99999})
    0.0
    >>> check_font_size({"default_font_size": 20}, {"type": "value", "value": 20})
    1.0

    Raises:
        ValueError: an unknown ``rule["type"]``.
    """
    if not isinstance(font_size, Mapping) or "default_font_size" not in font_size:
        return 0.0
    size = font_size["default_font_size"]
    if rule.get("type") == "value":
        return float(size == rule["value"])
    if rule.get("type") == "range":
        return float(rule["min"] < size < rule["max"])
    raise ValueError(f"check_font_size: rule type {rule.get('type')!r} is not supported (value, range)")


# --------------------------------------------------------------------------------------------------
# Setup steps
# --------------------------------------------------------------------------------------------------

# Chromium's own columns (as Chromium 156 creates them): a History made here must be one Chromium opens
# as its own. Without a ``meta`` table Chromium takes the file as new, adds its other tables and keeps
# these rows (checked: they show in chrome://history).
_HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,
  visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,last_visit_time INTEGER NOT NULL,
  hidden INTEGER DEFAULT 0 NOT NULL);
CREATE INDEX IF NOT EXISTS urls_url_index ON urls (url);
CREATE TABLE IF NOT EXISTS visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,visit_time INTEGER NOT NULL,
  from_visit INTEGER,external_referrer_url TEXT,transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,
  visit_duration INTEGER DEFAULT 0 NOT NULL,incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,
  opener_visit INTEGER,originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,
  originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,
  consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,visited_link_id INTEGER DEFAULT 0 NOT NULL,app_id TEXT);
CREATE INDEX IF NOT EXISTS visits_url_index ON visits (url);
CREATE INDEX IF NOT EXISTS visits_from_index ON visits (from_visit);
CREATE INDEX IF NOT EXISTS visits_time_index ON visits (visit_time);
"""

_LINK_CHAIN = 805_306_368
"""``transition`` of OSWorld's visits: a link, both start and end of its redirect chain (0x30000000)."""

# Runs in the desktop's sandbox (python3, standard library): sqlite applies any hot journal Chromium left,
# and fails with "database is locked" while a running Chromium holds the file (exclusive locking).
_ADD_HISTORY = """
import json, os, sqlite3, time
request = json.loads(REQUEST)
path = os.path.expanduser(request["path"])
os.makedirs(os.path.dirname(path), exist_ok=True)
now_us = int((time.time() + request["epoch_offset_s"]) * 1_000_000)
try:
    conn = sqlite3.connect(path, timeout=5)
    try:
        conn.executescript(request["schema"])
        for url, title, ago_s in request["rows"]:
            when = now_us - int(float(ago_s) * 1_000_000)
            cur = conn.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) "
                               "VALUES (?, ?, 1, 0, ?, 0)", (url, title, when))
            conn.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) "
                         "VALUES (?, ?, 0, ?, 0, 0)", (cur.lastrowid, when, request["transition"]))
        conn.commit()
    finally:
        conn.close()
    print(json.dumps({"added": len(request["rows"])}))
except sqlite3.Error as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def _last_json_line(answer: Mapping[str, Any]) -> Any:
    lines = [line for line in str(answer.get("output") or "").splitlines() if line.strip()]
    try:
        return json.loads(lines[-1]) if lines else None
    except ValueError:
        return None


def update_browse_history(client: Any, parameters: Mapping[str, Any]) -> None:
    """OSWorld's ``update_browse_history``: add each ``history`` item to the profile's browsing history.

    Each item is ``{"url", "title", "visit_time_from_now_in_seconds"}``: a ``urls`` row visited once that
    long ago and its ``visits`` row, as OSWorld writes them. OSWorld fills a History downloaded from
    Google Drive and uploads it over Chrome's; here the rows go into the profile's own ``History`` inside
    the desktop (one made with Chromium's columns when there is none), so nothing is downloaded. The
    tasks run this step before Chromium starts; while Chromium runs it holds the file and the step fails.
    Times are UTC microseconds since 1601, Chromium's clock (OSWorld uses its host's local time).

    Raises:
        ChromeError: the items are malformed, or the rows could not be written.
    """
    items = parameters["history"]
    if not isinstance(items, list):
        raise ChromeError(
            "update_browse_history: 'history' must be a list of {url, title, visit_time_from_now_in_seconds}"
        )
    rows = []
    for i, item in enumerate(items):
        try:
            rows.append((str(item["url"]), str(item["title"]), float(item["visit_time_from_now_in_seconds"])))
        except (KeyError, TypeError, ValueError):
            raise ChromeError(
                f"update_browse_history: history[{i}] needs url, title and a number visit_time_from_now_in_seconds"
            ) from None
    request = {
        "path": f"{PROFILE_DIR}/History",
        "rows": rows,
        "schema": _HISTORY_SCHEMA,
        "epoch_offset_s": _CHROME_EPOCH_OFFSET_S,
        "transition": _LINK_CHAIN,
    }
    answer = client.run_python(f"REQUEST = {json.dumps(json.dumps(request))}\n{_ADD_HISTORY}")
    reply = _last_json_line(answer)
    if not isinstance(reply, dict) or "added" not in reply:
        detail = reply.get("error") if isinstance(reply, dict) else answer.get("error") or answer.get("output")
        hint = " (close Chromium first: it holds History while it runs)" if "locked" in str(detail) else ""
        raise ChromeError(f"update_browse_history: could not write {PROFILE_DIR}/History: {str(detail)[-500:]}{hint}")


def _close_tab_ids(client: Any, ids: list[str]) -> None:
    """Close the tabs ``ids`` with :func:`agentrl.envs.osworld.cdp.close_tab`, run inside the desktop's sandbox."""
    source = Path(cdp.__file__).read_text(encoding="utf-8")
    code = (
        f"{source}\n\nimport json as _json\n"
        f"try:\n    for _id in _json.loads({json.dumps(json.dumps(ids))}):\n        close_tab(_id)\n"
        f"    print(_json.dumps({{'closed': True}}))\n"
        f"except OSError as _exc:\n    print(_json.dumps({{'error': repr(_exc)}}))\n"
    )
    reply = _last_json_line(client.run_python(code))
    if not isinstance(reply, dict) or not reply.get("closed"):
        raise ChromeError(f"chrome_close_tabs: DevTools did not close the tabs: {reply}")


def chrome_close_tabs(client: Any, parameters: Mapping[str, Any]) -> None:
    """OSWorld's ``chrome_close_tabs``: for each of ``urls_to_close``, close the first tab showing that URL.

    URLs compare as OSWorld's ``compare_urls`` (``www.`` and a bare ``/`` path ignored); a URL no tab
    shows closes nothing, as in OSWorld. Tabs are searched oldest first (Playwright's ``context.pages``
    order; DevTools lists the most recently active first).

    Raises:
        ChromeError: ``urls_to_close`` is not a list of strings, or DevTools did not answer.
    """
    urls = parameters["urls_to_close"]
    if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls):
        raise ChromeError("chrome_close_tabs: 'urls_to_close' must be a list of URL strings")
    tabs = [dict(tab) for tab in reversed(cdp_request(client, {"op": "tabs"}) or [])]
    doomed: list[str] = []
    for url in urls:
        tab = next((t for t in tabs if t["id"] not in doomed and compare_urls(str(t.get("url")), url)), None)
        if tab is not None:
            doomed.append(str(tab["id"]))
    if doomed:
        _close_tab_ids(client, doomed)


GETTERS: dict[str, Callable[..., Any]] = {
    "rule_relativeTime": rule_relativeTime,
    "bookmarks": bookmarks,
    "default_search_engine": default_search_engine,
    "profile_name": profile_name,
    "data_delete_automacally": data_delete_automacally,
    "new_startup_page": new_startup_page,
    "enable_do_not_track": enable_do_not_track,
    "enable_enhanced_safety_browsing": enable_enhanced_safety_browsing,
    "chrome_font_size": chrome_font_size,
    "enabled_experiments": enabled_experiments,
    "cookie_data": cookie_data,
    "history": history,
    "find_unpacked_extension_path": find_unpacked_extension_path,
    "find_installed_extension_name": find_installed_extension_name,
    "shortcuts_on_desktop": shortcuts_on_desktop,
}
"""OSWorld getter type -> ``getter(client, spec)``."""

METRICS: dict[str, Callable[..., float]] = {
    "is_expected_bookmarks": is_expected_bookmarks,
    "is_expected_installed_extensions": is_expected_installed_extensions,
    "is_extension_installed": is_extension_installed,
    "is_cookie_deleted": is_cookie_deleted,
    "is_shortcut_on_desktop": is_shortcut_on_desktop,
    "check_history_deleted": check_history_deleted,
    "check_enabled_experiments": check_enabled_experiments,
    "check_font_size": check_font_size,
}
"""OSWorld metric name -> function."""

SETUP_STEPS: dict[str, Callable[..., None]] = {
    "update_browse_history": update_browse_history,
    "chrome_close_tabs": chrome_close_tabs,
}
"""OSWorld setup step type -> ``step(client, parameters)``."""
