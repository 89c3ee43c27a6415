"""An AgentRL env evaluated by verifiers' own ``vf-eval``, the model behind our OpenAI-compatible server.

verifiers (Prime Intellect's environments library, the one prime-rl trains with) knows AgentRL's text envs as
the taskset ``agentrl-verifiers``. This script serves a model with ``serve_model`` (``agentrl serve-model``),
runs the ``vf-eval`` command it prints, and shows each episode's reward and turns from verifiers' own traces::

    python examples/verifiers_env.py --quick                    # a tiny model, 2 SQL-v0 episodes (CI)
    python examples/verifiers_env.py --episodes 10              # SmolLM2-135M-Instruct, TIRMath's easy tier

The same command against any OpenAI-compatible endpoint (vLLM, a provider) evaluates that model; in prime-rl,
``agentrl-verifiers`` is the env id and ``env.taskset.*`` its settings.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

REQUIRES = ["verifiers", "transformers"]
"""pip install 'agentrl-gym[verifiers,llm]' && pip install --no-deps verifiers==0.4.0"""


def main(argv: list[str] | None = None) -> dict[int, dict]:
    """Serve the model, run vf-eval, print and return its episodes by task index."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="a tiny model, 2 short SQL-v0 episodes (for CI)")
    args = parser.parse_args(argv)

    from agentrl.integrations.verifiers import run_vf_eval, vf_eval_command
    from agentrl.llm.server import load_backend, serve_model

    if args.quick:
        model, env_id, episodes, env_kwargs, max_tokens = "tiny", "AgentRL/SQL-v0", 2, {"max_turns": 2}, 16
    else:
        model, env_id, episodes = "smollm2", "AgentRL/TIRMath-v0", args.episodes
        env_kwargs, max_tokens = {"difficulty": 0, "max_turns": 2}, 64
    options = {"episodes": episodes, "env_kwargs": env_kwargs, "max_tokens": max_tokens}
    with load_backend(model) as backend, serve_model(backend) as server, \
            tempfile.TemporaryDirectory(prefix="agentrl-vf-example-") as folder:
        command = vf_eval_command(server.base_url, server.model, env_id, Path(folder), **options)
        print("$", " ".join(part if " " not in part and "{" not in part else f"'{part}'" for part in command))
        episodes_played = run_vf_eval(server.base_url, server.model, env_id, Path(folder), **options)
    for index, episode in sorted(episodes_played.items()):
        summary = {key: episode[key] for key in ("reward", "success", "turns")}
        print(f"episode {index}: {json.dumps(summary)}  first reply: {episode['texts'][0][:60]!r}")
    mean = sum(episode["reward"] for episode in episodes_played.values()) / len(episodes_played)
    print(f"mean reward over {len(episodes_played)} episodes (verifiers' env_reward = the env's return): {mean:.3f}")
    return episodes_played


if __name__ == "__main__":
    main()
