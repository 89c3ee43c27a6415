"""A LangGraph agent trained with our GRPO: a ``StateGraph`` whose model node is LangChain's ``ChatOpenAI``.

The graph is ordinary LangGraph code (PyPI ``langgraph``, ``langchain-openai``): an ``agent`` node asks the model,
an ``act`` node steps the env with the reply and adds the next observation, and an edge loops until the episode
ends. The one line that belongs to training is the model, ``ChatOpenAI(model=model, root_client=client,
client=client.chat.completions, api_key=client.api_key)``: the ``openai.OpenAI`` client the trainer hands over::

    python examples/harness_langgraph.py --quick     # 2 GRPO steps on AgentRL/Letter-v0, tiny model (CI)
    agentrl train grpo --env AgentRL/Letter-v0 --model tiny --harness examples.harness_langgraph:run_episode
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

REQUIRES = ["langgraph", "langchain_openai", "openai", "torch", "transformers"]
"""pip install 'agentrl-gym[harness,train]'"""


class State(TypedDict):
    """The graph's state: the chat so far, and whether the env ended the episode."""

    messages: Annotated[list[Any], add_messages]
    done: bool


def run_episode(env: Any, client: Any, model: str) -> None:
    """Play one episode with a LangGraph graph; ``client`` is an ``openai.OpenAI``."""
    llm = ChatOpenAI(model=model, root_client=client, client=client.chat.completions, api_key=client.api_key)

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [llm.invoke(state["messages"])]}

    def act(state: State) -> dict[str, Any]:
        reply = state["messages"][-1]
        text = reply.content if isinstance(reply, AIMessage) and isinstance(reply.content, str) else ""
        observation, _, terminated, truncated, _ = env.step(text)
        return {"messages": [HumanMessage(str(observation))], "done": bool(terminated or truncated)}

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("act", act)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "act")
    graph.add_conditional_edges("act", lambda state: END if state["done"] else "agent")
    observation, _ = env.reset()
    start = [SystemMessage("Answer with the letters you are asked for."), HumanMessage(str(observation))]
    graph.compile().invoke({"messages": start, "done": False}, {"recursion_limit": 100})


def main(argv: list[str] | None = None) -> list[float]:
    """Train the LangGraph agent (see examples/harness_openai.py for the settings)."""
    from harness_openai import train_letter  # type: ignore[import-not-found]  (run as a script from examples/)

    return train_letter(run_episode, argv, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
