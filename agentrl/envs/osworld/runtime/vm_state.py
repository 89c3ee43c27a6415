"""OSWorld's VM as its tasks find it: the settings, packages and wallpaper the desktop starts each episode with.

OSWorld's tasks run on an Ubuntu (GNOME) VM image, and some of them are written against that image's
starting state: a task that asks to turn a setting on scores doing nothing as 0 only because the image
has it off. A benchmark's no-op must score here what it scores there, so :class:`VMState` gives the
desktop that state, inside the desktop's own isolation (nothing on the host is installed or changed),
and every reset returns to it.

GSettings defaults (:data:`VM_GSETTINGS`)
    GNOME's schema default of ``org.gnome.desktop.screensaver lock-enabled`` is ``true``; OSWorld's image
    has the screen lock off (task ``a4d98375``, "lock my computer automatically when I leave", checks
    ``gsettings get ... lock-enabled`` for ``true``). The desktop's wallpaper setting
    (``org.gnome.desktop.background picture-uri``) names a real image, as on the VM, whose
    ``/wallpaper`` route and ``vm_wallpaper`` getter always answer one. These are *defaults*, not
    values: the host's compiled schemas plus an override file (:data:`OVERRIDE_NAME`) are compiled into
    a folder of the session, which ``GSETTINGS_SCHEMA_DIR`` puts first for every process of the
    desktop. So ``gsettings get`` answers the VM's value, ``gsettings reset`` returns to it, and a
    reset (which empties HOME, and with it dconf's user database) needs no write at all.

Python (:data:`HIDDEN_PYTHON_MODULES`)
    The desktop's ``python3`` is the server's interpreter with the server's packages importable (so
    ``pyautogui`` imports, as on the VM); of those, ``lxml`` does not import there, as task ``c56de254``
    ("install the lxml package") assumes: :func:`~agentrl.envs.osworld.runtime.jail.write_python_shim`'s
    ``hidden_modules``. An ``lxml`` the agent puts elsewhere on the import path still imports.

Packages (:data:`VM_PACKAGES`)
    The sandbox gets a private copy of the host's package database at ``/var/lib/dpkg`` (its ``status``
    with the VM's extra packages added; the per-package files are links to the host's, bound read-only
    at :data:`HOST_DPKG`) and private ``/var/lib/apt``, ``/var/cache/apt``, ``/var/cache/debconf`` and
    ``/var/log``. ``dpkg -l`` lists GNOME Mahjongg as installed (task ``ddc75b62``, "uninstall
    Mahjongg", checks ``dpkg -l | grep mahjongg``), and ``sudo apt remove gnome-mahjongg`` (or
    ``apt-get``/``dpkg -r``/``--purge``) uninstalls it there: the sandbox's ``sudo`` gives the package
    tools a root of their own user namespace (:data:`~agentrl.envs.osworld.runtime.jail.SUDO_SHIM`). Mahjongg's
    files are not there (its package lists none); only the database says it is installed. Without
    bubblewrap (a desktop in a container, whose own ``/var/lib/dpkg`` is the VM's) there is no such copy.

The wallpaper image (:func:`default_wallpaper`) is drawn here, at the screen's size, and painted on the
X root window when the desktop starts and again at a reset after something else was painted there.

>>> print(override_text("/w.png").splitlines()[1])
lock-enabled=false
>>> "Package: gnome-mahjongg" in VM_PACKAGES[0] and "Status: install ok installed" in VM_PACKAGES[0]
True
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "HIDDEN_PYTHON_MODULES",
    "HOST_DPKG",
    "OVERRIDE_NAME",
    "VMState",
    "GTK_SETTINGS",
    "VM_GSETTINGS",
    "VM_PACKAGES",
    "default_wallpaper",
    "override_text",
    "write_gtk_settings",
]

VM_GSETTINGS: dict[str, dict[str, str]] = {
    # GNOME's default is true; OSWorld's image keeps the screen from locking (task a4d98375 turns it on).
    "org.gnome.desktop.screensaver": {"lock-enabled": "false"},
}
"""Schema -> key -> GVariant text: defaults of OSWorld's VM that differ from GNOME's."""

WALLPAPER_KEYS = ("picture-uri", "picture-uri-dark")
OVERRIDE_NAME = "99_agentrl-osworld-vm.gschema.override"
HIDDEN_PYTHON_MODULES = ("lxml",)
"""Modules of the server's environment that OSWorld's VM's ``python3`` lacks (task ``c56de254`` installs lxml)."""

HOST_DPKG = "/var/lib/.agentrl-host-dpkg"
"""Where the host's ``/var/lib/dpkg`` is bound read-only in the sandbox (the private copy's links point there)."""

VM_PACKAGES: tuple[str, ...] = (
    # OSWorld's VM has GNOME's games of Ubuntu's normal installation; task ddc75b62 uninstalls Mahjongg.
    "Package: gnome-mahjongg\n"
    "Status: install ok installed\n"
    "Priority: optional\n"
    "Section: games\n"
    "Installed-Size: 4592\n"
    "Maintainer: Debian GNOME Maintainers <pkg-gnome-maintainers@lists.alioth.debian.org>\n"
    "Architecture: all\n"
    "Version: 1:3.38.3-2\n"
    "Description: classic Eastern tile game for GNOME\n"
    " GNOME Mahjongg is a solitaire (one player) version of the classic Eastern\n"
    " tile game. The objective is to select pairs of similar tiles.\n",
)
"""``status`` stanzas of the packages OSWorld's VM has installed that this desktop's host has not."""

