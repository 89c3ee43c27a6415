"""The desktop's applications: which Debian packages provide them, how to start them, what opens a file.

OSWorld's tasks start apps by their Ubuntu names (``google-chrome``, ``gedit``, ``libreoffice``); the
local desktop runs Debian's small equivalents. :func:`resolve_command` rewrites a task's command to
the installed app with the flags it needs here (Chromium as root wants ``--no-sandbox``, and no
network, sync or first-run UI), and :func:`opener_for` picks the app for OSWorld's ``open`` step.

>>> resolve_command(["gedit", "notes.txt"])[1:]
['notes.txt']
>>> resolve_command(["xterm"])
['xterm']
>>> resolve_command(["vlc", "a.mp4"])
['vlc', '--extraintf=http', '--http-port=8080', '--http-password=password', 'a.mp4']
>>> opener_for("report.csv", installed=lambda name: name != "libreoffice")[0]
'mousepad'
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import PurePath

from agentrl.envs.osworld.runtime.cdp import PORT as CDP_PORT

__all__ = [
    "VLC_HTTP_FLAGS",
    "VLC_HTTP_PASSWORD",
    "VLC_HTTP_PORT",
    "APP_PACKAGES",
    "CHROMIUM_FLAGS",
    "NOT_IN_DEBIAN",
    "RELATED_APPS",
    "install_hint",
    "installed_apps",
    "opener_for",
    "resolve_command",
]

VLC_HTTP_PORT = 8080
"""VLC's HTTP interface port (OSWorld's VM image turns the interface on; ``vlc_playing_info`` reads it)."""
VLC_HTTP_PASSWORD = "password"
"""Its Lua HTTP password, OSWorld's."""
VLC_HTTP_FLAGS: tuple[str, ...] = (
    "--extraintf=http",
    f"--http-port={VLC_HTTP_PORT}",
    f"--http-password={VLC_HTTP_PASSWORD}",
)
"""What VLC is started with here, so that its HTTP interface answers as on OSWorld's VM."""

APP_PACKAGES: dict[str, str] = {
    "xterm": "xterm",
    "mousepad": "mousepad",
    "thunar": "thunar",
    "galculator": "galculator",
    "chromium": "chromium",
    "libreoffice": "libreoffice-calc",
    "localc": "libreoffice-calc",
    "lowriter": "libreoffice-writer",
    "loimpress": "libreoffice-impress",
    "gimp": "gimp",
    "vlc": "vlc",
    "thunderbird": "thunderbird",
    "socat": "socat",  # OSWorld's Chrome tasks forward the debugging port with it
}
"""App (executable) -> the Debian package that provides it."""

NOT_IN_DEBIAN: dict[str, str] = {
    "code": "Visual Studio Code is not packaged in Debian: install Microsoft's code .deb on the desktop",
}
"""Apps OSWorld's tasks use that no Debian package provides -> how to get them."""

RELATED_APPS: dict[str, str] = {
    "chrome": "chromium",
    "browser": "chromium",
    "libreoffice_calc": "localc",
    "libreoffice calc": "localc",
    "calc": "localc",
    "libreoffice_writer": "lowriter",
    "writer": "lowriter",
    "libreoffice_impress": "loimpress",
    "gimp": "gimp",
    "vlc": "vlc",
    "thunderbird": "thunderbird",
    "vs_code": "code",
    "vscode": "code",
}
"""OSWorld's ``related_apps`` names (lower-cased) -> the executable that app needs on this desktop.

Names with no entry (``os``, ``terminal``, ``pdf``, ``image``...) need no particular app."""

CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-features=Translate,MediaRouter",
    "--disable-smooth-scrolling",  # a scroll lands in one frame: the screen after it no longer depends on timing
    "--password-store=basic",
    "--force-renderer-accessibility",
    "--proxy-server=127.0.0.1:9",  # local pages only: every network request fails fast
    "--proxy-bypass-list=<-loopback>",
)
"""Flags for Chromium on the desktop; ``--force-renderer-accessibility`` puts page content in the a11y tree."""

_ALIASES: dict[str, str] = {
    "google-chrome": "chromium",
    "chromium-browser": "chromium",
    "chrome": "chromium",
    "gedit": "mousepad",
    "gnome-text-editor": "mousepad",
    "nautilus": "thunar",
    "gnome-calculator": "galculator",
    "gnome-terminal": "xterm",
}

_BY_SUFFIX: dict[str, str] = {
    ".html": "chromium",
    ".htm": "chromium",
    ".pdf": "chromium",
    ".csv": "libreoffice",
    ".xlsx": "libreoffice",
    ".ods": "libreoffice",
}


def resolve_command(argv: Sequence[str]) -> list[str]:
    """``argv`` with an OSWorld/Ubuntu app name mapped to the installed app and its flags.

    Chromium always gets ``--remote-debugging-port=9222`` in place of the port asked for (OSWorld starts
    Chrome on 1337 and forwards 9222 to it with ``socat``): the getters of
    :mod:`~agentrl.envs.osworld.evaluators.chrome` reach it there, from inside the desktop's sandbox.
    """
    if not argv:
        return []
    head, rest = PurePath(argv[0]).name, list(argv[1:])
    head = _ALIASES.get(head, head)
    if head == "chromium":  # DevTools always on CDP_PORT, inside the sandbox's own network namespace
        rest = [arg for arg in rest if not arg.startswith("--remote-debugging-port")]
        return ["chromium", *CHROMIUM_FLAGS, f"--remote-debugging-port={CDP_PORT}", *rest]
    if head == "libreoffice":
        return ["libreoffice", "--norestore", "--nologo", *rest]
    if head == "vlc":  # the HTTP interface OSWorld's VM turns on in VLC's preferences (vlc_playing_info reads it)
        flags = [flag for flag in VLC_HTTP_FLAGS if flag.split("=")[0] not in {a.split("=")[0] for a in rest}]
        return ["vlc", *flags, *rest]
    return [head, *rest] if head != PurePath(argv[0]).name else list(argv)


def installed_apps(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """The apps of :data:`APP_PACKAGES` and :data:`NOT_IN_DEBIAN` found on ``PATH``."""
    return [app for app in (*APP_PACKAGES, *NOT_IN_DEBIAN) if which(app)]


def install_hint(app: str) -> str:
    """How to install ``app`` on the desktop.

    >>> install_hint("gimp")
    'apt-get install -y --no-install-recommends gimp'
    >>> install_hint("code")[:40]
    'Visual Studio Code is not packaged in De'
    """
    if app in APP_PACKAGES:
        return f"apt-get install -y --no-install-recommends {APP_PACKAGES[app]}"
    return NOT_IN_DEBIAN.get(app, f"install {app} on the desktop")


def opener_for(path: str, *, is_dir: bool = False, installed: Callable[[str], bool] | None = None) -> list[str]:
    """The command that opens ``path`` (a folder in thunar, a web page in Chromium, text in mousepad).

    A spreadsheet opens in LibreOffice when it is installed, else as text.
    """
    have = installed or (lambda name: shutil.which(name) is not None)
    if is_dir:
        return ["thunar", path]
    app = _BY_SUFFIX.get(PurePath(path).suffix.lower(), "mousepad")
    if app == "libreoffice" and not have("libreoffice"):
        app = "mousepad"
    if app == "chromium":
        return resolve_command(["chromium", path if "://" in path else f"file://{path}"])
    return resolve_command([app, path])
