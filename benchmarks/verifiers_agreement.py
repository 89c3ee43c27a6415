r"""Does verifiers' own evaluation score an AgentRL env as ``agentrl bench`` does? Both against one endpoint.

Run ``python benchmarks/verifiers_agreement.py [--env AgentRL/SQL-v0] [--episodes 3] [--model smollm2]`` from the
repository root. The model (``agentrl serve-model``'s names: ``smollm2``, ``tiny``, or a folder) is served once
over the OpenAI-compatible API; then, greedy, with the same token budget and the same seeds:

* ``vf-eval agentrl-verifiers`` (verifiers' own command line, in a subprocess): the taskset of
  :mod:`agentrl.integrations.verifiers` played by verifiers' ``null`` harness through verifiers' interception
  server;
* ``agentrl bench --agent react --backend openai``: the reference agent.

Printed and written to ``benchmarks/results/verifiers_agreement.json``: per episode, each side's reward and
number of turns, and whether the assistant's texts and the observations they answered are the same turn by turn;
and whether all agree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "verifiers_agreement.json"

__all__ = ["compare", "main", "run_bench"]


def _cli_env() -> dict[str, str]:
    """The bench subprocess's environment: the repository importable, no model downloads."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run_bench(
    base_url: str, model: str, env_id: str, episodes: int, seed: int, env_kwargs: dict[str, Any], max_tokens: int,
    out: Path, timeout_s: float = 900.0,
) -> dict[int, dict[str, Any]]:
    """Play the episodes with ``agentrl bench`` (the reference agent); per episode index, as ``read_vf_traces``."""
    command = [
        sys.executable, "-m", "agentrl.cli", "bench", "--env", env_id, "--agent", "react", "--backend", "openai",
        "--base-url", base_url, "--model", model, "--temperature", "0", "--max-tokens", str(max_tokens),
        "--concurrency", "1", "--episodes", str(episodes), "--seeds", str(seed), "--out", str(out), "--no-progress",
    ]
    for key, value in env_kwargs.items():
        command += ["--env-kwarg", f"{key}={json.dumps(value)}"]
    done = subprocess.run(
        command, cwd=ROOT, env=_cli_env(), capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise RuntimeError(f"agentrl bench failed (exit {done.returncode}):\n{output}")
    from agentrl.bench.results import load_run

    played: dict[int, dict[str, Any]] = {}
    for row in load_run(out):
        played[int(row["episode"])] = {
            "reward": float(row["reward"]),
            "turns": int(row["turns"]),
            "success": bool(row["success"]),
            "texts": [entry["text"] for entry in row["trajectory"] if entry["role"] == "agent"],
            # the observations each reply answered (the last one, after the final step, was answered by none)
            "observations": [entry["text"] for entry in row["trajectory"] if entry["role"] == "env"][: row["turns"]],
        }
    return played


def compare(
    model: str = "smollm2", env_id: str = "AgentRL/SQL-v0", episodes: int = 3, seed: int = 0,
    env_kwargs: dict[str, Any] | None = None, max_tokens: int = 64,
) -> dict[str, Any]:
    """Serve ``model``, play the episodes both ways, and line them up (see the module docstring)."""
    from agentrl.integrations.verifiers import run_vf_eval
    from agentrl.llm.server import load_backend, serve_model

    env_kwargs = dict(env_kwargs or {})
    started = time.perf_counter()
    with load_backend(model) as backend, serve_model(backend) as server, \
            tempfile.TemporaryDirectory(prefix="agentrl-vf-agreement-") as folder:
        vf = run_vf_eval(
            server.base_url, server.model, env_id, Path(folder, "vf"),
            episodes=episodes, seed=seed, env_kwargs=env_kwargs, max_tokens=max_tokens,
        )
        bench = run_bench(
            server.base_url, server.model, env_id, episodes, seed, env_kwargs, max_tokens, Path(folder, "bench")
        )
    rows = []
    for index in range(episodes):
        ours, theirs = bench.get(index), vf.get(index)
        rows.append({
            "episode": index,
            "bench": None if ours is None else {k: ours[k] for k in ("reward", "success", "turns")},
            "verifiers": None if theirs is None else {k: theirs[k] for k in ("reward", "success", "turns")},
            "same_texts": ours is not None and theirs is not None and ours["texts"] == theirs["texts"],
            "same_observations": ours is not None and theirs is not None
            and ours["observations"] == theirs["observations"],
        })
    agree = all(
        row["bench"] is not None and row["bench"] == row["verifiers"] and row["same_texts"] and row["same_observations"]
        for row in rows
    )
    return {
        "env": env_id, "env_kwargs": env_kwargs, "model": model, "episodes": episodes, "seed": seed,
        "max_tokens": max_tokens, "temperature": 0.0,
        "bench_mean_reward": sum(r["bench"]["reward"] for r in rows if r["bench"]) / episodes,
        "verifiers_mean_reward": sum(r["verifiers"]["reward"] for r in rows if r["verifiers"]) / episodes,
        "episodes_compared": rows, "all_agree": agree, "wall_s": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: compare, print, write the result file; exit 1 when the two disagree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="AgentRL/SQL-v0")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=JSON")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    env_kwargs = {}
    for item in args.env_kwarg:
        key, _, value = item.partition("=")
        env_kwargs[key] = json.loads(value)
    result = compare(args.model, args.env, args.episodes, args.seed, env_kwargs, args.max_tokens)
    given = argv if argv is not None else sys.argv[1:]
    result["command"] = " ".join(["python benchmarks/verifiers_agreement.py", *given])
    for row in result["episodes_compared"]:
        print(json.dumps(row))
    print(f"mean reward: bench {result['bench_mean_reward']:.3f}, verifiers {result['verifiers_mean_reward']:.3f}; "
          f"all agree: {result['all_agree']} ({result['wall_s']} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0 if result["all_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
