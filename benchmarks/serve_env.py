r"""What ``agentrl serve-env`` costs: the added latency per step over in-process, throughput, memory per session.

Run ``python benchmarks/serve_env.py [--env AgentRL/SQL-v0] [--sessions 1 4 16 64] [--steps 20]`` from the
repository root (``--desktop`` adds 8 OSWorld-v0 sessions on screenshots). The server is a separate
``agentrl serve-env`` process on 127.0.0.1; each session is one client thread with its own
:class:`~agentrl.serving.remote_env.RemoteEnv` (a WebSocket), playing ``--steps`` steps of a fixed action
(episodes reset as they end). The same actions are first timed in process, on one env: the baseline. Printed
and written to ``benchmarks/results/serve_env.json``:

* per session count: step latency median and p99 (ms), the median added over in-process, steps per second
  over all sessions, and whether every step was answered once, in order (``info["turn"]`` counts 1, 2, ...
  within each episode of each session);
* the server's memory per session (its RSS with every session open, less before, over the sessions);
* the session count at which throughput stops growing (the next count adds under 10%): where one server
  saturates this machine's cores.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "serve_env.json"
TEXT_ACTION = "<sql>SELECT name FROM sqlite_master WHERE type = 'table'</sql>"

__all__ = ["main", "run"]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and its descendants (a desktop session's Xvfb, window manager and apps)."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            total += _rss_mb(current)
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        stack.extend(int(child) for child in children)
    return total


def _in_process(env_id: str, kwargs: dict[str, Any], action: Any, steps: int) -> list[float]:
    import gymnasium as gym

    env = gym.make(env_id, **kwargs)
    times: list[float] = []
    env.reset(seed=0)
    for _ in range(steps):
        started = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        times.append(time.perf_counter() - started)
        if terminated or truncated:
            env.reset()
    env.close()
    return times


def _session(url: str, env_id: str, action: Any, steps: int, out: dict[str, Any], barrier: threading.Barrier) -> None:
    import gymnasium as gym

    times: list[float] = []
    in_order = True
    env = None
    try:
        env = gym.make(env_id, remote=url, **out.pop("kwargs"))
        env.reset(seed=0)
        barrier.wait(timeout=600)  # every session open (the memory is read here), then all step at once
        barrier.wait(timeout=600)
        expected = 1
        for _ in range(steps):
            started = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            times.append(time.perf_counter() - started)
            in_order &= info["turn"] == expected
            expected += 1
            if terminated or truncated:
                env.reset()
                expected = 1
    except threading.BrokenBarrierError:
        out.setdefault("error", "another session failed to start")
    except Exception as exc:  # a lost session is a result, reported
        out["error"] = f"{type(exc).__name__}: {exc}"
        barrier.abort()  # the others do not wait for this one
    finally:
        if env is not None:
            env.close()
    out.update(times=times, in_order=in_order)


def _serve(env_id: str, kwargs: dict[str, Any], max_sessions: int) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "agentrl.cli", "serve-env", env_id, "--port", "0", "--insecure-loopback"]
    argv += ["--max-sessions", str(max_sessions)]
    for key, value in kwargs.items():
        argv += ["--env-kwarg", f"{key}={value}"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = server.stdout.readline() if server.stdout else ""
    if not line.startswith("agentrl-env-server:"):
        server.kill()
        raise RuntimeError(f"agentrl serve-env did not start: {line!r}")
    return server, line.split()[-1]


def run(env_id: str, kwargs: dict[str, Any], action: Any, session_counts: list[int], steps: int) -> dict[str, Any]:
    """Measure ``env_id`` served at each session count; the figures as a dict (see the module docstring)."""
    baseline = _in_process(env_id, kwargs, action, max(steps, 50))
    local_ms = statistics.median(baseline) * 1000
    server, url = _serve(env_id, kwargs, max(session_counts))
    rows: list[dict[str, Any]] = []
    try:
        time.sleep(1.0)
        idle_mb = _tree_rss_mb(server.pid)
        for count in session_counts:
            outs = [{"kwargs": dict(kwargs)} for _ in range(count)]
            barrier = threading.Barrier(count + 1)
            threads = [
                threading.Thread(target=_session, args=(url, env_id, action, steps, out, barrier)) for out in outs
            ]
            for thread in threads:
                thread.start()
            with contextlib.suppress(threading.BrokenBarrierError):  # a session failed: its error is reported
                barrier.wait(timeout=600)
            open_mb = _tree_rss_mb(server.pid)
            started = time.perf_counter()
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=600)
            for thread in threads:
                thread.join(timeout=1800)
            wall = time.perf_counter() - started
            times = [t for out in outs for t in out.get("times", [])]
            errors = [out["error"] for out in outs if "error" in out]
            row = {
                "sessions": count,
                "median_ms": round(statistics.median(times) * 1000, 2) if times else None,
                "p99_ms": round(_percentile(times, 0.99) * 1000, 2) if times else None,
                "added_median_ms": round(statistics.median(times) * 1000 - local_ms, 2) if times else None,
                "steps_per_s": round(len(times) / wall, 1),
                "steps": len(times),
                "every_step_answered_in_order": not errors
                and len(times) == count * steps
                and all(out.get("in_order") for out in outs),
                "memory_per_session_mb": round((open_mb - idle_mb) / count, 1),
                "errors": errors[:3],
            }
            rows.append(row)
            print(
                f"{env_id} {count:3d} sessions: step median {row['median_ms']} ms (in process {local_ms:.2f} ms, "
                f"+{row['added_median_ms']} ms), p99 {row['p99_ms']} ms, {row['steps_per_s']} steps/s, "
                f"{row['memory_per_session_mb']} MB/session, in order: {row['every_step_answered_in_order']}"
                + (f"; errors: {errors[:3]}" if errors else ""),
                flush=True,
            )
            time.sleep(0.5)  # the sessions' closes land before the next count's memory reading
    finally:
        server.terminate()
        server.wait(timeout=60)
    saturation = rows[-1]["sessions"]
    for before, after in itertools.pairwise(rows):
        if after["steps_per_s"] < before["steps_per_s"] * 1.10:
            saturation = before["sessions"]
            break
    return {
        "env_id": env_id,
        "make_kwargs": {k: _relative(v) for k, v in kwargs.items()},
        "in_process_median_ms": round(local_ms, 3),
        "steps_per_session": steps,
        "rows": rows,
        "saturates_at_sessions": saturation,
        "cores": os.cpu_count(),
    }


def _relative(value: object) -> object:
    """A path inside the repository as the repository names it (results must not carry this machine's paths).

    >>> _relative(str(ROOT / "tests" / "x")), _relative(5)
    ('tests/x', 5)
    """
    if isinstance(value, str) and Path(value).is_absolute():
        with contextlib.suppress(ValueError):
            return Path(value).relative_to(ROOT).as_posix()
    return value


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns an exit status (1 when a step was lost or answered out of order)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="AgentRL/SQL-v0", help="a text env id (default AgentRL/SQL-v0)")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 16, 64], help="session counts")
    parser.add_argument("--steps", type=int, default=20, help="steps per session (default 20)")
    parser.add_argument("--desktop", action="store_true", help="also 8 sessions of AgentRL/OSWorld-v0")
    parser.add_argument("--out", default=str(RESULTS), help=f"where the figures go (default {RESULTS})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    import agentrl  # noqa: F401  (registers the ids)

    results = {"text": run(args.env, {}, TEXT_ACTION if "SQL" in args.env else "x", args.sessions, args.steps)}
    if args.desktop:
        tasks = ROOT / "tests" / "osworld" / "fixtures" / "env"
        move = "pyautogui.moveTo(100, 100)"
        results["desktop"] = run(
            "AgentRL/OSWorld-v0", {"tasks": str(tasks), "task_id": "t-echo", "max_steps": 50}, move, [1, 8], 10
        )
    results["command"] = "python benchmarks/serve_env.py " + " ".join(argv if argv is not None else sys.argv[1:])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.out}")
    rows = [row for part in ("text", "desktop") if part in results for row in results[part]["rows"]]
    return 0 if all(row["every_step_answered_in_order"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
