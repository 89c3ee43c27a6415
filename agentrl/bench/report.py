r"""``report.html``: one self-contained page per benchmark directory.

The page lists the envs that were skipped (a system part they need is missing, with the command that
installs it) and the errors grouped by reason (infrastructure errors, which the next identical command
plays again, apart from agent errors); then a summary table, per-env bar charts with 95% error bars
(mean reward: t-interval; success rate: Wilson), reward histograms and a table of every episode;
clicking an episode shows its trajectory turn by turn. Everything is inline (SVG, CSS, JS): no
network, no external files, and a Content-Security-Policy that forbids loading any. Every piece of
text from the results is HTML-escaped, and the trajectories travel as JSON inside
``<script type="application/json">`` with ``<``, ``>`` and ``&`` written as ``\u003c``-style
escapes, so an agent that writes ``</script><script>alert(1)</script>`` shows up as text and nothing more.

>>> hostile = "</script><script>alert(1)</script>"
>>> page = render_report([{"key": "k", "env_id": "E-v0", "agent": {"agent": "oracle"}, "reward": 1.0,
...                        "success": True, "task_id": hostile, "trajectory": [{"role": "agent", "text": hostile}]}])
>>> hostile in page, page.count("<script")
(False, 2)
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentrl.bench.noise import measure_noise
from agentrl.bench.results import AGENT, INFRASTRUCTURE, ErrorGroup, LineProblem, error_class, group_errors, json_safe
from agentrl.bench.stats import GroupStats, agent_label, format_summary, summarize

__all__ = ["directory_notes", "format_error_lines", "format_skip_lines", "render_comparison", "render_report",
           "write_report"]

_E = html.escape


def _json_for_script(value: Any) -> str:
    """JSON that is inert inside ``<script>``: no ``<``, ``>``, ``&`` or line separators survive."""
    # NaN is not JSON (a hand-edited results file may hold one): JSON.parse would throw on it.
    text = json.dumps(json_safe(value), ensure_ascii=True, allow_nan=False, default=str, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value):
        return f"{value:.{digits}f}"
    return "-"


# -- SVG charts ----------------------------------------------------------------------------------
_CHART_W, _LABEL_W, _ROW_H, _PAD = 640, 230, 26, 24
_COLOURS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")


def _bar_chart(title: str, rows: Sequence[tuple[str, float, float, float]], lo: float, hi: float,
               percent: bool = False) -> str:
    """Horizontal bars with error bars: ``rows`` of (label, estimate, low, high), scale ``[lo, hi]``."""
    plot_w = _CHART_W - _LABEL_W - 64  # room on the right for the value label
    height = _PAD + len(rows) * _ROW_H + 26
    span = (hi - lo) or 1.0

    def x(value: float) -> float:
        return _LABEL_W + (min(max(value, lo), hi) - lo) / span * plot_w

    def fmt(value: float) -> str:
        return "-" if math.isnan(value) else (f"{value:.0%}" if percent else f"{value:.3f}")

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {_CHART_W} {height}" width="{_CHART_W}" '
             f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{_E(title)}</title>',
             f'<text x="4" y="15" class="chart-title">{_E(title)}</text>']
    for tick in range(6):
        value = lo + span * tick / 5
        tx = x(value)
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{_PAD - 4}" y2="{height - 22}" class="grid"/>'
                     f'<text x="{tx:.1f}" y="{height - 8}" class="tick" text-anchor="middle">{_E(fmt(value))}</text>')
    zero = x(0.0) if lo <= 0.0 <= hi else _LABEL_W
    for i, (label, estimate, low, high) in enumerate(rows):
        y = _PAD + i * _ROW_H
        colour = _COLOURS[i % len(_COLOURS)]
        short = label if len(label) <= 34 else label[:31] + "..."
        tip = f"{label}: {fmt(estimate)} [{fmt(low)}, {fmt(high)}]"
        parts.append(f'<g><title>{_E(tip)}</title>'
                     f'<text x="{_LABEL_W - 6}" y="{y + 15}" text-anchor="end" class="label">{_E(short)}</text>')
        if not math.isnan(estimate):
            x0, x1 = sorted((zero, x(estimate)))
            parts.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{max(x1 - x0, 1):.1f}" height="{_ROW_H - 8}" '
                         f'fill="{colour}" opacity="0.85"/>')
        if not (math.isnan(low) or math.isnan(high)):
            lx, hx, my = x(low), x(high), y + _ROW_H / 2 - 1
            parts.append(f'<line x1="{lx:.1f}" x2="{hx:.1f}" y1="{my:.1f}" y2="{my:.1f}" class="err"/>'
                         f'<line x1="{lx:.1f}" x2="{lx:.1f}" y1="{my - 6:.1f}" y2="{my + 6:.1f}" class="err"/>'
                         f'<line x1="{hx:.1f}" x2="{hx:.1f}" y1="{my - 6:.1f}" y2="{my + 6:.1f}" class="err"/>')
        parts.append(f'<text x="{_CHART_W - 4}" y="{y + 15}" text-anchor="end" class="value">'
                     f'{_E(fmt(estimate))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _histogram(title: str, values: Sequence[float], colour: str) -> str:
    """A small reward histogram (10 bins over ``[min(0, min), max(1, max)]``)."""
    width, height, bins = 300, 120, 10
    lo = min(0.0, *values) if values else 0.0
    hi = max(1.0, *values) if values else 1.0
    span = (hi - lo) or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - lo) / span * bins))] += 1
    top = max(counts) or 1
    bar_w = (width - 20) / bins
    parts = [f'<svg class="hist" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{_E(title)}</title>',
             f'<text x="4" y="13" class="chart-title small">{_E(title if len(title) <= 44 else title[:41] + "...")}'
             f'</text>']
    for i, count in enumerate(counts):
        h = (height - 44) * count / top
        x = 10 + i * bar_w
        left, right = lo + span * i / bins, lo + span * (i + 1) / bins
        parts.append(f'<rect x="{x:.1f}" y="{height - 22 - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                     f'fill="{colour}"><title>{_E(f"[{left:.2f}, {right:.2f}): {count} episode(s)")}</title></rect>')
    parts.append(f'<text x="10" y="{height - 6}" class="tick">{lo:g}</text>'
                 f'<text x="{width - 10}" y="{height - 6}" class="tick" text-anchor="end">{hi:g}</text></svg>')
    return "".join(parts)


def _env_section(env: str, groups: Sequence[GroupStats]) -> str:
    reward_rows = [(g.agent, g.reward.estimate, g.reward.low, g.reward.high) for g in groups]
    finite = [v for _, e, lo_, hi_ in reward_rows for v in (e, lo_, hi_) if not math.isnan(v)]
    lo = min(0.0, *finite) if finite else 0.0
    hi = max(1.0, *finite) if finite else 1.0
    success_rows = [(g.agent, g.success.estimate, g.success.low, g.success.high) for g in groups]
    hists = "".join(_histogram(f"{g.agent} ({g.episodes} episodes)", g.rewards, _COLOURS[i % len(_COLOURS)])
                    for i, g in enumerate(groups))
    return (f'<section class="env"><h3>{_E(env)}</h3><div class="charts">'
            f'{_bar_chart("Mean reward (95% t-interval)", reward_rows, lo, hi)}'
            f'{_bar_chart("Success rate (95% Wilson interval)", success_rows, 0.0, 1.0, percent=True)}'
            f'</div><h4>Reward distribution</h4><div class="hists">{hists}</div></section>')


# -- tables ----------------------------------------------------------------------------------------
def _summary_table(groups: Sequence[GroupStats]) -> str:
    head = ("env", "agent", "episodes", "mean reward", "95% CI", "success", "95% CI", "pass@k", "flip rate",
            "run-to-run sd", "mean turns", "mean tokens", "mean seconds", "errors")
    rows = []
    for g in groups:
        passk = ", ".join(f"pass@{k} {_num(v)}" for k, v in g.pass_at.items()) or "-"
        noise = measure_noise(g.records)
        flips = f"{noise.flipped}/{noise.tasks} ({noise.flip_rate:.0%})" if noise.tasks else "-"
        spread = f"{noise.run_std * 100:.1f}pp over {noise.runs} {noise.runs_are}" if noise.runs > 1 else "-"
        cells = (g.env, g.agent, str(g.episodes), _num(g.reward.estimate),
                 f"[{_num(g.reward.low)}, {_num(g.reward.high)}]", f"{g.success.estimate:.1%}",
                 f"[{g.success.low:.1%}, {g.success.high:.1%}]", passk, flips, spread, _num(g.mean_turns, 2),
                 _num(g.mean_tokens, 0), _num(g.mean_wall_s, 2), str(g.errors))
        rows.append("<tr>" + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
    return ('<table class="summary"><thead><tr>' + "".join(f"<th>{_E(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _episode_table(groups: Sequence[GroupStats]) -> tuple[str, list[Any]]:
    head = ("#", "env", "agent", "seed", "episode", "attempt", "task", "reward", "success", "turns", "tokens",
            "seconds", "error")
    rows, payload = [], []
    index = 0
    for g in groups:
        for r in g.records:
            error = r.get("error") or ""
            cells = (str(index), g.env, g.agent, str(r.get("seed", "")), str(r.get("episode", "")),
                     str(r.get("attempt", "")), str(r.get("task_id") or ""), _num(r.get("reward")),
                     "yes" if r.get("success") else "no", str(r.get("turns", "")), str(r.get("tokens", "")),
                     _num(r.get("wall_s"), 2), error if len(error) <= 120 else error[:117] + "...")
            status = "error" if error else ("ok" if r.get("success") else "fail")
            rows.append(f'<tr class="episode {status}" data-i="{index}" tabindex="0" aria-expanded="false">'
                        + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
            trajectory = r.get("trajectory") if isinstance(r.get("trajectory"), list) else []
            payload.append({"title": f"{g.env} | {g.agent} | seed {r.get('seed')} episode {r.get('episode')} "
                                     f"attempt {r.get('attempt')} | task {r.get('task_id')}",
                            "key": r.get("key"), "error": r.get("error"), "turns": trajectory,
                            "video": r.get("video") if isinstance(r.get("video"), str) else None})
            index += 1
    table = ('<table class="episodes" id="episodes"><thead><tr>' + "".join(f"<th>{_E(h)}</th>" for h in head)
             + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    return table, payload


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:16px}
h4{font-size:14px;margin:8px 0}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;
vertical-align:top}th{background:#f4f4f4}
table.episodes tr.episode{cursor:pointer}table.episodes tr.episode:hover{background:#eef4ff}
tr.error td{background:#fff0f0}tr.ok td:nth-child(9){color:#228833}tr.fail td:nth-child(9){color:#aa3333}
table.errors tr.infrastructure td:first-child{color:#aa6600}table.errors tr.agent td:first-child{color:#aa3333}
.charts,.hists{display:flex;flex-wrap:wrap;gap:12px}
.chart-title{font-size:13px;font-weight:600}.small{font-size:11px}.label,.value{font-size:12px}
.tick{font-size:10px;fill:#666}.grid{stroke:#eee}.err{stroke:#222;stroke-width:1.5}
.detail td{background:#fafafa}.turn{margin:6px 0;border-left:4px solid #ccc;padding:2px 8px}
.turn.agent{border-color:#4477aa}.turn.env{border-color:#228833}.turn.error{border-color:#ee6677}
.turn .meta{font-size:11px;color:#555;font-weight:600}
.turn pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px;max-height:480px;overflow:auto}
.warn{background:#fff6e0;border:1px solid #e8c070;padding:8px}.muted{color:#666;font-size:12px}
#filter{margin:8px 0;padding:4px;width:320px}
"""

