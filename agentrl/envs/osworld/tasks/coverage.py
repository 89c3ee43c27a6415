r"""Which OSWorld tasks this desktop can run, and why not the others: ``agentrl osworld coverage PATH``.

:func:`coverage` reads task files as the env does (:func:`~agentrl.envs.osworld.tasks.pool.read_tasks`),
checks each against what this package serves and the apps the desktop has, and returns one row per
task with its blockers, totals per domain and the blockers that keep out the most tasks. Given an
:class:`~agentrl.envs.osworld.tasks.assets.AssetStore`, it also says which of the files the tasks fetch
(``download`` steps, ``cloud_file`` getters) are cached: a task whose files are not is supported, but
its reset fails until ``agentrl osworld fetch-assets`` has fetched them.

>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "os"
>>> folder.mkdir()
>>> task = {"id": "t1", "instruction": "x", "evaluator": {"func": "infeasible"}}
>>> _ = (folder / "t1.json").write_text(json.dumps(task))
>>> report = coverage(folder, installed=[])
>>> report.totals(), report.rows[0].domain
((1, 1), 'os')
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.envs.osworld.tasks.assets import FETCH_COMMAND, AssetStore, asset_refs
from agentrl.envs.osworld.tasks.pool import Blocker, blockers, read_tasks

__all__ = ["Coverage", "CoverageRow", "coverage", "format_coverage"]

REASONS_WIDTH = 110


@dataclass(frozen=True)
class CoverageRow:
    """One task: its id, domain, file, and the blockers that keep it off this desktop (none: supported)."""

    id: str
    domain: str
    file: str
    blockers: tuple[Blocker, ...] = ()
    asset_urls: tuple[str, ...] = ()
    """The URLs the task fetches (``download`` steps, ``cloud_file`` getters), each once."""
    missing_assets: tuple[str, ...] = ()
    """Those not in the asset cache (empty when the cache was not checked)."""

    @property
    def supported(self) -> bool:
        """Whether the task can run here."""
        return not self.blockers

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"id": self.id, "domain": self.domain, "file": self.file, "supported": self.supported,
                "reasons": [{"kind": b.kind, "name": b.name, "label": b.label, "message": b.message}
                            for b in self.blockers],
                "assets": {"urls": len(self.asset_urls), "missing": list(self.missing_assets)}}


@dataclass
class Coverage:
    """The rows of a coverage run (grouped by domain, in the files' order) and what they were checked against."""

    source: str
    split: str | None
    installed: list[str] | None
    rows: list[CoverageRow] = field(default_factory=list)
    assets_dir: str | None = None
    """The asset cache the tasks' files were looked up in (``None``: not checked)."""

    def assets(self) -> tuple[int, int]:
        """``(cached, total)`` over the distinct URLs of every task (cached: 0 when the cache was not checked)."""
        urls = {url for row in self.rows for url in row.asset_urls}
        missing = {url for row in self.rows for url in row.missing_assets}
        cached = len(urls - missing) if self.assets_dir is not None else 0
        return cached, len(urls)

    def domains(self) -> dict[str, tuple[int, int]]:
        """``{domain: (supported, total)}``, in order of first appearance."""
        out: dict[str, tuple[int, int]] = {}
        for row in self.rows:
            ok, total = out.get(row.domain, (0, 0))
            out[row.domain] = (ok + row.supported, total + 1)
        return out

    def totals(self, exclude: Collection[str] = ()) -> tuple[int, int]:
        """``(supported, total)`` over every domain but those in ``exclude``."""
        rows = [row for row in self.rows if row.domain not in exclude]
        return sum(row.supported for row in rows), len(rows)

    def top_blockers(self, n: int = 10) -> list[tuple[str, int]]:
        """The ``n`` blockers that keep out the most tasks, as ``(label, number of tasks)``."""
        counts: Counter[str] = Counter()
        for row in self.rows:
            counts.update({blocker.label for blocker in row.blockers})
        return counts.most_common(n)

    def as_dict(self) -> dict[str, Any]:
        """The machine form (``--json``): source, split, installed apps, tasks, domains, total, top blockers."""
        ok, total = self.totals()
        return {
            "source": self.source,
            "split": self.split,
            "installed_apps": self.installed,
            "tasks": [row.as_dict() for row in self.rows],
            "domains": {d: {"supported": s, "total": t} for d, (s, t) in self.domains().items()},
            "total": {"supported": ok, "total": total},
            "top_blockers": [{"reason": label, "tasks": count} for label, count in self.top_blockers(20)],
            "assets": {"dir": self.assets_dir, "urls": self.assets()[1],
                       "cached": self.assets()[0] if self.assets_dir is not None else None},
        }


def coverage(
    path: str | Path,
    *,
    split: str | None = None,
    installed: Collection[str] | None = None,
    assets: AssetStore | None = None,
) -> Coverage:
    """Check every task of ``path`` (a folder, a task list or a file; ``split`` as the env takes it).

    ``installed``: the apps the desktop has (``None``: not checked). ``assets``: the asset cache to look
    the tasks' URLs up in (``None``: not checked).

    Raises:
        TaskFormatError: ``path`` does not exist, or its task list is not one (as :func:`read_tasks`).
    """
    pool = read_tasks(path, split=split)
    rows = [CoverageRow(s.id, s.domain, s.file, s.reasons) for s in pool.skipped]
    for task in pool.tasks:
        urls = tuple(dict.fromkeys(ref.url for ref in asset_refs(task)))
        missing = tuple(url for url in urls if assets is not None and assets.lookup(url) is None)
        rows.append(CoverageRow(task.id, pool.domain(task), task.file, tuple(blockers(task, installed)), urls, missing))
    order = {domain: i for i, domain in enumerate(dict.fromkeys(pool.domains.values()))}
    rows.sort(key=lambda row: order.get(row.domain, len(order)))  # stable: the files' order within a domain
    return Coverage(str(path), pool.split, sorted(installed) if installed is not None else None, rows,
                    str(assets.root) if assets is not None else None)


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_coverage(report: Coverage, *, tasks: bool = True) -> str:
    """The human form: the table of tasks (``tasks=True``), totals per domain and overall, the top blockers."""
    lines: list[str] = []
    apps = "not checked" if report.installed is None else (", ".join(report.installed) or "none")
    lines.append(f"OSWorld coverage of {report.source}" + (f" (task list {report.split})" if report.split else ""))
    lines.append(f"apps on this desktop: {apps}")
    if tasks and report.rows:
        id_w = max(len("task id"), *(len(row.id) for row in report.rows))
        dom_w = max(len("domain"), *(len(row.domain) for row in report.rows))
        lines.append("")
        lines.append(f"{'task id':<{id_w}}  {'domain':<{dom_w}}  supported  why not")
        for row in report.rows:
            why = "; ".join(dict.fromkeys(b.label for b in row.blockers))
            if row.supported and row.missing_assets:
                why = f"(assets not cached: {len(row.missing_assets)} of {len(row.asset_urls)})"
            lines.append(f"{row.id:<{id_w}}  {row.domain:<{dom_w}}  {'yes' if row.supported else 'no':<9}  "
                         f"{_cell(why, REASONS_WIDTH)}".rstrip())
    domains = report.domains()
    lines.append("")
    width = max([len("domain"), len("outside vs_code"), *(len(d) for d in domains)])
    lines.append(f"{'domain':<{width}}  supported  total  share")
    for domain, (ok, total) in domains.items():
        lines.append(f"{domain:<{width}}  {ok:>9}  {total:>5}  {ok / total:>5.0%}")
    ok, total = report.totals()
    lines.append(f"{'overall':<{width}}  {ok:>9}  {total:>5}  {(ok / total if total else 0.0):>5.0%}")
    if "vs_code" in domains:  # VS Code is not in Debian (Microsoft's own repository): the share without it
        vs_ok, vs_total = domains["vs_code"]
        rest_ok, rest_total = ok - vs_ok, total - vs_total
        share = rest_ok / rest_total if rest_total else 0.0
        lines.append(f"{'outside vs_code':<{width}}  {rest_ok:>9}  {rest_total:>5}  {share:>5.0%}")
    cached, urls = report.assets()
    if urls:
        lines.append("")
        if report.assets_dir is None:
            lines.append(f"assets: the tasks fetch {urls} files (download steps, cloud_file getters); "
                         "cache not checked")
        else:
            short = sum(1 for row in report.rows if row.supported and row.missing_assets)
            lines.append(f"assets: {cached} of the {urls} files the tasks fetch are cached in {report.assets_dir}; "
                         f"{short} supported tasks wait for theirs")
            if cached < urls:
                lines.append(f"  fetch them once (network needed): {FETCH_COMMAND} {shlex.quote(report.source)}")
    top = report.top_blockers(10)
    if top:
        lines.append("")
        lines.append("top blockers (tasks each keeps out; a task may have several):")
        for label, count in top:
            lines.append(f"  {count:>5}  {label}")
    return "\n".join(lines)
