"""Fixtures shared by test modules, and the one rule for skips that a missing system part causes.

Under ``make test`` (``AGENTRL_REQUIRE_SYSTEM=1``; or ``CI=true`` when that is unset) as root on a machine with apt-get,
``make system-deps`` was to install every system part (agentrl/_system_deps.py). There a test that skips
because one is missing (its reason matches ``SYSTEM_SKIPS``) FAILS instead, naming the part and the command
that installs it; a module skipped at collection for that reason fails the session. Elsewhere (not root, no
apt-get, or a plain ``pytest``) such tests skip with their reason, and every skip must give one.
"""

from __future__ import annotations

import os
import sys

# Under pytest-xdist the workers share the cores, and torch in each (and in every subprocess a test starts) would
# run one OpenMP thread per core: the threads spin while they wait for each other. On 2 cores with the suite
# running, examples/sb3_tictactoe.py --quick took 118 s of CPU with the default threads and 25 s with one. So one
# thread per worker (set before anything imports torch; a variable the caller set is kept).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    # Nothing downloads in a test. agentrl.llm.embedding sets both when it first loads MiniLM; set from the start, the
    # commands a worker runs agree with tests/warm_python.py's server, which started with the worker's settings.
    for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(_var, "1")
    if "torch" in sys.modules:  # a plugin imported it before this file: its OpenMP read the old value
        __import__("torch").set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentrl import _system_deps

# Skip reasons that mean "this system part is missing or does not work" -> the part (a name in the table of
# agentrl/_system_deps.py). A test that skips for a system part says so in one of these words.
SYSTEM_SKIPS: dict[str, str] = {
    "bwrap": r"bubblewrap is not installed",
    "chromium": r"Chromium is not installed",
    "dockerd": r"cannot start a private Docker engine",
    "Xvfb": r"no X desktop here|needs Xvfb",
    "xterm": r"needs xterm",
    "mousepad": r"needs mousepad",
    "at-spi-bus-launcher": r"no AT-SPI here|AT-SPI is unavailable",
}


def require_system(environ: dict[str, str] | None = None, machine: Any = None) -> bool:
    """Whether skips for missing system parts fail: asked for and root with apt-get here.

    Asked for: ``AGENTRL_REQUIRE_SYSTEM=1`` (``make test`` sets it; ``=0`` turns it off), else ``CI=true``.
    """
    environ = os.environ if environ is None else environ
    setting = environ.get("AGENTRL_REQUIRE_SYSTEM", "")
    asked = setting == "1" if setting else environ.get("CI", "").lower() == "true"
    machine = _system_deps.Machine.here() if machine is None else machine
    return asked and machine.root and machine.apt


def system_skip_failure(reason: str) -> str | None:
    """Why a skip with this reason must fail under AGENTRL_REQUIRE_SYSTEM=1, or None when it may skip."""
    if not reason.strip() or reason.strip() in ("Skipped", "Skipped:"):
        return "a test skipped without saying why; every skip must give its reason"
    for name, pattern in SYSTEM_SKIPS.items():
        if re.search(pattern, reason, re.IGNORECASE):
            part = next(part for part in _system_deps.PARTS if part.name == name)
            machine = _system_deps.Machine(root=True, apt=True)
            fix = _system_deps.fix_command(part, part.package in _system_deps.DESKTOP_PACKAGES, machine)
            return (
                f"AGENTRL_REQUIRE_SYSTEM=1 (root, apt-get here): skipped for a missing or broken system part, "
                f"{name} (Debian {part.package}), which `make system-deps` installs; it disables {part.disables}. "
                f"Install: {fix} (or let it skip: AGENTRL_REQUIRE_SYSTEM=0). Skip reason: {reason}"
            )
    return None


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


_MODULES_FAILED: list[str] = []
_CPU_MARK: list[float] = []


