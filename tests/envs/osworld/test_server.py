"""The OSWorld-style HTTP server beside a real DesktopSession, and DesktopClient's evaluate() getters."""

from __future__ import annotations

import importlib.util
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.timeout(300)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if importlib.util.find_spec("pyautogui") is None:
    pytest.skip("pyautogui is missing: pip install 'agentrl-gym[desktop]'", allow_module_level=True)

from agentrl.envs.osworld.client import DesktopClient  # noqa: E402
from agentrl.envs.osworld.runtime.desktop import DesktopSession  # noqa: E402
from agentrl.envs.osworld.server import serve_desktop  # noqa: E402
from agentrl.envs.osworld.tasks.evaluate import evaluate  # noqa: E402
from agentrl.envs.osworld.tasks.format import OSWorldTask  # noqa: E402
from tests.envs.osworld.desktop_fixture import desktop_session  # noqa: E402

TOKEN = "server-test-token"


@pytest.fixture(scope="module")
def session() -> Iterator[DesktopSession]:
    yield from desktop_session()


@pytest.fixture(scope="module")
def client(session: DesktopSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DesktopClient]:
    with serve_desktop(session, token=TOKEN) as handle:
        assert handle.base_url.startswith("http://127.0.0.1:")
        yield DesktopClient(handle.base_url, token=TOKEN, cache_dir=str(tmp_path_factory.mktemp("cache")))


def _png_size(png: bytes) -> tuple[int, int]:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_screenshot_platform_and_size(client: DesktopClient) -> None:
    assert _png_size(client.screenshot_png()) == (640, 480)
    assert client.screen_size() == (640, 480)
    assert client.platform() == "Linux"


def test_execute(client: DesktopClient, session: DesktopSession) -> None:
    result = client.execute(["echo", "hi"])
    assert result == {"status": "success", "output": "hi\n", "error": "", "returncode": 0}
    assert client.execute("echo $HOME $DISPLAY", shell=True)["output"] == f"{session.home} {session.display}\n"
    failed = client.execute("exit 3", shell=True)
    assert failed["status"] == "error" and failed["returncode"] == 3
    slow = client.execute(["sleep", "10"], timeout_s=0.3)
    assert slow["status"] == "error" and slow["returncode"] is None and "timed out" in slow["error"]
    assert client.run_python("print(6 * 7)")["output"] == "42\n"


def test_files_and_directories(client: DesktopClient, session: DesktopSession) -> None:
    path = f"{session.home}/Desktop/note.txt"
    client.execute(f"mkdir -p ~/Desktop/sub && printf 'hello\\n' > {path} && touch ~/Desktop/sub/b.txt", shell=True)
    assert client.read_file(path) == b"hello\n"
    assert client.read_file("~/Desktop/note.txt") == b"hello\n"
    local = client.get({"type": "vm_file", "path": path, "dest": "note.txt"})
    assert local is not None and open(local, encoding="utf-8").read() == "hello\n"
    assert client.read_file(f"{session.home}/missing.txt") is None
    assert client.get({"type": "vm_file", "path": f"{session.home}/missing.txt", "dest": "m.txt"}) is None
    tree = client.get({"type": "list_directory", "path": f"{session.home}/Desktop"})
    assert tree == {
        "name": "Desktop",
        "type": "directory",
        "children": [
            {"name": "note.txt", "type": "file"},
            {"name": "sub", "type": "directory", "children": [{"name": "b.txt", "type": "file"}]},
        ],
    }
    assert client.list_directory(f"{session.home}/nope") is None
    assert client.get({"type": "vm_command_line", "command": "cat ~/Desktop/note.txt", "shell": True}) == "hello\n"
    assert client.get({"type": "vm_terminal_output"}) is None


@pytest.mark.skipif(not shutil.which("xterm"), reason="needs xterm")
def test_launch_changes_the_screen(client: DesktopClient) -> None:
    before = client.screenshot_png()
    out = client.launch(["xterm", "-geometry", "60x20+0+0", "-bg", "white"])
    assert out["status"] == "success" and out["pid"] > 0
    deadline = time.monotonic() + 10
    while client.screenshot_png() == before:
        assert time.monotonic() < deadline, "the screen did not change after launching xterm"
        time.sleep(0.1)


def test_pyautogui_moves_the_mouse(client: DesktopClient) -> None:
    result = client.pyautogui("pyautogui.moveTo(123, 45); print(tuple(pyautogui.position()))")
    assert result["ok"], result
    assert result["output"].strip() == "(123, 45)"


def test_evaluate_end_to_end(client: DesktopClient, session: DesktopSession) -> None:
    note = f"{session.home}/Desktop/answer.txt"
    task = OSWorldTask.from_dict(
        {
            "id": "server-e2e",
            "instruction": "Write hello into answer.txt and make answer a 'yes'",
            "evaluator": {
                "func": ["check_list", "exact_match"],
                "conj": "and",
                "result": [
                    {"type": "vm_file", "path": note, "dest": "answer.txt"},
                    {"type": "vm_command_line", "command": f"cat {session.home}/yes.txt", "shell": True},
                ],
                "expected": [
                    {"type": "rule", "rules": {"expect": ["^hello$"], "unexpect": ["error"]}},
                    {"type": "rule", "rules": {"expected": "yes"}},
                ],
            },
        }
    )
    client.execute(f"rm -f {note} ~/yes.txt", shell=True)
    score, details = evaluate(task, last_action="DONE", get=client.get)
    assert score == 0.0, details
    client.execute(f"printf 'hello\\n' > {note} && printf yes > ~/yes.txt", shell=True)
    score, details = evaluate(task, last_action="DONE", get=client.get)
    assert score == 1.0, details


def test_an_error_answer_says_why_in_the_clients_exception(client: DesktopClient) -> None:
    """A setup step that fails names the server's reason, not only "HTTP Error 500: Internal Server Error"."""
    with pytest.raises(urllib.error.HTTPError) as info:
        client.launch(["/nonexistent/agentrl-app"])
    assert info.value.code == 500
    assert "cannot launch" in str(info.value) and "/nonexistent/agentrl-app" in str(info.value), str(info.value)


def test_token_and_remote(session: DesktopSession) -> None:
    with serve_desktop(session, token="s3cret") as handle:
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(handle.base_url + "/screen_size", timeout=5)
        assert info.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as info:
            DesktopClient(handle.base_url, token="wrong").screen_size()
        assert info.value.code == 401
        assert DesktopClient(handle.base_url, token="s3cret").screen_size() == (640, 480)
    with pytest.raises(ValueError, match="non-loopback"):
        serve_desktop(session, host="0.0.0.0")
    with pytest.raises(ValueError, match="token"):
        serve_desktop(session, host="0.0.0.0", allow_remote=True)
