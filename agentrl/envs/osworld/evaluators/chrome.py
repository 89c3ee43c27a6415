"""OSWorld's Chrome getters and metrics: the open tabs over DevTools, and the profile's files.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``. The setup steps that
drive Chromium (``chrome_open_tabs``, ``update_browse_history``, ``chrome_close_tabs``) are task set-up, in
:mod:`agentrl.envs.osworld.tasks.chrome_setup`.

**Tabs, over DevTools.** OSWorld starts ``google-chrome --remote-debugging-port=1337`` and forwards the VM's port
9222 to it with ``socat``; its host-side getters then drive Chrome over the DevTools protocol with Playwright.
Here Chromium itself listens on 9222 (:func:`agentrl.envs.osworld.runtime.apps.resolve_command`), so the
``socat`` line has nothing to add (:func:`~agentrl.envs.osworld.runtime.cdp.is_cdp_forward`). That port lives in
the desktop sandbox's own network namespace: only processes inside the sandbox reach it. So every tab getter
sends a small standard-library DevTools client (:mod:`agentrl.envs.osworld.runtime.cdp`) to the desktop's
``/run_python``, which runs it in that sandbox, and reads its JSON answer (:func:`cdp_request`): nothing is
forwarded out and the sandbox keeps its "no network" boundary. Tab getters: ``active_url_from_accessTree``,
``active_tab_info``, ``active_tab_html_parse``, ``active_tab_url_parse``, ``url_dashPart``, ``open_tabs_info``;
metrics: ``is_expected_active_tab``, ``is_expected_url_pattern_match``, ``is_expected_tabs`` (URLs compare after
:func:`compare_urls`'s normalization).

**The profile.** OSWorld reads Google Chrome's profile files straight off the VM (``/file``), without talking to
Chrome; so does this module, from Debian's Chromium profile at :data:`PROFILE_ROOT`. The JSON files are parsed
here; the sqlite ones (``History``, ``Cookies``) are copied into ``client.cache_dir`` and opened with
:mod:`sqlite3`. A profile file that is missing makes its getter return ``None`` (the evaluator scores 0).
Getters: ``rule_relativeTime`` (no desktop: the task's rules with dates relative to today filled in),
``bookmarks``, ``default_search_engine``, ``profile_name``, ``data_delete_automacally``, ``new_startup_page``,
``enable_do_not_track``, ``enable_enhanced_safety_browsing``, ``chrome_font_size``, ``enabled_experiments``,
``cookie_data``, ``history``, ``find_unpacked_extension_path``, ``find_installed_extension_name``,
``shortcuts_on_desktop``.

Not ported, as they need the internet: ``page_info``, ``pdf_from_url``, ``info_from_website``,
``gotoRecreationPage_and_get_html_content`` and the metric ``is_added_to_steam_cart`` (whose getter is
``page_info``).

>>> is_expected_active_tab({"url": "https://www.example.com/"}, {"type": "url", "url": "https://example.com"})
1.0
>>> apply_time_format("{DoW}, {Month} {Day0D}, {Year}", datetime.date(2024, 3, 4))
'Mon, Mar 04, 2024'
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import re
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse, urlunparse

from agentrl.core.errors import AgentRLError
from agentrl.envs.osworld.runtime import cdp

__all__ = [
    "PROFILE_GETTERS",
    "PROFILE_METRICS",
    "TAB_GETTERS",
    "TAB_METRICS",
    "ChromeError",
    "GETTERS",
    "METRICS",
    "PROFILE_DIR",
    "PROFILE_ROOT",
    "address_bar_text",
    "apply_time_format",
    "cdp_request",
    "check_enabled_experiments",
    "check_font_size",
    "check_history_deleted",
    "compare_urls",
    "is_cookie_deleted",
    "is_expected_active_tab",
    "is_expected_bookmarks",
    "is_expected_installed_extensions",
    "is_expected_tabs",
    "is_expected_url_pattern_match",
    "is_extension_installed",
    "is_shortcut_on_desktop",
    "relative_time_rules",
    "resolve_relative_day",
]

class ChromeError(AgentRLError, RuntimeError):
    """The desktop's Chromium could not be reached over DevTools, or refused a request."""


