"""OSWorld's Chromium-profile getters, metrics and setup steps (:mod:`agentrl.envs.osworld.evaluators.chrome`).

Getters run against a fake desktop client that serves a tmp HOME holding profile files in Chromium's real
formats (``Preferences``/``Local State`` JSON shaped as Chromium 156 writes them, ``Bookmarks`` JSON, sqlite
``History``/``Cookies`` with Chromium's own schemas). The evaluator objects are copied in shape from
OSWorld's evaluation_examples (chrome, multi_apps, vs_code).
"""

from __future__ import annotations

import ast
import datetime
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrl.envs.osworld.evaluators import METRICS
from agentrl.envs.osworld.evaluators import chrome as cp
from agentrl.envs.osworld.evaluators.chrome import ChromeError
from agentrl.envs.osworld.tasks import chrome_setup
from agentrl.envs.osworld.tasks.evaluate import evaluate
from agentrl.envs.osworld.tasks.format import OSWorldTask, unsupported


class FakeDesktop:
    """A DesktopClient stand-in: ``~`` and ``/home/user`` are ``home``; run_python runs python3 with HOME=home."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home = home
        self.cache_dir = cache
        self.python_codes: list[str] = []

    def _local(self, path: str) -> Path:
        if path.startswith("~/"):
            return self.home / path[2:]
        if path.startswith("/home/user/"):
            return self.home / path[len("/home/user/") :]
        return Path(path)

    def read_file(self, path: str) -> bytes | None:
        local = self._local(path)
        return local.read_bytes() if local.is_file() else None

    def list_directory(self, path: str) -> dict[str, Any] | None:
        local = self._local(path)
        if not local.is_dir():
            return None
        children = [{"name": p.name, "type": "directory" if p.is_dir() else "file"} for p in sorted(local.iterdir())]
        return {"name": local.name, "type": "directory", "children": children}

    def run_python(self, code: str) -> dict[str, Any]:
        self.python_codes.append(code)
        env = {**os.environ, "HOME": str(self.home)}
        done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, env=env, timeout=60)
        return {"output": done.stdout, "error": done.stderr, "return_code": done.returncode}


@pytest.fixture
def desk(tmp_path: Path) -> FakeDesktop:
    (tmp_path / "home").mkdir()
    (tmp_path / "cache").mkdir()
    return FakeDesktop(tmp_path / "home", tmp_path / "cache")


def profile(desk: FakeDesktop) -> Path:
    path = desk.home / ".config" / "chromium" / "Default"
    path.mkdir(parents=True, exist_ok=True)
    return path


PDF_VIEWER = {
    "account_extension_type": 0,
    "active_permissions": {"api": ["contentSettings", "tabs"], "explicit_host": ["chrome://resources/*"]},
    "creation_flags": 1,
    "from_webstore": False,
    "location": 5,
    "manifest": {"manifest_version": 2, "name": "Chromium PDF Viewer", "version": "1"},
    "path": "/usr/lib/chromium/resources/pdf",
    "was_installed_by_default": False,
}


def fresh_preferences() -> dict[str, Any]:
    """The shape of a Preferences Chromium 156 writes on first start (trimmed)."""
    return {
        "accessibility": {"captions": {"headless_caption_enabled": False}},
        "browser": {"has_seen_welcome_page": False},
        "extensions": {
            "alerts": {"initialized": True},
            "last_chrome_version": "156.0.8078.114",
            "settings": {"mhjfbmdgcfjbbpaeojofohoefgiehjai": PDF_VIEWER},
        },
        "intl": {"selected_languages": "en-US,en"},
        "profile": {
            "avatar_index": 26,
            "content_settings": {"exceptions": {}},
            "created_by_version": "156.0.8078.114",
            "default_content_setting_values": {"has_migrated_local_network_access": True},
            "exit_type": "Normal",
            "name": "Your Chromium",
        },
        "safebrowsing": {"event_timestamps": {}, "metrics_last_log_time": "13440659617"},
        "sessions": {"event_log": [{"crashed": False, "time": "13440659617508213", "type": 0}]},
    }


def write_prefs(desk: FakeDesktop, prefs: dict[str, Any]) -> None:
    (profile(desk) / "Preferences").write_text(json.dumps(prefs, separators=(",", ":")))


# -- rule_relativeTime ------------------------------------------------------------------------------------------------

# (relativeTime, expected templates, today, filled) for every relative time of the nine real chrome tasks
RELATIVE_CASES = [
    ({"from": "tomorrow"}, {"time": "{DoW}, {Month} {DayD}, {Year}"}, (2024, 12, 31), {"time": "Wed, Jan 1, 2025"}),
    (
        {"from": "5th next month"},
        {"time": "{DoW}, {Month} {DayD}, {Year}"},
        (2024, 12, 9),
        {"time": "Sun, Jan 5, 2025"},
    ),
    ({"from": "10th next month"}, {"time": "{Year}-{Month0D}-{DayD}"}, (2024, 2, 29), {"time": "2024-03-10"}),
    ({"from": "this month"}, {"time": "{month}-weather"}, (2024, 9, 15), {"time": "september-weather"}),
    ({"from": "next Monday"}, {"time": "{Year}-{Month0D}-{Day0D}"}, (2024, 3, 11), {"time": "2024-03-18"}),
    (
        {"from": "first monday four months later"},
        {"time": "{MonthFull} {Day0D}, 10:15 am"},
        (2024, 10, 20),
        {"time": "February 03, 10:15 am"},
    ),
    (
        {"from": "next Monday", "to": "next Friday"},
        {"from": "{DoW}, {DayD} {Month} {Year}, 10:00", "to": "{DoW}, {DayD} {Month} {Year}, 10:00"},
        (2024, 3, 6),
        {"from": "Mon, 11 Mar 2024, 10:00", "to": "Fri, 15 Mar 2024, 10:00"},
    ),
    (
        {"from": "10th next month", "to": "11th next month"},
        {"from": "{DoW}, {Month} {Day0D}, 12:00 PM", "to": "{DoW}, {Month} {Day0D}, 12:00 PM"},
        (2024, 4, 30),
        {"from": "Fri, May 10, 12:00 PM", "to": "Sat, May 11, 12:00 PM"},
    ),
    (
        {"from": "this Saturday", "to": "this Sunday"},
        {"from": "{DoW}, {Month} {Day0D}", "to": "{DoW}, {Month} {Day0D}"},
        (2024, 3, 6),
        {"from": "Sat, Mar 09", "to": "Sun, Mar 10"},
    ),
]


@pytest.mark.parametrize(("relative", "templates", "today", "filled"), RELATIVE_CASES)
def test_relative_time_rules_fill_the_real_templates(
    relative: dict[str, str], templates: dict[str, str], today: tuple[int, int, int], filled: dict[str, str]
) -> None:
    rules = {"relativeTime": relative, "expected": {"start": "SEA", **templates}}
    out = cp.relative_time_rules(rules, datetime.date(*today))
    assert out["expected"] == {"start": "SEA", **filled}
    assert rules["expected"]["start"] == "SEA" and "{" in json.dumps(rules["expected"])  # the task is left as it was


def test_next_friday_follows_osworld_by_weekday() -> None:
    friday = datetime.date(2024, 3, 8)
    assert cp.resolve_relative_day("next Friday", friday, from_name="next Monday") == datetime.date(2024, 3, 15)
    assert cp.resolve_relative_day("next Friday", datetime.date(2024, 3, 6)) == datetime.date(2024, 3, 8)
    assert cp.resolve_relative_day("next Monday", datetime.date(2024, 3, 10)) == datetime.date(2024, 3, 11)


def test_first_monday_four_months_later_every_month() -> None:
    for month in range(1, 13):
        day = cp.resolve_relative_day("first monday four months later", datetime.date(2023, month, 28))
        assert day.weekday() == 0 and day.day <= 7
        assert (day.year - 2023) * 12 + day.month == month + 4


def test_unknown_relative_time_raises() -> None:
    with pytest.raises(ValueError, match="unknown relative time"):
        cp.resolve_relative_day("yesterday", datetime.date(2024, 1, 1))


def test_rule_relative_time_getter_scores_today_through_evaluate(desk: FakeDesktop) -> None:
    tomorrow = datetime.date.today() + datetime.timedelta(days=1)
    evaluator = {
        "func": "check_direct_json_object",
        "result": {"type": "active_tab_url_parse", "goto_prefix": "https://www.", "parse_keys": ["departing"]},
        "expected": {
            "type": "rule_relativeTime",
            "rules": {
                "relativeTime": {"from": "tomorrow"},
                "expected": {"fromStation": "BOM", "time": "{Year}-{Month0D}-{Day0D}"},
            },
        },
    }
    task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": evaluator})

    def get(answer: dict[str, Any]) -> Any:
        def getter(spec: dict[str, Any]) -> Any:
            if spec["type"] == "rule_relativeTime":
                return cp.GETTERS["rule_relativeTime"](desk, spec)
            return answer

        return getter

    good = {"fromStation": "BOM", "time": tomorrow.strftime("%Y-%m-%d")}
    assert evaluate(task, last_action="DONE", get=get(good))[0] == 1.0
    stale = {"fromStation": "BOM", "time": datetime.date.today().strftime("%Y-%m-%d")}
    assert evaluate(task, last_action="DONE", get=get(stale))[0] == 0.0


# -- Preferences / Local State getters --------------------------------------------------------------------------------


def run_getter(desk: FakeDesktop, name: str, **spec: Any) -> Any:
    return cp.GETTERS[name](desk, {"type": name, **spec})


def test_preference_getters_on_a_fresh_profile(desk: FakeDesktop) -> None:
    write_prefs(desk, fresh_preferences())
    assert run_getter(desk, "default_search_engine") == "Google"
    assert run_getter(desk, "profile_name") == "Your Chromium"
    assert run_getter(desk, "enable_do_not_track") == "false"
    assert run_getter(desk, "enable_enhanced_safety_browsing") == "false"
    assert run_getter(desk, "new_startup_page") == "true"  # no "session" key: a fresh start
    assert run_getter(desk, "data_delete_automacally") == "false"  # Chromium's own has_migrated_* flag only
    assert run_getter(desk, "chrome_font_size") == {"default_fixed_font_size": 13, "default_font_size": 16}


def test_preference_getters_after_the_user_changed_settings(desk: FakeDesktop) -> None:
    prefs = fresh_preferences()
    prefs["default_search_provider_data"] = {
        "template_url_data": {
            "short_name": "Bing",
            "keyword": "bing.com",
            "url": "https://www.bing.com/search?q={searchTerms}",
        }
    }
    prefs["profile"]["name"] = "Thomas"
    prefs["profile"]["default_content_setting_values"]["cookies"] = 4  # delete site data on close
    prefs["enable_do_not_track"] = True
    prefs["safebrowsing"]["enhanced"] = True
    prefs["session"] = {"restore_on_startup": 5, "startup_urls": ["http://funbrain.com/"]}
    prefs["webkit"] = {"webprefs": {"default_font_size": 24, "default_fixed_font_size": 20}}
    write_prefs(desk, prefs)
    assert run_getter(desk, "default_search_engine") == "Bing"
    assert run_getter(desk, "profile_name") == "Thomas"
    assert run_getter(desk, "data_delete_automacally") == "true"
    assert run_getter(desk, "enable_do_not_track") == "true"
    assert run_getter(desk, "enable_enhanced_safety_browsing") == "true"
    assert run_getter(desk, "new_startup_page") == "true"
    assert run_getter(desk, "chrome_font_size")["default_font_size"] == 24

    prefs["session"] = {"restore_on_startup": 4, "startup_urls": ["http://funbrain.com/"]}  # the task's start state
    write_prefs(desk, prefs)
    assert run_getter(desk, "new_startup_page") == "false"


def test_profile_getters_without_a_profile_return_none(desk: FakeDesktop) -> None:
    for name in cp.PROFILE_GETTERS:
        if name not in ("rule_relativeTime", "shortcuts_on_desktop"):
            assert run_getter(desk, name, dest="x") is None, name
    assert run_getter(desk, "shortcuts_on_desktop") is None  # no ~/Desktop
    (profile(desk) / "Preferences").write_text("{not json")
    assert run_getter(desk, "profile_name") is None


def test_check_font_size_on_the_getter(desk: FakeDesktop) -> None:
    rule = {"type": "range", "min": 16, "max": 99999}
    write_prefs(desk, fresh_preferences())
    assert METRICS["check_font_size"](run_getter(desk, "chrome_font_size"), rule) == 0.0  # 16 is not > 16
    write_prefs(desk, {**fresh_preferences(), "webkit": {"webprefs": {"default_font_size": 24}}})
    assert METRICS["check_font_size"](run_getter(desk, "chrome_font_size"), rule) == 1.0
    assert cp.check_font_size({"default_font_size": 20}, {"type": "value", "value": 20}) == 1.0
    assert cp.check_font_size(None, rule) == 0.0
    with pytest.raises(ValueError):
        cp.check_font_size({"default_font_size": 20}, {"type": "px"})


def test_enabled_experiments_from_local_state(desk: FakeDesktop) -> None:
    rule = {"type": "names", "names": ["chrome-refresh-2023", "chrome-webui-refresh-2023"]}
    root = desk.home / ".config" / "chromium"
    root.mkdir(parents=True)
    state = {"browser": {"shortcut_migration_version": "156.0.8078.114"}, "profile": {"info_cache": {}}}
    (root / "Local State").write_text(json.dumps(state))
    assert run_getter(desk, "enabled_experiments") == []
    assert cp.check_enabled_experiments([], rule) == 0.0
    state["browser"]["enabled_labs_experiments"] = ["chrome-refresh-2023@2", "chrome-webui-refresh-2023@2"]
    (root / "Local State").write_text(json.dumps(state))
    flags = run_getter(desk, "enabled_experiments")
    assert cp.check_enabled_experiments(flags, rule) == 1.0
    assert cp.check_enabled_experiments(list(reversed(flags)), rule) == 0.0  # OSWorld compares lists, in order


# -- Bookmarks --------------------------------------------------------------------------------------------------------


def bookmark_file(bar: list[dict[str, Any]]) -> dict[str, Any]:
    def folder(node_id: str, name: str, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "children": children,
            "date_added": "13440659617000000",
            "date_last_used": "0",
            "date_modified": "0",
            "guid": f"0bc5d13f-2cba-5d74-951f-3f233fe6c90{node_id}",
            "id": node_id,
            "name": name,
            "type": "folder",
        }

    return {
        "checksum": "4d6b0f2cdb2c6a2f2f0e8f35b4b3c1aa",
        "roots": {
            "bookmark_bar": folder("1", "Bookmarks bar", bar),
            "other": folder("2", "Other bookmarks", []),
            "synced": folder("3", "Mobile bookmarks", []),
        },
        "version": 1,
    }


def link(node_id: str, name: str, url: str) -> dict[str, Any]:
    return {
        "date_added": "13440659617000000",
        "date_last_used": "0",
        "guid": f"guid-{node_id}",
        "id": node_id,
        "meta_info": {"power_bookmark_meta": ""},
        "name": name,
        "type": "url",
        "url": url,
    }


def test_bookmarks_getter_and_metric(desk: FakeDesktop) -> None:
    bar = [
        {"children": [], "date_added": "0", "guid": "g", "id": "5", "name": "Favorites", "type": "folder"},
        link("6", "The Illustrated Transformer", "https://jalammar.github.io/illustrated-transformer/"),
    ]
    (profile(desk) / "Bookmarks").write_text(json.dumps(bookmark_file(bar), indent=3))
    roots = run_getter(desk, "bookmarks")
    assert set(roots) == {"bookmark_bar", "other", "synced"}
    is_expected = METRICS["is_expected_bookmarks"]
    assert is_expected(roots, {"type": "bookmark_bar_folders_names", "names": ["Favorites"]}) == 1.0
    assert is_expected(roots, {"type": "bookmark_bar_folders_names", "names": ["Favourites"]}) == 0.0
    urls = {"type": "bookmark_bar_websites_urls", "urls": ["https://jalammar.github.io/illustrated-transformer/"]}
    assert is_expected(roots, urls) == 1.0
    urls2 = {**urls, "urls": [*urls["urls"], "https://blog.eleuther.ai/rotary-embeddings/"]}
    assert is_expected(roots, urls2) == 0.0
    assert is_expected(None, urls) == 0.0
    with pytest.raises(ValueError):
        is_expected(roots, {"type": "other_bookmarks"})


LIKED_AUTHORS_RULE = {
    "type": "liked_authors_websites_urls",
    "names": ["Liked Authors"],
    "urls": [
        ["https://jimfan.me/", "https://research.nvidia.com/person/linxi-jim-fan"],
        ["https://research.nvidia.com/person/de-an-huang", "https://ai.stanford.edu/~dahuang/"],
        ["https://yukezhu.me/", "https://www.cs.utexas.edu/people/faculty-researchers/yuke-zhu"],
        ["http://tensorlab.cms.caltech.edu/users/anima/", "https://www.eas.caltech.edu/people/anima"],
    ],
}


def test_liked_authors_folder_takes_one_url_per_author() -> None:
    picks = [
        "https://jimfan.me/",
        "https://ai.stanford.edu/~dahuang/",
        "https://yukezhu.me/",
        "https://www.eas.caltech.edu/people/anima",
    ]
    folder = {
        "type": "folder",
        "name": "Liked Authors",
        "children": [link(str(i), "a", u) for i, u in enumerate(picks)],
    }
    roots = bookmark_file([folder])["roots"]
    assert cp.is_expected_bookmarks(roots, LIKED_AUTHORS_RULE) == 1.0
    folder["children"] = folder["children"][:3]  # one author missing
    assert cp.is_expected_bookmarks(roots, LIKED_AUTHORS_RULE) == 0.0
    folder["children"].append(link("9", "b", "https://research.nvidia.com/person/linxi-jim-fan"))  # two of one
    assert cp.is_expected_bookmarks(roots, LIKED_AUTHORS_RULE) == 0.0
    assert cp.is_expected_bookmarks(bookmark_file([])["roots"], LIKED_AUTHORS_RULE) == 0.0


# -- Cookies and History (sqlite) -------------------------------------------------------------------------------------

COOKIES_SCHEMA = """
CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
CREATE TABLE cookies(creation_utc INTEGER NOT NULL,host_key TEXT NOT NULL,top_frame_site_key TEXT NOT NULL,
  name TEXT NOT NULL,value TEXT NOT NULL,encrypted_value BLOB NOT NULL,path TEXT NOT NULL,expires_utc INTEGER NOT NULL,
  is_secure INTEGER NOT NULL,is_httponly INTEGER NOT NULL,last_access_utc INTEGER NOT NULL,has_expires INTEGER NOT NULL,
  is_persistent INTEGER NOT NULL,priority INTEGER NOT NULL,samesite INTEGER NOT NULL,source_scheme INTEGER NOT NULL,
  source_port INTEGER NOT NULL,last_update_utc INTEGER NOT NULL,source_type INTEGER NOT NULL,
  has_cross_site_ancestor INTEGER NOT NULL);
