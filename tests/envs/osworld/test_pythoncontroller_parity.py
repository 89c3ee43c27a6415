"""``serve-desktop`` answers the HTTP calls of OSWorld's own clients, as those clients make and read them.

OSWorld drives its VM through ``PythonController`` (``desktop_env/controllers/python.py``) and
``SetupController`` (``desktop_env/controllers/setup.py``), both plain ``requests`` calls. Each test
below sends those requests byte for byte as ``requests`` encodes them (same paths and methods; JSON
bodies sent as ``data=json.dumps(...)`` with ``Content-Type: application/json``; ``data={...}`` as an
urlencoded form; ``files=``/``MultipartEncoder`` as multipart; no ``Authorization`` header, so the
server runs with ``insecure_loopback``) and checks what the clients parse from the answers.

One desktop and one server for the module; only 127.0.0.1 is reached.
"""

from __future__ import annotations

import http.client
import http.server
import importlib.util
import io
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(300)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)
if not shutil.which("xterm") or not shutil.which("xdotool"):
    pytest.skip("needs xterm and xdotool (make system-deps installs them)", allow_module_level=True)

from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.server import COMMAND_ROUTES, serve_desktop  # noqa: E402
from tests.envs.osworld.desktop_fixture import desktop_session  # noqa: E402

# PythonController's pkgs_prefix: every action is `python -c "<prefix>; <pyautogui call>"` through /execute.
PKGS_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


class Answer:
    """What ``requests.Response`` gives the clients: ``status_code``, headers, ``content``, ``json()``."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content

    def json(self) -> Any:
        return json.loads(self.content)


class OSWorldHTTP:
    """The requests OSWorld's controllers send, encoded as ``requests`` encodes them, over http.client."""

    def __init__(self, base_url: str, token: str | None = None) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self.host, self.port, self.token = parsed.hostname or "127.0.0.1", parsed.port, token

    def request(
        self,
        method: str,
        path: str,
        *,
        json_data: Any = None,
        form: dict[str, str] | None = None,
        files: dict[str, tuple[str, bytes]] | None = None,
        timeout: float = 120.0,
    ) -> Answer:
        headers = {"User-Agent": "python-requests/2.31.0", "Accept": "*/*", "Connection": "keep-alive"}
        body = b""
        if json_data is not None:  # data=json.dumps(payload), headers={'Content-Type': 'application/json'}
            body = json.dumps(json_data).encode()
            headers["Content-Type"] = "application/json"
        elif files is not None:  # data={...}, files={...}: requests' multipart, fields first, no part Content-Type
            boundary = uuid.uuid4().hex
            parts = []
            for name, value in (form or {}).items():
                parts.append(
                    f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
                )
            for name, (filename, content) in files.items():
                head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n\r\n'
                parts.append(head.encode() + content + b"\r\n")
            body = b"".join(parts) + f"--{boundary}--\r\n".encode()
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        elif form is not None:  # data={...}: an urlencoded form
            body = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if method == "POST" or body:
            headers["Content-Length"] = str(len(body))
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def execute_python_command(self, command: str) -> dict[str, Any]:
        """PythonController.execute_python_command: the JSON it returns on a 200."""
        payload = {"command": ["python", "-c", PKGS_PREFIX.format(command=command)], "shell": False}
        answer = self.request("POST", "/execute", json_data=payload)
        assert answer.status_code == 200, answer.content
        return dict(answer.json())

    def upload(self, path: str, content: bytes) -> Answer:
        """SetupController._upload_file_setup / _download_setup: MultipartEncoder of file_path and file_data."""
        return self.request(
            "POST", "/setup/upload", form={"file_path": path}, files={"file_data": (path.rsplit("/", 1)[-1], content)}
        )

    def get_file(self, path: str) -> Answer:
        """PythonController.get_file: ``data={"file_path": ...}``, an urlencoded form."""
        return self.request("POST", "/file", form={"file_path": path})


@pytest.fixture(scope="module")
def session() -> Iterator[DesktopSession]:
    yield from desktop_session()


