"""The desktop's attack suite: nothing a task file or an action runs escapes to the host or outlives reset.

Each attack comes from a task file's setup, an action (``POST /pyautogui``, the agent's path) or a
getter's command, against ``provider="local"`` (the desktop's bubblewrap sandbox) and
``provider="docker"`` (a container). After each, the next reset must give a clean, working desktop.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(600)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if not shutil.which("Xvfb") or not shutil.which("xterm"):
    pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)", allow_module_level=True)

import gymnasium as gym  # noqa: E402

import agentrl  # noqa: E402,F401  (registers the ids)
from agentrl.envs.osworld.tasks.setup import SetupError  # noqa: E402

# Lists every process the desktop sees, one command line a line (sh and tr exist in both providers).
SCAN = 'for p in /proc/[0-9]*; do tr "\\0" " " < "$p/cmdline" 2>/dev/null; echo; done'
SECRET_TEXT = "agentrl-host-secret-" + uuid.uuid4().hex


def _task(task_id: str, config: list[dict[str, Any]], evaluator: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": task_id,
        "instruction": f"containment test {task_id}",
        "config": config,
        "related_apps": [],
        "evaluator": evaluator or {"func": "infeasible"},
    }


def _execute(command: str) -> dict[str, Any]:
    return {"type": "execute", "parameters": {"command": command, "shell": True}}


def _alive_check(marker: str) -> dict[str, Any]:
    """A getter that answers 'alive' while a process whose command line holds ``marker`` runs."""
    pattern = marker.replace(".", "[.]")  # a pattern that does not match this command's own line
    command = f"if ({SCAN}) | grep -q -- '{pattern}'; then echo alive; else echo dead; fi"
    return {"type": "vm_command_line", "command": command, "shell": True}


TASKS = [
    _task("touch-root", [{"type": "execute", "parameters": {"command": ["touch", "/x"]}}]),
    _task(
        "write-everywhere",
        [
            _execute(
                "for f in /x /etc/agentrl-pwned /usr/agentrl-pwned /root/agentrl-pwned $HOME/../agentrl-escape; "
                "do touch $f 2>/dev/null && echo wrote $f; done; exit 0"
            )
        ],
    ),
    _task(
        "leave-daemons",
        [
            _execute(
                "nohup sleep 4242.1 >/dev/null 2>&1 & setsid sleep 4242.2 >/dev/null 2>&1 & "
                "(sleep 4242.3 >/dev/null 2>&1 &) & sh -c 'sleep 4242.4 >/dev/null 2>&1 & exit 0'; exit 0"
            )
        ],
    ),
    _task(
        "kill-the-sleeper",
        [_execute("nohup sleep 4243.7 >/dev/null 2>&1 &")],
        {
            "func": "exact_match",
            "result": _alive_check("sleep 4243.7"),
            "expected": {"type": "rule", "rules": {"expected": "dead\n"}},
        },
    ),
    _task("plain", [{"type": "launch", "parameters": {"command": ["xterm"]}}]),
]

KILL_THE_SLEEPER = """
import os, signal, time
def sleepers():
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = open('/proc/%s/cmdline' % pid, 'rb').read().replace(b'\\0', b' ')
            except OSError:
                continue
            if b'sleep 4243.7' in cmd:
                found.append(int(pid))
    return found
deadline = time.monotonic() + 5  # the setup's background sleeper may not have started yet (a loaded machine)
while not sleepers() and time.monotonic() < deadline:
    time.sleep(0.05)
for pid in sleepers():
    os.kill(pid, signal.SIGKILL)