_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("episodes-data").textContent);
  var table = document.getElementById("episodes");
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function detail(row) {
    var item = data[Number(row.getAttribute("data-i"))];
    var tr = el("tr", "detail");
    var td = el("td");
    td.colSpan = row.children.length;
    td.appendChild(el("div", "meta", item.title));
    if (item.error) { td.appendChild(el("div", "turn error", "error: " + item.error)); }
    if (item.video && /^videos\/[A-Za-z0-9._-]+\.gif$/.test(item.video)) {
      var img = el("img", "video"); img.src = item.video; img.alt = "episode video"; td.appendChild(img);
    }
    item.turns.forEach(function (turn, n) {
      var box = el("div", "turn " + String(turn.role || "env"));
      var meta = String(n) + ". " + String(turn.role || "?");
      if (typeof turn.reward === "number") { meta += "  reward " + turn.reward; }
      if (typeof turn.seconds === "number") { meta += "  " + turn.seconds.toFixed(3) + " s"; }
      if (turn.type) { meta += "  (not a str: " + String(turn.type) + ")"; }
      if (turn.info) { meta += "  " + JSON.stringify(turn.info); }
      box.appendChild(el("div", "meta", meta));
      box.appendChild(el("pre", "", String(turn.text === undefined ? "" : turn.text)));
      td.appendChild(box);
    });
    tr.appendChild(td);
    return tr;
  }
  function toggle(row) {
    var next = row.nextElementSibling;
    if (next && next.classList.contains("detail")) {
      next.hidden = !next.hidden;
    } else {
      row.parentNode.insertBefore(detail(row), row.nextSibling);
    }
    row.setAttribute("aria-expanded", String(!(row.nextElementSibling.hidden)));
  }
  table.addEventListener("click", function (event) {
    var row = event.target.closest("tr.episode");
    if (row) { toggle(row); }
  });
  table.addEventListener("keydown", function (event) {
    var row = event.target.closest("tr.episode");
    if (row && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); toggle(row); }
  });
  var filter = document.getElementById("filter");
  filter.addEventListener("input", function () {
    var needle = filter.value.toLowerCase();
    table.querySelectorAll("tr.episode").forEach(function (row) {
      var hide = needle !== "" && row.textContent.toLowerCase().indexOf(needle) < 0;
      row.hidden = hide;
      var next = row.nextElementSibling;
      if (hide && next && next.classList.contains("detail")) { next.hidden = true; }
    });
  });
})();
"""


# -- errors and skips, as text (the command's summary) and as HTML --------------------------------------
_WHAT_NEXT = {
    INFRASTRUCTURE: "re-run next time",
    AGENT: "re-run with --retry-errors",
}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def format_error_lines(records: Sequence[Mapping[str, Any]], max_groups: int = 8) -> list[str]:
    """The error part of a command's summary: counts by class, what re-runs them, then reason -> count.

    >>> records = [{"env_id": "E", "seed": 0, "episode": i, "key": f"k{i}", "error_kind": "env",
    ...             "error": f"could not make the env: Xvfb :{100 + i} did not answer"} for i in range(3)]
    >>> records.append({"env_id": "E", "seed": 0, "episode": 3, "key": "k3", "error": "RuntimeError: boom"})
    >>> for line in format_error_lines(records):
    ...     print(line)
    errors: 3 infrastructure errors (re-run next time) / 1 agent error (re-run with --retry-errors)
      3 x [infrastructure] could not make the env: Xvfb :100 did not answer
          e.g. E seed 0 episode 0 [key k0], E seed 0 episode 1 [key k1], E seed 0 episode 2 [key k2]
      1 x [agent] RuntimeError: boom
          e.g. E seed 0 episode 3 [key k3]
    """
    groups = group_errors(records)
    if not groups:
        return []
    infra = sum(g.count for g in groups if g.error_class == INFRASTRUCTURE)
    agent = sum(g.count for g in groups if g.error_class == AGENT)
    counts = []
    if infra:
        counts.append(f"{_plural(infra, 'infrastructure error')} ({_WHAT_NEXT[INFRASTRUCTURE]})")
    if agent:
        counts.append(f"{_plural(agent, 'agent error')} ({_WHAT_NEXT[AGENT]})")
    lines = ["errors: " + " / ".join(counts)]
    for group in groups[:max_groups]:
        message = group.message.strip().splitlines()[0] if group.message.strip() else group.reason
        lines.append(f"  {group.count} x [{group.error_class}] {message[:300]}")
        lines.append(f"      e.g. {', '.join(group.examples)}")
    if len(groups) > max_groups:
        lines.append(f"  ... and {len(groups) - max_groups} more reason(s): see the report")
    return lines


def format_skip_lines(skipped: Sequence[Mapping[str, Any]]) -> list[str]:
    """The skipped envs, for a command's summary: env ids by reason, and the install commands."""
    by_reason: dict[str, list[Mapping[str, Any]]] = {}
    for entry in skipped:
        by_reason.setdefault(str(entry.get("reason", "")), []).append(entry)
    lines = []
    for reason, members in by_reason.items():
        ids = [str(m.get("env_id")) for m in members]
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        fixes = list(dict.fromkeys(str(fix) for m in members for fix in m.get("fix") or []))
        lines.append(f"skipped {len(ids)} env(s) ({shown}): {reason}"
                     + (f"; install with: {' && '.join(fixes)}" if fixes else ""))
    return lines


