"""The network face every server shares, one layer above ``core``: HTTP and WebSocket serving, and the env server.

* :mod:`~agentrl.serving.stack`: ASGI apps served by uvicorn in a thread
  (:func:`~agentrl.serving.stack.start_server_thread`), the request middleware (body caps, bearer tokens, the
  servers' error shapes), bodies, forms, unix sockets; every server of agentrl (model, retrieval, desktop,
  sandbox, env) is built on it.
* :mod:`~agentrl.serving.guard`: what every server checks before a route runs (``Host`` and ``Origin``, JSON
  bodies, connection limits, header and body deadlines, token strength, public-only server-side fetches);
  ``docs/design/security.md`` is the threat model.
* :mod:`~agentrl.serving.env_server`: any registered env id over OpenEnv's protocol (``agentrl serve-env``).
* :mod:`~agentrl.serving.remote_env`: its client, ``gym.make(ID, remote=URL)``, a Gymnasium env again.

Importing this package imports no web framework: uvicorn and Starlette load when a server is built.
"""
