"""Start-up deadlines that stretch with the machine's load.

A desktop or a browser that starts in 2 s on an idle machine can take 10 s on a 2-core machine
running a test suite: a fixed deadline then fails a start that was only slow. :func:`scaled_timeout`
multiplies a base deadline by ``1 + load / CPUs`` (the 1-minute load average), capped at
:data:`MAX_FACTOR` times the base, and :func:`load_note` says what the deadline was scaled by, for
error messages that name the step that timed out.

>>> scaled_timeout(5.0, load=0.0, cpus=2)
5.0
>>> scaled_timeout(5.0, load=3.1, cpus=2)
12.8
>>> scaled_timeout(5.0, load=50.0, cpus=2)  # capped
20.0
>>> load_note(load=3.1, cpus=2)
'load 3.1 on 2 CPUs'
"""

from __future__ import annotations

import math
import os

__all__ = ["MAX_FACTOR", "load_note", "scaled_timeout", "system_load"]

#: the most a deadline is stretched (times its base)
MAX_FACTOR = 4.0


def system_load() -> tuple[float, int]:
    """The 1-minute load average and the CPU count (load 0.0 where the system does not say)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        load = 0.0
    return max(0.0, load), max(1, os.cpu_count() or 1)


def scaled_timeout(
    base_s: float, *, load: float | None = None, cpus: int | None = None, max_factor: float = MAX_FACTOR
) -> float:
    """``base_s`` times ``1 + load / cpus``, at most ``max_factor`` times ``base_s``; rounded up to 0.1 s.

    Args:
        base_s: the deadline on an idle machine.
        load: the load average to use (default: the machine's 1-minute one).
        cpus: the CPU count to use (default: the machine's).
        max_factor: the cap on the factor.
    """
    current_load, current_cpus = system_load()
    load = current_load if load is None else max(0.0, load)
    cpus = current_cpus if cpus is None else max(1, cpus)
    factor = min(max_factor, 1.0 + load / cpus)
    return math.ceil(base_s * factor * 10 - 1e-9) / 10


def load_note(*, load: float | None = None, cpus: int | None = None) -> str:
    """``"load 3.1 on 2 CPUs"``: the machine's load, for an error message."""
    current_load, current_cpus = system_load()
    load = current_load if load is None else load
    cpus = current_cpus if cpus is None else cpus
    return f"load {load:.1f} on {cpus} CPU{'s' if cpus != 1 else ''}"
