r"""OSWorld task files: load, type and validate ``evaluation_examples/examples/<domain>/<id>.json``.

A task is OSWorld's JSON object: ``id``, ``snapshot``, ``instruction``, ``source``, ``config`` (setup
steps ``{"type": ..., "parameters": {...}}``), ``trajectory``, ``related_apps`` and ``evaluator``
(``func``, ``result``, ``expected``, ``options``, ``conj``, ``postconfig``; ``func``/``result``/
``expected``/``options`` are single values or parallel lists).

>>> task = OSWorldTask.from_dict({
...     "id": "t1", "instruction": "Say hi", "config": [],
...     "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo hi"},
...                   "expected": {"type": "rule", "rules": {"expected": "hi\n"}}}})
>>> task.evaluator.funcs, task.evaluator.conj
(('exact_match',), 'and')
>>> validate(task)
[]
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.core.choices import did_you_mean
from agentrl.core.errors import TaskFormatError
from agentrl.envs.osworld.evaluators import GETTERS, METRICS
from agentrl.envs.osworld.tasks.chrome_setup import SETUP_STEPS as CHROME_SETUP_STEPS

__all__ = [
    "SUPPORTED_GETTERS",
    "SUPPORTED_METRICS",
    "SUPPORTED_SETUP_TYPES",
    "EvaluatorSpec",
    "OSWorldTask",
    "SetupStep",
    "Unsupported",
    "load_task",
    "load_task_dir",
    "load_task_list",
    "unsupported",
    "validate",
]

SUPPORTED_SETUP_TYPES: tuple[str, ...] = (
    "launch",
    "open",
    "execute",
    "command",
    "sleep",
    "upload_file",
    "activate_window",
    "close_window",
    "download",
    "chrome_open_tabs",
    *CHROME_SETUP_STEPS,
)
"""Setup / postconfig step types the local desktop will run (``download`` from the offline asset cache,
:mod:`agentrl.envs.osworld.tasks.assets`)."""

SUPPORTED_GETTERS: tuple[str, ...] = (*GETTERS, "cloud_file", "rule")
"""Getter types for ``result`` / ``expected``: the keys of :data:`~agentrl.envs.osworld.evaluators.GETTERS`, and
``rule`` (resolved by ``evaluate`` itself) and ``cloud_file`` (from the offline asset cache)."""

SUPPORTED_METRICS: tuple[str, ...] = tuple(sorted(METRICS))
"""Metric (``func``) names: the keys of :data:`~agentrl.envs.osworld.evaluators.METRICS`."""

CONJUNCTIONS = ("and", "or")
FIXTURE_DIR = "files"
"""Folders of this name below a task directory hold fixtures, not tasks."""


def _where(source: str | None) -> str:
    return f"{source}: " if source else ""


@dataclass(frozen=True)
class SetupStep:
    """One ``config`` / ``postconfig`` step: ``{"type": ..., "parameters": {...}}``."""

    type: str
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "config[0]", source: str | None = None) -> SetupStep:
        """Read one step; ``where`` names the field in errors.

        >>> SetupStep.from_dict({"type": "sleep", "parameters": {"seconds": 1}})
        SetupStep(type='sleep', parameters={'seconds': 1})
        """
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{_where(source)}field {where!r} must be an object with 'type' and 'parameters'")
        step_type = data.get("type")
        if not isinstance(step_type, str) or not step_type:
            raise TaskFormatError(f"{_where(source)}field '{where}.type' must be a non-empty string")
        parameters = data.get("parameters", {})
        if parameters is None:
            parameters = {}
        if not isinstance(parameters, Mapping):
            raise TaskFormatError(f"{_where(source)}field '{where}.parameters' must be an object")
        return cls(type=step_type, parameters=dict(parameters))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


@dataclass(frozen=True)
class EvaluatorSpec:
    """The ``evaluator`` object, with single values normalized to parallel tuples.

    ``results[i]`` / ``expecteds[i]`` are getter specs (``None`` where absent); ``options[i]`` the
    metric's keyword options. ``multi`` records whether ``func`` was a list in the file. ``funcs`` is
    empty where the file's ``func`` is ``""``: OSWorld ships a few tasks without an evaluator, which
    :func:`validate` reports and the env leaves out.
    """

    funcs: tuple[str, ...]
    results: tuple[dict[str, Any] | None, ...]
    expecteds: tuple[dict[str, Any] | None, ...]
    options: tuple[dict[str, Any], ...]
    conj: str = "and"
    postconfig: tuple[SetupStep, ...] = ()
    multi: bool = False

    @property
    def infeasible(self) -> bool:
        """Whether this is OSWorld's infeasible task (``"func": "infeasible"``)."""
        return self.funcs == ("infeasible",)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> EvaluatorSpec:
        """Read the ``evaluator`` object; errors name the file and the field."""
        here = _where(source)
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{here}field 'evaluator' must be an object")
        if "func" not in data:
            raise TaskFormatError(f"{here}field 'evaluator.func' is missing")
        func = data["func"]
        if func == "" or func == []:  # OSWorld's files for tasks left without an evaluator; validate() names it
            return cls(funcs=(), results=(), expecteds=(), options=())
        multi = isinstance(func, list)
        funcs = _as_list(func)
        if not all(isinstance(f, str) and f for f in funcs):
            raise TaskFormatError(f"{here}field 'evaluator.func' must be a string or a non-empty list of strings")
        n = len(funcs)

        def parallel(name: str, default: Any) -> list[Any]:
            if name not in data or data[name] is None:
                return [default] * n
            value = data[name]
            if multi:
                if not isinstance(value, list):
                    raise TaskFormatError(f"{here}field 'evaluator.{name}' must be a list, as 'evaluator.func' is")
                if len(value) != n:
                    raise TaskFormatError(
                        f"{here}field 'evaluator.{name}' has {len(value)} entries; 'evaluator.func' has {n}"
                    )
                return list(value)
            return [value]

        is_infeasible = funcs == ["infeasible"]
        if "result" not in data and not is_infeasible:
            raise TaskFormatError(f"{here}field 'evaluator.result' is missing")
        results = parallel("result", None)
        expecteds = parallel("expected", None)
        options = [o if o is not None else {} for o in parallel("options", {})]
        for name, specs in (("result", results), ("expected", expecteds)):
            for i, spec in enumerate(specs):
                label = f"evaluator.{name}[{i}]" if multi else f"evaluator.{name}"
                if spec is None:
                    continue
                if not isinstance(spec, Mapping) or not isinstance(spec.get("type"), str):
                    raise TaskFormatError(f"{here}field '{label}' must be a getter object with a string 'type'")
                if spec["type"] == "rule" and "rules" not in spec:
                    raise TaskFormatError(f"{here}field '{label}.rules' is missing (a 'rule' getter needs it)")
        for i, option in enumerate(options):
            if not isinstance(option, Mapping):
                label = f"evaluator.options[{i}]" if multi else "evaluator.options"
                raise TaskFormatError(f"{here}field '{label}' must be an object")
        if any(spec is None for spec in results) and not is_infeasible:
            raise TaskFormatError(f"{here}field 'evaluator.result' has an empty entry")
        conj = data.get("conj", "and")
        if conj not in CONJUNCTIONS:
            raise TaskFormatError(f"{here}field 'evaluator.conj' must be 'and' or 'or', got {conj!r}")
        postconfig_raw = data.get("postconfig") or []
        if not isinstance(postconfig_raw, list):
            raise TaskFormatError(f"{here}field 'evaluator.postconfig' must be a list of steps")
        postconfig = tuple(
            SetupStep.from_dict(step, where=f"evaluator.postconfig[{i}]", source=source)
            for i, step in enumerate(postconfig_raw)
        )
        return cls(
            funcs=tuple(funcs),
            results=tuple(dict(r) if r is not None else None for r in results),
            expecteds=tuple(dict(e) if e is not None else None for e in expecteds),
            options=tuple(dict(o) for o in options),
            conj=conj,
            postconfig=postconfig,
            multi=multi,
        )


