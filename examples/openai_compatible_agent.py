r"""A ReAct agent talking to an OpenAI-compatible server: the pattern for any vLLM, SGLang or OpenAI endpoint.

The example starts :func:`agentrl.llm.server.serve_model` (our own small
OpenAI-compatible server) on a tiny random model, or on the embedded SmolLM2 with ``--smollm2``,
and benchmarks a :class:`~agentrl.agents.react.ReActAgent` whose backend is an
:class:`~agentrl.llm.OpenAICompatibleBackend` pointed at it. It then checks token-in
generation (``/v1/completions`` with token ids, as RL rollouts use it). With a real server, skip the
first step and point ``--base-url`` at it::

    python examples/openai_compatible_agent.py --quick          # tiny model, 2 episodes (CI)
    python examples/openai_compatible_agent.py --smollm2        # the embedded SmolLM2-135M
    python examples/openai_compatible_agent.py --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct

The same from the command line, in two terminals::

    agentrl serve-model --model smollm2 --port 8000
    agentrl bench --env AgentRL/TIRMath-v0 --agent react --backend openai \
        --base-url http://127.0.0.1:8000/v1 --model SmolLM2-135M-Instruct --episodes 5

The tiny model's weights are random, so its answers are gibberish and score 0: what it shows is
the plumbing (requests, batching, token ids), in seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

REQUIRES = ["torch", "transformers", "fastapi", "uvicorn", "httpx"]
"""Optional packages this example needs (``pip install 'agentrl-gym[llm]'``)."""


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Serve a model (unless ``--base-url``), benchmark a ReAct agent through it, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="AgentRL/TIRMath-v0")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--smollm2", action="store_true", help="serve the embedded SmolLM2 instead of a tiny model")
    parser.add_argument("--base-url", help="an existing OpenAI-compatible server (nothing is started)")
    parser.add_argument("--model", help="the model name that server expects")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--quick", action="store_true", help="tiny model, 2 episodes (for CI)")
    args = parser.parse_args(argv)

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)
    from agentrl.agents.registry import AgentSpec
    from agentrl.bench.runner import BenchConfig, run_bench
    from agentrl.bench.stats import format_summary, summarize
    from agentrl.llm import GenerationConfig, OpenAICompatibleBackend, TransformersBackend

    local: Any = None
    server: Any = None
    if args.base_url:
        if not args.model:
            parser.error("--base-url needs --model")
        base_url, model = args.base_url, args.model
    else:
        from agentrl.llm.server import serve_model

        if args.smollm2 and not args.quick:
            from agentrl.llm import smollm2_backend

            local = smollm2_backend()
        else:
            from agentrl.llm import build_tiny_model

            local = TransformersBackend(build_tiny_model(tempfile.mkdtemp() + "/tiny"), name="tiny")
        server = serve_model(local)  # port 0: a free loopback port
        base_url, model = server.base_url, server.model
        print(f"serving {model} at {base_url}")

    # What `agentrl bench --agent react --backend openai --base-url URL --model NAME` builds.
    spec = AgentSpec(
        "react",
        backend="openai",
        backend_options={"base_url": base_url, "model": model, "max_concurrency": 4},
        agent_options={"max_tokens": 32 if args.quick else args.max_tokens},
    )
    # For token-in calls: vLLM writes sampled tokens as "token_id:N" when asked; our server does too.
    client = OpenAICompatibleBackend(
        base_url, model, logprobs=True, extra_body={"return_tokens_as_token_ids": True}, max_concurrency=4
    )
    try:
        episodes = 2 if args.quick else args.episodes
        start = time.perf_counter()
        outcome = run_bench(
            BenchConfig(
                env_ids=[args.env],
                agent=spec,
                out=tempfile.mkdtemp(prefix="agentrl-openai-agent-"),
                episodes=episodes,
                concurrency=2,
                env_kwargs={"max_turns": 2},
                progress=False,
                report=False,
            )
        )
        print(f"{outcome.ran} episode(s) in {time.perf_counter() - start:.1f} s")
        print()
        print(format_summary(summarize(outcome.records)))

        # Token-in generation: exact prompt ids in, exact sampled ids and logprobs out.
        if local is not None:
            prompt = local.encode_prompt([{"role": "user", "content": "What is 6 * 7?"}])
            config = GenerationConfig(max_tokens=8, temperature=0.0)
            served = client.generate_ids(prompt, config)
            direct = local.generate_ids(prompt, config)
            same = served.token_ids == direct.token_ids
            print(f"\ntoken-in: {len(prompt)} prompt ids -> {list(served.token_ids)} "
                  f"(logprobs {[round(lp, 3) for lp in served.logprobs]}); same as the backend: {same}")  # fmt: skip
            if not same:
                raise SystemExit("the server's greedy tokens differ from the backend's")
        if local is not None:
            print(f"backend batches: {local.stats['batches']:.0f} for {local.stats['requests']:.0f} requests "
                  f"(largest {local.stats['max_batch']:.0f})")  # fmt: skip
        return outcome.records
    finally:
        client.close()
        if server is not None:
            server.stop()
        if local is not None:
            local.close()


if __name__ == "__main__":
    main()
