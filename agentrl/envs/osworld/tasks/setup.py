"""Run a task's setup steps (``config``) and evaluator ``postconfig`` against a desktop server.

OSWorld's ``SetupController`` turns each ``{"type": ..., "parameters": {...}}`` step into a call
to the VM server; this is the same for the step types of
:data:`~agentrl.envs.osworld.tasks.format.SUPPORTED_SETUP_TYPES`, over a
:class:`~agentrl.envs.osworld.client.DesktopClient`:

=================  ==================================================================
``launch``         ``{"command": [...] | "...", "shell": false}``: start an app, wait for its window
``open``           ``{"path": "..."}``: open a file or folder in its app
``execute``        ``{"command", "shell"}``: run a command to completion (``command`` is the same)
``sleep``          ``{"seconds": 0.5}``
``upload_file``    ``{"files": [{"local_path": "...", "path": "..."}]}``: ``local_path`` is relative
                   to the task file's folder (or absolute); ``path`` is on the desktop
``activate_window`` ``{"window_name", "strict", "by_class"}``
``close_window``   the same parameters
``download``       ``{"files": [{"url": "...", "path": "..."}]}``: each URL's file from the offline
                   asset cache (:mod:`~agentrl.envs.osworld.tasks.assets`, filled by ``agentrl osworld
                   fetch-assets``) is uploaded to ``path``, as OSWorld uploads its download
``chrome_open_tabs`` ``{"urls_to_open": [...]}``: each URL in a new Chromium tab, then the start tab
                   closes (over DevTools, inside the sandbox: :mod:`~agentrl.envs.osworld.evaluators.chrome`)
=================  ==================================================================

A step that fails raises :class:`SetupError` naming the step, so a broken task never starts an
episode on a half-prepared desktop. With ``lenient=True`` (OSWorld's own task files: see
:attr:`~agentrl.envs.osworld.tasks.format.OSWorldTask.from_osworld`) the steps that OSWorld's
``SetupController`` only logs when they fail (:data:`LENIENT_TYPES`: a command that exits non-zero,
a window that is not there) are logged the same way, as a warning, and setup goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentrl.core.errors import AgentRLError
from agentrl.envs.osworld.tasks.assets import AssetStore, MissingAsset
from agentrl.envs.osworld.tasks.chrome_setup import SETUP_STEPS as CHROME_SETUP_STEPS
from agentrl.envs.osworld.tasks.chrome_setup import open_tabs
from agentrl.envs.osworld.tasks.format import SUPPORTED_SETUP_TYPES, SetupStep

__all__ = ["LENIENT_TYPES", "SetupError", "run_setup"]

MAX_SLEEP_S = 30.0
LENIENT_TYPES = frozenset({"execute", "command", "activate_window", "close_window"})
"""The step types whose failure OSWorld's ``SetupController`` logs and steps over."""

_log = logging.getLogger(__name__)


class SetupError(AgentRLError, RuntimeError):
    """A setup step could not be carried out; the message names the step and the reason."""


def _local_file(local_path: str, base_dir: Path | None) -> Path:
    path = Path(local_path).expanduser()
    if not path.is_absolute():
        if base_dir is None:
            raise SetupError(f"upload_file: relative local_path {local_path!r} needs the task's folder")
        path = base_dir / path
    if not path.is_file():
        raise SetupError(f"upload_file: local file {path} does not exist")
    return path


def _download(client: Any, files: Any, assets: AssetStore) -> None:
    if not isinstance(files, list):
        raise SetupError("download: 'files' must be a list of {url, path}")
    for i, entry in enumerate(files):
        url = entry.get("url") if isinstance(entry, dict) else None
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url or not isinstance(path, str) or not path:
            raise SetupError(f"download: files[{i}] needs a non-empty 'url' and 'path' (OSWorld: invalid URL or path)")
        try:
            data = assets.read(url)
        except MissingAsset as exc:
            raise SetupError(f"download: {exc}") from None
        client.upload_file(path, data)


