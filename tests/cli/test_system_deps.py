"""agentrl/_system_deps.py (what `make system-deps` runs) and the strict-skip rule of tests/conftest.py.

apt is never run here: a fake runner records the command lines and answers as apt would.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

from agentrl import _system_deps as sd
from agentrl._system_deps import Groups, Machine
from tests.paths import ROOT

INSTALL = list(sd.APT_INSTALL)
UPDATE = list(sd.APT_UPDATE)
CONFLICT = """The following packages have unmet dependencies:
 npm : Depends: node-agent-base but it is not going to be installed
       Depends: nodejs:any
E: Unable to correct problems, you have held broken packages."""


def present_except(*missing: str):
    """A probe that finds every part but those named (by part name)."""
    return lambda part: part.name not in missing


class FakeApt:
    """Answers apt-get command lines as apt would on a NodeSource machine: npm conflicts with nodejs.

    ``lists`` False: no package lists yet, every install fails with "Unable to locate" until an update.
    """

    def __init__(self, broken: tuple[str, ...] = ("npm",), lists: bool = True, unknown: tuple[str, ...] = ()):
        self.broken, self.lists, self.unknown = broken, lists, unknown
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        argv = list(argv)
        self.calls.append(argv)
        if argv[:2] == ["apt-get", "update"]:
            self.lists = True
            return 0, "Reading package lists..."
        packages = [word for word in argv[len(INSTALL) :] if not word.startswith("-")]
        for package in packages:
            if not self.lists or package in self.unknown:
                return 100, f"Reading package lists...\nE: Unable to locate package {package}"
        if any(package in self.broken for package in packages):
            return 100, CONFLICT
        return 0, "Setting up ..."


def never(argv):
    raise AssertionError(f"nothing may run here, but {argv} was")


def test_npm_command_present_means_npm_is_never_selected():
    everything_missing_but_npm = present_except(*[part.name for part in sd.PARTS if part.name != "npm"])
    assert sd.select_packages(sd.parts_for(sd.SYSTEM_PACKAGES), everything_missing_but_npm) == [
        "bubblewrap", "chromium", "docker.io", "debootstrap",
    ]  # fmt: skip
    # and only the missing ones: with bwrap and chromium there, two packages are left
    assert sd.plan(Groups(), present_except("dockerd", "debootstrap", "xterm", "Atspi-2.0")) == [
        (["docker.io", "debootstrap"], False),
        (["xterm", "gir1.2-atspi-2.0"], True),
    ]
    assert sd.plan(Groups(), present_except()) == []


def test_npm_command_missing_selects_npm():
    assert sd.select_packages(sd.parts_for(["bubblewrap", "npm"]), present_except("npm")) == ["npm"]


def test_group_failure_falls_back_to_one_transaction_per_package():
    apt, log = FakeApt(), []
    installer = sd.install(
        Groups(("bubblewrap", "npm", "debootstrap"), ("xterm",)),
        Machine(root=True, apt=True),
        runner=apt,
        present=present_except("bwrap", "npm", "debootstrap", "xterm"),
        log=log.append,
    )
    assert apt.calls == [
        [*INSTALL, "bubblewrap", "npm", "debootstrap"],
        [*INSTALL, "bubblewrap"],
        [*INSTALL, "npm"],
        [*INSTALL, "debootstrap"],
        [*INSTALL, "--no-install-recommends", "xterm"],
    ]
    assert [code for _, code in installer.attempts] == [100, 0, 100, 0, 0]
    assert (
        "  npm: failed: npm : Depends: node-agent-base but it is not going to be installed | Depends: nodejs:any"
        " | E: Unable to correct problems, you have held broken packages." in log
    )
    assert "  bubblewrap: ok" in log and "  debootstrap: ok" in log


def test_apt_get_update_runs_once_when_a_package_is_not_found():
    apt = FakeApt(lists=False, unknown=("ghost",))
    apt_log: list[str] = []
    sd.install(
        Groups(("bubblewrap", "ghost"), ("xterm",)),
        Machine(root=True, apt=True),
        runner=apt,
        present=present_except("bwrap", "ghost", "xterm"),
        log=apt_log.append,
    )
    assert apt.calls == [
        [*INSTALL, "bubblewrap", "ghost"],
        UPDATE,
        [*INSTALL, "bubblewrap", "ghost"],  # still not found: one package at a time, no second update
        [*INSTALL, "bubblewrap"],
        [*INSTALL, "ghost"],
        [*INSTALL, "--no-install-recommends", "xterm"],
    ]
    assert apt_log.count("apt-get could not find a package: running apt-get update once") == 1


def test_an_installed_machine_runs_nothing():
    assert sd.install(Groups(), Machine(root=True, apt=True), runner=never, present=present_except()).attempts == []


def test_not_root_runs_nothing_and_prints_sudo_commands():
    log: list[str] = []
    present = present_except("bwrap", "chromium", "Xvfb")
    sd.install(Groups(), Machine(root=False, apt=True), runner=never, present=present, log=log.append)
    assert log == ["not root: nothing is installed (the table below gives the commands)"]
    data = sd.report(Groups(), Machine(root=False, apt=True), present)
    assert data["commands"] == [
        "sudo apt-get install -y bubblewrap chromium",
        "sudo apt-get install -y --no-install-recommends xvfb",
    ]
    fixes = {row["part"]: row["fix"] for row in data["parts"] if not row["installed"]}
    assert fixes == {
        "bwrap": "sudo apt-get install -y bubblewrap",
        "chromium": "sudo apt-get install -y chromium",
        "Xvfb": "sudo apt-get install -y --no-install-recommends xvfb",
    }
    table = sd.format_table(data)
    assert "not root, so nothing was installed; to install what is missing run:" in table
    assert table.count("MISSING") == 3


def test_no_apt_get_says_what_to_install():
    log: list[str] = []
    present = present_except("bwrap", "npm")
    sd.install(Groups(), Machine(root=True, apt=False), runner=never, present=present, log=log.append)
    assert log == ["no apt-get on this machine: nothing is installed (the table below lists the Debian packages)"]
    data = sd.report(Groups(), Machine(root=True, apt=False), present)
    assert data["commands"] == ["install with your system's package manager (Debian names): bubblewrap npm"]
    assert [row["fix"] for row in data["parts"] if not row["installed"]] == [
        "no apt-get here: install the Debian package 'bubblewrap' (or your system's equivalent)",
        "no apt-get here: install the Debian package 'npm' (or your system's equivalent)",
    ]
    assert "no apt-get on this machine:" in sd.format_table(data)


def test_table_rows_and_the_tiers_a_missing_part_disables():
    machine = Machine(root=True, apt=True)
    data = sd.report(Groups(), machine, present_except("bwrap", "chromium", "dockerd", "at-spi-bus-launcher", "npm"))
    assert len(data["parts"]) == 23
    assert data["missing"] == ["bwrap", "chromium", "npm", "dockerd", "at-spi-bus-launcher"]
    assert data["disabled_tiers"] == ["browser", "desktop", "docker", "sandbox", "swf"]
    rows = {row["part"]: row for row in data["parts"]}
    assert (
        rows["bwrap"]["disables"].startswith("Python sandbox isolation")
        and "test_sandbox_attacks" in (rows["bwrap"]["disables"])
    )
    assert "AgentRL/FlashGame-*-v0" in rows["chromium"]["disables"] and "report" in rows["chromium"]["disables"]
    assert "FlashGame-SWF-v0" in rows["npm"]["disables"] and "NodeSource" in rows["npm"]["fix"]
    assert "provider=docker" in rows["dockerd"]["disables"] and rows["dockerd"]["fix"] == "apt-get install -y docker.io"
    assert rows["at-spi-bus-launcher"]["fix"] == "apt-get install -y --no-install-recommends at-spi2-core"
    assert "AgentRL/OSWorld-v0" in rows["at-spi-bus-launcher"]["disables"]
    assert rows["Xvfb"] == {
        "part": "Xvfb", "probe": "Xvfb", "package": "xvfb", "installed": True, "tiers": ["desktop"],
        "disables": "", "fix": "",
    }  # fmt: skip
    table = sd.format_table(data)
    assert re.search(r"^bwrap +bubblewrap +sandbox +MISSING +Python sandbox isolation", table, re.M)
    assert re.search(r"^Xvfb +xvfb +desktop +installed$", table, re.M)
    assert "system parts: 18 of 23 installed; disabled: browser, desktop, docker, sandbox, swf" in table
    assert table.splitlines()[-2:] == [
        "  apt-get install -y bubblewrap chromium npm docker.io",
        "  apt-get install -y --no-install-recommends at-spi2-core",
    ]
    green = sd.format_table(sd.report(Groups(), machine, present_except()))
    assert green.splitlines()[-1] == "system parts: all 23 installed; no test tier is disabled"


def test_the_makefile_lists_are_the_modules_and_every_package_has_a_part():
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    lists = dict(re.findall(r"^(SYSTEM_PACKAGES|DESKTOP_PACKAGES) := (.*)$", makefile, re.M))
    assert tuple(lists["SYSTEM_PACKAGES"].split()) == sd.SYSTEM_PACKAGES
    assert tuple(lists["DESKTOP_PACKAGES"].split()) == sd.DESKTOP_PACKAGES
    assert all(not part.probe.startswith("dpkg:") for part in sd.parts_for(sd.SYSTEM_PACKAGES + sd.DESKTOP_PACKAGES))
    assert 'agentrl/_system_deps.py install --packages "$(SYSTEM_PACKAGES)"' in makefile
    assert "AGENTRL_REQUIRE_SYSTEM ?= 1" in makefile
    assert makefile.count("env AGENTRL_REQUIRE_SYSTEM=$(AGENTRL_REQUIRE_SYSTEM)") == 1  # make test's pytest run


def test_the_module_is_stdlib_only_and_runs_isolated_as_a_script():
    tree = ast.parse((ROOT / "agentrl" / "_system_deps.py").read_text())
    nodes = list(ast.walk(tree))
    imported = {alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in nodes if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported
    # -I: no site-packages, no PYTHONPATH, no script folder on sys.path: what the system python3 has
    done = subprocess.run(
        [sys.executable, "-I", str(ROOT / "agentrl" / "_system_deps.py"), "check", "--json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["parts"]) == 23 and set(data) == {"root", "apt", "parts", "missing", "disabled_tiers", "commands"}
    assert data["disabled_tiers"] == sd.report(Groups(), Machine.here())["disabled_tiers"]


# --- the strict-skip rule of tests/conftest.py ---------------------------------------------------------


def _conftest():
    spec = importlib.util.spec_from_file_location("agentrl_tests_conftest_copy", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_require_system_only_as_root_with_apt_get_when_asked():
    require = _conftest().require_system
    on, ci = {"AGENTRL_REQUIRE_SYSTEM": "1"}, {"CI": "true"}
    assert require(on, Machine(root=True, apt=True)) and require(ci, Machine(root=True, apt=True))
    assert not require(on, Machine(root=False, apt=True))
    assert not require(on, Machine(root=True, apt=False))
    assert not require({}, Machine(root=True, apt=True))
    assert not require({"AGENTRL_REQUIRE_SYSTEM": "0"}, Machine(root=True, apt=True))
    assert not require({"AGENTRL_REQUIRE_SYSTEM": "0", "CI": "true"}, Machine(root=True, apt=True))


def test_which_skips_fail_under_require_system():
    failure = _conftest().system_skip_failure
    message = failure("bubblewrap is not installed (apt-get install bubblewrap)")
    assert "bwrap (Debian bubblewrap)" in message
    assert "Install: apt-get install -y bubblewrap (or let it skip: AGENTRL_REQUIRE_SYSTEM=0)" in message
    message = failure("no X desktop here (Xvfb could not be installed or started): boom")
    assert "Xvfb (Debian xvfb)" in message and "Install: apt-get install -y --no-install-recommends xvfb " in message
    assert "at-spi2-core" in failure("no AT-SPI here: the bus did not start")
    assert "docker.io" in failure("cannot start a private Docker engine here: no dockerd")
    assert "chromium" in failure("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    assert failure("could not import 'bm25s': No module named 'bm25s'") is None
    assert failure("the worker runs as the file's owner: not root") is None
    assert "without saying why" in failure("")


def test_a_skip_for_a_missing_part_fails_a_real_pytest_run(tmp_path):
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "tiers.py").write_text((ROOT / "tests" / "tiers.py").read_text())
    (tmp_path / "test_a.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_bwrap():
                pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")

            def test_unrelated():
                pytest.skip("could not import 'foo': No module named 'foo'")
            """
        )
    )
    (tmp_path / "test_b.py").write_text('import pytest\npytest.skip("needs Xvfb and xterm", allow_module_level=True)\n')

    def run(**env):
        environ = {k: v for k, v in os.environ.items() if k not in ("CI", "AGENTRL_REQUIRE_SYSTEM")}
        environ.update(env, PYTHONPATH=str(ROOT))
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "."],
            cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    plain = run()
    assert plain.returncode == 0 and "3 skipped" in plain.stdout, plain.stdout
    strict = run(AGENTRL_REQUIRE_SYSTEM="1")
    here = Machine.here()
    if here.root and here.apt:
        assert strict.returncode == 1, strict.stdout
        assert "1 failed, 2 skipped" in strict.stdout, strict.stdout
        assert "FAILED test_a.py::test_bwrap" in strict.stdout
        assert "FAILED (module skipped) test_b.py: AGENTRL_REQUIRE_SYSTEM=1" in strict.stdout
    else:  # not root or no apt-get: nothing was to be installed, so the skips stand
        assert strict.returncode == 0 and "3 skipped" in strict.stdout, strict.stdout
