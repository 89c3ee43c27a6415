"""Hostile code against PythonSandbox, under each isolation level, and through the sandbox server.

Every attack must come back as an ExecutionResult (never an exception), leave the sandbox usable
(the next ``print(1+1)`` gives ``2``) and change nothing outside the worker's scratch space.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile

import pytest

from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult
from agentrl.sandboxes.python import PythonSandbox, _pids_of_uid
from agentrl.testing import PORTABLE_SANDBOX_ATTACKS, check_sandbox_attack

pytestmark = pytest.mark.timeout(180)

ROOT = os.geteuid() == 0
HAVE_BWRAP = shutil.which("bwrap") is not None
NOT_ROOT = "process isolation without root runs as your own user (no private uid, mount or pid namespace)"


@pytest.fixture(scope="module", params=["bwrap", "process", "remote"])
def box(request):
    if request.param == "bwrap" and not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")
    if request.param == "remote":
        # The same limits, through a loopback sandbox server running the process tier (isolation auto).
        from agentrl.sandboxes.remote import RemoteSandbox
        from agentrl.sandboxes.server import serve_sandbox

        options = {"timeout_s": 3.0, "max_file_mb": 16, "max_output_chars": 2000, "preimport": ["math", "numpy"]}
        with serve_sandbox(tokens={"attack-token": "attacker"}) as server, \
                RemoteSandbox(server.url, token="attack-token", options=options) as sandbox:
            yield sandbox
        return
    with PythonSandbox(isolation=request.param, timeout_s=3.0, max_file_mb=16, max_output_chars=2000,
                       preimport=("math", "numpy")) as sandbox:
        yield sandbox


def run(box: PythonSandbox, code: str, timeout_s: float | None = None) -> ExecutionResult:
    result = box.execute(ExecutionRequest(code, timeout_s=timeout_s))
    assert isinstance(result, ExecutionResult)
    return result


def still_usable(box: PythonSandbox) -> None:
    r = run(box, "print(1+1)")
    assert r.ok and r.output == "2\n", r


def level(box) -> str:
    """The isolation level in force: a remote box's server runs the process tier on this machine."""
    if hasattr(box, "isolation_level"):
        return box.isolation_level
    return "bwrap" if "bubblewrap" in box.isolation else "process"


def weak(box: PythonSandbox) -> bool:
    return level(box) == "process" and not ROOT


def test_infinite_loop(box):
    r = run(box, "while True: pass", timeout_s=1.0)
    assert r.timed_out and not r.ok
    assert "timed out after 1s" in r.error and "restarted" in r.error
    still_usable(box)


def test_sleep_forever(box):
    r = run(box, "import time\ntime.sleep(10**6)", timeout_s=0.5)
    assert r.timed_out and not r.ok
    still_usable(box)


def test_allocate_50_gb(box):
    r = run(box, "b = bytearray(50 * 10**9)")
    assert not r.ok and "MemoryError" in r.error
    still_usable(box)


def test_fork_bomb_is_contained_and_cleaned_up(box):
    uid = int(run(box, "import os\nos.getuid()").output)
    r = run(box, "import os\nwhile True:\n    os.fork()")
    assert not r.ok
    still_usable(box)
    if weak(box):
        pytest.skip(f"cannot count the worker's processes by uid: {NOT_ROOT}")
    # One worker process (plus the parent-side reaper/bwrap, which keep the launching uid).
    assert len(_pids_of_uid(uid)) == 1


def test_fork_bomb_timeout_kills_everything(box):
    uid = int(run(box, "import os\nos.getuid()").output)
    r = run(box, "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        os.setsid()\n"
                 "        while True: time.sleep(1)\ntime.sleep(100)", timeout_s=1.0)
    assert r.timed_out
    still_usable(box)
    if not weak(box):
        assert _pids_of_uid(uid) == []


def test_huge_file(box):
    before = shutil.disk_usage(tempfile.gettempdir()).used
    r = run(box, "with open('big.bin', 'wb') as f:\n    f.write(b'\\0' * (64 * 1024 * 1024))")
    assert not r.ok and ("File too large" in r.error or "No space" in r.error or "MemoryError" in r.error), r
    after = shutil.disk_usage(tempfile.gettempdir()).used
    assert after - before < 64 * 1024 * 1024
    still_usable(box)


