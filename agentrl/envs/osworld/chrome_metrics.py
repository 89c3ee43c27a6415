"""OSWorld's metrics for its Chrome tasks (and ``check_direct_json_object``), pure and desktop-free.

``result`` is what a Chrome getter (:mod:`agentrl.envs.osworld.chrome`) returned; the second argument the
task's ``rules``. Semantics are OSWorld's: URLs compare after :func:`compare_urls`'s normalization.

>>> is_expected_active_tab({"url": "https://www.example.com/"}, {"type": "url", "url": "https://example.com"})
1.0
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse, urlunparse

__all__ = [
    "CHROME_METRICS",
    "check_direct_json_object",
    "compare_urls",
    "is_expected_active_tab",
    "is_expected_tabs",
    "is_expected_url_pattern_match",
]


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


CHROME_METRICS: dict[str, Callable[..., float]] = {
    "check_direct_json_object": check_direct_json_object,
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_tabs": is_expected_tabs,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
}
"""OSWorld metric name -> function, merged into :data:`agentrl.envs.osworld.metrics.METRICS`."""