# The package database's small files and folders, copied; "info" is links (thousands of files).
_DPKG_FILES = ("available", "diversions", "statoverride", "arch", "cmethopt")
_DPKG_DIRS = ("alternatives", "triggers", "parts")
_PRIVATE_VAR = {"lib-apt": "/var/lib/apt", "cache-apt": "/var/cache/apt", "cache-debconf": "/var/cache/debconf",
                "log": "/var/log"}  # fmt: skip


GTK_SETTINGS = "[Settings]\ngtk-cursor-blink = false\n"
"""GTK's settings for every app of the desktop (GTK 3 and 4, and Chromium, which reads GTK's): the text caret
does not blink. A blinking caret changes the screen twice a second with nothing happening, so two screenshots of
one state would differ and the screen would never hold still for :meth:`DesktopSession.settle`. OSWorld's VM
blinks it; nothing an agent or an evaluator reads depends on it."""


def write_gtk_settings(config: Path) -> None:
    """``gtk-3.0/settings.ini`` and ``gtk-4.0/settings.ini`` under ``config`` (a folder of ``XDG_CONFIG_DIRS``)."""
    for version in ("gtk-3.0", "gtk-4.0"):
        folder = config / version
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "settings.ini").write_text(GTK_SETTINGS, encoding="utf-8")


def override_text(wallpaper: str, settings: Mapping[str, Mapping[str, str]] = VM_GSETTINGS) -> str:
    """The schema override file: :data:`VM_GSETTINGS` and the wallpaper's ``file://`` URI."""
    import pathlib

    groups = {schema: dict(keys) for schema, keys in settings.items()}
    uri = "'" + pathlib.PurePosixPath(wallpaper).as_uri() + "'"
    groups.setdefault("org.gnome.desktop.background", {}).update({key: uri for key in WALLPAPER_KEYS})
    return "\n".join(
        f"[{schema}]\n" + "".join(f"{key}={value}\n" for key, value in keys.items()) for schema, keys in groups.items()
    )


def default_wallpaper(path: Path, width: int, height: int) -> None:
    """Draw the desktop's default wallpaper (a warm diagonal gradient, as Ubuntu's) as a PNG at ``path``."""
    import numpy as np
    from PIL import Image

    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    t = (x / max(width - 1, 1) * 0.6 + y / max(height - 1, 1) * 0.4)[..., None]
    start, end = np.array([44, 0, 30], np.float32), np.array([233, 84, 32], np.float32)  # aubergine to orange
    pixels = (start + (end - start) * t).clip(0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format="PNG")


def _empty(folder: Path) -> None:
    """Make ``folder`` an empty folder, keeping the folder itself (its inode)."""
    folder.mkdir(parents=True, exist_ok=True)
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()


def _schema_compiler() -> str | None:
    found = shutil.which("glib-compile-schemas")
    if found:
        return found
    for candidate in sorted(glob.glob("/usr/lib/*/glib-2.0/glib-compile-schemas")):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _system_schema_dirs() -> list[Path]:
    dirs = os.environ.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
    return [Path(d) / "glib-2.0" / "schemas" for d in dirs.split(":") if d]