def cdp_request(client: Any, request: Mapping[str, Any]) -> Any:
    """Run one :func:`agentrl.envs.osworld.runtime.cdp.main` request in the desktop's sandbox; its value.

    ``client`` is a :class:`~agentrl.envs.osworld.client.DesktopClient` (its ``run_python``).

    Raises:
        ChromeError: DevTools did not answer (no Chromium running) or the request failed.
    """
    source = Path(cdp.__file__).read_text(encoding="utf-8")
    code = f"{source}\n\nimport json as _json\nprint(_json.dumps(main(_json.loads({json.dumps(dict(request))!r}))))\n"
    answer = client.run_python(code)
    lines = [line for line in str(answer.get("output") or "").splitlines() if line.strip()]
    try:
        reply = json.loads(lines[-1]) if lines else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        detail = answer.get("error") or answer.get("message") or answer.get("output")
        raise ChromeError(f"the DevTools client on the desktop gave no answer: {str(detail)[-500:]}")
    if "error" in reply:
        raise ChromeError(f"Chromium DevTools ({request.get('op')}): {reply['error']}")
    return reply.get("value")


def address_bar_text(url: str) -> str:
    """``url`` as Chrome's address bar shows it: without ``https://``/``http://``, ``www.`` and a bare ``/`` path.

    >>> address_bar_text("https://scholar.google.com/")
    'scholar.google.com'
    >>> address_bar_text("file:///home/user/a.html")
    'file:///home/user/a.html'
    """
    text = re.sub(r"^https?://", "", url, flags=re.IGNORECASE)
    if text != url:
        text = re.sub(r"^www\.", "", text, flags=re.IGNORECASE)
        host, slash, rest = text.partition("/")
        if slash and rest == "":
            text = host
    return text


def _tabs(client: Any) -> list[dict[str, Any]]:
    return [dict(t) for t in cdp_request(client, {"op": "tabs"}) or []]


