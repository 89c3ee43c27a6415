"""The Debian packages AgentRL's sandboxes, browser, desktop and docker tiers use: install what is missing, report.

Standard library only, and importing nothing else of agentrl: the system ``python3`` runs this file before
the virtual environment exists (``make system-deps`` calls it)::

    python3 agentrl/_system_deps.py install     # root + apt-get: install the missing packages, then the table
    python3 agentrl/_system_deps.py check       # the table only; --json for tools (tests/conftest.py reads it)

What it does, and why (docs: MACHINE_NOTES, "Fresh machines that are not ours"):

- Only the packages whose command (or file) is missing are selected. A package is never installed because
  it is on a list: where Node.js comes from NodeSource, ``npm`` is a command of its ``nodejs`` package,
  which conflicts with Debian's ``npm``; asking apt for ``npm`` there fails the whole transaction.
- One ``apt-get install`` per group (the desktop group without recommends); when a group fails, one
  transaction per package, so one broken package does not keep the others out. ``apt-get update`` runs
  once, when apt cannot find a package (a fresh image has no package lists).
- Then every part is probed again and ONE table is printed: the part, its package, installed or missing,
  what a missing part disables (envs, test tiers) and the exact command that installs it.
- Not root: nothing is run; the commands are printed (with ``sudo``). No apt-get: the Debian package names
  are printed for the system's own package manager.

The exit status is 0 whatever is missing (``make`` goes on; the sandbox says which isolation is in force),
unless ``--strict`` is given.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

# What a missing part disables, by area.
_SANDBOX = "Python sandbox isolation (no network namespace, no read-only root): tests/sandboxes/test_sandbox_attacks.py"
_BROWSER = "AgentRL/FlashGame-*-v0, the browser test tier, HTML report rendering (tests/bench/test_bench_report.py)"
_RUFFLE = "Ruffle (npm @ruffle-rs/ruffle), so AgentRL/FlashGame-SWF-v0"
_DOCKER = "the docker test tier: the docker sandbox and AgentRL/OSWorld-v0 provider=docker"
_DESKTOP = "AgentRL/OSWorld-v0 (local desktop) and the desktop test tier"
_WALLPAPER = "the wallpaper routes of agentrl serve-desktop (/setup/change_wallpaper, /wallpaper: GNOME's setting)"
_APPS = "OSWorld's tasks of this app (make desktop-full; agentrl osworld coverage PATH reports them)"
_RECORDING = "screen recordings (/start_recording: OSWorld's runner records every episode), audio/video metrics"
_A11Y = "the accessibility tree of AgentRL/OSWorld-v0 (desktop tier: tests/envs/osworld/test_a11y.py)"
_TKINTER = "pyautogui actions on the desktop when the venv is made from Debian's python3 (pyautogui imports tkinter)"


@dataclass(frozen=True)
class Part:
    """One system part: how to find it, the Debian package that provides it, what its absence disables.

    ``probe`` is a command name (looked up on ``PATH``), an absolute path or a glob of one (``/usr/lib/*/x``),
    or ``dpkg:<package>`` (the package is installed).
    """

    probe: str
    package: str
    tiers: tuple[str, ...]
    disables: str
    note: str = ""
    label: str = ""

    @property
    def name(self) -> str:
        """How the table names the part: its label, the command, the file's base name, or the package."""
        if self.label:
            return self.label
        if self.probe.startswith("dpkg:"):
            return self.probe[len("dpkg:") :]
        return os.path.basename(self.probe) if self.probe.startswith("/") else self.probe


# Every package of the Makefile's SYSTEM_PACKAGES and DESKTOP_PACKAGES has its parts here (a test checks).
PARTS: tuple[Part, ...] = (
    Part("bwrap", "bubblewrap", ("sandbox",), _SANDBOX),
    Part("chromium", "chromium", ("browser",), _BROWSER),
    Part(
        "npm",
        "npm",
        ("swf",),
        _RUFFLE,
        note="with NodeSource's nodejs, npm comes from that package: reinstall it instead",
    ),
    Part("dockerd", "docker.io", ("docker",), _DOCKER),
    Part("debootstrap", "debootstrap", ("docker",), _DOCKER),
    Part("Xvfb", "xvfb", ("desktop",), _DESKTOP),
    Part("xterm", "xterm", ("desktop",), _DESKTOP),
    Part("xdotool", "xdotool", ("desktop",), _DESKTOP),
    Part("xdpyinfo", "x11-utils", ("desktop",), _DESKTOP),
    Part("scrot", "scrot", ("desktop",), _DESKTOP),
    Part("xfwm4", "xfwm4", ("desktop",), _DESKTOP),
    Part("dbus-run-session", "dbus", ("desktop",), _DESKTOP),
    Part("dbus-launch", "dbus-x11", ("desktop",), _DESKTOP),
    Part("mousepad", "mousepad", ("desktop",), _DESKTOP),
    Part("thunar", "thunar", ("desktop",), _DESKTOP),
    Part("galculator", "galculator", ("desktop",), _DESKTOP),
    Part("/usr/libexec/at-spi-bus-launcher", "at-spi2-core", ("desktop",), _A11Y),
    Part("/usr/lib/python3/dist-packages/gi/__init__.py", "python3-gi", ("desktop",), _A11Y, label="gi (python3)"),
    Part("/usr/lib/*/girepository-1.0/Atspi-2.0.typelib", "gir1.2-atspi-2.0", ("desktop",), _A11Y, label="Atspi-2.0"),
    Part("gsettings", "libglib2.0-bin", ("desktop",), _WALLPAPER),
    Part(
        "/usr/lib/*/gio/modules/libdconfsettings.so", "dconf-gsettings-backend", ("desktop",), _WALLPAPER, label="dconf"
    ),
    Part("ffmpeg", "ffmpeg", ("desktop",), _RECORDING),
    Part("/usr/lib/python3*/tkinter/__init__.py", "python3-tk", ("desktop",), _TKINTER, label="tkinter (python3)"),
    # make desktop-full: the apps of OSWorld's task domains (opt-in: about 1 GB).
    Part("localc", "libreoffice-calc", ("desktop-full",), _APPS),
    Part("lowriter", "libreoffice-writer", ("desktop-full",), _APPS),
    Part("loimpress", "libreoffice-impress", ("desktop-full",), _APPS),
    Part("gimp", "gimp", ("desktop-full",), _APPS),
    Part("vlc", "vlc", ("desktop-full",), _APPS),
    Part("thunderbird", "thunderbird", ("desktop-full",), _APPS),
)

