"""The pooled-interpreter protocol (agentrl.sandboxes.pool) over an in-memory transport: no processes.

The real transports (pipes to a subprocess, a container's attached stream) are covered by
test_python_sandbox, test_sandbox_attacks and test_docker_sandbox; this pins down the protocol
itself: framing, nonces, the deadline, replacing a dead worker and the mapping into results.
"""

from __future__ import annotations

import json
import threading
import time
import weakref

import pytest

from agentrl.core.errors import AgentRLError, SandboxClosed, SandboxOptionError
from agentrl.sandboxes.base import ExecutionRequest
from agentrl.sandboxes.pool import (
    HEADER,
    MODES,
    ChannelCorrupt,
    PooledSandbox,
    WorkerPool,
    check_option,
    decode_header,
    encode_frame,
)


class FakeWorker:
    """A worker that answers in-process: ``code`` says how it behaves."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.info: dict = {"ready": True}
        self.dead = False
        self.out = bytearray()
        self.unasked = False
        self.gone = False

    def alive(self) -> bool:
        return not self.dead and not self.gone

    def pending(self) -> bool:
        return self.unasked

    def write(self, data: bytes, deadline: float) -> None:
        if self.gone:
            raise BrokenPipeError
        length = decode_header(data[: HEADER.size])
        req = json.loads(data[HEADER.size : HEADER.size + length])
        code = req["code"]
        if code == "hang":
            return
        if code == "die":
            self.gone = True
            return
        if code == "garbage":
            self.out += b"not a frame at all"
            return
        if code == "unasked":
            self.unasked = True
        nonce = "someone else" if code == "wrong nonce" else req["nonce"]
        ok = code != "raise"
        self.out += encode_frame({"nonce": nonce, "ok": ok, "output": f"{self.index}:{code}",
                                  "error": None if ok else "ValueError: boom", "truncated": False})

    def read(self, n: int, deadline: float) -> bytes:
        if len(self.out) < n:
            if self.gone:
                raise EOFError
            time.sleep(max(0.0, deadline - time.monotonic()))
            raise TimeoutError
        data = bytes(self.out[:n])
        del self.out[:n]
        return data

    def kill(self) -> None:
        self.dead = True

    def exit_reason(self) -> str:
        return "the fake worker exited"


class FakeSandbox(PooledSandbox):
    isolation = "none (a test double)"

    def __init__(self, mode: str = "session", pool_size: int = 1) -> None:
        self.mode = check_option("mode", mode, MODES)
        self.timeout_s = 0.2
        self.cpu_s = 0.2
        self.max_output_chars = 100
        self.spawned: list[FakeWorker] = []
        self._lock = threading.RLock()
        self._closed = False
        self._pool = WorkerPool(self._spawn, pool_size)
        self._finalizer = weakref.finalize(self, WorkerPool.close, self._pool)

    def _spawn(self) -> FakeWorker:
        worker = FakeWorker(len(self.spawned))
        self.spawned.append(worker)
        return worker


def test_framing_round_trip_and_bad_headers():
    frame = encode_frame({"a": "é"})
    assert decode_header(frame[: HEADER.size]) == len(frame) - HEADER.size
    assert json.loads(frame[HEADER.size :]) == {"a": "é"}
    with pytest.raises(ChannelCorrupt):
        decode_header(b"XXXX\x00\x00\x00\x01")
    with pytest.raises(ChannelCorrupt):
        decode_header(HEADER.pack(b"AGRL", 2**31))


def test_replies_map_into_results_and_the_worker_is_kept():
    with FakeSandbox() as box:
        r = box.execute(ExecutionRequest("print(1)"))
        assert r.ok and r.output == "0:print(1)" and r.error is None and not r.timed_out
        r = box.execute(ExecutionRequest("raise"))
        assert not r.ok and r.error == "ValueError: boom"
        assert box._pool.active is box.spawned[0]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("hang", "timed out after 0.2s; the interpreter was restarted and its variables are lost"),
        ("die", "the fake worker exited; it was restarted and its variables are lost"),
        ("garbage", "the code corrupted the sandbox's control channel (bad frame header)"),
        ("wrong nonce", "the code corrupted the sandbox's control channel (reply does not match the request)"),
    ],
)
def test_failures_kill_the_worker_and_a_spare_takes_over(code, error):
    with FakeSandbox() as box:
        box.execute(ExecutionRequest("x = 1"))
        first = box.spawned[0]
        r = box.execute(ExecutionRequest(code))
        assert not r.ok and r.error.startswith(error), r
        assert r.timed_out == (code == "hang")
        assert first.dead
        r = box.execute(ExecutionRequest("print(2)"))
        assert r.ok and not r.output.startswith("0:"), r


def test_unsolicited_data_is_caught_before_the_next_call():
    with FakeSandbox(mode="stateless") as box:
        assert box.execute(ExecutionRequest("unasked")).ok
        r = box.execute(ExecutionRequest("print(1)"))
        assert r.error == ("the code corrupted the sandbox's control channel (unsolicited data on the control channel)"
                           "; it was restarted")
        assert box.execute(ExecutionRequest("print(1)")).ok


def test_reset_swaps_in_a_spare_and_close_is_final():
    box = FakeSandbox()
    box.execute(ExecutionRequest("x = 1"))
    first = box.spawned[0]
    box.reset()
    assert box.execute(ExecutionRequest("x")).ok
    assert box._pool.active is not first
    deadline = time.monotonic() + 5
    while not first.dead and time.monotonic() < deadline:  # killed in the background
        time.sleep(0.01)
    assert first.dead
    box.close()
    box.close()
    assert all(w.dead for w in box.spawned)
    with pytest.raises(SandboxClosed, match="make a new FakeSandbox") as info:
        box.execute(ExecutionRequest("x"))
    assert isinstance(info.value, AgentRLError) and isinstance(info.value, RuntimeError)
    with pytest.raises(SandboxClosed):
        box.reset()


def test_bad_options_name_the_allowed_values():
    with pytest.raises(SandboxOptionError, match="mode must be 'session' or 'stateless', not 'sesion'; did you mean"):
        FakeSandbox(mode="sesion")
    assert issubclass(SandboxOptionError, ValueError)