def test_read_shadow(box):
    r = run(box, "print(open('/etc/shadow').read()[:20])")
    if weak(box) and os.access("/etc/shadow", os.R_OK):
        pytest.skip(f"/etc/shadow is readable by this user: {NOT_ROOT}")
    assert not r.ok and ("PermissionError" in r.error or "FileNotFoundError" in r.error)
    still_usable(box)


def test_read_a_private_file_of_the_host_user(box):
    home = os.path.expanduser("~")
    fd, secret = tempfile.mkstemp(prefix="agentrl-secret-", dir=home)
    try:
        os.write(fd, b"TOP-SECRET")
        os.close(fd)
        os.chmod(secret, 0o600)
        r = run(box, f"print(open({secret!r}).read())")
        if weak(box):
            pytest.skip(f"the worker runs as the file's owner: {NOT_ROOT}")
        assert not r.ok and "TOP-SECRET" not in r.output
        assert "PermissionError" in r.error or "FileNotFoundError" in r.error
        if level(box) == "bwrap":
            # The project directory is not mounted (only the venv's site-packages are).
            r = run(box, f"open({os.path.abspath(__file__)!r}).read()")
            assert not r.ok and "FileNotFoundError" in r.error
    finally:
        os.unlink(secret)
    still_usable(box)


def test_write_outside_scratch(box):
    outside = tempfile.mkdtemp(prefix="agentrl-canary-")
    canary = os.path.join(outside, "canary.txt")
    with open(canary, "w") as f:
        f.write("canary")
    os.chmod(outside, 0o755)
    os.chmod(canary, 0o644)
    try:
        r = run(box, f"open({canary!r}, 'w').write('pwned')")
        if weak(box):
            pytest.skip(f"the worker runs as the canary's owner: {NOT_ROOT}")
        assert not r.ok
        # May succeed in bwrap's private /tmp; what matters is that the host is unchanged.
        run(box, f"import os\nos.makedirs({outside + '/sub'!r})")
        r = run(box, "open('/usr/pwned', 'w')")
        assert not r.ok
        with open(canary) as f:
            assert f.read() == "canary"
        assert os.listdir(outside) == ["canary.txt"]
        assert not os.path.exists("/usr/pwned")
    finally:
        shutil.rmtree(outside)
    still_usable(box)


def test_no_network(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        r = run(box, f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
                     "print('connected')")
        if weak(box) and r.ok:
            pytest.skip("no network namespace: unprivileged user namespaces are disabled here")
        assert not r.ok and "connected" not in r.output
        assert "OSError" in r.error or "Error" in r.error
    finally:
        server.close()
    still_usable(box)


@pytest.mark.parametrize("code", [
    "import os\nos.kill(os.getppid(), 9)",
    "import os, signal\nos.kill(-1, signal.SIGKILL)",
    "import os\nos.killpg(0, 9)",
    "import os\nfor p in range(1, 5000):\n    try:\n        os.kill(p, 9)\n    except OSError:\n        pass",
])
def test_kill_attacks(box, code):
    if weak(box) and "-1" in code:
        pytest.skip(f"kill(-1) would hit every process of this user: {NOT_ROOT}")
    r = run(box, code)
    assert isinstance(r, ExecutionResult)
    still_usable(box)


@pytest.mark.parametrize("code,ok", [
    ("import sys\nsys.exit()", True),
    ("import sys\nsys.exit(4)", False),
    ("import os\nos._exit(3)", False),
    ("import os\nos.closerange(0, 1024)", None),
    ("import os\nos.closerange(3, 1024)\nprint('x')", None),
])
def test_exits_and_closed_fds(box, code, ok):
    r = run(box, code)
    if ok is not None:
        assert r.ok is ok
    still_usable(box)


@pytest.mark.parametrize("name", sorted(PORTABLE_SANDBOX_ATTACKS))
def test_portable_attacks(box, name):
    """The attacks every tier survives the same way (shipped in agentrl.testing)."""
    check_sandbox_attack(box, name)