@pytest.fixture(scope="module")
def vm(session: DesktopSession) -> Iterator[OSWorldHTTP]:
    # OSWorld's clients send no token: the server runs as `agentrl serve-desktop --insecure-loopback`; the download
    # test serves its file on 127.0.0.1, which the server fetches only with --allow-private-fetch.
    with serve_desktop(session, insecure_loopback=True, allow_private_fetch=True) as handle:
        yield OSWorldHTTP(handle.base_url)


def _png(color: tuple[int, int, int], size: tuple[int, int] = (32, 24)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def test_readiness_probe_screenshot_terminal_platform_and_sizes(vm: OSWorldHTTP, session: DesktopSession) -> None:
    # SetupController._wait_until_server_ready: GET /terminal and GET /screenshot must both answer 200.
    terminal = vm.request("GET", "/terminal")
    assert terminal.status_code == 200
    assert terminal.json()["status"] == "success" and "output" in terminal.json()
    assert terminal.json()["output"] is None  # no terminal with an accessibility tree is open
    shot = vm.request("GET", "/screenshot")
    assert shot.status_code == 200 and shot.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert "image/png" in shot.headers["content-type"]
    assert vm.request("GET", "/platform").content == b"Linux"
    # get_vm_platform / get_vm_machine: python through /execute, then ['output'].strip()
    assert vm.execute_python_command("import platform; print(platform.system())")["output"].strip() == "Linux"
    assert vm.execute_python_command("import platform; print(platform.machine())")["output"].strip()
    assert vm.request("POST", "/screen_size").json() == {"width": 640, "height": 480}
    desktop = vm.request("POST", "/desktop_path")
    assert desktop.status_code == 200 and desktop.json()["desktop_path"] == f"{session.home}/Desktop"


def test_a_fresh_desktop_has_a_wallpaper_as_the_vm_has(vm: OSWorldHTTP, session: DesktopSession) -> None:
    # get_vm_wallpaper: POST /wallpaper -> the bytes of the image GNOME's picture-uri names (never 404 on the VM)
    wallpaper = vm.request("POST", "/wallpaper")
    assert wallpaper.status_code == 200 and wallpaper.content[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(io.BytesIO(wallpaper.content)) as image:
        assert image.size == (640, 480)
        corner = image.convert("RGB").getpixel((630, 470))
    shown = session.screenshot()[470, 630]  # painted on the root window: no window covers that corner
    assert all(abs(int(a) - int(b)) < 8 for a, b in zip(shown, corner, strict=True)), (shown, corner)


def test_terminal_answers_the_active_xterms_text(vm: OSWorldHTTP, session: DesktopSession) -> None:
    # get_terminal_output: GET /terminal -> ["output"], the text of the terminal in the active window
    launched = vm.request("POST", "/setup/launch", json_data={"command": ["xterm"], "shell": False})
    assert launched.status_code == 200
    wait = {"command": ["true"], "shell": False, "verification": {"window_exists": "xterm"}, "max_wait_time": 10}
    assert vm.request("POST", "/setup/execute_with_verification", json_data=wait).status_code == 200
    marker = uuid.uuid4().hex[:12]
    window = {"window_name": "xterm", "strict": False, "by_class": True}
    assert vm.request("POST", "/setup/activate_window", json_data=window).status_code == 200
    vm.execute_python_command(f"pyautogui.write('echo {marker} | rev', interval=0.01); pyautogui.press('enter')")
    deadline, output = time.monotonic() + 10, None
    while time.monotonic() < deadline:
        answer = vm.request("GET", "/terminal")
        assert answer.status_code == 200 and answer.json()["status"] == "success"
        output = answer.json()["output"]
        if output and marker[::-1] in output:
            break
        time.sleep(0.3)
    assert output is not None and f"echo {marker} | rev" in output and marker[::-1] in output, output
    assert output == output.rstrip() and not any(line != line.rstrip() for line in output.splitlines())
    assert vm.request("POST", "/setup/close_window", json_data=window).status_code == 200
    deadline = time.monotonic() + 10
    while vm.request("GET", "/terminal").json()["output"] is not None:  # no terminal is active any more
        assert time.monotonic() < deadline, "GET /terminal still answers text after the xterm closed"
        time.sleep(0.2)


def test_execute_action_runs_pyautogui_in_the_sandbox(vm: OSWorldHTTP) -> None:
    # What execute_action sends for MOVE_TO, CLICK, TYPING, HOTKEY, SCROLL: each must run (returncode 0).
    for command in (
        "pyautogui.moveTo(100, 120, 0.01, pyautogui.easeInQuad)",
        "pyautogui.click(button='left', x=5, y=5, clicks=1)",
        "pyautogui.typewrite('a')",
        "pyautogui.hotkey('ctrl', 'shift')",
        "pyautogui.vscroll(-1)",
        "pyautogui.moveTo(211, 133)",
    ):
        result = vm.execute_python_command(command)
        assert result["status"] == "success" and result["returncode"] == 0, (command, result)
    assert vm.request("GET", "/cursor_position").json() == [211, 133]
    result = vm.execute_python_command("import sys; print(sys.executable)")
    assert "agentrl" in result["output"]  # the sandbox's python, not /usr/bin/python3 without pyautogui


def test_run_python_and_run_bash_script_answer_osworlds_shapes(vm: OSWorldHTTP, session: DesktopSession) -> None:
    ok = vm.request("POST", "/run_python", json_data={"code": "import pyautogui\nprint(pyautogui.size().width)"})
    assert ok.status_code == 200
    assert ok.json() == {
        "status": "success",
        "message": "640\n",
        "need_more": False,
        "output": "640\n",
        "error": "",
        "return_code": 0,
    }
    bad = vm.request("POST", "/run_python", json_data={"code": "import sys\nprint('x')\nsys.exit(3)"}).json()
    assert bad["status"] == "error" and bad["return_code"] == 3 and bad["error"] == "Process exited with code 3"
    assert vm.request("POST", "/run_python", json_data={"code": ""}).status_code == 400

    script = {"script": "echo out\necho err >&2\npwd", "timeout": 30, "working_dir": "~/Desktop"}
    ran = vm.request("POST", "/run_bash_script", json_data=script)
    assert ran.status_code == 200
    assert ran.json() == {
        "status": "success",
        "output": f"out\nerr\n{session.home}/Desktop\n",
        "error": "",
        "returncode": 0,
    }
    failed = vm.request("POST", "/run_bash_script", json_data={"script": "exit 4", "timeout": 30, "working_dir": None})
    assert failed.status_code == 200 and failed.json()["returncode"] == 4 and failed.json()["status"] == "error"
    slow = vm.request("POST", "/run_bash_script", json_data={"script": "sleep 20", "timeout": 0.5, "working_dir": None})
    assert slow.status_code == 500 and slow.json()["returncode"] == -1
    nowhere = {"script": "true", "timeout": 5, "working_dir": "/no/such/dir"}
    assert vm.request("POST", "/run_bash_script", json_data=nowhere).status_code == 400


def test_upload_file_list_directory_and_setup_execute(vm: OSWorldHTTP, session: DesktopSession) -> None:
    path = f"{session.home}/Desktop/data/report.bin"
    content = bytes(range(256)) * 3 + b"\r\n--not-a-boundary\r\n"
    uploaded = vm.upload(path, content)
    assert uploaded.status_code == 200 and f"{len(content)} bytes" in uploaded.content.decode()
    got = vm.get_file(path)
    assert got.status_code == 200 and got.content == content
    assert vm.get_file(f"{session.home}/missing.txt").status_code == 404
    no_data = vm.request("POST", "/setup/upload", form={"file_path": path})
    assert no_data.status_code == 400
    # get_vm_directory_tree: JSON {"path"} -> ["directory_tree"]
    tree = vm.request("POST", "/list_directory", json_data={"path": f"{session.home}/Desktop"}).json()["directory_tree"]
    assert tree["name"] == "Desktop" and tree["type"] == "directory"
    assert {"name": "data", "type": "directory", "children": [{"name": "report.bin", "type": "file"}]} in tree[
        "children"
    ]
    # SetupController._execute_setup: POST /setup/execute, reads output, error and returncode
    results = vm.request("POST", "/setup/execute", json_data={"command": ["ls", "~/Desktop/data"], "shell": False})
    assert results.status_code == 200
    assert {k: results.json()[k] for k in ("output", "error", "returncode")} == {
        "output": "report.bin\n",
        "error": "",
        "returncode": 0,
    }


def test_windows_launch_verify_size_activate_and_close(vm: OSWorldHTTP) -> None:
    launched = vm.request("POST", "/setup/launch", json_data={"command": ["xterm"], "shell": False})
    assert launched.status_code == 200
    # SetupController._execute_with_verification_setup
    payload = {
        "command": ["true"],
        "shell": False,
        "verification": {"window_exists": "xterm", "command_success": "test -d ~/Desktop"},
        "max_wait_time": 10,
        "check_interval": 0.2,
    }
    verified = vm.request("POST", "/setup/execute_with_verification", json_data=payload)
    assert verified.status_code == 200, verified.content
    assert verified.json()["verification"] == "passed" and verified.json()["returncode"] == 0
    payload.update(verification={"command_success": "false"}, max_wait_time=0.6)
    failed = vm.request("POST", "/setup/execute_with_verification", json_data=payload)
    assert failed.status_code == 500 and failed.json()["status"] == "verification_failed"
    # get_vm_window_size: data={"app_class_name": ...}, an urlencoded form
    size = vm.request("POST", "/window_size", form={"app_class_name": "XTerm"})
    assert size.status_code == 200
    assert size.json()["width"] > 100 and size.json()["height"] > 100
    assert vm.request("POST", "/window_size", form={}).json() == {"error": "app_class_name is required"}
    window = {"window_name": "xterm", "strict": False, "by_class": True}
    assert vm.request("POST", "/setup/activate_window", json_data=window).status_code == 200
    assert vm.request("POST", "/setup/close_window", json_data=window).status_code == 200
    deadline = time.monotonic() + 10
    while vm.request("POST", "/window_size", form={"app_class_name": "xterm"}).status_code == 200:
        assert time.monotonic() < deadline, "the xterm window did not close"
        time.sleep(0.1)


def test_open_file_opens_a_file_or_answers_404(vm: OSWorldHTTP, session: DesktopSession) -> None:
    if not shutil.which("mousepad"):
        pytest.skip("mousepad is not installed (make system-deps installs it): it opens text files here")
    assert vm.upload(f"{session.home}/Desktop/notes.txt", b"hello\n").status_code == 200
    # SetupController._open_setup: JSON {"path"}
    opened = vm.request("POST", "/setup/open_file", json_data={"path": f"{session.home}/Desktop/notes.txt"})
    assert opened.status_code == 200, opened.content
    missing = vm.request("POST", "/setup/open_file", json_data={"path": f"{session.home}/nope.txt"})
    assert missing.status_code == 404
    vm.request("POST", "/setup/close_window", json_data={"window_name": "mousepad", "by_class": True})


def test_change_wallpaper_then_get_it_back_and_see_it(vm: OSWorldHTTP, session: DesktopSession) -> None:
    image = _png((200, 30, 40))
    path = f"{session.home}/Desktop/wall.png"
    assert vm.upload(path, image).status_code == 200
    changed = vm.request("POST", "/setup/change_wallpaper", json_data={"path": path})
    assert changed.status_code == 200, changed.content
    wallpaper = vm.request("POST", "/wallpaper")  # get_vm_wallpaper: the file's bytes
    assert wallpaper.status_code == 200 and wallpaper.content == image
    pixel = session.screenshot()[470, 630]  # bottom-right corner: no window there
    assert abs(int(pixel[0]) - 200) < 8 and abs(int(pixel[1]) - 30) < 8 and abs(int(pixel[2]) - 40) < 8
    assert vm.request("POST", "/setup/change_wallpaper", json_data={"path": "~/none.png"}).status_code == 404
    assert vm.request("POST", "/setup/change_wallpaper", json_data={}).status_code == 400


def test_download_file_fetches_into_the_desktop(vm: OSWorldHTTP, session: DesktopSession) -> None:
    payload = b"downloaded " + uuid.uuid4().bytes

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/file.bin"
        path = f"{session.home}/Desktop/dl/file.bin"
        done = vm.request("POST", "/setup/download_file", json_data={"url": url, "path": path})
        assert done.status_code == 200 and f"{len(payload)} bytes" in done.content.decode()
        assert vm.get_file(path).content == payload
        local = vm.request("POST", "/setup/download_file", json_data={"url": "file:///etc/passwd", "path": path})
        assert local.status_code == 400
    finally:
        server.shutdown()
        server.server_close()


def playable(video: bytes, tmp: Path) -> dict[str, Any]:
    """What ``ffprobe`` reads from ``video`` once every frame is decoded: codec, size, frames."""
    path = tmp / "recording.mp4"
    path.write_bytes(video)
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,width,height,nb_read_frames", "-of", "json", str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    return dict(json.loads(probe.stdout)["streams"][0])


def test_recording_gives_a_playable_mp4(vm: OSWorldHTTP, tmp_path: Path) -> None:
    if shutil.which("ffmpeg") is None:  # make setup installs it with the desktop's packages
        started = vm.request("POST", "/start_recording")
        assert started.status_code == 500 and "apt-get install -y ffmpeg" in started.json()["message"]
        assert vm.request("POST", "/end_recording").status_code == 400
        pytest.skip("ffmpeg is not installed (make setup installs it): /start_recording answers 500 naming it")
    started = vm.request("POST", "/start_recording")
    assert started.status_code == 200 and started.json()["status"] == "success", started.content
    assert vm.request("POST", "/start_recording").status_code == 400  # one at a time
    for x in (100, 300, 500):
        vm.execute_python_command(f"pyautogui.moveTo({x}, 300); time.sleep(0.3)")
    ended = vm.request("POST", "/end_recording")
    assert ended.status_code == 200 and ended.content[4:8] == b"ftyp"  # an MP4
    stream = playable(ended.content, tmp_path)
    assert (stream["codec_name"], stream["width"], stream["height"]) == ("h264", 640, 480)
    assert int(stream["nb_read_frames"]) >= 10
    assert vm.request("POST", "/end_recording").status_code == 400


def test_accessibility_answers_the_tree_or_503(vm: OSWorldHTTP, session: DesktopSession) -> None:
    answer = vm.request("GET", "/accessibility")
    if session.bus_address is None:
        assert answer.status_code == 503
    else:
        assert answer.status_code == 200 and answer.json()["AT"].startswith("<desktop-frame")


def test_new_command_routes_need_the_token(session: DesktopSession) -> None:
    new_routes = {
        "/run_bash_script",
        "/execute_with_verification",
        "/setup/execute_with_verification",
        "/setup/change_wallpaper",
        "/setup/download_file",
        "/start_recording",
        "/end_recording",
        "/wallpaper",
    }
    assert new_routes <= COMMAND_ROUTES
    with serve_desktop(session, token="parity-token") as handle:
        anonymous, holder = OSWorldHTTP(handle.base_url), OSWorldHTTP(handle.base_url, token="parity-token")
        for route in sorted(new_routes):
            assert anonymous.request("POST", route, json_data={}).status_code == 401, route
        ran = holder.request("POST", "/run_bash_script", json_data={"script": "echo ok", "timeout": 10})
        assert ran.status_code == 200 and ran.json()["output"] == "ok\n"
    with serve_desktop(session) as handle:  # no token and no --insecure-loopback: command routes refused
        assert OSWorldHTTP(handle.base_url).request("POST", "/run_bash_script", json_data={}).status_code == 403
