"""SandboxFusion's ``POST /run_code`` format: the request's schema, and the response from a program's result.

SandboxFusion (bytedance/SandboxFusion) answers ``/run_code`` with a FastAPI model: the request is
``{code, language, compile_timeout=10, run_timeout=10, memory_limit_MB=-1, stdin=null, files={},
fetch_files=[], args=[]}`` (``files``: path -> base64 content, ``null`` content skipped), the response
``{status, message, compile_result, run_result, executor_pod_name, files}`` where ``status`` is
``"Success"`` (every command exited 0), ``"Failed"`` (a nonzero exit or a time limit; ``message`` is
empty) or ``"SandboxError"`` (the sandbox itself failed; ``message`` says why), and a command result is
``{status: "Finished" | "Error" | "TimeLimitExceeded", execution_time, return_code, stdout, stderr}``.
A request that does not fit the schema (a missing ``code``, a ``language`` that is not one of
SandboxFusion's) is refused by FastAPI with HTTP 422 and ``{"detail": [...]}``; so it is here.

What differs here, by design: only ``python`` and ``bash`` run (another SandboxFusion language answers
``SandboxError`` naming these two); ``files`` and ``fetch_files`` paths must be relative to the run's
working directory (SandboxFusion also resolves relative paths there, but writes absolute ones anywhere);
``memory_limit_MB`` caps what the run may add to the warm interpreter, within the server's own limit.

>>> req = parse_run_code({"code": "print(1)", "language": "python", "files": {"a.txt": "aGk="}})
>>> req.language, dict(req.files), req.run_timeout
('python', {'a.txt': b'hi'}, 10.0)
>>> try:
...     parse_run_code({"code": "print(1)", "language": "python3"})
... except SchemaError as exc:
...     print(exc.detail[0]["loc"], exc.detail[0]["type"])
['body', 'language'] literal_error
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentrl.core.errors import AgentRLError
from agentrl.sandboxes.program import LANGUAGES, ProgramResult, check_relative_path

__all__ = [
    "FUSION_LANGUAGES",
    "FusionRefused",
    "RunCodeRequest",
    "SchemaError",
    "error_response",
    "parse_run_code",
    "run_response",
]

#: SandboxFusion's ``Language`` literal (sandbox/runners/types.py): the names its schema accepts
FUSION_LANGUAGES: tuple[str, ...] = (
    "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust",
    "cuda", "lua", "R", "perl", "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest",
    "verilog", "python_gpu", "lean", "swift", "racket",
)  # fmt: skip
_SERVED = ", ".join(repr(name) for name in LANGUAGES)


class SchemaError(AgentRLError, ValueError):
    """The request does not fit SandboxFusion's schema: HTTP 422 with FastAPI's ``{"detail": [...]}``."""

    def __init__(self, detail: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, d['loc'][1:]))}: {d['msg']}" for d in detail))
        self.detail = detail


class FusionRefused(AgentRLError, ValueError):
    """A well-formed request this server will not run: answered ``status: "SandboxError"`` with the reason."""


@dataclass(frozen=True)
class RunCodeRequest:
    """A validated ``/run_code`` request (SandboxFusion's ``RunCodeRequest``; ``files`` decoded).

    Attributes:
        code: the program.
        language: ``"python"`` or ``"bash"``.
        run_timeout: seconds the run may take.
        compile_timeout: accepted and unused (both languages are interpreted: ``compile_result`` is null).
        memory_limit_mb: ``memory_limit_MB``; ``None`` when not positive (SandboxFusion: no limit).
        stdin: standard input, or ``None``.
        files: ``{relative path: bytes}`` written before the run (entries with ``null`` content dropped).
        fetch_files: relative paths to send back base64-encoded after the run.
    """

    code: str
    language: str
    run_timeout: float = 10.0
    compile_timeout: float = 10.0
    memory_limit_mb: int | None = None
    stdin: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)
    fetch_files: tuple[str, ...] = ()


def _issue(detail: list, kind: str, name: str, msg: str, value: Any) -> None:
    detail.append({"type": kind, "loc": ["body", name], "msg": msg, "input": value})


def _number(body: Mapping[str, Any], name: str, detail: list) -> float:
    value = body.get(name, 10.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _issue(detail, "float_type", name, "Input should be a valid number", value)
        return 10.0
    return float(value)


def parse_run_code(body: Mapping[str, Any]) -> RunCodeRequest:
    """Validate a ``/run_code`` body against SandboxFusion's schema (unknown fields are ignored, as there).

    Raises:
        SchemaError: what FastAPI would refuse with 422 (every problem found, in ``detail``).
        FusionRefused: a SandboxFusion language not served here, a path outside the working
            directory, or content that is not base64.
    """
    if not isinstance(body, Mapping):
        raise SchemaError([{"type": "model_type", "loc": ["body"], "msg": "Input should be an object", "input": body}])
    detail: list[dict[str, Any]] = []
    code = body.get("code")
    if "code" not in body:
        _issue(detail, "missing", "code", "Field required", None)
    elif not isinstance(code, str):
        _issue(detail, "string_type", "code", "Input should be a valid string", code)
    language = body.get("language")
    if "language" not in body:
        _issue(
            detail,
            "missing",
            "language",
            f"Field required (one of SandboxFusion's languages; {_SERVED} run here)",
            None,
        )
    elif language not in FUSION_LANGUAGES:
        _issue(
            detail,
            "literal_error",
            "language",
            f"Input should be one of SandboxFusion's languages ({_SERVED} run here), not {language!r}",
            language,
        )
    run_timeout = _number(body, "run_timeout", detail)
    compile_timeout = _number(body, "compile_timeout", detail)
    memory = body.get("memory_limit_MB", -1)
    if isinstance(memory, bool) or not isinstance(memory, int):
        _issue(detail, "int_type", "memory_limit_MB", "Input should be a valid integer", memory)
        memory = -1
    stdin = body.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        _issue(detail, "string_type", "stdin", "Input should be a valid string", stdin)
    files = body.get("files") or {}
    if not isinstance(files, Mapping) or not all(isinstance(v, (str, type(None))) for v in files.values()):
        _issue(detail, "dict_type", "files", "Input should be an object of path -> base64 string (or null)", files)
        files = {}
    fetch = body.get("fetch_files") or []
    if not isinstance(fetch, list) or not all(isinstance(p, str) for p in fetch):
        _issue(detail, "list_type", "fetch_files", "Input should be a list of path strings", fetch)
        fetch = []
    args = body.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        _issue(detail, "list_type", "args", "Input should be a list of strings", args)
    if detail:
        raise SchemaError(detail)
    if language not in LANGUAGES:
        raise FusionRefused(f"language {language!r} is not served by this sandbox server; supported: {_SERVED}")
    decoded: dict[str, bytes] = {}
    for path, content in files.items():
        if content is None:
            continue  # SandboxFusion skips files without content
        try:
            check_relative_path(path)
        except ValueError as exc:
            raise FusionRefused(f"files: {exc}") from None
        try:
            decoded[path] = base64.b64decode(content)
        except (binascii.Error, ValueError) as exc:
            raise FusionRefused(f"files[{path!r}] is not valid base64 ({exc})") from None
    for path in fetch:
        try:
            check_relative_path(path)
        except ValueError as exc:
            raise FusionRefused(f"fetch_files: {exc}") from None
    return RunCodeRequest(
        code=str(code),
        language=str(language),
        run_timeout=run_timeout,
        compile_timeout=compile_timeout,
        memory_limit_mb=memory if memory > 0 else None,
        stdin=stdin,
        files=decoded,
        fetch_files=tuple(fetch),
    )


def _pod() -> str | None:
    return os.environ.get("MY_POD_NAME")  # what SandboxFusion reports as executor_pod_name


def error_response(message: str) -> dict[str, Any]:
    """A ``SandboxError`` response carrying ``message`` (no run happened)."""
    return {
        "status": "SandboxError",
        "message": message,
        "compile_result": None,
        "run_result": None,
        "executor_pod_name": _pod(),
        "files": {},
    }


def run_response(result: ProgramResult) -> dict[str, Any]:
    """The ``/run_code`` response for one program's result, statuses as SandboxFusion derives them.

    >>> r = run_response(ProgramResult(return_code=0, stdout="1"))
    >>> r["status"], r["run_result"]["status"], r["run_result"]["stdout"]
    ('Success', 'Finished', '1')
    >>> run_response(ProgramResult(return_code=None, timed_out=True))["status"]
    'Failed'
    """
    files = {path: base64.b64encode(data).decode("ascii") for path, data in result.files.items()}
    pod = _pod()
    if not result.timed_out and result.return_code is None:  # the sandbox failed before or during the run
        message = result.error or "the sandbox returned no exit status"
        run: dict[str, Any] = {
            "status": "Error",
            "execution_time": None,
            "return_code": None,
            "stdout": result.stdout or None,
            "stderr": message,
        }
        return {
            "status": "SandboxError",
            "message": message,
            "compile_result": None,
            "run_result": run,
            "executor_pod_name": pod,
            "files": files,
        }
    run = {
        "status": "TimeLimitExceeded" if result.timed_out else "Finished",
        "execution_time": round(result.execution_time_s, 6),
        "return_code": None if result.timed_out else result.return_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
    }
    if result.error is not None:  # the run happened, but its files could not all be sent back
        status, message = "SandboxError", result.error
    elif result.timed_out or result.return_code != 0:
        status, message = "Failed", ""
    else:
        status, message = "Success", ""
    return {
        "status": status,
        "message": message,
        "compile_result": None,
        "run_result": run,
        "executor_pod_name": pod,
        "files": files,
    }
