"""``AgentRL/OSWorld-v0``: a real Linux desktop with OSWorld's task files, action spaces and evaluators.

The package is split by role, each part importing only the ones before it:

* :mod:`.runtime`: one real desktop (Xvfb, a window manager, apps, the sandbox they run in, recording);
* :mod:`.server` speaks OSWorld's VM-server endpoints for a desktop; :mod:`.client` is its client
  (:class:`~agentrl.envs.osworld.client.DesktopClient`), also usable against OSWorld's own server;
* :mod:`.evaluators`: OSWorld's getters and metrics, one module per app;
* :mod:`.tasks`: the task file format, the task pool and coverage, assets, set-up steps, real-task oracles, and
  :func:`~agentrl.envs.osworld.tasks.evaluate.evaluate`, which scores a finished episode;
* :mod:`.env` (the Gymnasium env), :mod:`.actions` (OSWorld's two action spaces), :mod:`.a11y` (the
  accessibility tree) and :mod:`.som` (set-of-marks) at the top;
* :mod:`.cli`: ``agentrl osworld coverage|fetch-assets``, the subcommands the ``agentrl`` command adds.

The ids are registered by :mod:`agentrl.envs`; importing this package starts nothing.
"""
