"""Image parts through OpenAICompatibleBackend, the FlashAdventure-style MilestoneJudge, the game env option."""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentrl.envs.games.vlm_judge import MilestoneJudge, parse_yes_no
from agentrl.llm.base import Generation, GenerationConfig

pytestmark = pytest.mark.timeout(60)


def picture(height: int = 5, width: int = 7, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)


def decode_data_url(url: str) -> np.ndarray:
    from PIL import Image

    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :]))).convert("RGB"))


# ---------------------------------------------------------------------------------------------- a local server


class RecordingServer:
    """A chat-completions server on 127.0.0.1 that records each request body and answers ``reply``."""

    def __init__(self, reply: str = "Yes") -> None:
        self.reply = reply
        self.bodies: list[Any] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                server.bodies.append(json.loads(self.rfile.read(length)))
                message = {"role": "assistant", "content": server.reply}
                data = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    pytest.importorskip("httpx")
    pytest.importorskip("PIL")
    served = RecordingServer()
    yield served
    served.close()


@pytest.fixture
def backend(server: RecordingServer) -> Iterator[Any]:
    from agentrl.llm.openai_compatible import OpenAICompatibleBackend

    made = OpenAICompatibleBackend(server.base_url, "test-vlm", max_retries=0)
    yield made
    made.close()


def test_image_parts_are_sent_as_png_data_urls(server: RecordingServer, backend: Any) -> None:
    image = picture()
    already = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, {"type": "image", "image": image}]},
        {"role": "user", "content": [already]},
    ]
    generation = backend.generate(messages, GenerationConfig(max_tokens=4))
    assert generation.text == "Yes"
    (body,) = server.bodies
    sent = body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}  # plain strings unchanged
    text, img = sent[1]["content"]
    assert text == {"type": "text", "text": "What is this?"}
    assert img["type"] == "image_url" and set(img) == {"type", "image_url"}
    np.testing.assert_array_equal(decode_data_url(img["image_url"]["url"]), image)
    assert sent[2]["content"] == [already]  # OpenAI-style parts pass through
    assert backend.count_tokens(messages) > 765


@pytest.mark.parametrize(
    ("image", "got"),
    [
        (np.zeros((4, 4), np.uint8), r"uint8 array of shape \(4, 4\)"),
        (np.zeros((4, 4, 4), np.uint8), r"uint8 array of shape \(4, 4, 4\)"),
        (np.zeros((4, 4, 3), np.float32), r"float32 array of shape \(4, 4, 3\)"),
        ([[[0, 0, 0]]], "got list"),
        (np.zeros((0, 4, 3), np.uint8), r"shape \(0, 4, 3\)"),
    ],
)
def test_bad_image_parts_raise_a_clear_error(server: RecordingServer, backend: Any, image: Any, got: str) -> None:
    messages = [{"role": "user", "content": [{"type": "image", "image": image}]}]
    with pytest.raises(ValueError, match=r"messages\[0\]\.content\[0\].*\(H, W, 3\)") as caught:
        backend.generate(messages, GenerationConfig())
    assert caught.match(got)
    assert server.bodies == []  # nothing was sent


def test_judge_through_the_openai_backend(server: RecordingServer, backend: Any, tmp_path: Path) -> None:
    image = picture(6, 9)
    judge = MilestoneJudge(backend, cache_dir=tmp_path)
    assert judge.model == "test-vlm"
    assert judge.judge(image, "A door is open.") is True
    (body,) = server.bodies
    assert body["max_tokens"] == 8 and body["temperature"] == 0.0
    parts = body["messages"][0]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    np.testing.assert_array_equal(decode_data_url(urls[0]), image)
    assert any(p["type"] == "text" and "A door is open." in p["text"] for p in parts)
    assert judge.judge(image, "A door is open.") is True
    assert len(server.bodies) == 1  # cached


# ---------------------------------------------------------------------------------------------- the judge


class ScriptedVLM:
    """Test double: a backend that answers from a script and records what it was asked."""

    def __init__(self, answer: Any = "Yes", model: str = "scripted-vlm") -> None:
        self.answer = answer  # a str, or a callable (image, question) -> str
        self.model = model
        self.calls: list[tuple[np.ndarray, str, GenerationConfig]] = []

    def generate(self, messages: Sequence[Mapping[str, Any]], config: GenerationConfig) -> Generation:
        (message,) = messages
        parts = message["content"]
        (image,) = [p["image"] for p in parts if p["type"] == "image"]
        (question,) = [p["text"] for p in parts if p["type"] == "text"]
        self.calls.append((image, question, config))
        text = self.answer(image, question) if callable(self.answer) else self.answer
        return Generation(text=text)


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [("Yes", True), ("yes.", True), ("No, the door is still shut.", False), ("**Yes**, it is.", True)],
)
def test_judge_reads_the_first_yes_or_no(tmp_path: Path, answer: str, verdict: bool) -> None:
    vlm = ScriptedVLM(answer)
    judge = MilestoneJudge(vlm, cache_dir=tmp_path, max_tokens=5)
    assert judge.judge(picture(), "The key is in the inventory.") is verdict
    ((image, question, config),) = vlm.calls
    np.testing.assert_array_equal(image, picture())
    assert "The key is in the inventory." in question and "Yes or No" in question
    assert config.max_tokens == 5 and config.temperature == 0.0


