r"""An OSWorld task pool from real task files: load file by file, keep what this desktop can run, report the rest.

OSWorld's own ``evaluation_examples`` hold files this package cannot run: a few cannot be parsed
(an ``"evaluator"`` that is a string, a template), a few have no evaluator (``"func": ""``), many use
setup steps (``chrome_open_tabs``), getters (``active_url_from_accessTree``) or metrics
(``compare_pptx_files``) not served here, or apps the desktop lacks. :func:`read_tasks` loads a
folder, a task list or one file without stopping at the first bad file; :meth:`TaskPool.select`
moves every task that cannot run into :attr:`TaskPool.skipped`, each with its reasons
(:class:`Blocker`: which step, getter, metric or app, and where in the file).

>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> ok = {"id": "ok", "instruction": "x", "evaluator": {"func": "infeasible"}}
>>> _ = (folder / "ok.json").write_text(json.dumps(ok))
>>> _ = (folder / "bad.json").write_text('{"id": "bad", "instruction": "x", "evaluator": "evaluation_dir"}')
>>> pool = read_tasks(folder).select(installed=[])
>>> [t.id for t in pool.tasks], [(s.id, s.reasons[0].kind) for s in pool.skipped]
(['ok'], [('bad', 'format')])
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from agentrl.core.errors import TaskFormatError
from agentrl.envs.osworld.runtime.apps import (
    APP_PACKAGES,
    NOT_IN_DEBIAN,
    RELATED_APPS,
    install_hint,
    opener_for,
    resolve_command,
)
from agentrl.envs.osworld.runtime.cdp import is_cdp_forward
from agentrl.envs.osworld.tasks.format import FIXTURE_DIR, OSWorldTask, load_task, unsupported

__all__ = [
    "DEFAULT_SPLIT",
    "Blocker",
    "EmptyTaskPool",
    "SkippedTask",
    "TaskPool",
    "blockers",
    "pool_of",
    "read_tasks",
    "required_apps",
    "windows_program",
]

DEFAULT_SPLIT = "test_all"
"""The task list an ``evaluation_examples`` folder (``test_all.json`` beside ``examples/``) loads by default."""

KNOWN_APPS: frozenset[str] = frozenset((*APP_PACKAGES, *NOT_IN_DEBIAN))

_OPEN_APPS: dict[str, str] = {
    ".xlsx": "localc",
    ".xls": "localc",
    ".ods": "localc",
    ".docx": "lowriter",
    ".doc": "lowriter",
    ".odt": "lowriter",
    ".pptx": "loimpress",
    ".ppt": "loimpress",
    ".odp": "loimpress",
    ".mp4": "vlc",
    ".mp3": "vlc",
    ".mkv": "vlc",
    ".avi": "vlc",
}
"""File types that OSWorld's ``open`` step hands to an app the task then needs (the rest: :func:`opener_for`)."""


class EmptyTaskPool(TaskFormatError):
    """No task of the given files can run on this desktop; the message lists the top reasons."""


@dataclass(frozen=True)
class Blocker:
    """One reason a task is left out of the pool.

    ``kind``: ``"format"``, ``"evaluator"``, ``"setup step"``, ``"getter"``, ``"metric"``, ``"app"`` or
    ``"platform"`` (a task of OSWorld's Windows VM); ``name``: what (``"chrome_open_tabs"``, ``"gimp"``,
    ``"windows"``...); ``message``: the file or task, the field, the fix.
    """

    kind: str
    name: str
    message: str

    @property
    def label(self) -> str:
        """``kind name`` as the coverage table and the summaries count it, e.g. ``"setup step 'chrome_open_tabs'"``.

        >>> Blocker("app", "gimp", "...").label
        "app 'gimp' not installed"
        """
        if self.kind == "app":
            return f"app {self.name!r} not installed"
        if self.kind in ("format", "evaluator"):
            return f"{self.kind}: {self.name}"
        return f"{self.kind} {self.name!r}"


