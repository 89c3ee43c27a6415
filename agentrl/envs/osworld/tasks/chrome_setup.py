"""The set-up steps that drive the desktop's Chromium: ``chrome_open_tabs``, ``update_browse_history``, and more.

The steps: ``chrome_open_tabs`` (:func:`open_tabs`), ``update_browse_history``, ``chrome_close_tabs``.

Steps are ``step(client, parameters)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`), run
by :func:`agentrl.envs.osworld.tasks.setup.run_setup`. They reach Chromium over DevTools inside the desktop's
sandbox (:func:`agentrl.envs.osworld.evaluators.chrome.cdp_request`), and write the profile's ``History``
database there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentrl.envs.osworld.evaluators.chrome import (
    CHROME_EPOCH_OFFSET_S,
    PROFILE_DIR,
    ChromeError,
    cdp_request,
    compare_urls,
)
from agentrl.envs.osworld.runtime import cdp

__all__ = [
    "SETUP_STEPS",
    "open_tabs",
]

def open_tabs(client: Any, urls: Any) -> list[str]:
    """OSWorld's ``chrome_open_tabs`` setup step: each URL in a new tab, then the start tab is closed.

    A URL that fails to load (there is no internet here) leaves its tab on Chromium's error page, as
    OSWorld's step ignores a ``goto`` that fails. Returns the new tabs' DevTools ids.
    """
    if not isinstance(urls, list) or not all(isinstance(u, str) and u for u in urls):
        raise ChromeError("chrome_open_tabs: 'urls_to_open' must be a list of URL strings")
    return list(cdp_request(client, {"op": "open", "urls": urls}))


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
        "epoch_offset_s": CHROME_EPOCH_OFFSET_S,
        "transition": _LINK_CHAIN,
    }
    answer = client.run_python(f"REQUEST = {json.dumps(json.dumps(request))}\n{_ADD_HISTORY}")
    reply = _last_json_line(answer)
    if not isinstance(reply, dict) or "added" not in reply:
        detail = reply.get("error") if isinstance(reply, dict) else answer.get("error") or answer.get("output")
        hint = " (close Chromium first: it holds History while it runs)" if "locked" in str(detail) else ""
        raise ChromeError(f"update_browse_history: could not write {PROFILE_DIR}/History: {str(detail)[-500:]}{hint}")


def _close_tab_ids(client: Any, ids: list[str]) -> None:
    """Close the tabs ``ids`` with :func:`~.runtime.cdp.close_tab`, run inside the desktop's sandbox."""
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


SETUP_STEPS: dict[str, Callable[..., None]] = {
    "chrome_close_tabs": chrome_close_tabs,
    "update_browse_history": update_browse_history,
}
"""OSWorld setup step type -> ``step(client, parameters)``."""