"""


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("containment_tasks")
    for task in TASKS:
        (folder / f"{task['id']}.json").write_text(json.dumps(task, indent=2), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def secret_file() -> Iterator[Path]:
    """A file only the host has (outside /tmp, where a CI checkout may live): no desktop may read it."""
    path = Path.home() / f".agentrl-containment-{uuid.uuid4().hex}"
    try:
        path.write_text(SECRET_TEXT, encoding="utf-8")
    except OSError as exc:
        pytest.skip(f"cannot write a host secret under {Path.home()}: {exc}")
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture(params=["local", "docker"])
def make(request: pytest.FixtureRequest, task_dir: Path) -> Iterator[Any]:
    made: list[Any] = []

    def build(**kwargs: Any) -> Any:
        kwargs.setdefault("tasks", str(task_dir))
        kwargs.setdefault("pause_s", 0.0)
        if request.param == "docker":
            _, _, image = request.getfixturevalue("desktop_docker")
            kwargs.update(provider="docker", docker_image=image)
        env = gym.make("AgentRL/OSWorld-v0", **kwargs)
        made.append(env)
        return env

    build.provider = request.param  # type: ignore[attr-defined]
    yield build
    for env in made:
        env.close()


def _host_procs(marker: str) -> list[int]:
    """Live host processes whose command line holds ``marker`` (zombies count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def _desktop_procs(env: Any, marker: str) -> list[str]:
    """Command lines holding ``marker`` among the processes the desktop's own commands see."""
    out = env.unwrapped.client.execute(SCAN, shell=True)
    assert out["returncode"] == 0, out
    return [line for line in out["output"].splitlines() if marker in line]


def _wait_gone(check: Any, timeout_s: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout_s
    left = check()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = check()
    return left


def _working(env: Any) -> None:
    """The next episode is clean: HOME holds no leftovers and a command runs."""
    env.reset(options={"task_id": "plain"})
    client = env.unwrapped.client
    tree = client.list_directory("~")
    names = [child["name"] for child in tree.get("children", [])] if tree else []
    assert not [n for n in names if n.startswith(("big", "link", "agentrl"))], names
    assert client.execute("echo ok", shell=True)["output"] == "ok\n"


def test_a_setup_touch_of_root_stays_off_the_host(make: Any) -> None:
    existed = os.path.exists("/x")
    env = make()
    with pytest.raises(SetupError, match=r"(?i)read-only file system|permission denied"):
        env.reset(options={"task_id": "touch-root"})
    if not existed:
        assert not os.path.exists("/x")
    _working(env)


def test_setup_writes_outside_home_are_contained(make: Any) -> None:
    env = make()
    before = {p: os.path.exists(p) for p in ("/x", "/etc/agentrl-pwned", "/usr/agentrl-pwned", "/root/agentrl-pwned")}
    env.reset(options={"task_id": "write-everywhere"})
    for path, existed in before.items():
        assert os.path.exists(path) == existed, path
    session = env.unwrapped._session
    if session is not None:  # local: HOME's parent on the host is the desktop's own temp dir
        assert not (session.home.parent / "agentrl-escape").exists()
    _working(env)


def test_actions_cannot_write_or_read_the_host(make: Any, secret_file: Path) -> None:
    env = make()
    env.reset(options={"task_id": "plain"})
    client = env.unwrapped.client
    code = f"""
import os
for f in ['/x', '/etc/agentrl-pwned', '/usr/agentrl-pwned', os.path.expanduser('~/../agentrl-escape')]:
    try:
        open(f, 'w').write('x')
        print('WROTE', f)
    except OSError as e:
        print('DENIED', f, type(e).__name__)
for f in [{str(secret_file)!r}, '/etc/shadow']:
    try:
        print('READ', f, repr(open(f).read()[:80]))
    except OSError as e:
        print('NOREAD', f, type(e).__name__)
os.symlink('/etc', os.path.expanduser('~/link'))
"""
    out = client.pyautogui(code)
    assert out["ok"], out
    for path in ("/x", "/etc/agentrl-pwned", "/usr/agentrl-pwned"):
        assert f"DENIED {path}" in out["output"], out["output"]
    session = env.unwrapped._session
    if session is not None:  # the write above HOME landed in the sandbox's own /tmp, not the host's
        assert not (session.home.parent / "agentrl-escape").exists()
    assert SECRET_TEXT not in out["output"] and "root:" not in out["output"], out["output"]
    assert f"NOREAD {secret_file}" in out["output"]
    assert not os.path.exists("/etc/agentrl-pwned") and not os.path.exists("/usr/agentrl-pwned")
    # The server's file routes see the desktop's files, not the host's.
    assert client.read_file(str(secret_file)) is None
    shadow = client.read_file("/etc/shadow")
    assert shadow is None or b"root:" not in shadow
    for target in ("/etc/agentrl-upload", "~/link/agentrl-upload", "~/../agentrl-upload"):
        with pytest.raises(urllib.error.HTTPError) as info:
            client.upload_file(target, b"x")
        assert info.value.code == 403, target
    assert not os.path.exists("/etc/agentrl-upload")
    _working(env)


def test_the_network_is_out_of_reach(make: Any) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    env = make()
    try:
        env.reset(options={"task_id": "plain"})
        client = env.unwrapped.client
        probe = (
            "import socket\n"
            "for host in ('127.0.0.1', '10.255.255.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2).close()\n"
            "        print('CONNECTED', host)\n"
            "    except OSError as e:\n"
            "        print('NO', host, type(e).__name__)\n"
        )
        out = client.pyautogui(probe)
        assert out["ok"] and "CONNECTED" not in out["output"], out
        got = client.execute(["python3", "-c", probe])
        assert got["returncode"] == 0 and "CONNECTED" not in got["output"], got
        assert accepted == []
    finally:
        stop.set()
        thread.join(2)
        server.close()
    _working(env)


def test_daemons_die_with_reset_and_close(make: Any) -> None:
    env = make()
    env.reset(options={"task_id": "leave-daemons"})
    client = env.unwrapped.client
    out = client.pyautogui("import subprocess; subprocess.run(['setsid', '-f', 'sleep', '4242.5'], check=True)")
    assert out["ok"], out
    markers = [f"sleep 4242.{i}" for i in range(1, 6)]
    seen = [m for m in markers if _desktop_procs(env, m)]
    assert seen == markers  # all five run, and the desktop's own commands see them
    local = make.provider == "local"
    if local:  # ... and on the host they are this desktop's, nobody else's
        assert all(_host_procs(m) for m in markers)
    env.reset(options={"task_id": "plain"})
    assert [m for m in markers if _desktop_procs(env, m)] == []
    if local:
        assert _wait_gone(lambda: [m for m in markers if _host_procs(m)]) == []
    env.reset(options={"task_id": "leave-daemons"})
    env.close()
    if local:
        assert _wait_gone(lambda: [m for m in markers if _host_procs(m)]) == []


def test_agent_and_scorer_see_the_same_processes(make: Any) -> None:
    env = make()
    env.reset(options={"task_id": "kill-the-sleeper"})
    _, reward, *_ = env.step("DONE")
    assert reward == 0.0  # the no-op leaves it running
    env.reset(options={"task_id": "kill-the-sleeper"})
    _, _, _, _, info = env.step(KILL_THE_SLEEPER)
    assert info["action_error"] is None, info
    _, reward, *_ = env.step("DONE")
    assert reward == 1.0


def test_killing_everything_the_desktop_sees_is_contained(make: Any) -> None:
    env = make()
    env.reset(options={"task_id": "plain"})
    client = env.unwrapped.client
    host_before = len(_host_procs(""))
    attack = (
        "import os, signal\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit() and int(pid) != os.getpid():\n"
        "        try:\n"
        "            os.kill(int(pid), signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    env.step(attack)  # the desktop may die with it: that ends the episode, never the host
    if make.provider == "local":
        assert client.screen_size() == (1280, 720)  # the server, on the host, still answers
        assert len(_host_procs("")) >= host_before - 60  # nothing of the host's was touched
    _working(env)


def test_filling_the_disk_stops_at_the_limits(make: Any) -> None:
    env = make()
    env.reset(options={"task_id": "plain"})
    client = env.unwrapped.client
    out = client.pyautogui(
        "import os\nwith open(os.path.expanduser('~/big-action'), 'wb') as f:\n"
        "    for _ in range(200):\n        f.write(b'0' * (1 << 20))\n"
    )
    assert not out["ok"] and re.search(r"File too large|No space left", out["error"]), out
    # A command past the limit is stopped (SIGXFSZ, or ENOSPC on a container's small tmpfs).
    got = client.execute("head -c 1100M /dev/zero > ~/big-command", shell=True, timeout_s=120)
    assert got["returncode"] != 0, got
    local = make.provider == "local"
    if local:  # (a container's /tmp, its HOME too, is a 1 GiB tmpfs: full now, until the reset)
        size = client.execute("stat -c %s ~/big-command ~/big-action", shell=True)
        assert size["returncode"] == 0, size
        assert all(int(n) <= 1024**3 for n in size["output"].split()), size
        scratch = client.execute("echo x > /tmp/agentrl-scratch && echo ok", shell=True)
        assert scratch["output"] == "ok\n", scratch
    _working(env)  # the next reset removes them
    if local:  # ... and the sandbox's own /tmp is empty again
        assert env.unwrapped.client.execute("ls /tmp/agentrl-scratch", shell=True)["returncode"] != 0


def _start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "agentrl.cli", "serve-desktop", "--port", "0", "--width", "320", "--height", "240"]
    proc = subprocess.Popen(
        [*argv, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    if not match:
        proc.kill()
        pytest.fail(f"serve-desktop did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, match.group(1)


def _stop_server(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    return err


def _post(url: str, body: dict[str, Any], token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_serve_desktop_wants_a_token_even_on_loopback() -> None:
    proc, url = _start_server()
    try:
        status, _ = _post(url + "/execute", {"command": "echo hi", "shell": True})
        assert status == 401
    finally:
        err = _stop_server(proc)
    token = re.search(r"a token made for this run: (\S+)\)", err)
    assert token, err
    assert "exposes:" in err and "/execute" in err and "sandbox" in err

    proc, url = _start_server("--insecure-loopback")
    try:
        status, body = _post(url + "/execute", {"command": "echo hi", "shell": True})
        assert (status, body.get("output")) == (200, "hi\n")
    finally:
        err = _stop_server(proc)
    assert "WITHOUT a token" in err
    assert re.search(r"POST /execute 200 \d+\.\d+s", err), err  # each request is logged


def test_a_server_without_token_refuses_the_command_routes() -> None:
    from agentrl.core.errors import SandboxUnavailable
    from agentrl.envs.osworld.client import DesktopClient
    from agentrl.envs.osworld.runtime.desktop import DesktopSession
    from agentrl.envs.osworld.server import COMMAND_ROUTES, serve_desktop

    try:
        session = DesktopSession(320, 240, window_manager=False, accessibility=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here: {exc}")
    with session, serve_desktop(session) as handle:
        for route in ("/execute", "/setup/execute", "/run_python", "/setup/launch", "/pyautogui", "/file"):
            assert route in COMMAND_ROUTES
            status, body = _post(handle.base_url + route, {"command": "true", "code": "1", "file_path": "/etc"})
            assert status == 403 and "--token" in body["error"], (route, body)
        assert DesktopClient(handle.base_url).screen_size() == (320, 240)  # the read-only routes answer
