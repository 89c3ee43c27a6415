"""The hostile code every Python sandbox tier is put through, in one list.

``tests/sandboxes/test_sandbox_attacks.py`` runs :data:`ATTACKS` against the bwrap, process and remote tiers,
``tests/sandboxes/test_docker_sandbox.py`` against the docker tier. Each attack must come back as an ExecutionResult
(never an exception) that meets its expectation, and leave the sandbox usable (the next ``print(1+1)`` gives
``2``); what a tier checks beyond that (its processes gone, its container replaced) stays in its module.
The attacks whose result is the same to the byte on every tier ship with the package
(:data:`agentrl.testing.PORTABLE_SANDBOX_ATTACKS`); both modules run those too.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult


@dataclass(frozen=True)
class Attack:
    """Hostile code, what its result must show, and what the tier may have to clean up after it."""

    id: str
    code: str
    expect: Callable[[ExecutionResult], bool] = lambda result: True
    timeout_s: float | None = None
    forks: bool = False  # it leaves processes behind unless the tier kills them
    writes: int = 0  # bytes it tries to write: the host's temp disk must not grow by that much

    def __str__(self) -> str:  # (the test id)
        return self.id


def _refused(*errors: str) -> Callable[[ExecutionResult], bool]:
    return lambda result: not result.ok and any(error in result.error for error in errors)


ATTACKS: tuple[Attack, ...] = (
    Attack(
        "infinite_loop",
        "while True: pass",
        lambda r: r.timed_out and not r.ok and "timed out after 1s" in r.error and "restarted" in r.error,
        timeout_s=1.0,
    ),
    Attack("sleep_forever", "import time\ntime.sleep(10**6)", lambda r: r.timed_out and not r.ok, timeout_s=0.5),
    Attack("allocate_50_gb", "b = bytearray(50 * 10**9)", _refused("MemoryError")),
    Attack("fork_bomb", "import os\nwhile True:\n    os.fork()", lambda r: not r.ok, forks=True),
    Attack(
        "fork_bomb_timeout",
        "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        os.setsid()\n"
        "        while True: time.sleep(1)\ntime.sleep(100)",
        lambda r: r.timed_out,
        timeout_s=1.0,
        forks=True,
    ),
    Attack(
        "huge_file",
        "with open('big.bin', 'wb') as f:\n    f.write(b'\\0' * (64 * 1024 * 1024))",
        _refused("File too large", "No space", "MemoryError"),
        writes=64 * 1024 * 1024,
    ),
    Attack("read_shadow", "print(open('/etc/shadow').read()[:20])", _refused("PermissionError", "FileNotFoundError")),
    Attack("kill_init", "import os\nos.kill(1, 9)"),
    Attack("kill_parent", "import os\nos.kill(os.getppid(), 9)"),
    Attack("kill_all", "import os, signal\nos.kill(-1, signal.SIGKILL)"),
    Attack("kill_group", "import os\nos.killpg(0, 9)"),
    Attack(
        "kill_every_pid",
        "import os\nfor p in range(1, 5000):\n    try:\n        os.kill(p, 9)\n    except OSError:\n        pass",
    ),
    Attack("sys_exit", "import sys\nsys.exit()", lambda r: r.ok),
    Attack("sys_exit_4", "import sys\nsys.exit(4)", lambda r: not r.ok),
    Attack("os_exit_3", "import os\nos._exit(3)", lambda r: not r.ok),
    Attack("close_every_fd", "import os\nos.closerange(0, 1024)"),
    Attack("close_fds_from_3", "import os\nos.closerange(3, 1024)\nprint('x')"),
)


def run(box: Any, code: str, timeout_s: float | None = None) -> ExecutionResult:
    result = box.execute(ExecutionRequest(code, timeout_s=timeout_s))
    assert isinstance(result, ExecutionResult)
    return result


def still_usable(box: Any) -> None:
    r = run(box, "print(1+1)")
    assert r.ok and r.output == "2\n", r


def attack(box: Any, case: Attack) -> ExecutionResult:
    """Run ``case`` against ``box``: its result must meet the expectation, and the box stay usable."""
    disk_before = shutil.disk_usage(tempfile.gettempdir()).used
    result = run(box, case.code, case.timeout_s)
    assert case.expect(result), (case.id, result)
    if case.writes:
        assert shutil.disk_usage(tempfile.gettempdir()).used - disk_before < case.writes
    still_usable(box)
    return result


@contextmanager
def loopback_port() -> Iterator[int]:
    """A port listening on the host's loopback, for code in a sandbox to try to reach."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def connect(address: tuple[str, int]) -> str:
    """Code that connects to ``address`` and prints ``connected``."""
    return f"import socket\ns = socket.create_connection({address!r}, timeout=1)\nprint('connected')"