# The Makefile passes its own lists; these are the same, for running this file by hand.
SYSTEM_PACKAGES = ("bubblewrap", "chromium", "npm", "docker.io", "debootstrap")
DESKTOP_PACKAGES = (
    "xvfb", "xterm", "xdotool", "x11-utils", "scrot", "xfwm4", "dbus", "dbus-x11", "mousepad", "thunar",
    "galculator", "at-spi2-core", "python3-gi", "gir1.2-atspi-2.0", "libglib2.0-bin", "dconf-gsettings-backend",
    "ffmpeg", "python3-tk",
)  # fmt: skip
FULL_DESKTOP_PACKAGES = (
    "libreoffice-calc", "libreoffice-writer", "libreoffice-impress", "gimp", "vlc", "thunderbird",
)  # fmt: skip

# apt waits for a lock another apt holds (a machine's own updater) instead of failing at once.
APT_INSTALL = ("apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=600")
APT_UPDATE = ("apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600")
NOT_FOUND = re.compile(r"Unable to locate package|has no installation candidate|no installation candidate")


def parts_for(packages: Iterable[str]) -> list[Part]:
    """The parts of these packages, in their order; a package without a known part is probed through dpkg."""
    parts: list[Part] = []
    for package in packages:
        known = [part for part in PARTS if part.package == package]
        parts.extend(known or [Part(f"dpkg:{package}", package, (), "(not known to agentrl)")])
    return parts


def is_present(part: Part) -> bool:
    """Whether the part is on this machine (its command on PATH, its file, or its package installed)."""
    if part.probe.startswith("dpkg:"):
        package = part.probe[len("dpkg:") :]
        return bool(glob.glob(f"/var/lib/dpkg/info/{package}.list") + glob.glob(f"/var/lib/dpkg/info/{package}:*.list"))
    if part.probe.startswith("/"):
        return any(os.path.exists(path) for path in glob.glob(part.probe))
    return shutil.which(part.probe) is not None


def select_packages(parts: Sequence[Part], present: Callable[[Part], bool] = is_present) -> list[str]:
    """The packages to install: those with a missing part, each once, in order.

    A package whose commands are all there is never selected, even when it is on a list: on a machine
    where ``npm`` is a command (NodeSource's nodejs), Debian's ``npm`` is not asked for.

    >>> select_packages(parts_for(["bubblewrap", "npm"]), present=lambda part: part.probe == "npm")
    ['bubblewrap']
    """
    selected: list[str] = []
    for part in parts:
        if part.package not in selected and not present(part):
            selected.append(part.package)
    return selected