def _cpu_since_last_report() -> float:
    """CPU seconds of this process and its waited-for children since the previous report (a test's phase).

    Children count once reaped: a server, a CLI run, Xvfb, a browser's driver; so do the commands that
    tests/warm_python.py's server ran. Docker's containers do not.
    """
    import resource

    now = sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )
    now += getattr(sys.modules.get("tests.warm_python"), "CPU_SECONDS", 0.0)  # commands its server reaped
    spent = now - _CPU_MARK[0] if _CPU_MARK else 0.0
    _CPU_MARK[:] = [now]
    return spent


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under AGENTRL_REQUIRE_SYSTEM=1, a test skipped for a missing system part is reported as failed."""
    outcome = yield
    report = outcome.get_result()
    report.user_properties.append(("cpu_s", _cpu_since_last_report()))
    if report.skipped and not hasattr(report, "wasxfail") and require_system():
        failure = system_skip_failure(_skip_reason(report))
        if failure:
            report.outcome, report.longrepr = "failed", failure


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped at collection for a missing system part: remembered, and the session fails."""
    if report.skipped and require_system():
        failure = system_skip_failure(_skip_reason(report))
        if failure:
            _MODULES_FAILED.append(f"{report.nodeid}: {failure}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """List the modules that were skipped for a missing system part under AGENTRL_REQUIRE_SYSTEM=1."""
    for line in _MODULES_FAILED:
        terminalreporter.write_line(f"FAILED (module skipped) {line}", red=True)


_DURATIONS: dict[str, float] = {}
_CPU: dict[str, float] = {}
#: seconds each xdist worker spent in tests: the busiest one is the phase's long pole (a group it could not share)
_WORKER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's setup, call and teardown seconds and CPU (for ``AGENTRL_TEST_TIMES``), and its worker's."""
    _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + float(report.duration)
    cpu = dict(report.user_properties).get("cpu_s", 0.0)
    _CPU[report.nodeid] = _CPU.get(report.nodeid, 0.0) + float(cpu)  # type: ignore[arg-type]
    gateway = getattr(getattr(report, "node", None), "gateway", None)  # set on the xdist controller's copy
    worker = str(getattr(gateway, "id", "main"))
    _WORKER_SECONDS[worker] = _WORKER_SECONDS.get(worker, 0.0) + float(report.duration)


def _write_durations(session: pytest.Session) -> None:
    """Write every test's seconds to ``$AGENTRL_TEST_TIMES`` (``make test`` and ``make check`` set it)."""
    import json
    from pathlib import Path

    path = os.environ.get("AGENTRL_TEST_TIMES")
    if not path or hasattr(session.config, "workerinput"):  # the xdist controller writes, not its workers
        return
    ranked = sorted(_DURATIONS.items(), key=lambda item: -item[1])
    data = {"tests": len(ranked), "seconds_in_tests": round(sum(_DURATIONS.values()), 1),
            "workers": {worker: round(seconds, 1) for worker, seconds in sorted(_WORKER_SECONDS.items())},
            "durations": {nodeid: round(seconds, 3) for nodeid, seconds in ranked},
            # CPU seconds of the worker and the children it reaped, from each test's first report to its last
            "cpu_seconds_in_tests": round(sum(_CPU.values()), 1),
            "cpu": {nodeid: round(seconds, 2) for nodeid, seconds in sorted(_CPU.items(), key=lambda kv: -kv[1])}}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=1) + "\n")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the session when a module was skipped for a missing system part under AGENTRL_REQUIRE_SYSTEM=1."""
    _write_durations(session)
    if _MODULES_FAILED and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header() -> list[str]:
    """One line on the system parts: which tiers are disabled here, and whether their skips fail."""
    data = _system_deps.report(_system_deps.Groups(), _system_deps.Machine.here())
    strict = " (AGENTRL_REQUIRE_SYSTEM=1: their skips fail)" if require_system() else ""
    if not data["missing"]:
        return ["system parts: all installed"]
    return [f"system parts missing: {' '.join(data['missing'])}; tiers disabled: {data['disabled_tiers']}{strict}"]


def _tiers() -> Any:
    """tests/tiers.py, loaded by its path (another installed package may be called ``tests``: verl ships one)."""
    import importlib.util
    from pathlib import Path

    name = "agentrl_test_tiers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("tiers.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# tryfirst: xdist's worker turns xdist_group marks into node ids in its own hook, so ours must run before it
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's tiers (``slow``, ``desktop``, ``docker``, ``browser``) and xdist group, from where it lives and what
    it starts: :mod:`tests.tiers` holds the rules (nothing is marked by hand)."""
    _tiers().apply(items)


# The labels our containers carry: the sandbox tier's and the desktop provider's.
CONTAINER_LABELS = ("agentrl.sandbox", "agentrl.desktop")


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A private Docker engine for the whole session, with ``DOCKER_HOST`` set to it.

    At the end no container the tests made may be left (``docker ps -a`` lists none with our
    labels), and the engine is stopped by its pid, its data root removed.
    """
    pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'agentrl-gym[docker]')")
    from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
    from agentrl.sandboxes.dockerd import PrivateDockerDaemon

    engine = PrivateDockerDaemon()
    try:
        engine.start()
    except (SandboxUnavailable, DependencyNotInstalled) as exc:
        pytest.skip(f"cannot start a private Docker engine here: {exc}")
    old = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = engine.host
    pid, root = engine.pid, engine.dir
    try:
        yield engine
        client = engine.client()
        for label in CONTAINER_LABELS:
            left = client.containers.list(all=True, filters={"label": label})
            assert left == [], f"containers labelled {label} left behind: {left}"
    finally:
        if old is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = old
        engine.stop()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert not os.path.exists(root)


@pytest.fixture(scope="session")
def desktop_docker(docker_engine: Any) -> tuple[Any, Any, str]:
    """The engine, a client and the desktop image tag (built once per engine, from the cached tarball)."""
    from agentrl.envs.osworld.runtime.container import ensure_desktop_image

    client = docker_engine.client()
    start = time.monotonic()
    tag = ensure_desktop_image(client)
    print(f"\nthe desktop image {tag} took {time.monotonic() - start:.1f}s (first build in this engine)")
    return docker_engine, client, tag
