"""Hostile code against PythonSandbox, under each isolation level, and through the sandbox server.

Every attack must come back as an ExecutionResult (never an exception), leave the sandbox usable
(the next ``print(1+1)`` gives ``2``) and change nothing outside the worker's scratch space. The attacks
every tier is put through are in tests/sandboxes/sandbox_attack_list.py (the docker tier runs them too).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from agentrl.sandboxes.python import PythonSandbox, _pids_of_uid
from agentrl.testing import PORTABLE_SANDBOX_ATTACKS, check_sandbox_attack
from tests.sandboxes.sandbox_attack_list import ATTACKS, Attack, attack, connect, loopback_port, run, still_usable

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


def level(box) -> str:
    """The isolation level in force: a remote box's server runs the process tier on this machine."""
    if hasattr(box, "isolation_level"):
        return box.isolation_level
    return "bwrap" if "bubblewrap" in box.isolation else "process"


def weak(box: PythonSandbox) -> bool:
    return level(box) == "process" and not ROOT


@pytest.mark.parametrize("case", ATTACKS, ids=str)
def test_attack(box, case: Attack):
    if weak(box) and case.id == "kill_all":
        pytest.skip(f"kill(-1) would hit every process of this user: {NOT_ROOT}")
    if weak(box) and case.id == "read_shadow" and os.access("/etc/shadow", os.R_OK):
        pytest.skip(f"/etc/shadow is readable by this user: {NOT_ROOT}")
    uid = int(run(box, "import os\nos.getuid()").output) if case.forks else None
    result = attack(box, case)
    if uid is not None:
        if weak(box):
            pytest.skip(f"cannot count the worker's processes by uid: {NOT_ROOT}")
        # One worker process (plus the parent-side reaper/bwrap, which keep the launching uid); none when the
        # timeout restarted it.
        assert len(_pids_of_uid(uid)) == (0 if result.timed_out else 1)


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
    with loopback_port() as port:
        r = run(box, connect(("127.0.0.1", port)))
        if weak(box) and r.ok:
            pytest.skip("no network namespace: unprivileged user namespaces are disabled here")
        assert not r.ok and "connected" not in r.output
        assert "OSError" in r.error or "Error" in r.error
    still_usable(box)


@pytest.mark.parametrize("name", sorted(PORTABLE_SANDBOX_ATTACKS))
def test_portable_attacks(box, name):
    """The attacks every tier survives the same way (shipped in agentrl.testing)."""
    check_sandbox_attack(box, name)
