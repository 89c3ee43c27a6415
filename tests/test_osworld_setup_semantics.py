"""OSWorld's own task files step over a failing command or a missing window, as OSWorld does; ours raise.

No desktop: a recording client stands in for the desktop server's HTTP client.
"""

from __future__ import annotations

import urllib.error
from typing import Any

import pytest

from agentrl.envs.osworld.setup import SetupError, run_setup
from agentrl.envs.osworld.tasks import OSWorldTask, SetupStep


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
