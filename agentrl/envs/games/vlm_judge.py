"""A VLM milestone judge: does a milestone's description hold in a screenshot? (FlashAdventure's CUA-as-a-judge).

FlashAdventure (Ahn et al., 2025) checks a game's milestones by asking a vision-language model whether
a milestone's description holds in a screenshot, instead of reading the game's memory. A
:class:`MilestoneJudge` does that with any chat backend that reads image parts (e.g.
:class:`~agentrl.llm.openai_compatible.OpenAICompatibleBackend` against a VLM server), and
caches its verdicts on disk so that the same screenshot and question are never paid for twice.

The game envs take a judge as an option beside their pixel templates and game-state milestones:
``BrowserGameEnv(game, milestone_judge=MilestoneJudge(backend), judge_milestones={name: description})``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.llm.base import ChatMessage, GenerationConfig

__all__ = ["MilestoneJudge", "default_cache_dir", "parse_yes_no"]

LOG = logging.getLogger("agentrl.envs.games.vlm_judge")

CACHE_FILE = "verdicts.jsonl"
QUESTION = (
    "Look at this screenshot of a game. Does the following statement hold in the screenshot?\n"
    "Statement: {description}\n"
    "Answer with one word: Yes or No."
)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def default_cache_dir() -> Path:
    """``$AGENTRL_CACHE/judge`` if ``AGENTRL_CACHE`` is set, else ``~/.cache/agentrl/judge``."""
    root = os.environ.get("AGENTRL_CACHE")
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "agentrl") / "judge"


def parse_yes_no(reply: str) -> bool | None:
    """The first "yes" or "no" word of a reply as True/False; None when there is neither.

    >>> parse_yes_no("Yes."), parse_yes_no("No, the door is shut."), parse_yes_no("**YES**")
    (True, False, True)
    >>> parse_yes_no("Maybe") is None, parse_yes_no("nobody knows") is None
    (True, True)
    """
    match = _YES_NO.search(reply or "")
    return None if match is None else match.group(1).lower() == "yes"


def _check_screenshot(screenshot: Any) -> np.ndarray:
    if (
        not isinstance(screenshot, np.ndarray)
        or screenshot.ndim != 3
        or screenshot.shape[2] != 3
        or screenshot.dtype != np.uint8
        or screenshot.shape[0] == 0
        or screenshot.shape[1] == 0
    ):
        got = (
            f"a {screenshot.dtype} array of shape {screenshot.shape}"
            if isinstance(screenshot, np.ndarray)
            else type(screenshot).__name__
        )
        raise ValueError(f"screenshot must be a non-empty numpy uint8 array of shape (H, W, 3), got {got}")
    return screenshot


def _image_hash(screenshot: np.ndarray) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(screenshot).tobytes())
    digest.update(repr(tuple(screenshot.shape)).encode())
    return digest.hexdigest()


class MilestoneJudge:
    """Ask a VLM whether a milestone's description holds in a screenshot; cache the verdicts on disk.

    The backend gets one user message: the screenshot as an image part
    (``{"type": "image", "image": array}``) and a yes/no question about ``description``, sampled
    greedily with ``max_tokens``. The first "yes" or "no" word of the reply is the verdict; a reply
    with neither counts as no, is logged as a warning, and is not cached (so a later call asks again).

    Verdicts are appended to ``cache_dir/verdicts.jsonl``, one JSON object a line, keyed by the
    sha256 of the screenshot's bytes and shape, the description and the backend's model name
    (``backend.model``, else ``backend.name``). Each line is written with one ``O_APPEND`` write, so
    several processes can share a cache; lines another process appended are read on a miss. A hit
    does not call the backend. Backend errors propagate and cache nothing.

    Args:
        backend: any object with ``generate(messages, GenerationConfig) -> Generation`` whose model
            reads image parts.
        cache_dir: the cache folder (``$AGENTRL_CACHE/judge``, else ``~/.cache/agentrl/judge``, by
            default); made when first written.
        max_tokens: the most tokens of a reply.

    >>> class Yes:  # a stand-in backend
    ...     model = "stub"
    ...     def generate(self, messages, config):
    ...         from agentrl.llm.base import Generation
    ...         return Generation(text="Yes")
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     MilestoneJudge(Yes(), cache_dir=folder).milestones(np.zeros((4, 4, 3), np.uint8), {"door": "It is open."})
    ['door']
    """

    def __init__(self, backend: Any, *, cache_dir: str | os.PathLike[str] | None = None, max_tokens: int = 8) -> None:
        if not callable(getattr(backend, "generate", None)):
            raise TypeError(f"backend must have a generate(messages, config) method, got {type(backend).__name__}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.backend = backend
        self.model = str(getattr(backend, "model", None) or getattr(backend, "name", None) or type(backend).__name__)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.cache_path = self.cache_dir / CACHE_FILE
        self.max_tokens = int(max_tokens)
        #: counters: backend calls, cache hits, unparseable replies
        self.stats: dict[str, int] = {"calls": 0, "hits": 0, "unparsed": 0}
        self._verdicts: dict[str, bool] = {}
        self._offset = 0  # how far the cache file has been read
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ public API

    def judge(self, screenshot: np.ndarray, description: str) -> bool:
        """Whether ``description`` holds in ``screenshot`` (an (H, W, 3) uint8 array), by the VLM or the cache.

        Raises:
            ValueError: the screenshot is not a non-empty (H, W, 3) uint8 array, or the description
                is not a non-empty str.
        """
        return self._judge(_check_screenshot(screenshot), _image_hash(screenshot), description)

    def milestones(self, screenshot: np.ndarray, descriptions: Mapping[str, str]) -> list[str]:
        """The names in ``descriptions`` (name -> description) whose description holds, in mapping order.

        Raises:
            ValueError: as :meth:`judge`.
        """
        image = _check_screenshot(screenshot)
        image_hash = _image_hash(image)
        return [name for name, description in descriptions.items() if self._judge(image, image_hash, description)]

    def key(self, screenshot: np.ndarray, description: str) -> str:
        """The cache key of a question: sha256 of the screenshot hash, the description and the model name."""
        return self._key(_image_hash(_check_screenshot(screenshot)), description)

    # ------------------------------------------------------------------ internals

    def _key(self, image_hash: str, description: str) -> str:
        text = json.dumps([image_hash, description, self.model], ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def _judge(self, image: np.ndarray, image_hash: str, description: str) -> bool:
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"description must be a non-empty str, got {description!r:.60}")
        key = self._key(image_hash, description)
        cached = self._lookup(key)
        if cached is not None:
            self.stats["hits"] += 1
            return cached
        messages: list[ChatMessage] = [
            {
                "role": "user",
                "content": [  # type: ignore[typeddict-item]  # content parts: the project's image convention
                    {"type": "image", "image": image},
                    {"type": "text", "text": QUESTION.format(description=description.strip())},
                ],
            }
        ]
        self.stats["calls"] += 1
        reply = self.backend.generate(messages, GenerationConfig(max_tokens=self.max_tokens, temperature=0.0))
        text = str(getattr(reply, "text", reply))
        verdict = parse_yes_no(text)
        if verdict is None:
            self.stats["unparsed"] += 1
            LOG.warning("judge %s: no yes/no in the reply %r to %r; counted as no", self.model, text[:200], description)
            return False
        self._store(key, image_hash, description, verdict, text)
        return verdict

    def _lookup(self, key: str) -> bool | None:
        with self._lock:
            if key not in self._verdicts:
                self._read_new_lines()
            return self._verdicts.get(key)

    def _read_new_lines(self) -> None:
        """Load the cache lines appended since the last read (by this judge or any other process)."""
        try:
            with self.cache_path.open("rb") as file:
                file.seek(self._offset)
                data = file.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # a line still being written is read next time
        for line in data[:end].splitlines():
            try:
                record = json.loads(line)
                self._verdicts[str(record["key"])] = bool(record["verdict"])
            except (ValueError, KeyError, TypeError):
                LOG.warning("judge cache %s: skipping a bad line %r", self.cache_path, line[:120])
        self._offset += end

    def _store(self, key: str, image_hash: str, description: str, verdict: bool, reply: str) -> None:
        record = {
            "key": key,
            "image": image_hash,
            "description": description,
            "model": self.model,
            "verdict": verdict,
            "reply": reply[:200],
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        with self._lock:
            self._verdicts[key] = verdict
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.cache_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                written = os.write(fd, line)  # one write: concurrent appends never interleave within a line
                if written != len(line):
                    LOG.warning("judge cache %s: short write (%d of %d bytes)", self.cache_path, written, len(line))
            finally:
                os.close(fd)
