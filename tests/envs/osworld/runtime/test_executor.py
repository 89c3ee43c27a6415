"""PyautoguiWorker on a real Xvfb display: clicks, errors, deadlines, sandboxing, restarts and close."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator

import pytest

from agentrl.core.errors import SandboxUnavailable

pytestmark = pytest.mark.timeout(300)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:  # never imported here: it needs a DISPLAY
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)

from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.runtime.executor import PyautoguiWorker, bwrap_available  # noqa: E402


@pytest.fixture(scope="module")
def session() -> Iterator[DesktopSession]:
    try:
        s = DesktopSession(window_manager=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    yield s
    s.close()


def _worker(s: DesktopSession, sandbox: bool | None = None) -> PyautoguiWorker:
    env = s.env()
    return PyautoguiWorker(env, s.home, "/tmp/.X11-unix", env["XAUTHORITY"], sandbox=sandbox)


@pytest.fixture(scope="module")
def worker(session: DesktopSession) -> Iterator[PyautoguiWorker]:
    w = _worker(session)
    yield w
    w.close()


needs_bwrap = pytest.mark.skipif(bwrap_available() is None, reason="bubblewrap (bwrap) is not installed")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); count it as dead.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_click_moves_the_pointer(worker: PyautoguiWorker) -> None:
    result = worker.run("pyautogui.click(10, 20)\nprint(tuple(pyautogui.position()))")
    assert result["ok"], result
    assert result["output"].strip() == "(10, 20)"
    result = worker.run("pyautogui.moveTo(123, 45); print(tuple(pyautogui.position()))")
    assert result["output"].strip() == "(123, 45)"


def test_each_call_has_a_fresh_namespace_with_time(worker: PyautoguiWorker) -> None:
    assert worker.run("leftover = 1")["ok"]
    result = worker.run("print(time.time() > 0); leftover")
    assert not result["ok"] and "NameError" in result["error"] and "True" in result["output"]


def test_exceptions_come_back_as_errors(worker: PyautoguiWorker) -> None:
    result = worker.run("print('before')\n1 / 0")
    assert result["ok"] is False and result["timed_out"] is False
    assert "ZeroDivisionError" in result["error"] and "<agent>" in result["error"]
    assert result["output"] == "before\n"
    result = worker.run("def f(:\n  pass")
    assert not result["ok"] and "SyntaxError" in result["error"]
    assert worker.run("import sys; sys.exit(0)")["ok"]
    assert "SystemExit" in worker.run("import sys; sys.exit(2)")["error"]


def test_trivial_calls_are_fast(worker: PyautoguiWorker) -> None:
    worker.run("pass")
    started = time.monotonic()
    for _ in range(20):
        assert worker.run("pass")["ok"]
    assert (time.monotonic() - started) / 20 < 0.05  # a few ms in practice; loose for slow CI


def test_pyautogui_pauses_between_calls_as_on_osworld_not_after_the_last(worker: PyautoguiWorker) -> None:
    # OSWorld runs each action with pyautogui's default PAUSE (0.1 s after every call); `click(); write()` relies on
    # it. The worker keeps it between calls and drops the one after the last call (the env waits for the screen).
    timed = "t0 = time.monotonic(); {calls}; print(round(time.monotonic() - t0, 3))"
    one = float(worker.run(timed.format(calls="pyautogui.moveTo(5, 5)"))["output"])
    three = float(worker.run(timed.format(calls="pyautogui.moveTo(5, 5); pyautogui.moveTo(6, 6); "
                                                "pyautogui.moveTo(7, 7)"))["output"])
    slept = float(worker.run(timed.format(calls="pyautogui.moveTo(5, 5); time.sleep(0.15); pyautogui.moveTo(6, 6)"))
                  ["output"])
    assert one < 0.08, one
    assert 0.2 <= three < 0.5, three
    assert 0.15 <= slept < 0.24, slept  # a sleep of the agent's own counts towards the pause
    # an action that turns the pause off does not turn it off for the next one (a fresh `python -c` on OSWorld)
    fast = float(worker.run("pyautogui.PAUSE = 0; " + timed.format(calls="pyautogui.moveTo(5, 5); "
                                                                         "pyautogui.moveTo(6, 6)"))["output"])
    assert fast < 0.08, fast
    again = float(worker.run(timed.format(calls="pyautogui.moveTo(5, 5); pyautogui.moveTo(6, 6)"))["output"])
    assert again >= 0.1, again


def test_infinite_loop_times_out_and_next_call_works(worker: PyautoguiWorker) -> None:
    pid = worker.pid
    started = time.monotonic()
    result = worker.run("while True: pass", timeout_s=1.0)
    assert result["timed_out"] is True and result["ok"] is False
    assert "timed out" in result["error"]
    assert time.monotonic() - started < 5
    assert pid is not None and not _alive(pid)
    after = worker.run("print('back')")
    assert after["ok"] and after["output"] == "back\n"


def test_output_is_capped(worker: PyautoguiWorker) -> None:
    result = worker.run("print('x' * 1_000_000)")
    assert result["ok"]
    assert len(result["output"]) < worker.output_cap + 200
    assert "truncated" in result["output"]
    result = worker.run("raise ValueError('y' * 1_000_000)")
    assert len(result["error"]) < worker.output_cap + 200


def test_os_exit_is_reported_and_next_call_works(worker: PyautoguiWorker) -> None:
    result = worker.run("import os; os._exit(3)")
    assert result["ok"] is False and result["timed_out"] is False
    assert "status 3" in result["error"]
    after = worker.run("print('again')")
    assert after["ok"] and after["output"] == "again\n"
    # A worker that kills itself between calls: the next call restarts it and says so.
    worker.run("import os, signal, threading; threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGKILL)).start()")
    time.sleep(0.5)
    result = worker.run("print('fresh')")
    assert result["ok"] and result["output"] == "fresh\n"
    assert "restarted" in result["error"]


@needs_bwrap
def test_rmtree_home_only_empties_the_session_home(session: DesktopSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "keep.txt"
    outside.write_text("keep")
    (session.home / "doc.txt").write_text("agent file")
    with _worker(session, sandbox=True) as w:
        result = w.run(
            "import os, shutil\n"
            "shutil.rmtree(os.path.expanduser('~'), ignore_errors=True)\n"
            "print(os.path.expanduser('~'))"
        )
        assert result["output"].strip() == str(session.home)
        assert not (session.home / "doc.txt").exists()
        # The parent of tmp_path is not visible to the sandbox: /tmp is a private tmpfs.
        probe = w.run(f"import os; print(os.path.exists({str(outside)!r}))")
        assert probe["output"].strip() == "False"
        write = w.run("open('/tmp/scratch', 'w').write('ok'); print(open('/tmp/scratch').read())")
        assert write["ok"] and write["output"].strip() == "ok"
    assert outside.read_text() == "keep"
    session.home.mkdir(parents=True, exist_ok=True)


@needs_bwrap
def test_system_dirs_are_read_only(session: DesktopSession) -> None:
    with _worker(session, sandbox=True) as w:
        for path in ("/etc/agentrl-probe", "/usr/agentrl-probe", "/root/agentrl-probe"):
            result = w.run(f"open({path!r}, 'w').write('x')")
            assert not result["ok"], path
            assert "Read-only file system" in result["error"] or "Permission" in result["error"], result
            assert not os.path.exists(path)


@needs_bwrap
def test_no_network(session: DesktopSession) -> None:
    with _worker(session, sandbox=True) as w:
        result = w.run(
            "import socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
            "s.settimeout(2)\n"
            "s.connect(('127.0.0.1', 22))\n"
        )
        assert not result["ok"]
        assert "ConnectionRefused" in result["error"] or "Network is unreachable" in result["error"], result
        # Still talks to X over the bound unix socket.
        assert w.run("pyautogui.moveTo(5, 5); print(tuple(pyautogui.position()))")["output"].strip() == "(5, 5)"


@needs_bwrap
def test_rlimits_apply_and_cannot_be_raised(session: DesktopSession) -> None:
    with _worker(session, sandbox=True) as w:
        result = w.run("import resource; print(resource.getrlimit(resource.RLIMIT_CORE))")
        assert result["output"].strip() == "(0, 0)"
        result = w.run("import resource; resource.setrlimit(resource.RLIMIT_AS, (-1, -1))")
        assert not result["ok"]
        result = w.run("x = bytearray(3 * 1024**3)")
        assert not result["ok"] and "MemoryError" in result["error"]
        assert w.run("print('alive')")["output"] == "alive\n"


def test_secrets_in_the_environment_do_not_reach_the_worker(session: DesktopSession) -> None:
    env = {**session.env(), "OPENAI_API_KEY": "sk-secret"}
    with PyautoguiWorker(env, session.home, xauthority=env["XAUTHORITY"]) as w:
        result = w.run("import os; print(os.environ.get('OPENAI_API_KEY'), os.environ['DISPLAY'])")
        assert result["output"].strip() == f"None {session.display}"


def test_unsandboxed_worker_warns(session: DesktopSession) -> None:
    with _worker(session, sandbox=False) as w:
        assert not w.sandboxed and "isolation is off" in w.isolation_warning
        assert w.run("pyautogui.moveTo(7, 8); print(tuple(pyautogui.position()))")["output"].strip() == "(7, 8)"


def test_close_leaves_no_process(session: DesktopSession) -> None:
    w = _worker(session)
    w.run("import subprocess; subprocess.Popen(['sleep', '600'])")
    w.run("while True: pass", timeout_s=0.5)
    w.run("import subprocess; subprocess.Popen(['sleep', '600'])")
    pids = w.pids
    assert len(pids) == 2
    w.close()
    w.close()  # idempotent
    assert w.pid is None
    assert all(not _alive(pid) for pid in pids)
    with pytest.raises(SandboxUnavailable):
        w.run("pass")


def test_finalizer_kills_a_forgotten_worker(session: DesktopSession) -> None:
    import gc

    w = _worker(session)
    w.run("pass")
    pid = w.pid
    assert pid is not None
    del w
    gc.collect()
    assert not _alive(pid)
