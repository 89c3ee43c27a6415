"""Scripted GUI solutions for OSWorld's own task ids, kept apart from the task files.

OSWorld's task JSON (``evaluation_examples/examples/<domain>/<id>.json``) is the user's and stays
byte-identical; the solutions live here, keyed by task id. :meth:`OSWorldEnv.oracle_plan
<agentrl.envs.osworld.env.OSWorldEnv.oracle_plan>` falls back to :func:`real_oracle` when a task has
no ``"oracle"`` of its own, so ``env.oracle_action()`` replays them step by step.

A solution drives the desktop as an agent would: pyautogui code that types into a terminal, then
``DONE``; an infeasible task is answered with ``FAIL``. The first step starts an ``xterm`` at a
known place from the action's own code (``ctrl+alt+t`` opens one too, see
:mod:`~agentrl.envs.osworld.hotkeys`, but where its window lands is the window manager's choice);
every change after that is typed.

Each entry was run end to end against OSWorld's real files and scored 1.0
(``tests/test_osworld_real_oracles.py``, with ``AGENTRL_OSWORLD_EXAMPLES`` set).

>>> real_oracle("b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa")  # "switch off the Bluetooth": infeasible here
('FAIL',)
>>> real_oracle("no-such-task") is None
True
>>> real_oracle("bedcedc4-4d72-425e-ad62-21960b11fe0d")[-1]
'DONE'
"""

from __future__ import annotations

__all__ = ["REAL_ORACLES", "open_terminal", "real_oracle", "type_command"]

TERMINAL_GEOMETRY = "100x30+80+60"
"""Where the oracle's xterm opens: clear of the screen's corners, so one click focuses it."""


def open_terminal() -> str:
    """The action that starts an ``xterm`` and focuses it with a click.

    >>> "xterm" in open_terminal() and "pyautogui.click" in open_terminal()
    True
    """
    return (
        "import subprocess\n"
        f"subprocess.Popen(['xterm', '-geometry', {TERMINAL_GEOMETRY!r}])\n"
        "time.sleep(2.0)\n"
        "pyautogui.click(300, 200)\n"
        "time.sleep(0.3)"
    )


def type_command(command: str, *, wait_s: float = 1.0) -> str:
    """The action that types ``command`` into the focused terminal, presses Enter and waits ``wait_s``.

    >>> print(type_command("ls", wait_s=0.5))
    pyautogui.write('ls', interval=0.01)
    pyautogui.press('enter')
    time.sleep(0.5)
    """
    if "\n" in command:
        raise ValueError("type_command takes one line; give each command its own action")
    return f"pyautogui.write({command!r}, interval=0.01)\npyautogui.press('enter')\ntime.sleep({wait_s})"


def _in_terminal(*commands: str) -> tuple[str, ...]:
    return (open_terminal(), *(type_command(command) for command in commands), "DONE")


INFEASIBLE = ("FAIL",)

REAL_ORACLES: dict[str, tuple[str, ...]] = {
    # os: "Could you set the 'Dim screen when inactive' to off in setting?"
    "bedcedc4-4d72-425e-ad62-21960b11fe0d": _in_terminal("gsettings set org.gnome.desktop.session idle-delay 0"),
    # os: "... switch to 'Do not disturb mode'?"
    "f9be0997-4b7c-45c5-b05c-4612b44a6118": _in_terminal(
        "gsettings set org.gnome.desktop.notifications show-banners false"),
    # os: "I want to have my computer automatically locked after I leaved."
    "a4d98375-215b-4a4d-aee9-3d4370fccc41": _in_terminal(
        "gsettings set org.gnome.desktop.screensaver lock-enabled true"),
    # os: rename the directory todo_list_Jan_1 (on the Desktop) to todo_list_Jan_2
    "e0df059f-28a6-4169-924f-b9623e7184cc": _in_terminal("mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2"),
    # os, infeasible: switch to user 'Charles'; Bluetooth off; battery percentage; default Python; "$sourceDir"
    "a462a795-fdc7-4b23-b689-e8b6df786b78": INFEASIBLE,
    "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa": INFEASIBLE,
    "fe41f596-a71b-4c2f-9b2f-9dcd40b568c3": INFEASIBLE,
    "c288e301-e626-4b98-a1ab-159dcb162af5": INFEASIBLE,
    "4783cc41-c03c-4e1b-89b4-50658f642bd5": INFEASIBLE,
}
"""Task id -> the actions that solve it (pyautogui code, ``DONE``, ``FAIL``)."""


def real_oracle(task_id: str) -> tuple[str, ...] | None:
    """The scripted solution of OSWorld task ``task_id`` (a domain-qualified ``"os/<id>"`` too), else ``None``."""
    return REAL_ORACLES.get(task_id.rsplit("/", 1)[-1])
