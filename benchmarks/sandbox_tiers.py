"""Sandbox tiers side by side: ``python benchmarks/sandbox_tiers.py``.

One run, medians: the latency of a trivial call (``x = 1 + 1``) through each tier (process, docker
warm, docker cold start, remote over loopback in front of process), and sustained calls per second
with 8 concurrent clients (threads, one session each). The docker tier runs on a private engine
started for the run (:class:`~agentrl.sandboxes.dockerd.PrivateDockerDaemon`), which needs root or a
working ``dockerd``; without it the docker rows say why they are missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentrl.sandboxes.base import ExecutionRequest, Sandbox

if not __package__:  # run as `python benchmarks/sandbox_tiers.py`: the repository root, for `benchmarks.`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.sandbox import SNIPPET, bench_warm

__all__ = ["measure_tiers"]


def _throughput(make: Callable[[], Sandbox], clients: int, seconds: float) -> float:
    boxes = [make() for _ in range(clients)]
    request = ExecutionRequest(SNIPPET)
    for box in boxes:
        box.execute(request)
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def run(index: int) -> None:
        while time.perf_counter() < stop:
            boxes[index].execute(request)
            counts[index] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    for box in boxes:
        box.close()
    return sum(counts) / elapsed


def _median_ms(box: Sandbox, calls: int) -> float:
    return statistics.median(bench_warm(box, calls)) * 1000  # type: ignore[arg-type]


def measure_tiers(calls: int = 200, clients: int = 8, seconds: float = 3.0, docker: bool = True) -> dict[str, Any]:
    """The figures in the module docstring."""
    from agentrl.sandboxes.python import PythonSandbox
    from agentrl.sandboxes.remote import RemoteSandbox
    from agentrl.sandboxes.server import serve_sandbox

    out: dict[str, Any] = {"calls": calls, "clients": clients, "seconds": seconds}
    with PythonSandbox(mode="session") as box:
        out["process_warm_ms"] = _median_ms(box, calls)
    out["process_calls_per_s"] = _throughput(lambda: PythonSandbox(mode="session"), clients, seconds)
    with serve_sandbox("process", tokens={"bench-token": "bench"}) as server:
        def remote() -> Sandbox:
            return RemoteSandbox(server.base_url, token="bench-token")

        with remote() as box:  # type: ignore[attr-defined]
            out["remote_process_warm_ms"] = _median_ms(box, calls)
        out["remote_process_calls_per_s"] = _throughput(remote, clients, seconds)
    out["remote_adds_ms"] = out["remote_process_warm_ms"] - out["process_warm_ms"]
    if docker:
        try:
            from agentrl.sandboxes.docker import DockerSandbox
            from agentrl.sandboxes.dockerd import PrivateDockerDaemon, ensure_image

            with PrivateDockerDaemon() as daemon:
                client = daemon.client()
                image = ensure_image(client)
                colds = []
                for _ in range(3):
                    start = time.perf_counter()
                    with DockerSandbox(client=client, image=image) as box:
                        box.execute(ExecutionRequest(SNIPPET))
                        colds.append(time.perf_counter() - start)
                out["docker_cold_start_ms"] = statistics.median(colds) * 1000
                with DockerSandbox(client=client, image=image) as box:
                    out["docker_warm_ms"] = _median_ms(box, calls)
                out["docker_calls_per_s"] = _throughput(
                    lambda: DockerSandbox(client=client, image=image), clients, seconds
                )
                client.close()
        except Exception as exc:  # (no engine here: say why the docker rows are missing)
            out["docker_unavailable"] = f"{type(exc).__name__}: {exc}"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--no-docker", action="store_true")
    args = parser.parse_args(argv)
    result = measure_tiers(args.calls, args.clients, args.seconds, docker=not args.no_docker)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
