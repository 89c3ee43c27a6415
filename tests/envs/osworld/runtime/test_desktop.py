"""DesktopSession on a real Xvfb display: screenshots, apps, pyautogui in a child, reset and close."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agentrl.core.errors import SandboxUnavailable

pytestmark = pytest.mark.timeout(300)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:  # never imported here: it needs a DISPLAY
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)

from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.runtime.startup import x_lock_pid  # noqa: E402

XTERM = ["xterm", "-T", "agentrl-xterm", "-geometry", "80x24+0+0", "-e", "bash", "--norc", "--noprofile"]


def _session(**kwargs: object) -> DesktopSession:
    try:
        return DesktopSession(**kwargs)  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")


@pytest.fixture(scope="module")
def session() -> Iterator[DesktopSession]:
    s = _session()
    yield s
    s.close()


def _wait(predicate, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _xterm_window(s: DesktopSession) -> str:
    result = subprocess.run(
        ["xdotool", "search", "--name", "agentrl-xterm"], env=s.env(), capture_output=True, text=True, check=False
    )
    return result.stdout.strip()


def test_starts_and_screenshot_has_the_right_shape(session: DesktopSession) -> None:
    img = session.screenshot()
    assert img.shape == (720, 1280, 3) and img.dtype == np.uint8
    assert session.screenshot_png().startswith(b"\x89PNG")
    assert os.path.exists(f"/tmp/.X11-unix/X{session.display_number}")
    if shutil.which("xfwm4"):
        assert session.window_manager_name == "xfwm4", session.window_manager_note


def test_two_sessions_get_different_displays(session: DesktopSession) -> None:
    with _session(width=320, height=240, window_manager=False) as other:
        assert other.display != session.display
        assert other.screenshot().shape == (240, 320, 3)
        assert other.window_manager_name is None


@pytest.mark.skipif(not shutil.which("xterm") or not shutil.which("xdotool"), reason="needs xterm and xdotool")
def test_xterm_pyautogui_mouse_typing_and_timeout(session: DesktopSession) -> None:
    session.reset()
    before = session.screenshot()
    term = session.launch(XTERM)
    assert _wait(lambda: bool(_xterm_window(session))), "xterm window never appeared"
    assert _wait(lambda: (session.screenshot() != before).any()), "screen did not change"
    assert term.poll() is None

    moved = session.run_pyautogui("pyautogui.moveTo(200, 150)")
    assert moved["ok"], moved
    pos = session.run_pyautogui("x, y = pyautogui.position(); print(x, y)")
    assert pos["ok"] and pos["output"].split() == ["200", "150"], pos

    typed = session.run_pyautogui(
        "pyautogui.click(100, 100)\npyautogui.write('touch typed_ok', interval=0.01)\npyautogui.press('enter')"
    )
    assert typed["ok"], typed
    assert _wait(lambda: (session.home / "typed_ok").exists()), "typing into xterm did not reach the shell"

    spin = session.run_pyautogui("while True: pass", timeout_s=1.5)
    assert spin["timed_out"] and not spin["ok"]
    again = session.run_pyautogui("print(pyautogui.size())")
    assert again["ok"] and "1280" in again["output"], again

    bad = session.run_pyautogui("raise ValueError('boom')")
    assert not bad["ok"] and not bad["timed_out"] and "ValueError: boom" in bad["error"]


def _terminals(s: DesktopSession) -> list[object]:
    from agentrl.envs.osworld.runtime.windows import find_windows

    return list(find_windows(s.env(), "Terminal"))


def test_ctrl_alt_t_opens_a_terminal_that_dies_at_reset(session: DesktopSession) -> None:
    """As on OSWorld's Ubuntu: ctrl+alt+t opens a window titled 'Terminal'; reset closes it, the key still works."""
    if session.hotkeys_note:
        pytest.skip(session.hotkeys_note)
    session.reset()
    assert _terminals(session) == []
    pressed = session.run_pyautogui("pyautogui.hotkey('ctrl', 'alt', 't')")
    assert pressed["ok"], pressed
    assert _wait(lambda: len(_terminals(session)) == 1), "ctrl+alt+t opened no window titled 'Terminal'"
    session.reset()  # the terminal is an episode process: it dies; the key's daemon does not
    assert _wait(lambda: _terminals(session) == []), "the terminal survived the reset"
    assert [p for p in session.processes() if p.argv[:1] == ("xterm",)] == []
    daemon = session._state.hotkeys
    assert daemon is not None and daemon.poll() is None
    session.jail.kill(daemon.pid)  # the agent killed the daemon: the next reset starts it again
    assert _wait(lambda: daemon.poll() is not None)
    session.reset()
    session.run_pyautogui("pyautogui.hotkey('ctrl', 'alt', 't')")
    assert _wait(lambda: len(_terminals(session)) == 1), "ctrl+alt+t no longer works after the daemon was killed"
    session.reset()


def test_reset_kills_apps_and_restores_home(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "Documents").mkdir(parents=True)
    (template / "Documents" / "note.txt").write_text("hello")
    with _session(width=640, height=480, window_manager=False, home_template=template) as s:
        assert (s.home / "Documents" / "note.txt").read_text() == "hello"
        (s.home / "junk.txt").write_text("x")
        (s.home / "Documents" / "note.txt").write_text("changed")
        app = s.launch(["sleep", "60"])
        child = s.run_pyautogui("import subprocess; subprocess.Popen(['sleep', '60'])")
        assert child["ok"], child
        s.reset()
        assert app.poll() is not None
        assert not (s.home / "junk.txt").exists()
        assert (s.home / "Documents" / "note.txt").read_text() == "hello"
        assert s.apps == []
        assert s.screenshot().shape == (480, 640, 3)  # Xvfb survived the reset


def _x_server_pid(n: int) -> int | None:
    """The pid in display ``n``'s ``/tmp/.X<n>-lock`` if that X server runs (``None``: no live server holds it)."""
    pid = x_lock_pid(n)
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def test_close_leaves_nothing_alive_and_is_idempotent() -> None:
    s = _session(width=640, height=480)
    n = s.display_number
    s.launch(["sleep", "60"])
    if shutil.which("xterm"):
        s.launch(XTERM)
    pids = list(s.pids)
    tmpdir = s.home.parent
    s.close()
    s.close()
    assert s.closed
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        status = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}/status").exists() else ""
        assert "zombie" in status, f"pid {pid} still alive"
    # The display is free again: its socket is gone, or it is a newer X server's (another test's, on another
    # worker, may take the number the moment it is released).
    assert not os.path.exists(f"/tmp/.X11-unix/X{n}") or _x_server_pid(n) not in (None, *pids)
    assert not tmpdir.exists()
    with pytest.raises(SandboxUnavailable):
        s.screenshot()
