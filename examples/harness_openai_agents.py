"""An OpenAI Agents SDK agent trained with our GRPO: the SDK's own ``Agent`` and ``Runner``, handed our client.

The agent is ordinary Agents SDK code (PyPI ``openai-agents``): an ``Agent`` with instructions and a function
tool, run by ``Runner.run`` turn after turn, its history carried by ``result.to_input_list()``. The one line that
belongs to training is the model: ``OpenAIChatCompletionsModel(model=model, openai_client=client)``, the
``AsyncOpenAI`` client the trainer hands the harness (its recording endpoint)::

    python examples/harness_openai_agents.py --quick     # 2 GRPO steps on AgentRL/Letter-v0, tiny model (CI)
    agentrl train grpo --env AgentRL/Letter-v0 --model tiny --harness examples.harness_openai_agents:run_episode
"""

from __future__ import annotations

from typing import Any

REQUIRES = ["agents", "openai", "torch", "transformers"]
"""pip install 'agentrl-gym[harness,train]'"""


def count_letters(text: str, letter: str) -> int:
    """How many times ``letter`` occurs in ``text``."""
    return text.count(letter)


async def run_episode(env: Any, client: Any, model: str) -> None:
    """Play one episode with an Agents SDK agent; ``client`` is an ``openai.AsyncOpenAI``."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # traces go to OpenAI's servers by default; there are none here
    agent = Agent(
        name="letters",
        instructions="Answer with the letters you are asked for, and nothing else.",
        tools=[function_tool(count_letters)],
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
    )
    observation, _ = env.reset()
    history: list[Any] = []
    done = False
    while not done:
        result = await Runner.run(agent, [*history, {"role": "user", "content": str(observation)}], max_turns=3)
        history = result.to_input_list()
        observation, _, terminated, truncated, _ = env.step(str(result.final_output or ""))
        done = terminated or truncated


def main(argv: list[str] | None = None) -> list[float]:
    """Train the Agents SDK agent (see examples/harness_openai.py for the settings)."""
    from harness_openai import train_letter  # type: ignore[import-not-found]  (run as a script from examples/)

    return train_letter(run_episode, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
