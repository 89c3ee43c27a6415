"""OSWorld's tasks: the task file format, the pool of runnable tasks, what sets a task up and what scores it.

:mod:`.format` (load, type and validate ``evaluation_examples/examples/<domain>/<id>.json``), :mod:`.pool`
(a pool from real task files, keeping what this desktop can run and saying why not for the rest),
:mod:`.coverage` (``agentrl osworld coverage``), :mod:`.assets` (the offline store of the files tasks fetch),
:mod:`.setup` (the ``config``/``postconfig`` steps), :mod:`.chrome_setup` (the steps that drive Chromium),
:mod:`.evaluate` (a finished episode's score by the task's evaluator block, with the getters and metrics of
:mod:`agentrl.envs.osworld.evaluators`) and :mod:`.real_oracles` (scripted solutions for OSWorld's own task
ids). ``data/`` holds our own 47 tasks in OSWorld's format.
"""