@dataclass(frozen=True)
class SkippedTask:
    """A task (or a file that could not be read as one) left out of the pool, and why."""

    id: str
    domain: str
    file: str
    reasons: tuple[Blocker, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: id, domain, file, reasons (each ``{kind, name, message}``)."""
        return {"id": self.id, "domain": self.domain, "file": self.file,
                "reasons": [dataclasses.asdict(r) for r in self.reasons]}


def _domain(task: OSWorldTask) -> str:
    return Path(task.file).parent.name if task.file else task.snapshot


@dataclass
class TaskPool:
    """Tasks that loaded (``tasks``, in order), those left out (``skipped``), and where they came from.

    ``domains`` maps each loaded task id to its domain: the task list's key, else the file's folder.
    ``split`` is the task list that was read (``None`` for a folder or a file).
    """

    tasks: list[OSWorldTask]
    skipped: list[SkippedTask] = field(default_factory=list)
    domains: dict[str, str] = field(default_factory=dict)
    source: str = ""
    split: str | None = None

    def domain(self, task: OSWorldTask) -> str:
        """The domain of a loaded task."""
        return self.domains.get(task.id) or _domain(task)

    def select(self, installed: Collection[str] | None) -> TaskPool:
        """A pool of the tasks this desktop can run; the others join ``skipped`` with their :func:`blockers`.

        ``installed``: the apps the desktop has (``None``: unknown, so apps are not checked).
        """
        kept: list[OSWorldTask] = []
        skipped = list(self.skipped)
        for task in self.tasks:
            found = blockers(task, installed)
            if found:
                skipped.append(SkippedTask(task.id, self.domain(task), task.file, tuple(found)))
            else:
                kept.append(task)
        return TaskPool(kept, skipped, {t.id: self.domain(t) for t in kept}, self.source, self.split)

    def top_reasons(self, n: int = 5) -> list[tuple[str, int]]:
        """The ``n`` most common reasons among the skipped, as ``(label, number of tasks)``."""
        counts: Counter[str] = Counter()
        for skipped in self.skipped:
            counts.update({reason.label for reason in skipped.reasons})
        return counts.most_common(n)

    def summary(self, n: int = 5) -> str:
        """One line: how many tasks were left out and the top reasons (empty when none was)."""
        if not self.skipped:
            return ""
        total = len(self.tasks) + len(self.skipped)
        reasons = ", ".join(f"{label} ({count})" for label, count in self.top_reasons(n))
        return f"{len(self.skipped)} of {total} OSWorld tasks left out of the pool; top reasons: {reasons}"

    def require_tasks(self) -> None:
        """Raise :class:`EmptyTaskPool` (the top reasons, the coverage command) when no task is left."""
        if self.tasks:
            return
        where = self.source or "the given tasks"
        if not self.skipped:
            raise EmptyTaskPool(f"{where}: no OSWorld task files found (*.json, or a task list such as test_all.json)")
        first = self.skipped[0].reasons[0].message if self.skipped[0].reasons else ""
        command = f"agentrl osworld coverage {shlex.quote(self.source) if self.source else 'PATH'}"
        raise EmptyTaskPool(
            f"{where}: none of its {len(self.skipped)} OSWorld tasks can run on this desktop. Top reasons (tasks): "
            f"{'; '.join(f'{label} ({count})' for label, count in self.top_reasons(5))}. First: {first}. "
            f"The table of every task and why: {command}"
        )


def _task_dict(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_task_list(data: Any) -> bool:
    return (
        isinstance(data, Mapping)
        and bool(data)
        and "evaluator" not in data
        and all(isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in data.values())
    )


def _format_blocker(path: Path, error: Exception) -> Blocker:
    text = str(error)
    prefix = f"{path}: "
    name = text[len(prefix):] if text.startswith(prefix) else text
    return Blocker("format", name.split(";")[0][:200], text if text.startswith(prefix) else f"{prefix}{text}")


class _Reader:
    """Reads task files one by one into a pool, recording each failure (and repeated ids) as skipped."""

    def __init__(self, source: str, split: str | None) -> None:
        self.pool = TaskPool([], source=source, split=split)
        self.seen: dict[str, tuple[str, str]] = {}

    def skip(self, task_id: str, domain: str, path: Path, blocker: Blocker) -> None:
        self.pool.skipped.append(SkippedTask(task_id, domain, str(path), (blocker,)))

    def add(self, path: Path, domain: str) -> None:
        try:
            task = load_task(path)
        except (TaskFormatError, OSError, ValueError) as error:
            self.skip(path.stem, domain, path, _format_blocker(path, error))
            return
        if task.id in self.seen and self.seen[task.id][1] != domain:
            # OSWorld reuses a few ids across domains (chrome's and thunderbird's 030eeff7-...): both are kept
            task = dataclasses.replace(task, id=f"{domain}/{task.id}")
        if task.id in self.seen:
            other = Path(self.seen[task.id][0])
            if path.stem == task.id and other.stem != task.id:  # the file named by the id wins (a "-win" copy)
                index = next(i for i, t in enumerate(self.pool.tasks) if t.id == task.id)
                self.pool.tasks[index] = task
                self.seen[task.id] = (str(path), domain)
                path, other = other, path
            message = f"{path}: task id {task.id!r} is already used by {other}"
            self.skip(task.id, domain, path, Blocker("format", "duplicate task id", message))
            return
        self.seen[task.id] = (str(path), domain)
        self.pool.tasks.append(task)
        self.pool.domains[task.id] = domain


def _read_list(list_file: Path, reader: _Reader) -> None:
    root = list_file.parent
    layout = "expected {domain: [task id, ...]} with the tasks in examples/<domain>/<id>.json beside it"
    if not list_file.is_file():
        found = sorted(p.stem for p in root.glob("*.json")) if root.is_dir() else []
        known = f"; task lists there: {', '.join(found)}" if found else ""
        raise TaskFormatError(f"{list_file}: no such task list{known}; {layout}")
    listing = _task_dict(list_file)
    if not _is_task_list(listing):
        raise TaskFormatError(f"{list_file}: not a task list; {layout}")
    listed: set[tuple[str, str]] = set()
    for domain, ids in listing.items():
        for task_id in ids:
            path = root / "examples" / domain / f"{task_id}.json"
            if (domain, task_id) in listed:
                message = f"{list_file}: task {task_id!r} is listed twice under {domain!r}"
                reader.skip(task_id, domain, path, Blocker("format", "listed twice", message))
                continue
            listed.add((domain, task_id))
            if not path.is_file():
                reader.skip(task_id, domain, path, Blocker("format", "no task file", f"{list_file}: task "
                                                           f"{domain}/{task_id} has no file {path}"))
                continue
            reader.add(path, domain)


def read_tasks(path: str | Path, *, split: str | None = None) -> TaskPool:
    """Load OSWorld task files one by one: a folder, a task list or one task file.

    - ``split`` given: ``path`` is an ``evaluation_examples`` folder; the list is ``path/<split>.json``
      (``{domain: [id, ...]}``), its tasks ``path/examples/<domain>/<id>.json``, in the list's order.
    - ``path`` a task list file (``test_all.json``, ``test_small.json``): the same, its folder the root.
    - ``path`` a folder holding ``test_all.json`` and ``examples/``: its ``test_all`` list.
    - ``path`` another folder: every ``*.json`` below it, in sorted order (``files/`` folders, the tasks'
      fixtures, are not read).
    - ``path`` a task file: that task.

    A file that cannot be read as a task, a listed task without a file and an id repeated in one
    domain are recorded in ``skipped``; an id that another domain already used (OSWorld has a few)
    becomes ``"<domain>/<id>"``. No bad file is fatal to the others. Nothing is checked against this desktop
    yet: see :meth:`TaskPool.select`.

    Raises:
        TaskFormatError: ``path`` does not exist, or a task list is missing or is not ``{domain: [id, ...]}``.
    """
    path = Path(path)
    if split is not None:
        reader = _Reader(str(path), split)
        _read_list(path / f"{split}.json", reader)
        return reader.pool
    if path.is_file():
        data = _task_dict(path)
        if _is_task_list(data):
            reader = _Reader(str(path), path.stem)
            _read_list(path, reader)
        else:
            reader = _Reader(str(path), None)
            reader.add(path, path.parent.name)
        return reader.pool
    if path.is_dir():
        if (path / f"{DEFAULT_SPLIT}.json").is_file() and (path / "examples").is_dir():
            return read_tasks(path, split=DEFAULT_SPLIT)
        reader = _Reader(str(path), None)
        for file in sorted(path.rglob("*.json")):
            if FIXTURE_DIR in file.relative_to(path).parts[:-1]:
                continue
            reader.add(file, file.parent.name)
        return reader.pool
    raise TaskFormatError(f"{path}: no such file or folder (give a folder of OSWorld task files, a task list "
                          "such as evaluation_examples/test_all.json, or one task file)")


def _argv(command: Any) -> list[str]:
    if isinstance(command, list):
        return [str(part) for part in command]
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    return []


def required_apps(task: OSWorldTask) -> list[tuple[str, str]]:
    """The desktop apps ``task`` needs, as ``(app, why)``, from its steps and its ``related_apps``.

    ``launch``/``execute``/``command`` steps that start a known app (after OSWorld's Ubuntu names are
    mapped: ``google-chrome`` is Chromium), ``open`` steps (an ``.xlsx`` needs LibreOffice Calc, a
    ``.docx`` Writer, a ``.pptx`` Impress, a video VLC) and ``related_apps`` (``gimp``, ``vs_code``...).

    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "related_apps": ["gimp", "os"],
    ...     "config": [{"type": "open", "parameters": {"path": "/home/user/a.docx"}}],
    ...     "evaluator": {"func": "infeasible"}})
    >>> required_apps(task)
    [('lowriter', 'config[0] open'), ('gimp', "related_apps 'gimp'")]
    """
    needed: list[tuple[str, str]] = []
    steps = [(f"config[{i}]", s) for i, s in enumerate(task.config)]
    steps += [(f"evaluator.postconfig[{i}]", s) for i, s in enumerate(task.evaluator.postconfig)]
    for where, step in steps:
        app = None
        if step.type in ("launch", "execute", "command"):
            if is_cdp_forward(_argv(step.parameters.get("command"))):
                continue  # socat's DevTools forward: Chromium listens on 9222 itself
            argv = resolve_command(_argv(step.parameters.get("command")))
            app = PurePath(argv[0]).name if argv else None
        elif step.type == "open" and isinstance(step.parameters.get("path"), str):
            target = str(step.parameters["path"])
            suffix = PurePath(target).suffix.lower()
            app = _OPEN_APPS.get(suffix) or PurePath(opener_for(target, is_dir=not suffix,
                                                                installed=lambda _: True)[0]).name
        if app in KNOWN_APPS:
            needed.append((app, f"{where} {step.type}"))
    for name in task.related_apps:
        app = RELATED_APPS.get(name.lower(), name if name in KNOWN_APPS else None)
        if app is not None:
            needed.append((app, f"related_apps {name!r}"))
    return needed


def _is_windows_path(value: str) -> bool:
    return len(value) > 2 and value[0].isalpha() and value[1:3] == ":\\"


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def windows_program(task: OSWorldTask) -> tuple[str, str] | None:
    r"""``(where, value)`` of the first Windows program or path (``C:\...``, ``*.exe``) the task names, else ``None``.

    OSWorld's ``evaluation_examples/examples/Windows`` holds tasks of its Windows VM (``C:\Program Files\...``,
    ``C:\Users\...``); this desktop is its Ubuntu one. Setup steps and the evaluator's getters are read.

    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"},
    ...     "config": [{"type": "launch", "parameters": {"command": ["C:\\Chrome\\chrome.exe", "--x"]}}]})
    >>> windows_program(task)
    ('config[0] launch', 'C:\\Chrome\\chrome.exe')
    """
    places: list[tuple[str, Any]] = [(f"config[{i}] {s.type}", s.parameters) for i, s in enumerate(task.config)]
    places += [(f"evaluator.postconfig[{i}] {s.type}", s.parameters) for i, s in enumerate(task.evaluator.postconfig)]
    places += [("evaluator.result", spec) for spec in task.evaluator.results if spec]
    places += [("evaluator.expected", spec) for spec in task.evaluator.expecteds if spec]
    for where, value in places:
        for text in _strings(value):
            if _is_windows_path(text):
                return where, text
    for step in (*task.config, *task.evaluator.postconfig):  # a program named without its folder: ncat.exe
        argv = _argv(step.parameters.get("command")) if step.type in ("launch", "execute", "command") else []
        if argv and argv[0].lower().endswith(".exe"):
            return f"{step.type} step", argv[0]
    return None


def blockers(task: OSWorldTask, installed: Collection[str] | None) -> list[Blocker]:
    """Why ``task`` cannot run on a desktop with the apps ``installed`` (``None``: apps unknown, not checked).

    A task of OSWorld's Windows VM (:func:`windows_program`), unsupported setup steps, getters and metrics
    (:func:`~agentrl.envs.osworld.tasks.format.unsupported`), a missing evaluator, then each missing app once, with
    how to install it.
    """
    found = [Blocker(u.kind, u.name, u.message) for u in unsupported(task)]
    windows = windows_program(task)
    if windows is not None:
        found.insert(0, Blocker("platform", "windows", f"task {task.id!r} {windows[0]} names {windows[1]!r}, a "
                                                       "Windows path: it is a task of OSWorld's Windows VM"))
    if installed is not None:
        have = set(installed)
        missing: dict[str, str] = {}
        for app, why in required_apps(task):
            if app not in have and app not in missing:
                missing[app] = why
        for app, why in missing.items():
            found.append(Blocker("app", app, f"task {task.id!r} {why}: app {app!r} is not installed on the desktop "
                                             f"({install_hint(app)})"))
    return found


def pool_of(tasks: Iterable[OSWorldTask], *, source: str = "") -> TaskPool:
    """A pool of task objects given directly (their domain: the file's folder, else ``snapshot``)."""
    listed: Sequence[OSWorldTask] = list(tasks)
    return TaskPool(list(listed), domains={t.id: _domain(t) for t in listed}, source=source)