@dataclass(frozen=True)
class OSWorldTask:
    """One OSWorld task; ``raw`` keeps the JSON object as read."""

    id: str
    instruction: str
    config: tuple[SetupStep, ...]
    evaluator: EvaluatorSpec
    related_apps: tuple[str, ...] = ()
    source: str = ""
    snapshot: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    file: str = field(default="", compare=False, repr=False)
    """The JSON file the task was read from (``upload_file`` paths are relative to its folder)."""

    @property
    def from_osworld(self) -> bool:
        """Whether this is one of OSWorld's own task files: its ``snapshot`` names an OSWorld VM image.

        Their setup follows OSWorld's ``SetupController``: a failing command or a missing window is
        logged and setup goes on (:func:`~agentrl.envs.osworld.tasks.setup.run_setup` ``lenient``). Our own
        tasks (``snapshot`` empty or ``agentrl-*``) stay strict: a failing setup step raises.

        >>> task = {"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"}}
        >>> OSWorldTask.from_dict({**task, "snapshot": "os"}).from_osworld, OSWorldTask.from_dict(task).from_osworld
        (True, False)
        """
        return bool(self.snapshot) and not self.snapshot.startswith("agentrl")

    @property
    def oracle_actions(self) -> tuple[str, ...]:
        """Our extension: ``"oracle"``, the actions (pyautogui code, ``DONE``, ``FAIL``) that solve the task."""
        return tuple(str(a) for a in self.raw.get("oracle") or ())

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> OSWorldTask:
        """Build a task from OSWorld's JSON object; ``source`` (a file name) prefixes errors."""
        here = _where(source)
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{here}a task must be a JSON object, got {type(data).__name__}")
        for name in ("id", "instruction"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise TaskFormatError(f"{here}field {name!r} must be a non-empty string")
        if "evaluator" not in data:
            raise TaskFormatError(f"{here}field 'evaluator' is missing")
        config_raw = data.get("config") or []
        if not isinstance(config_raw, list):
            raise TaskFormatError(f"{here}field 'config' must be a list of setup steps")
        config = tuple(
            SetupStep.from_dict(step, where=f"config[{i}]", source=source) for i, step in enumerate(config_raw)
        )
        related = data.get("related_apps") or []
        if not isinstance(related, list) or not all(isinstance(a, str) for a in related):
            raise TaskFormatError(f"{here}field 'related_apps' must be a list of strings")
        if data.get("snapshot") is not None and not isinstance(data["snapshot"], str):
            raise TaskFormatError(f"{here}field 'snapshot' must be a string")
        source_raw = data.get("source") or ""
        if isinstance(source_raw, list) and all(isinstance(s, str) for s in source_raw):
            source_raw = " ".join(source_raw)  # OSWorld cites several pages in a list in a few files
        if not isinstance(source_raw, str):
            raise TaskFormatError(f"{here}field 'source' must be a string or a list of strings")
        return cls(
            id=data["id"],
            instruction=data["instruction"],
            config=config,
            evaluator=EvaluatorSpec.from_dict(data["evaluator"], source=source),
            related_apps=tuple(related),
            source=source_raw,
            snapshot=data.get("snapshot") or "",
            raw=dict(data),
        )


def load_task(path: str | Path) -> OSWorldTask:
    """Read one task JSON file; errors name the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise TaskFormatError(f"{path}: no such task file") from error
    except json.JSONDecodeError as error:
        raise TaskFormatError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from error
    return dataclasses.replace(OSWorldTask.from_dict(data, source=str(path)), file=str(path))


def load_task_dir(directory: str | Path) -> list[OSWorldTask]:
    """Every ``*.json`` task below ``directory``, recursively, in sorted path order.

    Folders named ``files`` hold the tasks' fixtures (``upload_file``'s ``local_path``), not tasks:
    they are skipped. Duplicate task ids are an error naming both files.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise TaskFormatError(f"{directory}: not a directory of OSWorld task files")
    tasks: list[OSWorldTask] = []
    seen: dict[str, str] = {}
    for path in sorted(directory.rglob("*.json")):
        if FIXTURE_DIR in path.relative_to(directory).parts[:-1]:
            continue
        task = load_task(path)
        if task.id in seen:
            raise TaskFormatError(f"{path}: task id {task.id!r} is already used by {seen[task.id]}")
        seen[task.id] = str(path)
        tasks.append(task)
    return tasks