def _active_tab(tabs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The visible tab Chromium activated last (``/json/list`` is newest first), else the newest tab."""
    return next((t for t in tabs if t.get("visible")), tabs[0] if tabs else None)


def active_url_from_accessTree(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``goto_prefix`` + the active tab's address bar text; ``None`` when no tab is open."""
    tab = _active_tab(_tabs(client))
    if tab is None or not tab.get("url"):
        return None
    return f"{spec.get('goto_prefix', 'https://')}{address_bar_text(str(tab['url']))}"


def active_tab_info(client: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"title", "url", "content"}`` of the active URL loaded afresh in a new tab (closed after), as OSWorld."""
    url = active_url_from_accessTree(client, spec)
    if url is None:
        return None
    info = cdp_request(client, {"op": "visit", "url": url})
    return dict(info) if isinstance(info, dict) else None


_PARSE_JS = """(() => {
  const cfg = %s;
  const out = {};
  const norm = s => (s || "").replace(/\\s+/g, " ").trim();
  const texts = sel => Array.from(document.querySelectorAll(sel)).map(e => (e.textContent || "").trim());
  const first = xp => document.evaluate(xp, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
  const byText = label => {
    const needle = norm(label).toLowerCase();
    for (const el of document.body ? document.body.querySelectorAll("*") : []) {
      if (["SCRIPT", "STYLE", "NOSCRIPT"].includes(el.tagName)) continue;
      if (!norm(el.textContent).toLowerCase().includes(needle)) continue;
      if (Array.from(el.children).some(c => norm(c.textContent).toLowerCase().includes(needle))) continue;
      return el;
    }
    return null;
  };
  if (cfg.category === "class") {
    for (const [cls, obj] of Object.entries(cfg.class_multiObject || {})) {
      const found = texts("." + cls);
      for (const [rank, key] of Object.entries(obj)) {
        const i = parseInt(rank); if (found.length > i) out[key] = found[i];
      }
    }
    for (const [cls, key] of Object.entries(cfg.class_singleObject || {})) {
      const found = texts("." + cls); if (found.length) out[key] = found[0];
    }
  } else if (cfg.category === "label") {
    for (const [label, key] of Object.entries(cfg.labelObject || {})) {
      const el = byText(label); const text = el ? (el.textContent || "").trim() : ""; if (text) out[key] = text;
    }
  } else if (cfg.category === "xpath") {
    for (const [xp, key] of Object.entries(cfg.xpathObject || {})) {
      const node = first(xp); if (node) out[key] = (node.textContent || "").trim();
    }
  } else if (cfg.category === "input") {
    for (const [xp, key] of Object.entries(cfg.inputObject || {})) {
      const node = first(xp); if (node) out[key] = String(node.value === undefined ? "" : node.value).trim();
    }
  }
  return out;
})()"""


def active_tab_html_parse(client: Any, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """Texts of the active tab's elements picked by ``category``; ``{}`` when no open tab has the active URL.

    ``class``: ``class_singleObject`` ``{class: key}`` (first element) and ``class_multiObject``
    ``{class: {rank: key}}``; ``label``: ``labelObject`` ``{text: key}`` (the innermost element whose
    text contains it, case-insensitively, as Playwright's ``text=`` locator); ``xpath``: ``xpathObject``
    ``{xpath: key}`` (text); ``input``: ``inputObject`` ``{xpath: key}`` (the input's value).
    """
    tabs = _tabs(client)
    tab = _active_tab(tabs)
    if tab is None or not tab.get("url"):
        return None
    url = f"{spec.get('goto_prefix', 'https://')}{address_bar_text(str(tab['url']))}"
    target = next((t for t in tabs if unquote(str(t.get("url"))) == unquote(url)), None)
    if target is None:
        return {}
    keys = ("category", "class_singleObject", "class_multiObject", "labelObject", "xpathObject", "inputObject")
    config = {k: spec[k] for k in keys if k in spec}
    expression = _PARSE_JS.replace("%s", json.dumps(config), 1)
    value = cdp_request(client, {"op": "eval", "id": target["id"], "expression": expression})
    return dict(value) if isinstance(value, dict) else {}


def active_tab_url_parse(client: Any, spec: Mapping[str, Any]) -> dict[str, str] | None:
    """The ``parse_keys`` query parameters of the active URL (``""`` where absent); ``replace`` renames keys."""
    url = active_url_from_accessTree(client, spec)
    if url is None:
        return None
    query = parse_qs(urlparse(url).query)
    params = {key: query.get(key, [""])[0] for key in spec["parse_keys"]}
    for old, new in dict(spec.get("replace") or {}).items():
        params[new] = params.pop(old)
    return params


def url_dashPart(client: Any, spec: Mapping[str, Any]) -> Any:
    """The ``partIndex``-th ``/``-separated part of the active URL, as a string or ``{key: part}``."""
    url = active_url_from_accessTree(client, spec)
    if url is None:
        return None
    part = url.split("/")[int(spec["partIndex"])]
    if spec.get("needDeleteId"):
        part = part.split("?")[0]
    if spec.get("returnType") == "json":
        return {spec["key"]: part}
    return part


def open_tabs_info(client: Any, spec: Mapping[str, Any]) -> list[dict[str, str]]:
    """``[{"title", "url"}]`` of every open tab."""
    return [{"title": str(t.get("title", "")), "url": str(t.get("url", ""))} for t in _tabs(client)]


def _normalize_url(url: str) -> str:
    parsed = urlparse(url)
    return urlunparse(parsed._replace(scheme=(parsed.scheme or "http").lower(),
                                      netloc=parsed.netloc.lower().replace("www.", ""),
                                      path=parsed.path if parsed.path != "/" else ""))


def compare_urls(url1: str | None, url2: str | None) -> bool:
    """OSWorld's URL equality: scheme (default ``http``) and host lower-cased, ``www.`` and a bare ``/`` path dropped.

    >>> compare_urls("HTTPS://WWW.Example.com/", "https://example.com")
    True
    >>> compare_urls("https://example.com/a", "https://example.com/b")
    False
    """
    if url1 is None or url2 is None:
        return url1 == url2
    return _normalize_url(url1) == _normalize_url(url2)


def is_expected_active_tab(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """1 if the active tab's URL (a getter's dict or a plain URL) equals ``rule["url"]`` (``rule["type"] == "url"``).

    >>> is_expected_active_tab("https://example.com/a", {"type": "url", "url": "https://example.com/b"})
    0.0
    >>> is_expected_active_tab(None, {"type": "url", "url": "x"})
    0.0
    """
    if not active_tab_info or rule.get("type") != "url":
        return 0.0
    actual = active_tab_info.get("url") if isinstance(active_tab_info, Mapping) else active_tab_info
    return float(compare_urls(rule["url"], actual))


def is_expected_url_pattern_match(result: Any, rules: Mapping[str, Any]) -> float:
    """1 if every regex of ``rules["expected"]`` is found (``re.search``) in the URL (a dict's ``url``, or a string).

    >>> url = "https://scholar.google.com/citations?user=qR"
    >>> is_expected_url_pattern_match(url, {"expected": ["citations", "user=qR"]})
    1.0
    >>> is_expected_url_pattern_match({"url": "https://a.org/x"}, {"expected": ["y"]})
    0.0
    """
    if not result:
        return 0.0
    url = result["url"] if isinstance(result, Mapping) else result
    return float(all(re.search(pattern, str(url)) for pattern in rules["expected"]))


def is_expected_tabs(open_tabs: Any, rule: Mapping[str, Any]) -> float:
    """1 if the open tabs' URLs equal ``rule["urls"]`` in any order (OSWorld's ``are_lists_equal``).

    Same length, and each expected URL equals (:func:`compare_urls`) some open tab's URL; order is free.

    >>> tabs = [{"title": "B", "url": "https://b.org/"}, {"title": "A", "url": "https://www.a.org"}]
    >>> is_expected_tabs(tabs, {"type": "url", "urls": ["https://a.org", "https://b.org"]})
    1.0
    >>> is_expected_tabs(tabs[:1], {"type": "url", "urls": ["https://a.org", "https://b.org"]})
    0.0
    """
    if open_tabs is None or rule.get("type") != "url":
        return 0.0
    expected = list(rule["urls"])
    actual = [tab["url"] for tab in open_tabs]
    if len(expected) != len(actual):
        return 0.0
    return float(all(any(compare_urls(want, have) for have in actual) for want in expected))


PROFILE_ROOT = "~/.config/chromium"
"""Chromium's user-data directory on the desktop (Debian's ``chromium``; ``Local State`` lives here).

OSWorld's VM runs Google Chrome, whose user-data directory is ``~/.config/google-chrome``; the files in
it (``Local State``, ``Default/Preferences``...) have the same names and formats in Chromium."""


PROFILE_DIR = f"{PROFILE_ROOT}/Default"
"""The default profile: ``Preferences``, ``Bookmarks``, ``History``, ``Cookies``, ``Extensions/``."""


CHROME_EPOCH_OFFSET_S = 11_644_473_600
"""Seconds from 1601-01-01 (Chromium's timestamps: microseconds since then, UTC) to the Unix epoch."""


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


TAB_GETTERS: dict[str, Callable[..., Any]] = {
    "active_tab_html_parse": active_tab_html_parse,
    "active_tab_info": active_tab_info,
    "active_tab_url_parse": active_tab_url_parse,
    "active_url_from_accessTree": active_url_from_accessTree,
    "open_tabs_info": open_tabs_info,
    "url_dashPart": url_dashPart,
}
"""The getters that read the open tabs over DevTools (a running Chromium)."""

PROFILE_GETTERS: dict[str, Callable[..., Any]] = {
    "bookmarks": bookmarks,
    "chrome_font_size": chrome_font_size,
    "cookie_data": cookie_data,
    "data_delete_automacally": data_delete_automacally,
    "default_search_engine": default_search_engine,
    "enable_do_not_track": enable_do_not_track,
    "enable_enhanced_safety_browsing": enable_enhanced_safety_browsing,
    "enabled_experiments": enabled_experiments,
    "find_installed_extension_name": find_installed_extension_name,
    "find_unpacked_extension_path": find_unpacked_extension_path,
    "history": history,
    "new_startup_page": new_startup_page,
    "profile_name": profile_name,
    "rule_relativeTime": rule_relativeTime,
    "shortcuts_on_desktop": shortcuts_on_desktop,
}
"""The getters that read the profile's files (no Chromium needed; ``rule_relativeTime`` reads nothing)."""

TAB_METRICS: dict[str, Callable[..., float]] = {
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_tabs": is_expected_tabs,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
}
"""The metrics of what the tab getters return."""

PROFILE_METRICS: dict[str, Callable[..., float]] = {
    "check_enabled_experiments": check_enabled_experiments,
    "check_font_size": check_font_size,
    "check_history_deleted": check_history_deleted,
    "is_cookie_deleted": is_cookie_deleted,
    "is_expected_bookmarks": is_expected_bookmarks,
    "is_expected_installed_extensions": is_expected_installed_extensions,
    "is_extension_installed": is_extension_installed,
    "is_shortcut_on_desktop": is_shortcut_on_desktop,
}
"""The metrics of what the profile getters return."""

GETTERS: dict[str, Callable[..., Any]] = {**TAB_GETTERS, **PROFILE_GETTERS}
"""OSWorld getter type -> ``getter(client, spec)``."""

METRICS: dict[str, Callable[..., float]] = {**TAB_METRICS, **PROFILE_METRICS}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
