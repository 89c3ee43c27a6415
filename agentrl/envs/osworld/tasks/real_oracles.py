"""Scripted GUI solutions for OSWorld's own task ids, kept apart from the task files.

OSWorld's task JSON (``evaluation_examples/examples/<domain>/<id>.json``) is the user's and stays
byte-identical; the solutions live here, keyed by task id. :meth:`OSWorldEnv.oracle_plan
<agentrl.envs.osworld.env.OSWorldEnv.oracle_plan>` falls back to :func:`real_oracle` when a task has
no ``"oracle"`` of its own, so ``env.oracle_action()`` replays them step by step.

A solution drives the desktop as an agent would: pyautogui code that types into a terminal, then
``DONE``; an infeasible task is answered with ``FAIL``. The first step starts an ``xterm`` at a
known place from the action's own code (``ctrl+alt+t`` opens one too, see
:mod:`~agentrl.envs.osworld.runtime.hotkeys`, but where its window lands is the window manager's choice);
every change after that is typed.

Each entry was run end to end against OSWorld's real files and scored 1.0
(``tests/envs/osworld/tasks/test_real_oracles.py``, with ``AGENTRL_OSWORLD_EXAMPLES`` set).

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


def _in_chromium_address_bar(url: str) -> tuple[str, ...]:
    """Focus the open Chromium window, type ``url`` into its address bar and go there."""
    focus = "pyautogui.click(640, 400)\ntime.sleep(0.5)\npyautogui.hotkey('ctrl', 'l')\ntime.sleep(0.3)"
    return (focus, type_command(url, wait_s=2.0), "DONE")


CHROMIUM_PROFILE = "~/.config/chromium"
"""Debian's Chromium keeps its profile here (OSWorld's Chrome: ``~/.config/google-chrome``)."""

CLOSE_CHROMIUM = "pkill -f chromium; while pgrep -f chromium > /dev/null; do sleep 0.3; done"
"""Close Chromium and wait until it has gone: it writes its profile files as it exits, so an edit made while it
runs would be overwritten."""


def _chromium_setting(keys: tuple[str, ...], value: object, file: str = "Default/Preferences") -> str:
    """A shell line that sets ``keys`` (a path into the JSON) to ``value`` in one of Chromium's profile files.

    >>> print(_chromium_setting(("webkit", "webprefs", "default_font_size"), 20).split(";")[-2])
    d.setdefault('webkit',{}).setdefault('webprefs',{})['default_font_size']=20
    """
    path = f"{CHROMIUM_PROFILE}/{file}"
    walk = "".join(f".setdefault({key!r},{{}})" for key in keys[:-1])
    code = (f"import json,os;p=os.path.expanduser({path!r});d=json.load(open(p));"
            f"d{walk}[{keys[-1]!r}]={value!r};json.dump(d,open(p,'w'))")
    return f'python3 -c "{code}"'


def _in_chromium_settings(*lines: str) -> tuple[str, ...]:
    """Close Chromium from a terminal, then change its profile's settings there (as chrome://settings would)."""
    return _in_terminal(CLOSE_CHROMIUM, *lines)


BOOKMARK_BAR_FOLDER = (
    "python3 -c \"import json,os;p=os.path.expanduser('~/.config/chromium/Default/Bookmarks');"
    "f=lambda n,c:{'type':'folder','name':n,'children':c};"
    "json.dump({'version':1,'roots':{'bookmark_bar':f('Bookmarks bar',[f('Favorites',[])]),"
    "'other':f('Other bookmarks',[]),'synced':f('Mobile bookmarks',[])}},open(p,'w'))\""
)
"""A bookmarks file whose bar holds one empty folder, "Favorites" (Chromium writes none before a first bookmark)."""

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
    # os: end the running my_process.sh
    "cc9d4f34-1ca0-4a1b-8ff2-09302696acb9": _in_terminal("pkill -f my_process.sh"),
    # os: move ~/Desktop/todo.txt into ~/Desktop/done/
    "7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82": _in_terminal("mv ~/Desktop/todo.txt ~/Desktop/done/"),
    # os: "enlarge the text on my screen"
    "3ce045a0-877b-42aa-8d2c-b4a863336ab8": _in_terminal(
        "gsettings set org.gnome.desktop.interface text-scaling-factor 1.5"),
    # chrome: open the page where the passwords are stored
    "12086550-11c0-466b-b367-1d9e75b3910e": _in_chromium_address_bar("chrome://password-manager/passwords"),
    # chrome, infeasible: 50 search results a page; dark mode off (it is not on); Korean UI without a restart
    "ae78f875-5b98-4907-bbb5-9c737fc68c03": INFEASIBLE,
    "93eabf48-6a27-4cb6-b963-7d5fe1e0d3a9": INFEASIBLE,
    "3720f614-37fd-4d04-8a6b-76f54f8c222d": INFEASIBLE,
    # chrome: send "Do Not Track"; Enhanced Safe Browsing; Bing as the search engine; delete site data on close;
    # the profile's name "Thomas"; a larger default font; a bookmarks-bar folder "Favorites"
    "030eeff7-b492-4218-b312-701ec99ee0cc": _in_chromium_settings(_chromium_setting(("enable_do_not_track",), True)),
    "9656a811-9b5b-4ddf-99c7-5117bcef0626": _in_chromium_settings(
        _chromium_setting(("safebrowsing", "enhanced"), True)),
    "bb5e4c0d-f964-439c-97b6-bdb9747de3f4": _in_chromium_settings(_chromium_setting(
        ("default_search_provider_data", "template_url_data"),
        {"short_name": "Bing", "keyword": "bing.com", "url": "https://www.bing.com/search?q={searchTerms}"})),
    "99146c54-4f37-4ab8-9327-5f3291665e1e": _in_chromium_settings(
        _chromium_setting(("profile", "default_content_setting_values", "cookies"), 4)),
    "2ae9ba84-3a0d-4d4c-8338-3a1478dc5fe3": _in_chromium_settings(_chromium_setting(("profile", "name"), "Thomas")),
    "af630914-714e-4a24-a7bb-f9af687d3b91": _in_chromium_settings(
        _chromium_setting(("webkit", "webprefs", "default_font_size"), 20)),
    "2ad9387a-65d8-4e33-ad5b-7580065a27ca": _in_chromium_settings(BOOKMARK_BAR_FOLDER),
    # libreoffice_calc, infeasible: sparklines; sorting by cell colour
    "2bd59342-0664-4ccb-ba87-79379096cc08": INFEASIBLE,
    "7b802dad-6e0f-4204-9815-d4e3f57627d8": INFEASIBLE,
}
"""Task id -> the actions that solve it (pyautogui code, ``DONE``, ``FAIL``)."""


def real_oracle(task_id: str) -> tuple[str, ...] | None:
    """The scripted solution of OSWorld task ``task_id`` (a domain-qualified ``"os/<id>"`` too), else ``None``."""
    return REAL_ORACLES.get(task_id.rsplit("/", 1)[-1])
