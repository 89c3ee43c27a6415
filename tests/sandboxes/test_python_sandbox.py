"""Functional tests of PythonSandbox: the notebook-like behaviour an environment relies on."""

from __future__ import annotations

import shutil

import pytest

from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult, Sandbox
from agentrl.sandboxes.python import PythonSandbox

pytestmark = pytest.mark.timeout(120)


def run(box: PythonSandbox, code: str, timeout_s: float | None = None) -> ExecutionResult:
    return box.execute(ExecutionRequest(code, timeout_s=timeout_s))


@pytest.fixture(scope="module", params=["bwrap", "bwrap-fresh", "process"])
def box(request):
    """bwrap: the fork server where it runs (root), bwrap-fresh: one fresh interpreter per worker."""
    isolation = request.param.split("-")[0]
    if isolation == "bwrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    options = {"zygote": False} if request.param == "bwrap-fresh" else {}
    with PythonSandbox(max_output_chars=1000, isolation=isolation, **options) as sandbox:
        yield sandbox


def test_protocol_and_isolation_string(box):
    assert isinstance(box, Sandbox)
    assert box.isolation and isinstance(box.isolation, str)
    assert box.isolation_level in ("bwrap", "process")


def test_basic_exec(box):
    r = run(box, "print('hello')\nprint(2 + 3)")
    assert r.ok and r.error is None and not r.timed_out
    assert r.output == "hello\n5\n"
    assert r.latency_s > 0


def test_trailing_expression_repr(box):
    assert run(box, "x = [1, 'a']\nx").output == "[1, 'a']\n"
    assert run(box, "None").output == ""
    assert run(box, "print('p')\n'q'").output == "p\n'q'\n"


def test_session_persistence_and_reset(box):
    run(box, "counter = 41\ndef bump():\n    global counter\n    counter += 1\n    return counter")
    assert run(box, "bump()").output == "42\n"
    box.reset()
    r = run(box, "counter")
    assert not r.ok and "NameError" in r.error


def test_user_exception_traceback_tail(box):
    r = run(box, "def f():\n    raise ValueError('boom')\nprint('before')\nf()")
    assert not r.ok
    assert r.output == "before\n"
    assert r.error.splitlines()[-1] == "ValueError: boom"
    assert "<cell-" in r.error and "_worker.py" not in r.error


def test_syntax_error(box):
    r = run(box, "def (:")
    assert not r.ok and "SyntaxError" in r.error


def test_stderr_is_captured(box):
    r = run(box, "import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert r.ok and r.output == "out\nerr\n"


def test_output_cap_marker(box):
    r = run(box, "print('x' * 5000)")
    assert r.ok and r.truncated
    assert r.output.startswith("x" * 1000)
    assert "[output truncated: 4001 more characters]" in r.output
    assert len(r.output) < 1100


def test_numpy_sympy_available(box):
    r = run(box, "import numpy as np, sympy as sp\nprint(int(np.arange(5).sum()))\nsp.factor(sp.Symbol('x')**2 - 1)")
    assert r.ok, r.error
    assert r.output == "10\n(x - 1)*(x + 1)\n"


def test_stateless_mode_is_fresh():
    with PythonSandbox(mode="stateless", preimport=("math",)) as box:
        assert run(box, "y = 3\ny").output == "3\n"
        r = run(box, "y")
        assert not r.ok and "NameError" in r.error
        # A monkeypatched module does not leak into the next call either.
        run(box, "import math\nmath.sqrt = lambda v: 'patched'")
        assert run(box, "import math\nmath.sqrt(16)").output == "4.0\n"
        r = run(box, "import os\nos._exit(3)")
        assert not r.ok and "exit status 3" in r.error
        assert run(box, "1 + 1").output == "2\n"


def test_close_twice_and_use_after_close():
    box = PythonSandbox(preimport=())
    assert run(box, "1").output == "1\n"
    box.close()
    box.close()
    with pytest.raises(RuntimeError):
        run(box, "1")


@pytest.mark.parametrize("zygote", [None, False])
def test_context_manager_cleans_scratch(zygote):
    import os

    from agentrl.sandboxes.python import _pids_of_uid, shutdown_fork_servers

    with PythonSandbox(preimport=(), zygote=zygote) as box:
        assert run(box, "open('f.txt', 'w').write('hi')").ok
        workers = [w for w in [box._pool.active, *box._pool.spares] if w is not None]
        template = box._lease[1]
    assert workers
    if box.zygote:
        # Sessions keep their scratch in a tmpfs of their own mount namespace: gone with their processes.
        assert all(w.dead for w in workers)
        assert not any(_pids_of_uid(w.uid) for w in workers)
        # The fork server outlives its last sandbox for a while (the next one starts warm), unless stopped.
        assert template is not None and template.users == 0
        shutdown_fork_servers()
        assert not template.alive()
    else:
        assert not any(os.path.exists(w.scratch) for w in workers)
        assert all(w.proc.poll() is not None for w in workers)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        PythonSandbox(mode="notebook")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        PythonSandbox(isolation="docker")  # type: ignore[arg-type]


def test_two_sandboxes_do_not_interfere():
    with PythonSandbox(preimport=()) as a, PythonSandbox(preimport=()) as b:
        run(a, "v = 'a'")
        run(b, "v = 'b'")
        # Each worker has its own uid (as root) or pid namespace, so kill(-1) only reaches its own.
        if a.isolation_level == "bwrap" or __import__("os").geteuid() == 0:
            run(b, "import os, signal\nos.kill(-1, signal.SIGKILL)")
        assert run(a, "v").output == "'a'\n"
        assert run(b, "v").output == "'b'\n"


def test_without_bubblewrap_auto_falls_back_and_says_so(monkeypatch):
    from agentrl.core.errors import SandboxUnavailable
    from agentrl.sandboxes import python as python_sandbox

    monkeypatch.setattr(python_sandbox, "_bwrap_path", lambda: None)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        PythonSandbox(isolation="bwrap")
    with PythonSandbox(isolation="auto", preimport=()) as sandbox:
        assert sandbox.isolation_level == "process"
        assert "install bubblewrap" in sandbox.isolation or "NOT isolated" in sandbox.isolation
        assert sandbox.execute(ExecutionRequest("print(2 + 2)")).output == "4\n"


def test_fork_server_needs_root_and_bubblewrap(monkeypatch):
    """Without root (no map of two uids) sandboxes start one fresh interpreter per worker, as they say."""
    from agentrl.core.errors import SandboxUnavailable
    from agentrl.sandboxes import python as python_sandbox

    monkeypatch.setattr(python_sandbox, "_is_root", lambda: False)
    with pytest.raises(SandboxUnavailable, match="zygote=True needs bubblewrap and root"):
        PythonSandbox(zygote=True, preimport=())
    box = PythonSandbox(preimport=(), isolation="process")
    try:
        assert not box.zygote and "fork server" not in box.isolation
    finally:
        box.close()
