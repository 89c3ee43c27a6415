"""One whole program run in a stateless sandbox: files in, stdin, exit code, separate streams, files out.

This is what SandboxFusion's ``POST /run_code`` needs and :meth:`~agentrl.sandboxes.pool.PooledSandbox.execute`
(a notebook cell: one output stream, no exit code) does not give: :class:`ProgramRequest` and
:class:`ProgramResult` are the two halves of :meth:`PooledSandbox.run_program
<agentrl.sandboxes.pool.PooledSandbox.run_program>`. Each run gets a fresh working directory inside the
sandbox's scratch space; ``files`` are written there before the run and ``fetch_files`` read from there
after it (inside the sandbox, as the code's own uid), then the directory is removed.

Paths are relative to that directory; :func:`check_relative_path` refuses the others:

>>> check_relative_path("data/in.txt")
'data/in.txt'
>>> check_relative_path("../etc/passwd")
Traceback (most recent call last):
...
ValueError: path '../etc/passwd' leaves the run's working directory; give a path relative to it, without '..' above it
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["LANGUAGES", "ProgramRequest", "ProgramResult", "check_relative_path"]

#: the languages a program may be written in: Python runs in a fork of the warm interpreter, bash is
#: exec'd from such a fork (same limits, namespaces and uid)
LANGUAGES: tuple[str, ...] = ("python", "bash")


def check_relative_path(path: object) -> str:
    """``path`` normalised, if it names a file inside the run's working directory; else ``ValueError``.

    Absolute paths, paths that climb above the directory with ``..``, empty paths and NUL bytes are
    refused with a message that says what to send instead.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"a file path must be a non-empty string, not {path!r}")
    if "\0" in path:
        raise ValueError(f"file path {path!r} contains a NUL byte")
    if path.startswith("/"):
        raise ValueError(
            f"absolute path {path!r} is outside the run's working directory; give a path relative to it "
            f"(the code runs with that directory as its current directory)"
        )
    norm = posixpath.normpath(path)
    if norm == ".." or norm.startswith("../"):
        raise ValueError(
            f"path {path!r} leaves the run's working directory; give a path relative to it, without '..' above it"
        )
    if norm == ".":
        raise ValueError(f"path {path!r} names the working directory itself, not a file in it")
    return norm


@dataclass(frozen=True)
class ProgramRequest:
    """One program to run to completion.

    Attributes:
        code: the program text (a Python script, or a bash script).
        language: ``"python"`` or ``"bash"`` (:data:`LANGUAGES`).
        timeout_s: wall-clock limit; past it every process of the run is killed (the result says
            ``timed_out``, with the output written so far). CPU time is limited to the same amount.
        stdin: fed to the program's standard input (``None``: empty input).
        files: ``{relative path: content}`` written into the working directory before the run.
        fetch_files: relative paths read back after the run (also after a timeout); a path that is
            missing or not a regular file then is left out of :attr:`ProgramResult.files`.
        memory_mb: address space the run may add on top of the warm interpreter it is forked from
            (lowers, never raises, the sandbox's own ``memory_mb``); ``None``: the sandbox's limit.
        max_output_chars: each of stdout and stderr is cut to this many characters (with a marker).
    """

    code: str
    language: Literal["python", "bash"] = "python"
    timeout_s: float = 10.0
    stdin: str | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)
    fetch_files: tuple[str, ...] = ()
    memory_mb: int | None = None
    max_output_chars: int = 1_000_000

    def __post_init__(self) -> None:
        """Refuse a language we do not run and paths outside the working directory (``ValueError``)."""
        if self.language not in LANGUAGES:
            raise ValueError(f"language {self.language!r} is not run here; supported: {', '.join(LANGUAGES)}")
        for path in [*self.files, *self.fetch_files]:
            check_relative_path(path)


@dataclass(frozen=True)
class ProgramResult:
    """How one :class:`ProgramRequest` went.

    Attributes:
        return_code: the exit status (``-N`` when killed by signal N, as :mod:`subprocess` reports it);
            ``None`` after a timeout or a sandbox error.
        stdout: what the program wrote to standard output (each stream capped separately).
        stderr: what it wrote to standard error (a Python traceback ends up here).
        timed_out: the wall-clock or CPU limit ended the run.
        execution_time_s: wall-clock seconds from the start of the program to its end.
        files: the fetched files that existed after the run, ``{path as requested: content}``.
        error: set when the *sandbox* failed (a file could not be written, the worker died): the run's
            outcome then says nothing about the code.
        truncated: stdout or stderr was cut to ``max_output_chars``.
    """

    return_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    execution_time_s: float = 0.0
    files: Mapping[str, bytes] = field(default_factory=dict)
    error: str | None = None
    truncated: bool = False