def load_task_list(root: str | Path, split: str) -> list[OSWorldTask]:
    """The tasks of an OSWorld task list, in the list's order (domain by domain, as OSWorld's ``run.py`` runs them).

    OSWorld's layout: ``root/<split>.json`` (``test_all.json``, ``test_small.json``...) maps each domain to
    its task ids, ``{"chrome": ["bb5e4c0d-...", ...], "os": [...]}``; the tasks are
    ``root/examples/<domain>/<id>.json``.

    Raises:
        TaskFormatError: a missing list or task file (the message names the path and the layout), a list
            that is not ``{domain: [id, ...]}``, or an id listed twice.
    """
    root = Path(root)
    layout = "expected root/<split>.json ({domain: [task id, ...]}) and root/examples/<domain>/<id>.json"
    list_file = root / f"{split}.json"
    if not list_file.is_file():
        found = sorted(p.stem for p in root.glob("*.json")) if root.is_dir() else []
        known = f"; task lists there: {', '.join(found)}" if found else ""
        raise TaskFormatError(f"{list_file}: no such task list{known}; {layout}")
    try:
        listing = json.loads(list_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise TaskFormatError(f"{list_file}: not valid JSON (line {error.lineno}): {error.msg}") from error
    if not isinstance(listing, Mapping) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in listing.values()
    ):
        raise TaskFormatError(f"{list_file}: expected {{domain: [task id, ...]}}; {layout}")
    tasks: list[OSWorldTask] = []
    seen: dict[str, str] = {}
    for domain, ids in listing.items():
        for task_id in ids:
            if task_id in seen:
                raise TaskFormatError(f"{list_file}: task {task_id!r} is listed under {seen[task_id]!r} and {domain!r}")
            seen[task_id] = domain
            path = root / "examples" / domain / f"{task_id}.json"
            if not path.is_file():
                raise TaskFormatError(f"{list_file}: task {domain}/{task_id} has no file {path}; {layout}")
            tasks.append(load_task(path))
    if not tasks:
        raise TaskFormatError(f"{list_file}: the task list is empty")
    return tasks