def directory_notes(out: str | os.PathLike[str]) -> list[str]:
    """What a benchmark directory holds that needs a person: its skipped envs and its errors by reason.

    ``make demo`` prints it at the end, after the several commands that filled the directory.
    """
    from agentrl.bench.results import RESULTS_FILE, ResultStore, SkipLog

    records = list(ResultStore(Path(out) / RESULTS_FILE).load().records.values())
    notes = format_skip_lines(SkipLog(out).load()) + format_error_lines(records)
    return notes or [f"{len(records)} episode(s) in {out}: no env was skipped and none ended in an error"]


def _skipped_section(skipped: Sequence[Mapping[str, Any]]) -> str:
    if not skipped:
        return ""
    rows = []
    for entry in skipped:
        missing = entry.get("missing") if isinstance(entry.get("missing"), list) else []
        parts = ", ".join(str(m.get("part")) + (f" ({m.get('package')})" if m.get("package") != m.get("part") else "")
                          for m in missing if isinstance(m, Mapping))
        fixes = entry.get("fix") if isinstance(entry.get("fix"), list) else []
        cells = (str(entry.get("env_id")), agent_label(entry.get("agent")), parts or str(entry.get("reason", "")),
                 "; ".join(str(f) for f in fixes), str(entry.get("at", "")))
        rows.append("<tr>" + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
    head = ("env", "agent", "missing system parts", "install with", "skipped at")
    return (f'<div class="warn"><b>{len(skipped)} env(s) were skipped: a system part they need is missing.</b> '
            "Install it and run the same command again; these envs then run.</div>"
            '<table class="skipped"><thead><tr>' + "".join(f"<th>{_E(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _errors_section(groups: Sequence[ErrorGroup], records: Sequence[Mapping[str, Any]]) -> str:
    if not groups:
        return ""
    infra = sum(1 for r in records if error_class(r) == INFRASTRUCTURE)
    agent = sum(1 for r in records if error_class(r) == AGENT)
    rows = []
    for group in groups:
        cells = (group.error_class, str(group.count), group.message if len(group.message) <= 400
                 else group.message[:397] + "...", "; ".join(group.examples))
        rows.append(f'<tr class="{_E(group.error_class)}">' + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
    head = ("class", "count", "reason (first message)", "example episodes")
    return (f"<h2>Errors by reason</h2><p>{_plural(infra, 'infrastructure error')} "
            f"({_E(_WHAT_NEXT[INFRASTRUCTURE])}) / {_plural(agent, 'agent error')} ({_E(_WHAT_NEXT[AGENT])}).</p>"
            '<p class="muted">Infrastructure errors (the env could not be made, its reset or step raised, it ended '
            "with done_reason env_error, a sandbox was unavailable) run again the next time the same command runs; "
            "agent errors (the agent raised, timed out, or gave an action the env refused) only with "
            "--retry-errors.</p>"
            '<table class="errors"><thead><tr>' + "".join(f"<th>{_E(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _lock_cells(lock: Mapping[str, Any]) -> list[str]:
    data = ", ".join(f"{k.removeprefix('kwarg:')} {v}" for k, v in (lock.get("data") or {}).items()) or "-"
    judges = ", ".join(f"{k}: {v}" for k, v in (lock.get("judges") or {}).items()) or "-"
    libraries = ", ".join(f"{k} {v}" for k, v in (lock.get("libraries") or {}).items() if v) or "-"
    return [str(lock.get("code") or "-"), str(lock.get("core") or "-"), str(lock.get("package_data") or "-"), data,
            judges, str(lock.get("agent") or "-"), libraries]


def _lock_section(groups: Sequence[GroupStats]) -> str:
    """Each group's env lock (:mod:`agentrl.bench.lock`): what produced its scores; several when it moved."""
    head = ("env", "agent", "episodes", "code", "core", "package data", "data files", "judges", "agent settings",
            "libraries")
    rows = []
    for g in groups:
        locks: dict[str, tuple[Mapping[str, Any], int]] = {}
        for r in g.records:
            lock = r.get("lock") if isinstance(r.get("lock"), Mapping) else {}
            key = json.dumps(lock, sort_keys=True, default=str)
            locks[key] = (lock, locks.get(key, (lock, 0))[1] + 1)
        for lock, count in locks.values():
            cells = [g.env, g.agent, str(count), *(_lock_cells(lock) if lock else ["(no lock recorded)"] + [""] * 6)]
            rows.append("<tr>" + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
    return ('<h2>Env locks</h2><p class="muted">What produced each row: hashes of the env\'s code, of agentrl/core, '
            "of the package's data and of each data file an env kwarg names, the judges, the agent settings and the "
            "library versions. <code>agentrl bench --compare</code> refuses runs whose env locks differ; "
            "<code>--regrade</code> scores a run again on the env as it is now.</p>"
            '<table class="locks"><thead><tr>' + "".join(f"<th>{_E(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def render_comparison(result: Any) -> str:
    """``agentrl bench --compare A B --html PATH``: the comparison as a self-contained page.

    The printed table's rows, with the test each one used, McNemar's p and the drift compared despite.
    """
    from agentrl.bench.compare import _diff, format_comparison

    head = ("env", "agent A", "agent B", "test", "reward A", "reward B", "reward B-A [95% CI]", "success A",
            "success B", "success B-A [95% CI]", "McNemar p (only A : only B)")
    rows = []
    for p in result.pairs:
        mcnemar = p.paired.mcnemar_text if p.paired is not None else "-"
        cells = (p.env, p.a.agent, p.b.agent, p.test, _num(p.a.reward.estimate), _num(p.b.reward.estimate),
                 _diff(p.reward_diff, False), f"{p.a.success.estimate:.1%}", f"{p.b.success.estimate:.1%}",
                 _diff(p.success_diff, True, p.success_significant), mcnemar)
        rows.append("<tr>" + "".join(f"<td>{_E(c)}</td>" for c in cells) + "</tr>")
    drift = "".join(f"<li>{_E(line)}</li>" for line in result.drift)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>AgentRL comparison</title><style>{_CSS}</style></head>
<body><h1>{_E(result.run_b)} against {_E(result.run_a)}</h1>
<p class="muted">* significant at 95%. Paired rows: the episodes both runs played on the same task and attempt, the
difference per task with a bootstrap over tasks, McNemar's exact test for success; independent rows: Welch t and
Newcombe intervals.</p>
<table class="summary"><thead><tr>{"".join(f"<th>{_E(h)}</th>" for h in head)}</tr></thead>
<tbody>{"".join(rows)}</tbody></table>
{f'<div class="warn"><b>Compared despite drift (--allow-drift):</b><ul>{drift}</ul></div>' if drift else ""}
<details><summary class="muted">as plain text</summary><pre>{_E(format_comparison(result))}</pre></details>
</body></html>
"""


def render_report(records: Sequence[Mapping[str, Any]], problems: Sequence[LineProblem] = (),
                  title: str = "AgentRL benchmark report", skipped: Sequence[Mapping[str, Any]] = ()) -> str:
    """The report page for ``records`` (episode result dicts, as in ``results.jsonl``).

    Args:
        records: the episodes.
        problems: skipped lines of the results file, listed at the top of the page.
        title: the page title.
        skipped: envs skipped for a missing system part (``skipped.json`` entries), listed at the top.
    """
    groups = summarize(records)
    envs: dict[str, list[GroupStats]] = {}
    for g in groups:
        envs.setdefault(g.env, []).append(g)
    episode_table, payload = _episode_table(groups)
    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    warn = ""
    if problems:
        items = "".join(f"<li>{_E(str(p))}</li>" for p in problems)
        warn = (f'<div class="warn"><b>{len(problems)} line(s) of the results file were skipped:</b>'
                f"<ul>{items}</ul></div>")
    sections = "".join(_env_section(env, members) for env, members in envs.items()) or "<p>No episodes yet.</p>"
    csp = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
           "base-uri 'none'; form-action 'none'")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_E(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{_E(title)}</h1>
<p class="muted">{len(records)} episode(s) in {len(groups)} group(s); generated {_E(generated)}.
Intervals are 95%: Student t for mean reward, Wilson for success rate. With repeats (--k, --seeds) the
summary gives each row's flip rate (tasks whose verdict differs across attempts) and run-to-run spread.</p>
{warn}
{_skipped_section(skipped)}
{_errors_section(group_errors(records, max_examples=5), records)}
<h2>Summary</h2>
{_summary_table(groups)}
<details><summary class="muted">as plain text</summary><pre>{_E(format_summary(groups))}</pre></details>
<h2>Per env</h2>
{sections}
{_lock_section(groups)}
<h2>Episodes</h2>
<p class="muted">Click a row (or focus it and press Enter) to read the trajectory turn by turn.</p>
<input id="filter" type="search" placeholder="filter episodes (env, agent, task, error...)" aria-label="filter">
{episode_table}
<script type="application/json" id="episodes-data">{_json_for_script(payload)}</script>
<script>{_JS}</script>
</body></html>
"""


def write_report(records: Sequence[Mapping[str, Any]], path: str | os.PathLike[str],
                 problems: Sequence[LineProblem] = (), skipped: Sequence[Mapping[str, Any]] = ()) -> Path:
    """Write :func:`render_report` to ``path`` atomically (a reader never sees half a page)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(render_report(records, problems, skipped=skipped), encoding="utf-8")
    os.replace(tmp, target)
    return target