Runner = Callable[[Sequence[str]], tuple[int, str]]


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Run a command non-interactively; its exit status and its output (stdout and stderr together)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = subprocess.run(list(argv), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as exc:
        return 127, str(exc)
    return done.returncode, done.stdout + done.stderr


def apt_install_argv(packages: Sequence[str], no_recommends: bool) -> list[str]:
    """The ``apt-get install`` command line for these packages."""
    return [*APT_INSTALL, *(["--no-install-recommends"] if no_recommends else []), *packages]


def user_command(packages: Sequence[str], no_recommends: bool, root: bool) -> str:
    """The command a person types to install these packages (with ``sudo`` when not root)."""
    words = ["apt-get", "install", "-y", *(["--no-install-recommends"] if no_recommends else []), *packages]
    return ("" if root else "sudo ") + shlex.join(words)


def _errors(output: str) -> str:
    """The lines of apt's output that say why it failed: its first two unmet relations and its ``E:`` lines."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    relations = [line for line in lines if re.search(r"\b(Conflicts|Breaks|Depends|PreDepends): ", line)][:2]
    errors = [line for line in lines if line.startswith("E:")][:3]
    return " | ".join(relations + errors or lines[-2:])


@dataclass
class Installer:
    """Installs missing packages with apt-get, group first, then one by one; records what it did."""

    runner: Runner = run_command
    log: Callable[[str], None] = print
    updated: bool = False
    attempts: list[tuple[list[str], int]] = field(default_factory=list)

    def _run(self, argv: Sequence[str]) -> tuple[int, str]:
        code, output = self.runner(list(argv))
        self.attempts.append((list(argv), code))
        return code, output

    def _install(self, packages: Sequence[str], no_recommends: bool) -> tuple[int, str]:
        """One transaction; when apt cannot find a package and no update ran yet, update once and retry."""
        code, output = self._run(apt_install_argv(packages, no_recommends))
        if code != 0 and not self.updated and NOT_FOUND.search(output):
            self.updated = True
            self.log("apt-get could not find a package: running apt-get update once")
            update_code, update_output = self._run(APT_UPDATE)
            if update_code != 0:
                self.log(f"  apt-get update failed: {_errors(update_output)}")
            code, output = self._run(apt_install_argv(packages, no_recommends))
        return code, output

    def install(self, packages: Sequence[str], no_recommends: bool) -> list[str]:
        """Install the packages: one transaction; on failure one per package. Returns those that failed."""
        if not packages:
            return []
        self.log(f"installing: {user_command(packages, no_recommends, root=True)}")
        code, output = self._install(packages, no_recommends)
        if code == 0:
            return []
        if len(packages) == 1:
            self.log(f"  failed: {_errors(output)}")
            return list(packages)
        self.log(f"  the group failed ({_errors(output)}); installing one package at a time")
        failed = []
        for package in packages:
            code, output = self._install([package], no_recommends)
            self.log(f"  {package}: {'ok' if code == 0 else 'failed: ' + _errors(output)}")
            if code != 0:
                failed.append(package)
        return failed


@dataclass(frozen=True)
class Groups:
    """The two package lists: installed with recommends, and without (the desktop)."""

    packages: tuple[str, ...] = SYSTEM_PACKAGES
    no_recommends: tuple[str, ...] = DESKTOP_PACKAGES

    def parts(self) -> list[tuple[Part, bool]]:
        """Every part with whether its package goes in without recommends."""
        return [(part, False) for part in parts_for(self.packages)] + [
            (part, True) for part in parts_for(self.no_recommends)
        ]


def plan(groups: Groups, present: Callable[[Part], bool] = is_present) -> list[tuple[list[str], bool]]:
    """The transactions to try: (packages, without recommends) for each group that has something missing."""
    transactions = []
    for packages, no_recommends in ((groups.packages, False), (groups.no_recommends, True)):
        selected = select_packages(parts_for(packages), present)
        if selected:
            transactions.append((selected, no_recommends))
    return transactions


@dataclass(frozen=True)
class Machine:
    """What this machine allows: root, apt-get."""

    root: bool
    apt: bool

    @classmethod
    def here(cls) -> Machine:
        """The machine this runs on."""
        return cls(root=os.geteuid() == 0, apt=shutil.which("apt-get") is not None)


def fix_command(part: Part, no_recommends: bool, machine: Machine) -> str:
    """The exact command that installs a missing part on this machine."""
    if not machine.apt:
        return f"no apt-get here: install the Debian package {part.package!r} (or your system's equivalent)"
    command = user_command([part.package], no_recommends, root=machine.root)
    return f"{command}  ({part.note})" if part.note else command


def rows(groups: Groups, machine: Machine, present: Callable[[Part], bool] = is_present) -> list[dict]:
    """One row per part: name, probe, package, installed, tiers, what it disables and the command to fix it."""
    table = []
    for part, no_recommends in groups.parts():
        installed = present(part)
        table.append(
            {
                "part": part.name,
                "probe": part.probe,
                "package": part.package,
                "installed": installed,
                "tiers": list(part.tiers),
                "disables": "" if installed else part.disables,
                "fix": "" if installed else fix_command(part, no_recommends, machine),
            }
        )
    return table


def disabled_tiers(table: Sequence[dict]) -> list[str]:
    """The tiers some missing part disables, sorted."""
    return sorted({tier for row in table if not row["installed"] for tier in row["tiers"]})


def report(groups: Groups, machine: Machine, present: Callable[[Part], bool] = is_present) -> dict:
    """The whole verification as data (what ``--json`` prints)."""
    table = rows(groups, machine, present)
    missing = [row for row in table if not row["installed"]]
    return {
        "root": machine.root,
        "apt": machine.apt,
        "parts": table,
        "missing": [row["part"] for row in missing],
        "disabled_tiers": disabled_tiers(table),
        "commands": install_commands(groups, machine, present),
    }


def install_commands(groups: Groups, machine: Machine, present: Callable[[Part], bool] = is_present) -> list[str]:
    """The commands that install everything missing (for a person to run)."""
    if not machine.apt:
        missing = [package for packages, _ in plan(groups, present) for package in packages]
        return [f"install with your system's package manager (Debian names): {' '.join(missing)}"] if missing else []
    return [user_command(packages, no_recommends, machine.root) for packages, no_recommends in plan(groups, present)]


def format_table(data: dict) -> str:
    """The table a person reads: one line per part, then the disabled tiers and the commands."""
    table = data["parts"]
    width_part = max(len(row["part"]) for row in table)
    width_package = max(len(row["package"]) for row in table)
    width_tier = max([len("tier")] + [len(",".join(row["tiers"])) for row in table])
    indent = " " * (width_part + width_package + width_tier + 17)
    header = f"{'part':<{width_part}}  {'package':<{width_package}}  {'tier':<{width_tier}}  {'status':<9}"
    lines = [header + "  disables (when missing) / install with"]
    for row in table:
        status = "installed" if row["installed"] else "MISSING"
        tiers = ",".join(row["tiers"])
        line = f"{row['part']:<{width_part}}  {row['package']:<{width_package}}  {tiers:<{width_tier}}  {status:<9}"
        if not row["installed"]:
            line += f"  {row['disables']}\n{indent}-> {row['fix']}"
        lines.append(line.rstrip())
    total, missing = len(table), len(data["missing"])
    if not missing:
        lines.append(f"system parts: all {total} installed; no test tier is disabled")
    else:
        disabled = ", ".join(data["disabled_tiers"]) or "no tier"
        lines.append(f"system parts: {total - missing} of {total} installed; disabled: {disabled}")
        if not data["apt"]:
            lines.append("no apt-get on this machine:")
        elif not data["root"]:
            lines.append("not root, so nothing was installed; to install what is missing run:")
        else:
            lines.append("to install what is missing run:")
        lines.extend(f"  {command}" for command in data["commands"])
    return "\n".join(lines)


def install(
    groups: Groups,
    machine: Machine,
    runner: Runner = run_command,
    present: Callable[[Part], bool] = is_present,
    log: Callable[[str], None] = print,
) -> Installer:
    """Install what is missing when root with apt-get; otherwise run nothing (the table says what to run)."""
    installer = Installer(runner=runner, log=log)
    transactions = plan(groups, present)
    if not transactions:
        return installer
    if not machine.apt:
        log("no apt-get on this machine: nothing is installed (the table below lists the Debian packages)")
        return installer
    if not machine.root:
        log("not root: nothing is installed (the table below gives the commands)")
        return installer
    for packages, no_recommends in transactions:
        installer.install(packages, no_recommends)
    return installer


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``install`` or ``check``, with the package lists and ``--json``."""
    parser = argparse.ArgumentParser(prog="python3 agentrl/_system_deps.py", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("install", "check"))
    parser.add_argument("--packages", help="packages installed with their recommends (space separated)")
    parser.add_argument("--no-recommends", help="packages installed without recommends (space separated)")
    parser.add_argument("--json", action="store_true", help="print the verification as JSON (nothing else)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a part is missing")
    args = parser.parse_args(argv)
    groups = Groups(
        tuple(args.packages.split()) if args.packages is not None else SYSTEM_PACKAGES,
        tuple(args.no_recommends.split()) if args.no_recommends is not None else DESKTOP_PACKAGES,
    )
    machine = Machine.here()
    stream = sys.stderr if args.json else sys.stdout
    log: Callable[[str], None] = lambda message: print(message, file=stream, flush=True)  # noqa: E731
    if args.action == "install":
        install(groups, machine, log=log)
    data = report(groups, machine)
    print(json.dumps(data, indent=2) if args.json else format_table(data))
    return 1 if args.strict and data["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
