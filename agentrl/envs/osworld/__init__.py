"""OSWorld-compatible desktop tasks: OSWorld's task JSON format and its evaluation semantics.

:mod:`~agentrl.envs.osworld.tasks` reads and validates task files, :mod:`~agentrl.envs.osworld.metrics`
holds OSWorld's metric functions and :mod:`~agentrl.envs.osworld.evaluate` scores a finished episode
from getter values the desktop provides. No environment id is registered here yet.
"""
