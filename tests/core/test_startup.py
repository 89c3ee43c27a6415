"""Start-up under load: deadlines stretch with the load, a failed start is tried once more, and the error
names the step that timed out (the desktop's Xvfb and window manager, the games' Chromium)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentrl.core.deadlines import MAX_FACTOR, load_note, scaled_timeout


def test_scaled_timeout_grows_with_load_and_is_capped():
    assert scaled_timeout(10.0, load=0.0, cpus=4) == 10.0
    assert scaled_timeout(10.0, load=4.0, cpus=4) == 20.0
    assert scaled_timeout(10.0, load=1000.0, cpus=4) == 10.0 * MAX_FACTOR
    assert 5.0 <= scaled_timeout(5.0) <= 5.0 * MAX_FACTOR  # this machine's own load
    assert load_note(load=0.5, cpus=1) == "load 0.5 on 1 CPU" and " CPU" in load_note()


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


# -- the desktop --------------------------------------------------------------------------------------
def _desktop_available() -> None:
    if shutil.which("Xvfb") is None or shutil.which("xdpyinfo") is None:
        pytest.skip("Xvfb and xdpyinfo are needed (apt-get install -y xvfb x11-utils)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")


@pytest.mark.timeout(300)
def test_desktop_start_is_tried_again_and_the_error_names_the_step(tmp_path, monkeypatch):
    from agentrl.core.errors import SandboxUnavailable
    from agentrl.envs.osworld.runtime.desktop import DesktopSession

    _desktop_available()
    real = shutil.which("xdpyinfo")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # An xdpyinfo that never answers (as on a machine too loaded to answer in time): both starts fail, and
    # the error says which step did not finish, with the deadline and the load (was: TimeoutExpired, 5 s).
    _script(bin_dir, "xdpyinfo", "exec sleep 60")
    with pytest.raises(SandboxUnavailable) as raised:
        DesktopSession(window_manager=False, accessibility=False, startup_timeout_s=1.0)
    message = str(raised.value)
    assert message.startswith("Xvfb did not start: Xvfb :") and message.count("did not answer xdpyinfo within") == 2
    assert " CPU" in message and "load " in message

    # The first answer times out, the second start works.
    marker = tmp_path / "answered-once"
    _script(bin_dir, "xdpyinfo", f'if [ ! -e {marker} ]; then touch {marker}; exec sleep 60; fi\nexec {real} "$@"')
    session = DesktopSession(window_manager=False, accessibility=False, startup_timeout_s=2.0)
    try:
        assert marker.exists() and session.alive()
    finally:
        session.close()


# -- the games' Chromium ------------------------------------------------------------------------------
def _chromium() -> str:
    pytest.importorskip("playwright", reason="playwright is missing: pip install 'agentrl-gym[browser]'")
    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.envs.games.browser import find_chromium

    try:
        return find_chromium()
    except DependencyNotInstalled as exc:
        pytest.skip(str(exc))


@pytest.mark.timeout(300)
def test_chromium_launch_is_tried_again_and_the_error_names_the_step(tmp_path):
    from agentrl.envs.games.browser import BrowserError, BrowserHost

    real = _chromium()
    broken = BrowserHost(executable=str(_script(tmp_path, "chromium-broken", "echo 'cannot start' >&2; exit 1")))
    try:
        with pytest.raises(BrowserError) as raised:
            broken.start()
    finally:
        broken.close()
    message = str(raised.value)
    assert message.startswith("Chromium did not start (2 tries, each): ") and "chromium-broken did not start" in message

    marker = tmp_path / "failed-once"
    body = f'if [ ! -e {marker} ]; then touch {marker}; exit 1; fi\nexec {real} "$@"'
    flaky = _script(tmp_path, "chromium-flaky", body)
    host = BrowserHost(executable=str(flaky))
    try:
        host.start()
        assert marker.exists() and host.launches == 1
        host.start()  # running already: nothing to launch
        assert host.launches == 1
    finally:
        host.close()
