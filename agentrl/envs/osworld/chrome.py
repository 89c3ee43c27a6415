"""OSWorld's Chrome getters and its ``chrome_open_tabs`` setup step, on the desktop's Chromium.

OSWorld starts ``google-chrome --remote-debugging-port=1337`` and forwards the VM's port 9222 to it
with ``socat``; its host-side getters then drive Chrome over the DevTools protocol with Playwright.
Here Chromium itself listens on 9222 (:func:`agentrl.envs.osworld.apps.resolve_command`), so the
``socat`` line has nothing to add (:func:`is_cdp_forward`). That port lives in the desktop sandbox's
own network namespace: only processes inside the sandbox reach it. So every Chrome getter sends a
small standard-library DevTools client (:mod:`agentrl.envs.osworld.cdp`) to the desktop's
``/run_python``, which runs it in that sandbox, and reads its JSON answer: nothing is forwarded out
and the sandbox keeps its "no network" boundary.

Getters (``get(client, spec)``, the ``type`` of a ``result``/``expected`` object):

=============================  ==========================================================================
``active_url_from_accessTree`` ``goto_prefix`` (default ``"https://"``) + the active tab's address as the
                               address bar shows it (scheme ``http(s)://`` and ``www.`` elided), as OSWorld
                               reads it from the accessibility tree; here from DevTools (the visible tab)
``active_tab_info``            ``{"title", "url", "content"}`` of that URL loaded in a new tab (HTML)
``active_tab_html_parse``      texts picked by ``category`` (``class``, ``label``, ``xpath``, ``input``) from
                               the open tab whose URL is that URL, ``{}`` when none is
``active_tab_url_parse``       the ``parse_keys`` query parameters of that URL (``replace`` renames keys)
``url_dashPart``               the ``partIndex``-th ``/`` part of that URL (``needDeleteId``, ``returnType``)
``open_tabs_info``             ``[{"title", "url"}]`` of every tab
=============================  ==========================================================================

>>> address_bar_text("https://www.example.com/a?b=1")
'example.com/a?b=1'
>>> is_cdp_forward(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from agentrl.core.errors import AgentRLError
from agentrl.envs.osworld import cdp

__all__ = [
    "CDP_PORT",
    "CHROME_GETTERS",
    "ChromeError",
    "address_bar_text",
    "cdp_request",
    "is_cdp_forward",
    "open_tabs",
]

CDP_PORT = cdp.PORT
"""The DevTools port of the desktop's Chromium (inside the sandbox)."""

_FORWARD = re.compile(r"^tcp-listen:(\d+)(,.*)?$", re.IGNORECASE)


class ChromeError(AgentRLError, RuntimeError):
    """The desktop's Chromium could not be reached over DevTools, or refused a request."""


def is_cdp_forward(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is OSWorld's ``socat tcp-listen:9222,fork tcp:localhost:PORT`` DevTools forward.

    Chromium here listens on 9222 itself, so such a forward is already satisfied.

    >>> is_cdp_forward(["socat", "tcp-listen:8080,fork", "tcp:localhost:80"])
    False
    """
    if len(argv) != 3 or Path(argv[0]).name != "socat":
        return False
    match = _FORWARD.match(argv[1])
    return bool(match and int(match.group(1)) == CDP_PORT and argv[2].lower().startswith("tcp:"))


def cdp_request(client: Any, request: Mapping[str, Any]) -> Any:
    """Run one :func:`agentrl.envs.osworld.cdp.main` request in the desktop's sandbox; its value.

    ``client`` is a :class:`~agentrl.envs.osworld.server.DesktopClient` (its ``run_python``).

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


def open_tabs(client: Any, urls: Any) -> list[str]:
    """OSWorld's ``chrome_open_tabs`` setup step: each URL in a new tab, then the start tab is closed.

    A URL that fails to load (there is no internet here) leaves its tab on Chromium's error page, as
    OSWorld's step ignores a ``goto`` that fails. Returns the new tabs' DevTools ids.
    """
    if not isinstance(urls, list) or not all(isinstance(u, str) and u for u in urls):
        raise ChromeError("chrome_open_tabs: 'urls_to_open' must be a list of URL strings")
    return list(cdp_request(client, {"op": "open", "urls": urls}))


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


CHROME_GETTERS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "active_url_from_accessTree": active_url_from_accessTree,
    "active_tab_info": active_tab_info,
    "active_tab_html_parse": active_tab_html_parse,
    "active_tab_url_parse": active_tab_url_parse,
    "url_dashPart": url_dashPart,
    "open_tabs_info": open_tabs_info,
}
"""OSWorld getter type -> ``getter(client, spec)``."""
