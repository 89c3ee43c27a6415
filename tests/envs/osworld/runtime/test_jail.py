"""The desktop's sandbox (``Jail``) on its own, without an X display: processes, files, isolation.

Each lifecycle test runs with bubblewrap (the default) and unsandboxed (how a desktop runs inside a
container, where the container is the boundary): in both, daemons that double-forked or called
``setsid`` die with ``killall`` and with ``close``.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl.envs.osworld.runtime.jail import Jail

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)")
MODES = [pytest.param(True, marks=needs_bwrap, id="bwrap"), pytest.param(False, id="unsandboxed")]
DAEMONS = (
    "nohup sleep {m}.1 >/dev/null 2>&1 & setsid sleep {m}.2 >/dev/null 2>&1 & "
    "(sleep {m}.3 >/dev/null 2>&1 &) & sh -c 'sleep {m}.4 >/dev/null 2>&1 & exit 0'; exit 0"
)


def _host_procs(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_gone(marker: str, timeout_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while _host_procs(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _host_procs(marker)


@pytest.fixture(params=MODES)
def jail(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Jail]:
    home = tmp_path / "home"
    home.mkdir()
    with Jail(home, sandbox=request.param) as j:
        yield j


def test_run_reports_exit_codes_output_and_deadlines(jail: Jail) -> None:
    assert jail.run(["sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\n", "err\n")
    assert jail.run(["cat"], input=b"piped") == (0, "piped", "")
    rc, _, err = jail.run(["no-such-command-agentrl"])
    assert rc == 127 and "no-such-command-agentrl" in err
    start = time.monotonic()
    rc, _, err = jail.run(["sleep", "30"], timeout_s=0.3)
    assert rc is None and "timed out after 0.3s" in err and time.monotonic() - start < 5
    rc, out, _ = jail.run(["sh", "-c", "head -c 3000000 /dev/zero"], cap=1000)
    assert rc == 0 and out.startswith("\0" * 1000) and "truncated at 1000 bytes" in out
    proc = jail.spawn(["sleep", "30"])
    assert proc.poll() is None
    proc.send_signal(15)
    assert proc.wait(5) == -15


def test_sudo_needs_no_password_and_gives_nothing_more(jail: Jail) -> None:
    rc, out, _ = jail.run(["sh", "-c", "sudo -S -u root sh -c 'id -u; cat'"], input=b"password\nrest\n")
    assert rc == 0 and out.split("\n")[1] == "rest"  # the password line was read and dropped
    assert jail.run(["sh", "-c", "id -u; sudo id -u"])[1].split() == jail.run(["sh", "-c", "id -u; id -u"])[1].split()
    assert jail.run(["sudo", "-n", "true"])[0] == 0


def test_killall_and_close_end_daemons_but_spare_infra(jail: Jail) -> None:
    marker = f"4{uuid.uuid4().int % 10**6:06d}"
    infra = jail.spawn(["sleep", f"{marker}.9"], infra=True)
    assert jail.run(["sh", "-c", DAEMONS.format(m=marker)])[0] == 0
    deadline = time.monotonic() + 5  # the backgrounded sleeps start a moment after their shell exits
    while len(_host_procs(marker)) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_host_procs(marker)) == 5
    assert len([p for p in jail.ps() if any(marker in a for a in p.argv)]) == 5  # the jail sees them too
    assert jail.killall(grace_s=0.5) == []
    assert [pid for pid in _host_procs(marker) if f"{marker}.9" not in " ".join(jail_cmd(pid))] == []
    assert infra.poll() is None  # the desktop's daemons survive a reset
    assert jail.run(["sh", "-c", DAEMONS.format(m=marker)])[0] == 0
    jail.close()
    assert _wait_gone(marker) == []
    assert infra.poll() is not None


def jail_cmd(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def test_files_are_the_jails_and_writes_stay_under_home(jail: Jail) -> None:
    home = str(jail.home)
    assert jail.run([], file_op=["write", f"{home}/a/b.txt", home], input=b"hello")[0] == 0
    assert (jail.home / "a" / "b.txt").read_bytes() == b"hello"
    assert jail.run_bytes([], file_op=["read", f"{home}/a/b.txt", home])[:2] == (0, b"hello")
    rc, out, _ = jail.run([], file_op=["list", home, home])
    assert rc == 0 and '"b.txt"' in out
    assert jail.run([], file_op=["read", f"{home}/missing", home])[0] == 2
    (jail.home / "link").symlink_to("/etc")
    for target in ("/etc/agentrl-x", f"{home}/link/agentrl-x", f"{home}/../agentrl-x"):
        rc, _, err = jail.run([], file_op=["write", target, home], input=b"x")
        assert rc == 3 and "under the desktop's HOME" in err, target
    assert not os.path.exists("/etc/agentrl-x")


def test_descends_from_follows_the_jails_tree(jail: Jail) -> None:
    parent = jail.spawn(["sh", "-c", "sleep 30 & wait"])
    deadline = time.monotonic() + 5
    child = None
    while child is None and time.monotonic() < deadline:
        child = next((p.pid for p in jail.ps() if p.ppid == parent.pid), None)
        time.sleep(0.05)
    assert child is not None
    assert jail.descends_from(child, parent.pid) and not jail.descends_from(parent.pid, child)
    parent.kill_group()
    parent.wait(5)


@needs_bwrap
def test_the_sandbox_hides_the_host_and_the_network(tmp_path: Path) -> None:
    x_existed = os.path.exists("/x")
    secret = Path.home() / f".agentrl-jail-secret-{uuid.uuid4().hex}"
    secret.write_text("host secret")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    home = tmp_path / "home"
    home.mkdir()
    try:
        with Jail(home) as jail:
            assert jail.sandboxed and jail.isolation_warning == ""
            rc, out, err = jail.run(["sh", "-c", f"cat {secret}; cat /etc/shadow; id -u; touch /x /usr/x"])
            assert "host secret" not in out and "root:" not in out
            assert out.split() == ["1000"] and "Read-only file system" in err
            assert os.path.exists("/x") == x_existed
            probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
            rc, _, err = jail.run(["python3", "-c", probe])
            assert rc != 0 and ("Network is unreachable" in err or "refused" in err), err
            assert jail.run(["sh", "-c", "echo x > /tmp/left-over"])[0] == 0
            jail.clean_scratch()
            assert jail.run(["ls", "/tmp/left-over"])[0] != 0
            assert jail.run(["ls", str(home)])[0] == 0  # the bound HOME stays
            assert len(jail.ps()) == 2  # its own PID namespace: bwrap (pid 1) and the supervisor, no host process
    finally:
        server.close()
        secret.unlink()


def test_a_closed_jail_says_so(tmp_path: Path) -> None:
    from agentrl.core.errors import SandboxUnavailable

    jail = Jail(tmp_path, sandbox=False)
    jail.close()
    jail.close()
    assert jail.closed and not jail.alive()
    with pytest.raises(SandboxUnavailable, match="gone"):
        jail.run(["true"])


def test_a_bwrap_that_cannot_start_falls_back_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentrl.core.errors import SandboxUnavailable

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    with Jail(tmp_path, sandbox=None) as jail:  # the default: run, unsandboxed, and say why
        assert not jail.sandboxed and "No permissions to create a new namespace" in jail.isolation_warning
        assert jail.run(["echo", "hi"]) == (0, "hi\n", "")
    with pytest.raises(SandboxUnavailable, match="No permissions"):
        Jail(tmp_path, sandbox=True)  # asked for: no silent fallback


def test_piping_input_closes_each_descriptor_once(jail: Jail, monkeypatch: pytest.MonkeyPatch) -> None:
    """A descriptor closed twice can close another thread's file that got the same number in between.

    With 16 desktops in threads, that was a training run's "HTTP 500: cannot write ...: [Errno 9] Bad file
    descriptor" and an asyncio socket that could no longer close. Closing an fd that is already closed fails
    with EBADF in the thread that does it; none of ``run``'s closes may.
    """
    import errno
    import threading

    real_close, me, bad = os.close, threading.get_ident(), []

    def close(fd: int) -> None:
        try:
            real_close(fd)
        except OSError as exc:
            if exc.errno == errno.EBADF and threading.get_ident() == me:
                bad.append(fd)
            raise

    monkeypatch.setattr(os, "close", close)
    for _ in range(3):
        assert jail.run(["cat"], input=b"piped") == (0, "piped", "")
    assert jail.run(["/nonexistent/tool"], input=b"x")[0] == 127
    assert bad == [], f"descriptors closed twice: {bad}"
