"""Time each phase of ``make test`` / ``make check`` and keep the figures: ``runs/test-times/``.

``python scripts/timed.py RUN PHASE -- COMMAND...`` runs COMMAND, then adds ``{"phase", "seconds", "exit"}`` to
``runs/test-times/RUN.json`` (RUN names one ``make`` run: the Makefile passes the target and a start stamp) and
exits with COMMAND's status. ``python scripts/timed.py RUN --summary`` prints the run's phases and total and writes
``runs/test-times/latest-<target>.json`` beside it. pytest's own per-test durations are written by
``tests/conftest.py`` into the same folder (``<RUN>-pytest-<phase>.json``), so a slow test can be found without
re-running. Nothing here is committed; the quickstart's stated times come from ``benchmarks/results/test_times.json``
(a fresh-clone run, copied there with ``--record``).

Stdlib only: it runs before and beside the venv's tools.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "runs" / "test-times"
RECORD = ROOT / "benchmarks" / "results" / "test_times.json"


def _load(run: str) -> dict[str, object]:
    path = FOLDER / f"{run}.json"
    return json.loads(path.read_text()) if path.exists() else {"run": run, "phases": []}


def _save(run: str, data: dict[str, object]) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / f"{run}.json").write_text(json.dumps(data, indent=1) + "\n")


def busy_core_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``: all but idle and iowait), or None.

    Containers, the Docker engine and a desktop's X server count here, while ``RUSAGE_CHILDREN`` misses whatever
    the command did not wait for itself.
    """
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except (OSError, IndexError):
        return None
    ticks = [int(value) for value in fields[:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def time_phase(run: str, phase: str, command: list[str]) -> int:
    """Run ``command``, record its wall time as ``phase`` of ``run``; its exit status.

    ``cpu_seconds`` is the CPU time (user and system) of the command and every process it waited for;
    ``busy_core_seconds`` is what the whole machine was busy meanwhile (anything else running included). Divided by
    the wall time and the cores, they say how busy the phase kept the machine, and so how much a shorter wall time
    must come from less work rather than more workers.
    """
    start, started = time.monotonic(), time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_before = busy_core_seconds()
    status = subprocess.call(command)
    busy_after = busy_core_seconds()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    seconds = round(time.monotonic() - start, 1)
    entry: dict[str, object] = {"phase": phase, "seconds": seconds, "cpu_seconds": round(cpu, 1), "exit": status}
    entry.update(started=round(started, 1), ended=round(started + seconds, 1))
    if busy_before is not None and busy_after is not None:
        entry["busy_core_seconds"] = round(busy_after - busy_before, 1)
    FOLDER.mkdir(parents=True, exist_ok=True)
    # Phases may run side by side (mypy beside the docs build): each adds its line under a lock on the folder.
    with open(FOLDER / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load(run)
        phases = data["phases"]
        assert isinstance(phases, list)
        phases.append(entry)
        _save(run, data)
    return status


def total_seconds(phases: list[dict[str, object]]) -> float:
    """The run's wall time: from the first phase's start to the last one's end.

    Phases that ran side by side count once; a record without start times sums its phases.

    >>> total_seconds([{"seconds": 90, "started": 0, "ended": 90}, {"seconds": 60, "started": 0, "ended": 60}])
    90.0
    >>> total_seconds([{"seconds": 3}, {"seconds": 207}])
    210.0
    """
    def number(value: object) -> float:
        return float(value)  # type: ignore[arg-type]

    if phases and all("started" in p and "ended" in p for p in phases):
        return max(number(p["ended"]) for p in phases) - min(number(p["started"]) for p in phases)
    return sum(number(p["seconds"]) for p in phases)


def phases_line(data: dict[str, object]) -> str:
    """One run's phases and total in minutes, as ``make`` prints it and the quickstart quotes it.

    >>> phases_line({"phases": [{"phase": "ruff", "seconds": 3}, {"phase": "pytest-fast", "seconds": 207}]})
    'ruff 0.1 min, pytest-fast 3.5 min; 3.5 min in all'
    """
    phases = data["phases"]
    assert isinstance(phases, list)
    listed = ", ".join(f"{p['phase']} {float(p['seconds']) / 60:.1f} min" for p in phases)
    return f"{listed}; {total_seconds(phases) / 60:.1f} min in all"


def summary(run: str, record: bool = False) -> int:
    """Print the run's phases and total; write ``latest-<target>.json`` (and the record with ``record``).

    The record is the committed ``benchmarks/results/test_times.json``: one run per target (``test``, ``check``).
    """
    data = _load(run)
    phases = data["phases"]
    assert isinstance(phases, list)
    data["total_seconds"] = round(total_seconds(phases), 1)
    data["cores"] = os.cpu_count()
    target = run.split("-", 1)[0]
    _save(f"latest-{target}", data)
    print(f"make {target}: {phases_line(data)} (runs/test-times/{run}.json)")
    if record:
        commands = {"test": "CI=true make test < /dev/null", "check": "make check"}
        recorded = json.loads(RECORD.read_text()) if RECORD.exists() else {}
        recorded[target] = {**data, "command": commands.get(target, f"make {target}")}
        recorded["command"] = "make test and make check, then each: python scripts/timed.py RUN --summary --record"
        RECORD.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"recorded: {RECORD.relative_to(ROOT)} [{target}]")
    return 0


def main(argv: list[str]) -> int:
    """``RUN PHASE -- COMMAND...`` or ``RUN --summary [--record]``."""
    if len(argv) >= 2 and argv[1] == "--summary":
        return summary(argv[0], record="--record" in argv[2:])
    if len(argv) < 4 or argv[2] != "--":
        print("usage: timed.py RUN PHASE -- COMMAND... | timed.py RUN --summary [--record]", file=sys.stderr)
        return 2
    return time_phase(argv[0], argv[1], argv[3:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
