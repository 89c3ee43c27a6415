"""OSWorld's own, unmodified ``PythonController`` against ``agentrl serve-desktop --insecure-loopback``.

OSWorld's source is the user's (never copied here): set ``AGENTRL_OSWORLD_SOURCE`` to a checkout of
OSWorld (the folder with ``desktop_env/controllers/python.py``), or ``AGENTRL_OSWORLD_EXAMPLES`` to its
``evaluation_examples`` folder inside such a checkout; else every test here skips, saying so. Its
client needs ``requests``. ``tests/envs/osworld/test_pythoncontroller_parity.py`` replays the same requests
without OSWorld's source.

The controller's address is ``http://<vm_ip>:5000``; only that attribute is pointed at the test's server.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(300)


def osworld_source() -> Path | None:
    """The OSWorld checkout named by ``AGENTRL_OSWORLD_SOURCE`` (or above ``AGENTRL_OSWORLD_EXAMPLES``)."""
    candidates = []
    if os.environ.get("AGENTRL_OSWORLD_SOURCE"):
        candidates.append(Path(os.environ["AGENTRL_OSWORLD_SOURCE"]))
    if os.environ.get("AGENTRL_OSWORLD_EXAMPLES"):
        candidates.append(Path(os.environ["AGENTRL_OSWORLD_EXAMPLES"]).resolve().parent)
    for root in candidates:
        if (root / "desktop_env" / "controllers" / "python.py").is_file():
            return root
    return None


SOURCE = osworld_source()
if SOURCE is None:
    pytest.skip(
        "set AGENTRL_OSWORLD_SOURCE=/path/to/OSWorld (a checkout with desktop_env/controllers/python.py) to drive "
        "the desktop with OSWorld's own PythonController",
        allow_module_level=True,
    )
pytest.importorskip("requests", reason="OSWorld's PythonController needs requests: pip install requests")
pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)
if not shutil.which("xterm") or not shutil.which("xdotool"):
    pytest.skip("needs xterm and xdotool (make system-deps installs them)", allow_module_level=True)

from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.server import serve_desktop  # noqa: E402
from tests.envs.osworld.desktop_fixture import desktop_session  # noqa: E402


def python_controller() -> Any:
    """OSWorld's ``desktop_env.controllers.python.PythonController``, imported from its checkout."""
    assert SOURCE is not None
    sys.path.insert(0, str(SOURCE))
    try:
        return importlib.import_module("desktop_env.controllers.python").PythonController
    finally:
        sys.path.remove(str(SOURCE))


@pytest.fixture(scope="module")
def session() -> Iterator[DesktopSession]:
    yield from desktop_session()


@pytest.fixture(scope="module")
def controller(session: DesktopSession) -> Iterator[Any]:
    with serve_desktop(session, insecure_loopback=True) as handle:  # OSWorld's clients send no token
        made = python_controller()("127.0.0.1")
        made.http_server = handle.base_url  # it assumes port 5000
        made.retry_interval = 1
        yield made


def test_get_vm_wallpaper_gives_the_fresh_desktops_image(controller: Any) -> None:
    import io

    from PIL import Image

    data = controller.get_vm_wallpaper()
    assert data is not None and data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (640, 480)


def test_get_terminal_output_reads_the_active_xterm(controller: Any) -> None:
    assert controller.get_terminal_output() is None  # no terminal open yet
    marker = uuid.uuid4().hex[:12]
    controller.execute_python_command("import subprocess; subprocess.Popen(['xterm']); time.sleep(2)")
    typed = f"pyautogui.write('echo {marker} | rev', interval=0.01); pyautogui.press('enter')"
    controller.execute_python_command(typed)
    deadline, output = time.monotonic() + 15, None
    while time.monotonic() < deadline:
        output = controller.get_terminal_output()
        if output and marker[::-1] in output:
            break
        time.sleep(0.3)
    assert output is not None and f"echo {marker} | rev" in output and marker[::-1] in output, output
    controller.execute_python_command("pyautogui.hotkey('ctrl', 'd')")  # exit the shell: the xterm closes


def test_start_and_end_recording_write_a_playable_video(controller: Any, tmp_path: Path) -> None:
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (make setup installs it with the desktop's packages)")
    controller.start_recording()
    for x in (100, 300, 500):
        controller.execute_python_command(f"pyautogui.moveTo({x}, 240); time.sleep(0.3)")
    dest = tmp_path / "recording.mp4"
    controller.end_recording(str(dest))
    assert dest.is_file() and dest.read_bytes()[4:8] == b"ftyp"
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,width,height,nb_read_frames", "-of", "json", str(dest)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    stream = json.loads(probe.stdout)["streams"][0]
    assert (stream["codec_name"], stream["width"], stream["height"]) == ("h264", 640, 480)
    assert int(stream["nb_read_frames"]) >= 10
