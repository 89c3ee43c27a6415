"""Container entry point: run the AgentRL worker with its protocol on the attached stdin/stdout.

The worker speaks its framed protocol on two inherited fds and then points fds 0, 1 and 2 at
/dev/null and its output capture. So the attached stdin and stdout are duplicated to fresh fds
first and handed to it as its request and response channels. Standard library only; importing this
file does nothing (the worker is imported inside the container only).
"""

import json
import os
import sys


def main() -> None:
    """Hand the attached stdin/stdout to the worker as its protocol fds and run it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _worker

    cfg = json.loads(sys.argv[1])
    cfg["req_fd"] = os.dup(0)
    cfg["resp_fd"] = os.dup(1)
    sys.argv = [sys.argv[0], json.dumps(cfg)]
    _worker.main()


if __name__ == "__main__":
    main()