class VMState:
    """The VM's starting state for one desktop, kept under ``root`` (a folder of the session).

    Attributes: ``wallpaper`` (the default wallpaper's path), ``schema_dir`` (``None`` when GLib's schema
    compiler is missing; ``note`` says so), ``dpkg`` (``None`` without a host package database).
    """

    def __init__(self, root: Path, width: int, height: int) -> None:
        self.root = Path(root)
        self.share = self.root / "share"
        self.wallpaper = self.share / "backgrounds" / "agentrl-osworld.png"
        self.schema_dir: Path | None = self.share / "glib-2.0" / "schemas"
        self.dpkg: Path | None = None
        self.var: Path = self.root / "var"
        """Where the private package database lives: in memory (``/dev/shm``) where it can, as its thousands of
        links cost seconds to make on some disks."""
        self.note = ""
        self._dpkg_stamp: tuple[int, ...] | None = None
        self.config = self.share / "xdg"
        """A system config folder first in ``XDG_CONFIG_DIRS``: GTK's settings (:data:`GTK_SETTINGS`)."""
        write_gtk_settings(self.config)
        default_wallpaper(self.wallpaper, width, height)
        self._compile_schemas()
        if os.path.isfile("/var/lib/dpkg/status"):  # last: nothing below can fail and leave the folder behind
            shm = Path("/dev/shm")
            if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
                self.var = Path(tempfile.mkdtemp(prefix="agentrl-desktop-var-", dir=shm))
            self.dpkg = self.var / "dpkg"

    # ------------------------------------------------------------------ gsettings
    def _compile_schemas(self) -> None:
        compiler = _schema_compiler()
        if compiler is None:
            self.schema_dir = None
            self.note = "glib-compile-schemas is missing: GNOME's defaults stand (apt-get install libglib2.0-bin)"
            return
        assert self.schema_dir is not None
        source = self.root / "schema-sources"
        source.mkdir(parents=True, exist_ok=True)
        for folder in reversed(_system_schema_dirs()):  # the first folder of XDG_DATA_DIRS wins a name
            for path in sorted(folder.glob("*.xml")) + sorted(folder.glob("*.override")):
                link = source / path.name
                with contextlib.suppress(FileNotFoundError):
                    link.unlink()
                link.symlink_to(path)
        (source / OVERRIDE_NAME).write_text(override_text(str(self.wallpaper)), encoding="utf-8")
        self.schema_dir.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [compiler, f"--targetdir={self.schema_dir}", str(source)], capture_output=True, text=True, check=False
        )
        if result.returncode != 0 or not (self.schema_dir / "gschemas.compiled").exists():
            self.schema_dir = None
            self.note = f"glib-compile-schemas failed: {result.stderr.strip()[-300:]}"

    def env(self) -> dict[str, str]:
        """Variables for every process of the desktop: ``XDG_CONFIG_DIRS`` and ``GSETTINGS_SCHEMA_DIR``."""
        env = {"XDG_CONFIG_DIRS": f"{self.config}:{os.environ.get('XDG_CONFIG_DIRS') or '/etc/xdg'}"}
        if self.schema_dir is not None:
            env["GSETTINGS_SCHEMA_DIR"] = str(self.schema_dir)
        return env

    # ------------------------------------------------------------------ the sandbox's binds
    @property
    def readable(self) -> list[Path]:
        """Folders bound read-only at their own path (the wallpaper, the compiled schemas, GTK's settings)."""
        return [self.share]

    @property
    def mounts(self) -> list[tuple[Path, str, bool]]:
        """``(host path, sandbox path, writable)``: the private package database and apt's folders."""
        if self.dpkg is None:
            return []
        out = [(self.dpkg, "/var/lib/dpkg", True), (Path("/var/lib/dpkg"), HOST_DPKG, False)]
        return out + [(self.var / name, dest, True) for name, dest in _PRIVATE_VAR.items()]

    # ------------------------------------------------------------------ packages
    def _stamp(self) -> tuple[int, ...]:
        """What changes when anything writes the package database or apt's folders (mtimes of the folders)."""
        assert self.dpkg is not None
        paths = [self.dpkg, self.dpkg / "info", self.dpkg / "updates", self.dpkg / "status", self.var]
        paths += [self.dpkg / name for name in _DPKG_DIRS] + [self.var / name for name in _PRIVATE_VAR]
        stamp: list[int] = []
        for path in paths:
            try:
                stat = path.stat()
            except OSError:
                stamp += [-1, -1]
            else:
                stamp += [stat.st_mtime_ns, stat.st_size]
        return tuple(stamp)

    def restore(self) -> None:
        """Put the private package database (and apt's folders) back as the VM's, unless nothing touched them.

        Runs before the desktop's sandbox starts and at each reset, while nothing in the sandbox runs.
        """
        if self.dpkg is None or (self._dpkg_stamp is not None and self._stamp() == self._dpkg_stamp):
            return
        host = Path("/var/lib/dpkg")
        # Emptied, not removed: the sandbox binds these very folders (a new one would not be seen there).
        for folder in [self.dpkg, *(self.var / name for name in _PRIVATE_VAR)]:
            _empty(folder)
        (self.dpkg / "info").mkdir()
        (self.dpkg / "updates").mkdir()
        for name in _DPKG_FILES:
            with contextlib.suppress(OSError):
                shutil.copyfile(host / name, self.dpkg / name)
        for name in _DPKG_DIRS:
            with contextlib.suppress(OSError):
                shutil.copytree(host / name, self.dpkg / name, symlinks=True)
            (self.dpkg / name).mkdir(exist_ok=True)
        status = (host / "status").read_text(encoding="utf-8", errors="replace").rstrip("\n")
        have = {line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("Package:")}
        extra = [stanza for stanza in VM_PACKAGES if stanza.split("\n", 1)[0].split(":", 1)[1].strip() not in have]
        (self.dpkg / "status").write_text(
            "\n\n".join([status, *(s.rstrip("\n") for s in extra)]) + "\n", encoding="utf-8"
        )
        info = self.dpkg / "info"
        with os.scandir(host / "info") as entries:
            for entry in entries:
                os.symlink(f"{HOST_DPKG}/info/{entry.name}", info / entry.name)
        for stanza in extra:
            name = stanza.split("\n", 1)[0].split(":", 1)[1].strip()
            (info / f"{name}.list").write_text("/.\n", encoding="utf-8")  # its files are not there
        self._dpkg_stamp = self._stamp()

    @property
    def outside(self) -> list[Path]:
        """Folders of this state outside ``root`` (in ``/dev/shm``), which the desktop removes when it closes."""
        return [] if self.var.is_relative_to(self.root) else [self.var]
