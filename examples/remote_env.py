"""An env served over the network (``agentrl serve-env``), played from a client as a plain Gymnasium env.

Starts ``agentrl serve-env ENV_ID`` in its own process (as a CPU node would run it), then plays oracle and
junk episodes through ``gym.make(ENV_ID, remote=URL)`` from several client threads at once, and, when
OpenEnv's client is installed, one episode through ``openenv.core.GenericEnvClient``::

    python examples/remote_env.py --quick                      # SQL-v0, 4 sessions x 2 episodes (CI)
    python examples/remote_env.py --env-id AgentRL/TIRMath-v0 --sessions 16 --episodes 5
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

REQUIRES = ["websockets", "uvicorn"]
"""serve-env's server and client (pip install 'agentrl-gym[serve]')."""


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Serve, play, print mean returns per agent; returns them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="AgentRL/SQL-v0", help="a text env id from `agentrl list`")
    parser.add_argument("--sessions", type=int, default=8, help="client threads, one session each")
    parser.add_argument("--episodes", type=int, default=4, help="episodes per session and agent")
    parser.add_argument("--quick", action="store_true", help="4 sessions x 2 episodes (for CI)")
    args = parser.parse_args(argv)
    sessions, episodes = (4, 2) if args.quick else (args.sessions, args.episodes)

    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the ids)

    # --allow-oracle: this script plays the oracle as its baseline; a server for agents under test leaves it off
    argv_server = [sys.executable, "-m", "agentrl.cli", "serve-env", args.env_id, "--port", "0", "--insecure-loopback"]
    argv_server.append("--allow-oracle")
    server = subprocess.Popen([*argv_server, "--max-sessions", str(sessions)], stdout=subprocess.PIPE, text=True)
    try:
        url = (server.stdout.readline() if server.stdout else "").split()[-1]
        print(f"serving {args.env_id} at {url}")
        returns: dict[str, list[float]] = {"oracle": [], "junk": []}
        lock = threading.Lock()
        errors: list[BaseException] = []

        def play(index: int) -> None:
            try:
                play_episodes(index)
            except BaseException as error:  # re-raised in the main thread below, so the script fails loudly
                with lock:
                    errors.append(error)

        def play_episodes(index: int) -> None:
            env = gym.make(args.env_id, remote=url)
            for episode in range(episodes):
                for agent in ("oracle", "junk"):
                    env.reset(seed=index * 100 + episode)
                    total, done = 0.0, False
                    while not done:
                        action = env.unwrapped.oracle_action() if agent == "oracle" else "I do not know."
                        _, reward, terminated, truncated, _ = env.step(action)
                        total, done = total + reward, terminated or truncated
                    with lock:
                        returns[agent].append(total)
            env.close()

        started = time.perf_counter()
        threads = [threading.Thread(target=play, args=(i,)) for i in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise RuntimeError(f"{len(errors)} of {sessions} sessions failed; the first: {errors[0]}") from errors[0]
        means = {agent: sum(values) / len(values) for agent, values in returns.items()}
        print(f"{sessions} sessions x {episodes} episodes in {time.perf_counter() - started:.1f} s: "
              f"mean return oracle {means['oracle']:.2f}, junk {means['junk']:.2f}")  # fmt: skip
        try:
            from openenv.core.generic_client import GenericEnvClient
        except ImportError:
            print("OpenEnv's client is not installed (pip install --no-deps openenv-core==0.3.0 fastmcp): skipped")
        else:
            with GenericEnvClient(base_url=url).sync() as client:
                first = client.reset(seed=0)
                result = client.step({"action": "I do not know."})
                print(f"OpenEnv's GenericEnvClient: first observation {len(first.observation['obs'])} chars, "
                      f"a junk answer -> reward {result.reward}, done {result.done}")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    if means["oracle"] <= means["junk"]:
        raise SystemExit("the oracle should beat the junk answers")
    return means


if __name__ == "__main__":
    main()
