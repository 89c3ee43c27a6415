"""Latency of a warm :class:`~agentrl.sandboxes.python.PythonSandbox` against a fresh process per call.

Run ``python benchmarks/sandbox.py [--isolation auto|bwrap|process] [--calls 200]``. The fresh
baseline uses the same isolation (the same bubblewrap command line, or the same clean environment)
and a new ``python -I -S -B -c SNIPPET`` per call, without any pre-imports, so it is the cheapest
possible cold start: real cold starts that import numpy or sympy cost far more.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

from agentrl.sandboxes.base import ExecutionRequest
from agentrl.sandboxes.python import PythonSandbox, _clean_env, _real_python

SNIPPET = "x = 1 + 1"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_warm(box: PythonSandbox, calls: int, warmup: int = 20) -> list[float]:
    """Seconds per ``execute`` of the snippet through a warm sandbox."""
    request = ExecutionRequest(SNIPPET)
    for _ in range(warmup):
        box.execute(request)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        result = box.execute(request)
        times.append(time.perf_counter() - start)
        if not result.ok:
            raise RuntimeError(f"benchmark snippet failed: {result.error}")
    return times


def bench_fresh(box: PythonSandbox, calls: int) -> list[float]:
    """Seconds per fresh isolated interpreter running the snippet (same isolation as ``box``)."""
    python = _real_python()
    code = ["-I", "-S", "-B", "-c", SNIPPET]
    times = []
    with tempfile.TemporaryDirectory(prefix="agentrl-bench-") as cwd:
        if box.isolation_level == "bwrap":
            argv = [*box._bwrap_argv(python), *code]
            env = _clean_env("/scratch")
        else:
            argv = [python, *code]
            env = _clean_env(cwd)
        for _ in range(calls):
            start = time.perf_counter()
            subprocess.run(argv, env=env, cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, start_new_session=True)
            times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print medians, p90s and the speed-up."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--isolation", default="auto", choices=["auto", "bwrap", "process"])
    parser.add_argument("--calls", type=int, default=200, help="warm calls (fresh: calls // 5, at least 10)")
    parser.add_argument("--fresh-calls", type=int, default=None)
    args = parser.parse_args(argv)
    fresh_calls = args.fresh_calls or max(10, args.calls // 5)
    with PythonSandbox(isolation=args.isolation) as box:
        warm = bench_warm(box, args.calls)
        fresh = bench_fresh(box, fresh_calls)
        print(f"isolation: {box.isolation}")
    warm_med, fresh_med = statistics.median(warm), statistics.median(fresh)
    print(f"snippet: {SNIPPET!r}")
    print(f"warm sandbox   ({args.calls} calls): median {warm_med * 1e3:.3f} ms, "
          f"p90 {_quantile(warm, 0.9) * 1e3:.3f} ms")
    print(f"fresh process  ({fresh_calls} calls): median {fresh_med * 1e3:.3f} ms, "
          f"p90 {_quantile(fresh, 0.9) * 1e3:.3f} ms")
    print(f"speed-up (median fresh / median warm): {fresh_med / warm_med:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