def _save_streams(client: Any, params: dict[str, Any], out: dict[str, Any]) -> None:
    """OSWorld's ``stdout``/``stderr`` parameters: the command's output saved under that name in the client's cache.

    The evaluator's ``cache_file`` getter reads it back. Saved whatever the exit status (a ``diff`` that finds
    differences exits 1), before the status is judged, as OSWorld's ``SetupController`` does.
    """
    for key, field in (("stdout", "output"), ("stderr", "error")):
        name = params.get(key)
        if not name:
            continue
        target = (client.cache_dir / str(name)).resolve()
        if client.cache_dir.resolve() not in target.parents:
            raise SetupError(f"{key}: {name!r} leaves the cache folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(str(out.get(field) or ""), encoding="utf-8")


def _run_step(client: Any, step: SetupStep, base_dir: Path | None, assets: AssetStore | None = None) -> None:
    params = dict(step.parameters)
    kind = step.type
    if kind == "launch":
        client.launch(params["command"], shell=bool(params.get("shell", False)))
    elif kind == "open":
        client.open_file(str(params["path"]))
    elif kind in ("execute", "command"):
        out = client.execute(params["command"], shell=bool(params.get("shell", False)))
        _save_streams(client, params, out)
        if out.get("returncode") not in (0,) and not params.get("ignore_errors", False):
            raise SetupError(f"{kind} {params['command']!r} failed: {str(out.get('error', ''))[-500:]}")
    elif kind == "sleep":
        seconds = float(params.get("seconds", 1.0))
        if not 0.0 <= seconds <= MAX_SLEEP_S:
            raise SetupError(f"sleep: seconds must be in [0, {MAX_SLEEP_S:g}], got {seconds}")
        time.sleep(seconds)
    elif kind == "upload_file":
        for entry in params.get("files", []):
            data = _local_file(str(entry["local_path"]), base_dir).read_bytes()
            client.upload_file(str(entry["path"]), data)
    elif kind == "download":
        _download(client, params.get("files"), assets if assets is not None else AssetStore())
    elif kind == "chrome_open_tabs":
        open_tabs(client, params["urls_to_open"])
    elif kind == "activate_window":
        client.activate_window(
            str(params["window_name"]), strict=bool(params.get("strict")), by_class=bool(params.get("by_class"))
        )
    elif kind == "close_window":
        client.close_window(
            str(params["window_name"]), strict=bool(params.get("strict")), by_class=bool(params.get("by_class"))
        )
    elif kind in CHROME_SETUP_STEPS:
        CHROME_SETUP_STEPS[kind](client, params)
    else:
        raise SetupError(
            f"setup step type {kind!r} is not supported on this desktop; supported: {', '.join(SUPPORTED_SETUP_TYPES)}"
        )


def run_setup(
    client: Any,
    steps: Sequence[SetupStep],
    *,
    base_dir: str | Path | None = None,
    assets: AssetStore | None = None,
    lenient: bool = False,
    warnings: list[str] | None = None,
) -> float:
    """Run ``steps`` in order on ``client``'s desktop; returns the seconds taken.

    ``assets``: where ``download`` steps read their files (default: :class:`~.assets.AssetStore`
    at its default place); a file missing there fails the step, naming the URL and ``agentrl osworld fetch-assets``.
    ``lenient``: a failed step of :data:`LENIENT_TYPES` is logged (and appended to ``warnings``) and setup goes on,
    as OSWorld's ``SetupController`` does; a missing parameter or an unsupported step still raises.

    Raises:
        SetupError: a step failed (and is not stepped over), is unsupported, or lacks a parameter.
    """
    start = time.perf_counter()
    base = Path(base_dir) if base_dir is not None else None
    for index, step in enumerate(steps):
        try:
            _run_step(client, step, base, assets)
        except KeyError as exc:
            raise SetupError(f"setup step {index} ({step.type}) lacks the parameter {exc}") from None
        except Exception as exc:  # SetupError, or the server said no (HTTP 4xx/5xx) or is gone
            detail = str(exc) if isinstance(exc, SetupError) else f"failed: {type(exc).__name__}: {exc}"
            message = f"setup step {index} ({step.type}): {detail}"
            if lenient and step.type in LENIENT_TYPES and _server_answered(exc):
                _log.warning("%s (stepped over, as OSWorld does)", message)
                if warnings is not None:
                    warnings.append(message)
                continue
            raise SetupError(message) from (None if isinstance(exc, SetupError) else exc)
    return time.perf_counter() - start


def _server_answered(exc: BaseException) -> bool:
    """Whether ``exc`` is the step's own failure, not a desktop that is gone (which always raises)."""
    import urllib.error

    return isinstance(exc, (SetupError, urllib.error.HTTPError)) or not isinstance(exc, OSError)
