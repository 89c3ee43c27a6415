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

    A desktop keeps two such copies (:data:`SLOTS`) and runs each episode's sandbox on one while the next
    episode's is made ready on the other (:meth:`VMState.restore`): no sandbox binds a copy while the host
    writes it, and the host writes it through descriptors that follow no link the last sandbox left there
    (:mod:`~agentrl.envs.osworld.runtime.safe_fs`), so a planted ``status -> /etc/passwd`` is replaced, never
    written through. A copy nothing touched since it was made (the change times of everything in it say so)
    is not made again.

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

from agentrl.envs.osworld.runtime import safe_fs

__all__ = [
    "HIDDEN_PYTHON_MODULES",
    "HOST_DPKG",
    "OVERRIDE_NAME",
    "SLOTS",
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
_BOUND = ("dpkg", *_PRIVATE_VAR)
"""The folders of a slot the sandbox binds read-write (the package database first)."""
SLOTS = 2
"""Package databases a desktop keeps: the running sandbox's, and the next one's, made ready meanwhile."""


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
    compiler is missing; ``note`` says so), ``dpkg`` (the running sandbox's package database, slot ``slot``;
    ``None`` without a host package database).
    """

    def __init__(self, root: Path, width: int, height: int) -> None:
        self.root = Path(root)
        self.share = self.root / "share"
        self.wallpaper = self.share / "backgrounds" / "agentrl-osworld.png"
        self.schema_dir: Path | None = self.share / "glib-2.0" / "schemas"
        self.var: Path = self.root / "var"
        """Where the private package databases live (one folder a slot): in memory (``/dev/shm``) where it can,
        as their thousands of links cost seconds to make on some disks."""
        self.has_dpkg = False
        """Whether there is a package database to give the sandbox (the host has ``/var/lib/dpkg/status``)."""
        self.slot = 0
        """The slot (:data:`SLOTS`) of the sandbox running now, whose package database :attr:`dpkg` is."""
        self.note = ""
        self._stamps: dict[int, str] = {}
        self.config = self.share / "xdg"
        """A system config folder first in ``XDG_CONFIG_DIRS``: GTK's settings (:data:`GTK_SETTINGS`)."""
        write_gtk_settings(self.config)
        default_wallpaper(self.wallpaper, width, height)
        self._compile_schemas()
        if os.path.isfile("/var/lib/dpkg/status"):  # last: nothing below can fail and leave the folder behind
            shm = Path("/dev/shm")
            if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
                self.var = Path(tempfile.mkdtemp(prefix="agentrl-desktop-var-", dir=shm))
            self.has_dpkg = True

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

    def slot_dir(self, slot: int) -> Path:
        """The folder of slot ``slot``'s package database and apt folders."""
        return self.var / f"slot{int(slot) % SLOTS}"

    @property
    def dpkg(self) -> Path | None:
        """The package database the sandbox running now sees at ``/var/lib/dpkg`` (``None``: there is none)."""
        return self.slot_dir(self.slot) / "dpkg" if self.has_dpkg else None

    def mounts(self, slot: int = 0) -> list[tuple[Path, str, bool]]:
        """``(host path, sandbox path, writable)``: slot ``slot``'s package database and apt's folders."""
        if not self.has_dpkg:
            return []
        folder = self.slot_dir(slot)
        out = [(folder / "dpkg", "/var/lib/dpkg", True), (Path("/var/lib/dpkg"), HOST_DPKG, False)]
        return out + [(folder / name, dest, True) for name, dest in _PRIVATE_VAR.items()]

    # ------------------------------------------------------------------ packages
    def _stamp(self, slot: int) -> str:
        """What changes when anything writes slot ``slot``'s package database or apt's folders, at any depth.

        :func:`~agentrl.envs.osworld.runtime.safe_fs.tree_stamp` of each bound folder (inode change times, which
        the sandbox cannot set back), read without following a link.
        """
        parts: list[str] = []
        try:
            var = safe_fs.open_dir(self.slot_dir(slot))
        except OSError:
            return "missing"
        try:
            for name in _BOUND:
                try:
                    fd = safe_fs.open_dir(name, dir_fd=var)
                except OSError:
                    parts.append("missing")
                    continue
                try:
                    parts.append(safe_fs.tree_stamp(fd))
                finally:
                    os.close(fd)
        finally:
            os.close(var)
        return "/".join(parts)

    def restore(self, slot: int = 0) -> None:
        """Make slot ``slot``'s package database (and apt's folders) the VM's, unless nothing touched them.

        Call it only while no sandbox binds that slot: before the sandbox that will bind it starts (the desktop
        alternates two slots: the next episode's is prepared while the last episode's sandbox binds the other),
        so no process can write there meanwhile, and the stamp of what was written, taken at the end, is exact.
        The sandbox writes these folders, so the host works in them through descriptors
        (:mod:`~agentrl.envs.osworld.runtime.safe_fs`): a link the sandbox left there (``status -> /etc/x``) is
        removed or replaced, never written through; each file is written new and renamed into place.
        """
        slot = int(slot) % SLOTS
        if not self.has_dpkg or (slot in self._stamps and self._stamp(slot) == self._stamps[slot]):
            return
        self._stamps.pop(slot, None)
        host = Path("/var/lib/dpkg")
        status = (host / "status").read_text(encoding="utf-8", errors="replace").rstrip("\n")
        have = {line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("Package:")}
        extra = [stanza for stanza in VM_PACKAGES if stanza.split("\n", 1)[0].split(":", 1)[1].strip() not in have]
        self.var.mkdir(parents=True, exist_ok=True)
        var = safe_fs.open_dir(self.var)  # made by this process (mkdtemp) and not in the sandbox: only its folders are
        try:
            top = safe_fs.ensure_dir(var, self.slot_dir(slot).name, 0o700)
        finally:
            os.close(var)
        try:
            # Emptied, not removed: a sandbox binds these very folders (a new one would not be seen there).
            for name in _BOUND:
                fd = safe_fs.ensure_dir(top, name)
                try:
                    safe_fs.empty_dir(fd)
                finally:
                    os.close(fd)
            dpkg = safe_fs.open_dir(_BOUND[0], dir_fd=top)
            try:
                self._fill_dpkg(dpkg, host, status, extra)
            finally:
                os.close(dpkg)
        finally:
            os.close(top)
        self._stamps[slot] = self._stamp(slot)

    @staticmethod
    def _fill_dpkg(dpkg: int, host: Path, status: str, extra: list[str]) -> None:
        """Fill the empty package database ``dpkg`` (an open folder) from the host's and the VM's extra packages."""
        os.close(safe_fs.ensure_dir(dpkg, "updates"))
        for name in _DPKG_FILES:
            with contextlib.suppress(OSError):
                safe_fs.copy_file(host / name, dpkg, name)
        for name in _DPKG_DIRS:
            with contextlib.suppress(OSError):
                safe_fs.copy_tree(host / name, dpkg, name)
            with contextlib.suppress(OSError):
                os.close(safe_fs.ensure_dir(dpkg, name))
        text = "\n\n".join([status, *(s.rstrip("\n") for s in extra)]) + "\n"
        safe_fs.write_file(dpkg, "status", text.encode("utf-8"))
        info = safe_fs.ensure_dir(dpkg, "info")
        try:
            with os.scandir(host / "info") as entries:
                for entry in entries:  # into a folder just made: nothing is there to follow
                    os.symlink(f"{HOST_DPKG}/info/{entry.name}", entry.name, dir_fd=info)
            for stanza in extra:
                name = stanza.split("\n", 1)[0].split(":", 1)[1].strip()
                safe_fs.write_file(info, f"{name}.list", b"/.\n")  # its files are not there
        finally:
            os.close(info)

    @property
    def outside(self) -> list[Path]:
        """Folders of this state outside ``root`` (in ``/dev/shm``), which the desktop removes when it closes."""
        return [] if self.var.is_relative_to(self.root) else [self.var]