def test_garbage_counts_as_no_is_logged_and_not_cached(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vlm = ScriptedVLM("I cannot tell from this image")
    judge = MilestoneJudge(vlm, cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="agentrl.envs.games.vlm_judge"):
        assert judge.judge(picture(), "The level is complete.") is False
    assert "no yes/no" in caplog.text and "I cannot tell" in caplog.text
    assert judge.stats["unparsed"] == 1
    assert judge.judge(picture(), "The level is complete.") is False
    assert len(vlm.calls) == 2  # asked again: an unparseable reply is not a verdict
    assert not (tmp_path / "verdicts.jsonl").exists()


def test_parse_yes_no() -> None:
    assert parse_yes_no("No.") is False and parse_yes_no("NO") is False
    assert parse_yes_no("Answer: yes") is True
    assert parse_yes_no("") is None and parse_yes_no("yesterday, nothing") is None


def test_cache_hits_and_misses(tmp_path: Path) -> None:
    vlm = ScriptedVLM("Yes")
    judge = MilestoneJudge(vlm, cache_dir=tmp_path)
    image = picture()
    assert judge.judge(image, "The chest is open.")
    assert judge.judge(image.copy(), "The chest is open.")  # same pixels: a hit
    assert len(vlm.calls) == 1 and judge.stats == {"calls": 1, "hits": 1, "unparsed": 0}

    changed = image.copy()
    changed[0, 0, 0] ^= 1
    judge.judge(changed, "The chest is open.")  # one pixel differs: a miss
    assert len(vlm.calls) == 2
    judge.judge(image, "The chest is closed.")  # another description: a miss
    assert len(vlm.calls) == 3
    reshaped = image.reshape(7, 5, 3)  # the same bytes in another shape: a miss
    judge.judge(reshaped, "The chest is open.")
    assert len(vlm.calls) == 4

    other = ScriptedVLM("No", model="another-vlm")  # another model: a miss, in the same cache file
    assert MilestoneJudge(other, cache_dir=tmp_path).judge(image, "The chest is open.") is False
    assert len(other.calls) == 1


def test_cache_survives_a_new_judge(tmp_path: Path) -> None:
    first = ScriptedVLM(lambda image, question: "Yes" if "open" in question else "No")
    judge = MilestoneJudge(first, cache_dir=tmp_path / "judge")
    image = picture()
    assert judge.milestones(image, {"open": "The gate is open.", "lit": "The torch is lit."}) == ["open"]
    lines = (tmp_path / "judge" / "verdicts.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["verdict"] for r in records] == [True, False]
    assert {r["model"] for r in records} == {"scripted-vlm"}
    assert records[0]["description"] == "The gate is open."

    second = ScriptedVLM("garbage")  # would answer "no" to everything
    again = MilestoneJudge(second, cache_dir=tmp_path / "judge")
    assert again.milestones(image, {"open": "The gate is open.", "lit": "The torch is lit."}) == ["open"]
    assert second.calls == [] and again.stats["hits"] == 2

    # a verdict another judge appended after this one read the file is found on a miss
    judge.judge(picture(seed=3), "The gate is open.")
    assert again.judge(picture(seed=3), "The gate is open.") is True and second.calls == []


def test_a_corrupt_cache_line_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "verdicts.jsonl").write_text('{"key": "x", "verd\nnot json\n')
    vlm = ScriptedVLM("Yes")
    judge = MilestoneJudge(vlm, cache_dir=tmp_path)
    assert judge.judge(picture(), "Anything.") is True
    assert MilestoneJudge(ScriptedVLM("No"), cache_dir=tmp_path, max_tokens=3).judge(picture(), "Anything.") is True


@pytest.mark.parametrize(
    ("screenshot", "got"),
    [
        (np.zeros((4, 4), np.uint8), r"uint8 array of shape \(4, 4\)"),
        (np.zeros((4, 4, 4), np.uint8), r"uint8 array of shape \(4, 4, 4\)"),
        (np.zeros((4, 4, 3), np.float64), r"float64 array of shape \(4, 4, 3\)"),
        ([[[0, 0, 0]]], "got list"),
    ],
)
def test_bad_screenshots_raise_a_clear_error(tmp_path: Path, screenshot: Any, got: str) -> None:
    vlm = ScriptedVLM()
    judge = MilestoneJudge(vlm, cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"screenshot must be .*uint8 array of shape \(H, W, 3\)") as caught:
        judge.judge(screenshot, "The door is open.")
    assert caught.match(got)
    with pytest.raises(ValueError, match=r"\(H, W, 3\)"):
        judge.milestones(screenshot, {"door": "The door is open."})
    assert vlm.calls == []


def test_bad_arguments(tmp_path: Path) -> None:
    judge = MilestoneJudge(ScriptedVLM(), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="description must be a non-empty str"):
        judge.judge(picture(), "  ")
    with pytest.raises(TypeError, match="generate"):
        MilestoneJudge(object())
    with pytest.raises(ValueError, match="max_tokens"):
        MilestoneJudge(ScriptedVLM(), max_tokens=0)


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    assert MilestoneJudge(ScriptedVLM()).cache_path == tmp_path / "judge" / "verdicts.jsonl"
    monkeypatch.delenv("AGENTRL_CACHE")
    assert MilestoneJudge(ScriptedVLM()).cache_dir == Path.home() / ".cache" / "agentrl" / "judge"


# ---------------------------------------------------------------------------------------------- the game env option


class FakePage:
    """Test double for GamePage: a two-move game whose screen turns bright after "right"; its milestone "m1" then."""

    HEIGHT, WIDTH = 12, 16

    def __init__(self, **kwargs: Any) -> None:
        self.is_open = False
        self.bright = False
        self.captures = 0

    def open(self, path: str, init_scripts: Sequence[str] = ()) -> None:
        self.is_open = True

    def close(self) -> None:
        self.is_open = False

    def _frame(self, width: int, height: int) -> str:
        return base64.b64encode(np.full((height, width, 3), 220 if self.bright else 10, np.uint8).tobytes()).decode()

    def evaluate(self, expression: str, arg: Any = None, timeout_s: float | None = None) -> Any:
        if "AgentRL.start" in expression:
            self.bright = False
            return {"moves": ["left", "right"], "height": self.HEIGHT, "width": self.WIDTH}
        if "AgentRL.capture" in expression:
            self.captures += 1
            return self._frame(*arg)
        assert "AgentRL.step" in expression, expression
        if arg.get("move") == "right":
            self.bright = True
        out: dict[str, Any] = {
            "score": 0.0,
            "reached": ["m1"] if self.bright else [],
            "milestones": ["m1"],
            "done": False,
            "won": False,
        }
        if "capture" in arg:
            out["frame"] = self._frame(*arg["capture"])
        return out


def test_game_env_adds_the_judges_milestones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env_module = pytest.importorskip("agentrl.envs.games.env")
    monkeypatch.setattr(env_module, "GamePage", FakePage)
    vlm = ScriptedVLM(lambda image, question: "Yes" if image.mean() > 100 else "No")
    judge = MilestoneJudge(vlm, cache_dir=tmp_path)
    env = env_module.BrowserGameEnv(
        "g2048",
        reward="milestones",
        obs_size=(8, 8),
        milestone_judge=judge,
        judge_milestones={"bright": "The screen is bright.", "m1": "Duplicate of the game's own milestone."},
    )
    try:
        _, info = env.reset(seed=0)
        assert info["milestones"] == [] and info["milestones_done"] == 0 and info["milestones_total"] == 2
        assert vlm.calls and vlm.calls[0][0].shape == (FakePage.HEIGHT, FakePage.WIDTH, 3)  # canvas size
        _, reward, _, _, info = env.step(env.moves.index("left"))
        assert reward == 0.0 and info["milestones"] == []
        _, reward, _, _, info = env.step(env.moves.index("right"))
        assert reward == 2.0 and info["reward_components"] == {"milestones": 2.0}
        assert info["milestones"] == ["m1", "bright"] and info["milestones_done"] == 2
        asked = len(vlm.calls)
        _, reward, _, _, info = env.step(env.moves.index("left"))
        assert reward == 0.0 and info["milestones"] == ["m1", "bright"]
        assert len(vlm.calls) == asked  # nothing pending: the judge is not asked
        _, info = env.reset(seed=1)
        assert info["milestones"] == []  # a new episode forgets the judged milestones
    finally:
        env.close()


def test_game_env_judge_options_go_together(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env_module = pytest.importorskip("agentrl.envs.games.env")
    monkeypatch.setattr(env_module, "GamePage", FakePage)
    judge = MilestoneJudge(ScriptedVLM(), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="go together"):
        env_module.BrowserGameEnv("g2048", milestone_judge=judge)
    with pytest.raises(ValueError, match="go together"):
        env_module.BrowserGameEnv("g2048", judge_milestones={"a": "b"})
    with pytest.raises(ValueError, match="names"):
        env_module.BrowserGameEnv("g2048", milestone_judge=judge, judge_milestones={"a": 1})  # type: ignore[dict-item]
    env = env_module.BrowserGameEnv("g2048")  # without a judge: the game's milestones only
    try:
        _, info = env.reset(seed=0)
        assert info["milestones_total"] == 1
    finally:
        env.close()