@dataclass(frozen=True)
class Unsupported:
    """One reason a task cannot run here.

    ``kind``: ``"setup step"``, ``"getter"``, ``"metric"`` or ``"evaluator"``; ``name``: the step type,
    getter type or metric; ``where``: the field.
    """

    kind: str
    name: str
    where: str
    message: str


def _check(kind: str, name: str, choices: tuple[str, ...], where: str, task_id: str) -> Unsupported | None:
    if name in choices:
        return None
    noun = "setup step type" if kind == "setup step" else kind
    message = (f"task {task_id!r} {where}: unsupported {noun} {name!r}; supported: {', '.join(choices)}"
               f"{did_you_mean(name, choices)}")
    return Unsupported(kind, name, where, message)


def unsupported(task: OSWorldTask) -> list[Unsupported]:
    """Every setup step type, getter and metric of ``task`` this package cannot run, in file order.

    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": {"func": ""}})
    >>> [(u.kind, u.name) for u in unsupported(task)]
    [('evaluator', 'func is empty')]
    """
    found: list[Unsupported | None] = []
    for i, step in enumerate(task.config):
        found.append(_check("setup step", step.type, SUPPORTED_SETUP_TYPES, f"config[{i}]", task.id))
    ev = task.evaluator
    for i, step in enumerate(ev.postconfig):
        found.append(_check("setup step", step.type, SUPPORTED_SETUP_TYPES, f"evaluator.postconfig[{i}]", task.id))
    if not ev.funcs:
        found.append(Unsupported("evaluator", "func is empty", "evaluator.func",
                                 f"task {task.id!r} evaluator.func: empty, so the task has no evaluator and "
                                 "cannot be scored (OSWorld leaves a few tasks so)"))

    def label(name: str, i: int) -> str:
        return f"evaluator.{name}[{i}]" if ev.multi else f"evaluator.{name}"

    for i, func in enumerate(ev.funcs):
        found.append(_check("metric", func, SUPPORTED_METRICS, label("func", i), task.id))
    if not ev.infeasible:
        for name, specs in (("result", ev.results), ("expected", ev.expecteds)):
            for i, spec in enumerate(specs):
                if spec is not None:
                    found.append(_check("getter", spec["type"], SUPPORTED_GETTERS, label(name, i), task.id))
    return [u for u in found if u is not None]


def validate(task: OSWorldTask, strict: bool = True) -> list[str]:
    """Name every setup step type, getter and metric this package cannot run (:func:`unsupported`'s messages).

    ``strict=True`` raises :class:`TaskFormatError` listing the problems; ``strict=False`` returns
    them (an empty list when the task is fully supported).

    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "x",
    ...     "config": [{"type": "lauch", "parameters": {"command": ["gedit"]}}],
    ...     "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line"},
    ...                   "expected": {"type": "rule", "rules": {"expected": "x"}}}})
    >>> validate(task, strict=False)  # doctest: +ELLIPSIS
    ["task 't' config[0]: unsupported setup step type 'lauch'; supported: ...; did you mean 'launch'?"]
    """
    found = [u.message for u in unsupported(task)]
    if found and strict:
        raise TaskFormatError("; ".join(found) if len(found) == 1 else "\n".join(found))
    return found