CREATE UNIQUE INDEX cookies_unique_index ON cookies(host_key, top_frame_site_key, has_cross_site_ancestor, name, path,
  source_scheme, source_port);
"""


def write_cookies(path: Path, hosts: list[str]) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(COOKIES_SCHEMA)
    conn.execute("INSERT INTO meta VALUES ('version', '24')")
    for i, host in enumerate(hosts):
        conn.execute(
            "INSERT INTO cookies VALUES (?,?,'',?,'v',x'',"
            "'/',0,1,0,13440659617000000,1,1,1,-1,2,443,13440659617000000,0,0)",
            (13440659617000000 + i, host, f"c{i}"),
        )
    conn.commit()
    conn.close()


def test_cookie_data_and_is_cookie_deleted(desk: FakeDesktop) -> None:
    rule = {"type": "domains", "domains": [".amazon.com"]}
    write_cookies(profile(desk) / "Cookies", [".amazon.com", "www.amazon.com", ".example.org"])
    rows = run_getter(desk, "cookie_data", dest="Cookies")
    assert [row[1] for row in rows] == [".amazon.com", "www.amazon.com", ".example.org"]
    assert (desk.cache_dir / "Cookies").is_file()
    assert METRICS["is_cookie_deleted"](rows, rule) == 0.0
    (profile(desk) / "Cookies").unlink()
    write_cookies(profile(desk) / "Cookies", ["www.amazon.com", ".example.org"])  # OSWorld: only the exact domain
    assert METRICS["is_cookie_deleted"](run_getter(desk, "cookie_data", dest="Cookies"), rule) == 1.0
    assert cp.is_cookie_deleted(None, rule) == 0.0


def test_cookie_data_falls_back_to_network_cookies(desk: FakeDesktop) -> None:
    (profile(desk) / "Network").mkdir()
    write_cookies(profile(desk) / "Network" / "Cookies", [".amazon.com"])
    assert [row[1] for row in run_getter(desk, "cookie_data", dest="Cookies")] == [".amazon.com"]
    (profile(desk) / "Network" / "Cookies").write_bytes(b"not a database at all, just bytes" * 10)
    assert run_getter(desk, "cookie_data", dest="Cookies") is None


BROWSE_HISTORY = [  # the shape of chrome/44ee5668's update_browse_history
    {
        "url": "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "title": "Rick Astley - Never Gonna Give You Up",
        "visit_time_from_now_in_seconds": 3600,
    },
    {"url": "https://www.nytimes.com/", "title": "The New York Times", "visit_time_from_now_in_seconds": 300},
    {
        "url": "https://www.youtube.com/watch?v=9bZkp7q19f0",
        "title": "PSY - GANGNAM STYLE(강남스타일) M/V",
        "visit_time_from_now_in_seconds": 1631,
    },
    {"url": "https://www.bbc.co.uk/", "title": "BBC", "visit_time_from_now_in_seconds": 1500},
]


def test_update_browse_history_creates_chromium_history_and_history_reads_it(desk: FakeDesktop) -> None:
    rule = {"type": "keywords", "keywords": ["youtube"]}
    chrome_setup.SETUP_STEPS["update_browse_history"](desk, {"history": BROWSE_HISTORY})
    db = profile(desk) / "History"
    conn = sqlite3.connect(db)
    visits = conn.execute("SELECT url, visit_time, transition FROM visits ORDER BY id").fetchall()
    conn.close()
    assert len(visits) == 4 and all(t == 805306368 for _, _, t in visits)

    rows = run_getter(desk, "history", dest="history.sqlite")
    assert (desk.cache_dir / "history.sqlite").is_file()
    assert [r[0] for r in rows] == [h["url"] for h in BROWSE_HISTORY]
    assert rows[2][1] == "PSY - GANGNAM STYLE(강남스타일) M/V"
    now_us = (datetime.datetime.now(datetime.timezone.utc).timestamp() + 11_644_473_600) * 1e6
    assert abs(now_us - 3600e6 - rows[0][2]) < 120e6  # Chromium's clock: µs since 1601, an hour ago
    assert METRICS["check_history_deleted"](rows, rule) == 0.0

    conn = sqlite3.connect(db)  # the agent deletes YouTube's entries
    conn.execute("DELETE FROM urls WHERE url LIKE '%youtube%'")
    conn.commit()
    conn.close()
    assert METRICS["check_history_deleted"](run_getter(desk, "history", dest="history.sqlite"), rule) == 1.0

    chrome_setup.update_browse_history(desk, {"history": BROWSE_HISTORY[:1]})  # an existing History gains rows
    assert len(run_getter(desk, "history", dest="history.sqlite")) == 3
    with pytest.raises(ValueError):
        cp.check_history_deleted(rows, {"type": "domains"})


def test_update_browse_history_reports_a_locked_history(desk: FakeDesktop) -> None:
    chrome_setup.update_browse_history(desk, {"history": BROWSE_HISTORY[:1]})
    holder = sqlite3.connect(profile(desk) / "History")  # as a running Chromium holds it
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ChromeError, match="close Chromium first"):
            chrome_setup.update_browse_history(desk, {"history": BROWSE_HISTORY[:1]})
    finally:
        holder.rollback()
        holder.close()


def test_update_browse_history_rejects_bad_items(desk: FakeDesktop) -> None:
    with pytest.raises(ChromeError, match=r"history\[0\]"):
        chrome_setup.update_browse_history(desk, {"history": [{"url": "https://a.org"}]})
    with pytest.raises(ChromeError):
        chrome_setup.update_browse_history(desk, {"history": "https://a.org"})
    assert desk.python_codes == []


# -- extensions, desktop shortcuts ------------------------------------------------------------------------------------


def test_extension_getters(desk: FakeDesktop) -> None:
    prefs = fresh_preferences()
    write_prefs(desk, prefs)
    assert run_getter(desk, "find_unpacked_extension_path") == ["/usr/lib/chromium/resources/pdf"]
    assert (
        METRICS["is_in_list"](
            run_getter(desk, "find_unpacked_extension_path"), {"expected": "/home/user/Desktop/helloExtension"}
        )
        == 0.0
    )
    unpacked = {"location": 4, "path": "/home/user/Desktop/helloExtension", "creation_flags": 38}
    (desk.home / "Desktop" / "helloExtension").mkdir(parents=True)
    (desk.home / "Desktop" / "helloExtension" / "manifest.json").write_text(
        json.dumps({"manifest_version": 3, "name": "Hello Extensions", "version": "1.0"})
    )
    packed = {
        "location": 1,
        "path": "aapbdbdomjkkjkaonfhkkikfgjllcleb/2.0.16_0",
        "from_webstore": True,
        "manifest": {"name": "Google Translate", "version": "2.0.16"},
    }
    prefs["extensions"]["settings"].update(
        {"hkjbmlnggnfkbocmdldhgmpngbpfkbkc": unpacked, "aapbdbdomjkkjkaonfhkkikfgjllcleb": packed}
    )
    write_prefs(desk, prefs)
    paths = run_getter(desk, "find_unpacked_extension_path")
    assert METRICS["is_in_list"](paths, {"expected": "/home/user/Desktop/helloExtension"}) == 1.0
    names = run_getter(desk, "find_installed_extension_name")
    assert names == ["Chromium PDF Viewer", "Hello Extensions", "Google Translate"]  # manifest read from the folder
    expected = {"expected": ["Google Translate", "Hello Extensions"]}
    assert METRICS["is_expected_installed_extensions"](names, expected) == 1.0
    assert METRICS["is_expected_installed_extensions"](names, {"expected": ["Momentum", "Google Translate"]}) == 0.0
    assert cp.is_expected_installed_extensions(None, expected) == 0.0


def test_shortcuts_on_desktop(desk: FakeDesktop) -> None:
    rule = {"type": "name", "name": "Play Puzzle Game 2048"}
    desktop = desk.home / "Desktop"
    desktop.mkdir()
    (desktop / "notes.txt").write_text("Name=Play Puzzle Game 2048\n")
    assert run_getter(desk, "shortcuts_on_desktop") == {}
    assert METRICS["is_shortcut_on_desktop"]({}, rule) == 0.0
    entry = (
        "#!/usr/bin/env xdg-open\n[Desktop Entry]\nVersion=1.0\nTerminal=false\nType=Application\n"
        "Name=Play Puzzle Game 2048\nExec=/usr/lib/chromium/chromium --profile-directory=Default "
        "--app-id=mgbfnjkcnbnjpfjaibgbcbgakbmgfmdo\nIcon=chrome-mgbfnjkcnbnjpfjaibgbcbgakbmgfmdo-Default\n"
        "StartupWMClass=crx_mgbfnjkcnbnjpfjaibgbcbgakbmgfmdo\n"
    )
    (desktop / "chrome-mgbfnjkcnbnjpfjaibgbcbgakbmgfmdo-Default.desktop").write_text(entry)
    shortcuts = run_getter(desk, "shortcuts_on_desktop")
    assert list(shortcuts) == ["chrome-mgbfnjkcnbnjpfjaibgbcbgakbmgfmdo-Default.desktop"]
    assert METRICS["is_shortcut_on_desktop"](shortcuts, rule) == 1.0
    assert METRICS["is_shortcut_on_desktop"](shortcuts, {"type": "name", "name": "Play Puzzle Game"}) == 0.0
    with pytest.raises(ValueError):
        cp.is_shortcut_on_desktop(shortcuts, {"type": "url", "url": "x"})


def test_is_extension_installed_vs_code_shape() -> None:
    rules = {"type": "contain", "expected": "njpwerner.autodocstring"}
    assert METRICS["is_extension_installed"]("njpwerner.autodocstring\n", rules) == 1.0
    assert METRICS["is_extension_installed"]("ms-python.python\n", rules) == 0.0
    assert METRICS["is_extension_installed"](None, rules) == 0.0
    assert cp.is_extension_installed("a", {"type": "not_contain", "expected": "a"}) == 0.0
    with pytest.raises(ValueError):
        cp.is_extension_installed("a", {"type": "equal", "expected": "a"})


# -- chrome_close_tabs (DevTools stubbed: the request the step sends into the sandbox is answered here) ----------------


class TabsDesktop:
    def __init__(self, tabs: list[dict[str, Any]]) -> None:
        self.tabs = tabs
        self.closed: list[str] = []

    def run_python(self, code: str) -> dict[str, Any]:
        assert "def close_tab" in code  # the cdp client travels with the request
        close = re.search(r"for _id in _json\.loads\((.*)\):", code)
        if close:
            self.closed.extend(json.loads(ast.literal_eval(close.group(1))))
            return {"output": json.dumps({"closed": True}) + "\n"}
        last = code.strip().splitlines()[-1]
        request = json.loads(ast.literal_eval(last[len("print(_json.dumps(main(_json.loads(") : -len("))))")]))
        assert request["op"] == "tabs"
        return {"output": json.dumps({"value": self.tabs}) + "\n"}


def test_chrome_close_tabs_closes_the_first_match_of_each_url() -> None:
    tabs = [  # DevTools order: most recently active first
        {"id": "C", "url": "https://www.tripadvisor.com/", "title": "", "visible": True},
        {"id": "B", "url": "https://www.airbnb.com/", "title": "", "visible": False},
        {"id": "A", "url": "https://www.lonelyplanet.com/", "title": "", "visible": False},
        {"id": "T", "url": "https://www.tripadvisor.com/", "title": "", "visible": False},
    ]
    desk = TabsDesktop(tabs)
    chrome_setup.SETUP_STEPS["chrome_close_tabs"](desk, {"urls_to_close": ["https://www.tripadvisor.com"]})
    assert desk.closed == ["T"]  # the older of the two tripadvisor tabs, as Playwright's context.pages order
    desk = TabsDesktop(tabs)
    chrome_setup.chrome_close_tabs(
        desk, {"urls_to_close": ["https://tripadvisor.com", "https://tripadvisor.com", "https://x.org"]}
    )
    assert desk.closed == ["T", "C"]
    desk = TabsDesktop(tabs)
    chrome_setup.chrome_close_tabs(desk, {"urls_to_close": ["https://example.com"]})
    assert desk.closed == []
    with pytest.raises(ChromeError):
        chrome_setup.chrome_close_tabs(desk, {"urls_to_close": "https://www.tripadvisor.com"})


# -- every registered name in a real task's shape ---------------------------------------------------------------------

LAUNCH = [
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
]
RESTART = [
    {"type": "launch", "parameters": {"command": ["pkill", "chrome"]}},
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
]


def rule(rules: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rule", "rules": rules}


REAL_SHAPES: list[tuple[list[dict[str, Any]], dict[str, Any]]] = [
    (
        LAUNCH,
        {
            "func": "check_direct_json_object",
            "result": {
                "type": "active_tab_url_parse",
                "goto_prefix": "https://www.",
                "parse_keys": ["fromStation", "toStation", "departing"],
                "replace": {"departing": "time"},
            },
            "expected": {
                "type": "rule_relativeTime",
                "rules": {
                    "relativeTime": {"from": "next Monday"},
                    "expected": {"fromStation": "BOM", "toStation": "STO", "time": "{Year}-{Month0D}-{Day0D}"},
                },
            },
        },
    ),
    (
        LAUNCH,
        {
            "func": "is_expected_bookmarks",
            "result": {"type": "bookmarks"},
            "expected": rule({"type": "bookmark_bar_folders_names", "names": ["Favorites"]}),
        },
    ),
    (
        LAUNCH,
        {"func": "exact_match", "result": {"type": "default_search_engine"}, "expected": rule({"expected": "Bing"})},
    ),
    (
        LAUNCH,
        {
            "postconfig": RESTART,
            "func": "exact_match",
            "result": {"type": "profile_name"},
            "expected": rule({"expected": "Thomas"}),
        },
    ),
    (
        LAUNCH,
        {
            "postconfig": [{"type": "execute", "parameters": {"command": "pkill chrome", "shell": "true"}}],
            "func": "exact_match",
            "result": {"type": "data_delete_automacally"},
            "expected": rule({"expected": "true"}),
        },
    ),
    (LAUNCH, {"func": "exact_match", "result": {"type": "new_startup_page"}, "expected": rule({"expected": "true"})}),
    (
        LAUNCH,
        {"func": "exact_match", "result": {"type": "enable_do_not_track"}, "expected": rule({"expected": "true"})},
    ),
    (
        LAUNCH,
        {
            "func": "exact_match",
            "result": {"type": "enable_enhanced_safety_browsing"},
            "expected": rule({"expected": "true"}),
        },
    ),
    (
        LAUNCH,
        {
            "postconfig": RESTART,
            "func": "check_font_size",
            "result": {"type": "chrome_font_size"},
            "expected": rule({"type": "range", "min": 16, "max": 99999}),
        },
    ),
    (
        LAUNCH,
        {
            "postconfig": RESTART,
            "func": "check_enabled_experiments",
            "result": {"type": "enabled_experiments"},
            "expected": rule({"type": "names", "names": ["chrome-refresh-2023", "chrome-webui-refresh-2023"]}),
        },
    ),
    (
        [*LAUNCH, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://www.amazon.com"]}}],
        {
            "func": "is_cookie_deleted",
            "result": {"type": "cookie_data", "dest": "Cookies"},
            "expected": rule({"type": "domains", "domains": [".amazon.com"]}),
        },
    ),
    (
        [{"type": "update_browse_history", "parameters": {"history": BROWSE_HISTORY}}, *LAUNCH],
        {
            "postconfig": RESTART,
            "func": "check_history_deleted",
            "result": {"type": "history", "dest": "history.sqlite"},
            "expected": rule({"type": "keywords", "keywords": ["youtube"]}),
        },
    ),
    (
        [
            *LAUNCH,
            {
                "type": "chrome_open_tabs",
                "parameters": {"urls_to_open": ["https://www.lonelyplanet.com", "https://www.tripadvisor.com"]},
            },
            {"type": "chrome_close_tabs", "parameters": {"urls_to_close": ["https://www.tripadvisor.com"]}},
        ],
        {
            "func": "is_expected_tabs",
            "result": {"type": "open_tabs_info"},
            "expected": rule({"type": "url", "urls": ["https://www.lonelyplanet.com"]}),
        },
    ),
    (
        LAUNCH,
        {
            "func": "is_in_list",
            "result": {"type": "find_unpacked_extension_path"},
            "expected": rule({"expected": "/home/user/Desktop/helloExtension"}),
        },
    ),
    (
        LAUNCH,
        {
            "func": "is_expected_installed_extensions",
            "result": {"type": "find_installed_extension_name"},
            "expected": rule({"expected": ["Zoom Chrome Extension", "Momentum", "Google Translate"]}),
        },
    ),
    (
        LAUNCH,
        {
            "func": "is_shortcut_on_desktop",
            "result": {"type": "shortcuts_on_desktop"},
            "expected": rule({"type": "name", "name": "Play Puzzle Game 2048"}),
        },
    ),
    (
        [{"type": "launch", "parameters": {"command": ["code"]}}],
        {
            "func": "is_extension_installed",
            "result": {
                "type": "vm_command_line",
                "command": ["code", "--list-extensions", "|", "grep", "ms-python.python"],
            },
            "expected": rule({"type": "contain", "expected": "ms-python.python"}),
        },
    ),
]


def test_every_registered_name_is_used_by_a_real_task_shape_and_supported() -> None:
    used: set[str] = set()
    for i, (config, evaluator) in enumerate(REAL_SHAPES):
        task = OSWorldTask.from_dict({"id": f"shape{i}", "instruction": "x", "config": config, "evaluator": evaluator})
        assert unsupported(task) == [], (i, unsupported(task))
        used.update(step.type for step in task.config)
        used.update(task.evaluator.funcs)
        used.update(spec["type"] for spec in (*task.evaluator.results, *task.evaluator.expecteds) if spec)
    registered = set(cp.PROFILE_GETTERS) | set(cp.PROFILE_METRICS) | set(chrome_setup.SETUP_STEPS)
    assert registered <= used, registered - used


def test_metrics_give_none_zero() -> None:
    for name, metric in cp.PROFILE_METRICS.items():
        assert metric(None, {"type": "x", "expected": "x"}) == 0.0, name
