"""OSWorld's own task files step over a failing command or a missing window, as OSWorld does; ours raise.

No desktop: a recording client stands in for the desktop server's HTTP client.
"""

from __future__ import annotations

import urllib.error
from typing import Any

import pytest

from agentrl.envs.osworld.tasks.format import OSWorldTask, SetupStep
from agentrl.envs.osworld.tasks.setup import SetupError, run_setup


class Client:
    """Answers ``execute`` with the return code 1 for ``false``, 0 otherwise; no window is ever found."""

    def __init__(self, *, gone: bool = False) -> None:
        self.ran: list[Any] = []
        self.gone = gone

    def execute(self, command: Any, shell: bool = False) -> dict[str, Any]:
        if self.gone:
            raise urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))
        self.ran.append(command)
        return {"returncode": 1 if command == "false" else 0, "error": "failed on purpose"}

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> dict[str, Any]:
        raise urllib.error.HTTPError("http://127.0.0.1/setup/activate_window", 404, "window not found", {}, None)


STEPS = [
    SetupStep("execute", {"command": "false", "shell": True}),
    SetupStep("activate_window", {"window_name": "Terminal"}),
    SetupStep("execute", {"command": "true", "shell": True}),
]


def test_strict_setup_raises_on_the_first_failing_step() -> None:
    client = Client()
    with pytest.raises(SetupError, match=r"setup step 0 \(execute\): execute 'false' failed"):
        run_setup(client, STEPS)
    assert client.ran == ["false"]


def test_lenient_setup_logs_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    client, warnings = Client(), []
    run_setup(client, STEPS, lenient=True, warnings=warnings)
    assert client.ran == ["false", "true"]  # the last step ran
    assert len(warnings) == 2
    assert warnings[0].startswith("setup step 0 (execute)") and "setup step 1 (activate_window)" in warnings[1]
    assert "stepped over" in caplog.text


def test_lenient_setup_still_raises_for_a_gone_desktop_or_a_bad_step() -> None:
    with pytest.raises(SetupError, match="URLError"):
        run_setup(Client(gone=True), STEPS, lenient=True)
    with pytest.raises(SetupError, match="lacks the parameter 'command'"):
        run_setup(Client(), [SetupStep("execute", {})], lenient=True)
    with pytest.raises(SetupError, match="not supported"):
        run_setup(Client(), [SetupStep("no_such_step", {})], lenient=True)


@pytest.mark.parametrize(("snapshot", "expected"), [("os", True), ("libreoffice_calc", True), ("", False),
                                                    ("agentrl-debian", False)])
def test_which_tasks_are_osworlds(snapshot: str, expected: bool) -> None:
    data = {"id": "t", "instruction": "x", "evaluator": {"func": "infeasible"}, "snapshot": snapshot}
    assert OSWorldTask.from_dict(data).from_osworld is expected


class CachingClient(Client):
    """A client whose commands print, with a cache folder, as DesktopClient has."""

    def __init__(self, cache_dir: Any) -> None:
        super().__init__()
        self.cache_dir = cache_dir

    def execute(self, command: Any, shell: bool = False) -> dict[str, Any]:
        self.ran.append(command)
        return {"returncode": 1, "output": f"out of {command}\n", "error": "err\n"}


def test_stdout_and_stderr_are_saved_for_cache_file_even_when_the_command_fails(tmp_path: Any) -> None:
    """OSWorld's ``execute`` step with ``stdout``/``stderr`` names: the evaluator's ``cache_file`` reads them back."""
    from agentrl.envs.osworld.client import DesktopClient

    client = CachingClient(tmp_path)
    step = SetupStep("execute", {"command": "diff a b", "shell": True, "stdout": "diff.out", "stderr": "diff.err"})
    run_setup(client, [step], lenient=True)  # diff exits 1: stepped over, and its output is still saved
    assert (tmp_path / "diff.out").read_text() == "out of diff a b\n"
    assert (tmp_path / "diff.err").read_text() == "err\n"
    with pytest.raises(SetupError, match="leaves the cache folder"):
        run_setup(client, [SetupStep("execute", {"command": "x", "stdout": "../escape"})])
    # and the next episode starts without them
    desktop = DesktopClient("http://127.0.0.1:9", cache_dir=str(tmp_path))
    (tmp_path / "sub").mkdir()
    desktop.clear_cache()
    assert list(tmp_path.iterdir()) == []
