"""Benchmark AgentRL/OSWorld-v0: steps per second, reset time, and the oracles of the shipped tasks.

    python benchmarks/osworld.py                 # the speed figures (about a minute)
    python benchmarks/osworld.py --oracles       # also run every shipped task's oracle and a no-op
    python benchmarks/osworld.py --skip-speed --task-reset .../libreoffice_impress/<id>.json .../chrome/<id>.json
                                                    # the reset time of real OSWorld task files

A step is one pyautogui action (a mouse move) plus one 1280x720 screenshot observation, with the
env's wait after the action off (``settle_s=0, pause_s=0``) so the figure is the env's own cost (OSWorld
pauses 2 s per step); one figure is also taken with the env's defaults (the settle: the screen and the
apps still for ``quiet_s``; ``python benchmarks/desktop_settle.py`` measures it on real apps). With 4
envs, each env steps in its own thread (the work is the desktop's, in other processes); the figure is the total steps
per second. Reset time is the median over ``--repeats``
resets of a task that launches one app (xterm) and waits for its window. Timings on a shared
2-core machine are noisy: medians over repeats, and the command to reproduce, are what to compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["bench_speed", "main", "run_oracles", "task_reset_times"]

_XTERM_TASK = {
    "id": "bench-xterm",
    "instruction": "Nothing to do",
    "config": [{"type": "launch", "parameters": {"command": ["xterm"]}}],
    "evaluator": {"func": "infeasible"},
}


def _env(**kwargs: Any) -> Any:
    from agentrl.envs.osworld.env import OSWorldEnv
    from agentrl.envs.osworld.tasks.format import OSWorldTask

    kwargs.setdefault("pause_s", 0.0)
    kwargs.setdefault("settle_s", 0.0)
    return OSWorldEnv(tasks=[OSWorldTask.from_dict(_XTERM_TASK)], task_id="bench-xterm", **kwargs)


def _steps_per_second(env: Any, steps: int) -> float:
    env.reset(seed=0)
    start = time.perf_counter()
    for i in range(steps):
        env.step(f"pyautogui.moveTo({100 + i % 400}, {100 + i % 300})")
    return steps / (time.perf_counter() - start)


def bench_speed(steps: int = 100, repeats: int = 5, num_envs: int = 4) -> dict[str, Any]:
    """Steps/s of one env and of ``num_envs`` envs in threads, and the median reset time.

    The step figures run with no wait after an action (the env's own cost); one more figure runs one env
    with the env's default settle after each action.
    """
    import inspect

    from agentrl.envs.osworld.env import OSWorldEnv

    defaults = {name: inspect.signature(OSWorldEnv).parameters[name].default for name in ("settle_s", "pause_s")}
    env = _env(max_steps=10 * steps + 10)
    try:
        one = statistics.median(_steps_per_second(env, steps) for _ in range(3))
        env.settle_s, env.pause_s = defaults["settle_s"], defaults["pause_s"]
        one_default = _steps_per_second(env, max(10, steps // 4))
        env.settle_s, env.pause_s = 0.0, 0.0
        resets = []
        for _ in range(repeats):
            start = time.perf_counter()
            env.reset(seed=0)
            resets.append(time.perf_counter() - start)
    finally:
        env.close()

    envs = [_env(max_steps=10 * steps + 10) for _ in range(num_envs)]
    rates: list[float] = [0.0] * num_envs
    try:
        for e in envs:
            e.reset(seed=0)

        def run(index: int) -> None:
            rates[index] = _steps_per_second(envs[index], steps)

        start = time.perf_counter()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(num_envs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total = num_envs * steps / (time.perf_counter() - start)
    finally:
        for e in envs:
            e.close()
    return {
        "steps_per_s_one_env": round(one, 1),
        "steps_per_s_one_env_default_settle": round(one_default, 1),
        f"steps_per_s_{num_envs}_envs_total": round(total, 1),
        "reset_s_median": round(statistics.median(resets), 3),
        "reset_s_max": round(max(resets), 3),
        "steps": steps,
        "repeats": repeats,
        "screen": "1280x720",
    }


def task_reset_times(paths: list[str], repeats: int = 5) -> list[dict[str, Any]]:
    """Median and max seconds of ``repeats`` resets of each task file (OSWorld's own files too), one desktop each.

    A reset is the whole of it: the desktop restored, the task's setup steps (an app launched and its window
    waited for, files uploaded), the first screenshot.
    """
    from agentrl.envs.osworld.env import OSWorldEnv
    from agentrl.envs.osworld.tasks.format import load_task

    rows = []
    for path in paths:
        task = load_task(path)
        env = OSWorldEnv(tasks=[task], task_id=task.id)
        try:
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                env.reset(seed=0)
                times.append(time.perf_counter() - start)
        finally:
            env.close()
        rows.append(
            {
                "task_id": task.id,
                "file": str(path),
                "reset_s_median": round(statistics.median(times), 2),
                "reset_s_max": round(max(times), 2),
                "repeats": repeats,
            }
        )
    return rows


def run_oracles(task_ids: list[str] | None = None) -> dict[str, Any]:
    """Every shipped task's oracle (score, steps, seconds) and a no-op (``DONE`` at once) on one env."""
    from agentrl.envs.osworld.env import OSWorldEnv

    env = OSWorldEnv()
    rows = []
    try:
        for task in env.tasks:
            if task_ids and task.id not in task_ids:
                continue
            start = time.perf_counter()
            env.reset(options={"task_id": task.id})
            setup_s = env.last_setup_s
            reward, info = 0.0, {}
            while env.episode_active:  # the episode contract's oracle convention: one action at a time
                _, reward, _, _, info = env.step(env.oracle_action())
            oracle_s = time.perf_counter() - start
            env.reset(options={"task_id": task.id})
            _, noop, *_ = env.step("DONE")
            rows.append(
                {
                    "task_id": task.id,
                    "oracle": reward,
                    "noop": noop,
                    "infeasible": task.evaluator.infeasible,
                    "setup_s": round(setup_s, 2),
                    "oracle_s": round(oracle_s, 2),
                    "details": info.get("eval_details"),
                }
            )
    finally:
        env.close()
    feasible = [r for r in rows if not r["infeasible"]]
    return {
        "tasks": len(rows),
        "oracle_mean": round(sum(r["oracle"] for r in rows) / max(1, len(rows)), 3),
        "noop_mean_feasible": round(sum(r["noop"] for r in feasible) / max(1, len(feasible)), 3),
        "setup_s_median": round(statistics.median(r["setup_s"] for r in rows), 2) if rows else None,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/osworld.py``: print the figures as JSON (and write ``--out``)."""
    parser = argparse.ArgumentParser(prog="python benchmarks/osworld.py", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--oracles", action="store_true", help="also run every shipped task's oracle and a no-op")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--task-reset", nargs="+", default=[], metavar="FILE", help="reset times of these task files")
    parser.add_argument("--out", default=None, help="write the JSON here")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"command": "python benchmarks/osworld.py " + " ".join(argv or sys.argv[1:])}
    if not args.skip_speed:
        result["speed"] = bench_speed(args.steps, args.repeats, args.num_envs)
        print(json.dumps(result["speed"], indent=2), flush=True)
    if args.task_reset:
        result["task_reset"] = task_reset_times(args.task_reset, args.repeats)
        print(json.dumps(result["task_reset"], indent=2), flush=True)
    if args.oracles:
        result["oracles"] = run_oracles()
        for row in result["oracles"]["rows"]:
            print(f"{row['task_id']:40s} oracle {row['oracle']:.1f} noop {row['noop']:.1f} setup {row['setup_s']:.2f}s")
        summary = {k: v for k, v in result["oracles"].items() if k != "rows"}
        print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
