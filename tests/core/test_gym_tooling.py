"""Gymnasium's own tooling on the registered AgentRL envs: ``make_vec`` (sync and async), video, ``play``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import pytest

import agentrl.envs

# the pixel envs have their own tests: the games (a browser each) in test_games.py, the desktop
# (an X server each) in osworld/test_env.py
_PIXEL_IDS = {spec.env_id for spec in agentrl.registered_domains() if "pixels" in spec.tags}
_PIXEL_IDS.add("AgentRL/ColourLetter-v0")  # the VLM trainer's toy pixel env (not a domain): tests/llm/test_vlm.py
_GAME_IDS = {spec.env_id for spec in agentrl.registered_domains() if "games" in spec.tags}
TEXT_ENV_IDS = sorted(
    env_id
    for env_id in gym.registry
    if env_id.split("/")[0] in ("AgentRL", "AgentRL-MA") and env_id not in _PIXEL_IDS
)
# async: gymnasium's default, observations through shared memory (text too: agentrl.core.spaces); async-pipes: without
MODES = [("sync", {}), ("async", {}), ("async-pipes", {"shared_memory": False})]
NUM_ENVS = 2


def test_the_expected_ids_are_registered() -> None:
    """The domains, the trainer's toy env and the multi-agent views are all covered below."""
    expected = {"AgentRL/TIRMath-v0", "AgentRL/Search-v0", "AgentRL/SQL-v0", "AgentRL/Letter-v0"}
    assert expected <= set(TEXT_ENV_IDS)
    assert {spec.env_id for spec in agentrl.registered_domains() if "text" in spec.tags} <= set(TEXT_ENV_IDS)
    assert "AgentRL-MA/tictactoe-vs-best-v0" in TEXT_ENV_IDS


@contextmanager
def _vector_env(env_id: str, mode: str, vector_kwargs: dict) -> Iterator[gym.vector.VectorEnv]:
    """``make_vec``, closed cleanly after success; after a failure the async workers are terminated
    (a plain ``close`` would wait forever on a step whose results the failure already consumed)."""
    mode = mode.split("-")[0]
    envs = gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    try:
        yield envs
    except BaseException:
        if mode == "async":
            envs.close(terminate=True)
        else:
            envs.close()
        raise
    envs.close()


def _check_batch(envs: gym.vector.VectorEnv, obs: tuple, info: dict) -> None:
    assert isinstance(obs, tuple) and len(obs) == NUM_ENVS
    assert all(isinstance(o, str) and o for o in obs)
    assert envs.observation_space.contains(obs)
    _check_info(info)


def _check_info(info: dict) -> None:
    """Gymnasium's batched info: an array per key (with a ``_key`` mask), nested dicts batched alike."""
    assert isinstance(info, dict)
    for key, value in info.items():
        if isinstance(value, dict):
            _check_info(value)
        elif not key.startswith("_"):
            assert len(value) == NUM_ENVS, key


@pytest.mark.parametrize(("mode", "vector_kwargs"), MODES, ids=[m for m, _ in MODES])
@pytest.mark.parametrize("env_id", TEXT_ENV_IDS)
def test_make_vec_resets_and_steps(env_id: str, mode: str, vector_kwargs: dict) -> None:
    """Seeded reset (reproducible), one step with sampled text (malformed: an error observation), close."""
    with _vector_env(env_id, mode, vector_kwargs) as envs:
        assert envs.num_envs == NUM_ENVS
        obs, info = envs.reset(seed=[0, 1])
        _check_batch(envs, obs, info)
        again, _ = envs.reset(seed=[0, 1])
        assert again == obs  # seeded resets replay
        actions = envs.action_space.sample()
        assert isinstance(actions, tuple) and len(actions) == NUM_ENVS and envs.action_space.contains(actions)
        obs, reward, terminated, truncated, info = envs.step(actions)
        _check_batch(envs, obs, info)
        assert reward.shape == (NUM_ENVS,) and np.issubdtype(reward.dtype, np.floating)
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert terminated.shape == truncated.shape == (NUM_ENVS,)


@pytest.mark.parametrize(("mode", "vector_kwargs"), MODES, ids=[m for m, _ in MODES])
def test_make_vec_game_view_with_legal_moves_and_autoreset(mode: str, vector_kwargs: dict) -> None:
    """A multi-agent view plays legal moves from the batched info; a finished game resets on the next step."""
    with _vector_env("AgentRL-MA/tictactoe-vs-random-v0", mode, vector_kwargs) as envs:
        obs, info = envs.reset(seed=[3, 4])
        done = np.zeros(NUM_ENVS, dtype=bool)
        for _ in range(20):
            moves = tuple(legal[0] if len(legal) else "[1]" for legal in info["legal_moves"])
            obs, reward, terminated, truncated, info = envs.step(moves)
            assert all(isinstance(o, str) for o in obs)
            assert not any(info["invalid_moves"][i] for i in range(NUM_ENVS) if info["_invalid_moves"][i])
            done |= terminated | truncated
            if done.all():
                break
        assert done.all()
        obs, reward, terminated, truncated, info = envs.step(("[5]", "[5]"))  # next-step autoreset
        assert not terminated.any() and (reward == 0).all()


def _reference_episodes(env_id: str, seeds: list[int], steps: int) -> tuple[list[list[str]], list[list[str]]]:
    """One env played seed by seed with its oracle: each seed's observations (reset first) and the actions taken."""
    env = gym.make(env_id)
    observations: list[list[str]] = []
    actions: list[list[str]] = []
    try:
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            seen, taken = [obs], []
            for _ in range(steps):
                action = env.unwrapped.oracle_action()
                obs, _, terminated, truncated, _ = env.step(action)
                seen.append(obs)
                taken.append(action)
                if terminated or truncated:
                    break
            observations.append(seen)
            actions.append(taken)
    finally:
        env.close()
    return observations, actions


@pytest.mark.parametrize(
    ("env_id", "num_envs"), [("AgentRL/TIRMath-v0", 4), ("AgentRL/SQL-v0", 3), ("AgentRL/Search-v0", 2)]
)
def test_async_by_default_hands_back_the_right_text(env_id: str, num_envs: int) -> None:
    """``make_vec(..., vectorization_mode="async")`` with no vector_kwargs (shared memory) gives the observations one
    env gives, step after step, as sync does: not refused, not strings of "0", not the first observation again."""
    seeds = list(range(10, 10 + num_envs))
    reference, actions = _reference_episodes(env_id, seeds, steps=2)
    assert all(len(taken) >= 1 for taken in actions)
    for mode in ("async", "sync"):
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode)
        try:
            assert getattr(envs, "shared_memory", True)
            obs, _ = envs.reset(seed=seeds)
            assert type(obs) is tuple and list(obs) == [seen[0] for seen in reference], mode
            assert envs.observation_space.contains(obs)
            obs, reward, terminated, _, _ = envs.step(tuple(taken[0] for taken in actions))
            assert type(obs) is tuple and list(obs) == [seen[1] for seen in reference], mode
            if env_id == "AgentRL/TIRMath-v0":  # the oracle answers on its second turn; the third autoresets
                obs, reward, terminated, _, _ = envs.step(tuple(taken[1] for taken in actions))
                assert list(obs) == [seen[2] for seen in reference] and terminated.all() and (reward == 1).all()
                obs, reward, terminated, _, _ = envs.step(("x",) * num_envs)
                assert all("\\boxed" in o for o in obs) and not terminated.any()
                assert obs != tuple(seen[0] for seen in reference)  # new problems (the seeds ran on)
        finally:
            envs.close()


def test_async_by_default_with_pixels_and_text() -> None:
    """A Dict observation of pixels and text: the pixels stay in gymnasium's shared arrays, the text reads right."""
    sync = gym.make_vec("AgentRL/ColourLetter-v0", num_envs=3, vectorization_mode="sync")
    envs = gym.make_vec("AgentRL/ColourLetter-v0", num_envs=3, vectorization_mode="async")
    try:
        assert envs.shared_memory
        obs, _ = envs.reset(seed=[0, 1, 2])
        want, _ = sync.reset(seed=[0, 1, 2])
        assert isinstance(envs.observations["pixels"], np.ndarray)  # the live view of the shared buffer
        assert np.array_equal(obs["pixels"], want["pixels"]) and obs["text"] == want["text"]
        assert all(isinstance(t, str) and t for t in obs["text"])
        actions = tuple(sync.call("oracle_action"))
        obs, reward, *_ = envs.step(actions)
        want, want_reward, *_ = sync.step(actions)
        assert np.array_equal(obs["pixels"], want["pixels"]) and obs["text"] == want["text"]
        assert np.array_equal(reward, want_reward)
    finally:
        envs.close()
        sync.close()


def test_shared_text_round_trips_any_str() -> None:
    """A UnicodeText slot keeps any str (non-ASCII, NUL, lone surrogates, empty, full length); copies are tuples."""
    import copy
    import multiprocessing
    import pickle

    from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

    from agentrl.core.spaces import SharedTexts, UnicodeText

    space = UnicodeText(12)
    memory = create_shared_memory(space, n=4, ctx=multiprocessing.get_context("fork"))
    view = read_from_shared_memory(space, memory, n=4)
    texts = ["héllo ∑ x² 🙂", "a\x00b", "", "\udcff" + "z" * 11]
    for index, text in enumerate(texts):
        write_to_shared_memory(space, index, text, memory)
    assert isinstance(view, SharedTexts) and list(view) == texts and view == tuple(texts) and len(view) == 4
    for snapshot in (copy.deepcopy(view), copy.copy(view), pickle.loads(pickle.dumps(view))):
        assert type(snapshot) is tuple and snapshot == tuple(texts)
    write_to_shared_memory(space, 2, "later", memory)
    assert view[2] == "later" and view[1:3] == ("a\x00b", "later")  # the view is live; snapshots are not
    with pytest.raises(ValueError, match="does not fit"):
        write_to_shared_memory(space, 0, "x" * 13, memory)
    with pytest.raises(TypeError, match="must be a str"):
        write_to_shared_memory(space, 0, b"bytes", memory)


def test_shared_memory_too_large_for_text_names_the_way_out() -> None:
    """Text too long for shared memory is refused at construction with a message naming ``shared_memory=False``,
    and that setting works."""
    huge = {"max_observation_chars": 300_000_000}  # 2 envs x 1.2 GB of code points
    with pytest.raises(TypeError, match=r'vector_kwargs=\{"shared_memory": False\}'):
        gym.make_vec("AgentRL/TIRMath-v0", num_envs=2, vectorization_mode="async", **huge)
    envs = gym.make_vec(
        "AgentRL/TIRMath-v0", num_envs=2, vectorization_mode="async", vector_kwargs={"shared_memory": False}, **huge
    )
    try:
        obs, _ = envs.reset(seed=[0, 1])
        assert all("\\boxed" in o for o in obs)
    finally:
        envs.close()


def _pixel_env_ids() -> list[str]:
    """Registered AgentRL ids with pixel observations (the game envs offer ``render_mode="rgb_array"``)."""
    return sorted(_GAME_IDS)


def test_record_video(tmp_path) -> None:
    """``RecordVideo`` on a pixel env writes an mp4 of the episode (text envs have no frames to record)."""
    pixel = _pixel_env_ids()
    assert pixel, "the game envs should be registered"
    pytest.importorskip("moviepy", reason="RecordVideo needs moviepy (pip install 'agentrl-gym[browser]')")
    env = gym.make("AgentRL/FlashGame-Catch-v0", render_mode="rgb_array")
    env = gym.wrappers.RecordVideo(env, str(tmp_path / "videos"), episode_trigger=lambda e: True, disable_logger=True)
    env.reset(seed=0)
    for _ in range(10):
        env.step(env.action_space.sample())
    env.close()
    videos = list((tmp_path / "videos").glob("*.mp4"))
    assert videos and videos[0].stat().st_size > 0


class _CallLog(gym.Wrapper):
    """Logs what ``gymnasium.utils.play`` asks of the env: resets (with their seed), steps (with the action), frames."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.calls: list[tuple[str, object]] = []
        self.frames: list[np.ndarray] = []

    def reset(self, *, seed=None, options=None):
        self.calls.append(("reset", seed))
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.calls.append(("step", action))
        return super().step(action)

    def render(self):
        frame = super().render()
        self.calls.append(("render", None))
        self.frames.append(frame)
        return frame


def test_play() -> None:
    """``gymnasium.utils.play`` on a pixel env: it resets it, steps it and shows its ``render()`` frames."""
    pytest.importorskip("pygame", reason="gymnasium.utils.play needs pygame (pip install pygame)")
    import os

    import pygame
    from gymnasium.utils.play import play

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # no display needed
    env = _CallLog(gym.make("AgentRL/FlashGame-Catch-v0", render_mode="rgb_array"))
    steps: list[tuple] = []

    def callback(obs_t, obs_tp1, action, reward, terminated, truncated, info) -> None:
        steps.append((obs_tp1, action, reward, terminated, truncated))
        if len(steps) == 5:  # play() loops until its window closes: close it after five steps
            pygame.event.post(pygame.event.Event(pygame.QUIT))

    try:
        play(env, keys_to_action={"a": 0, "d": 2}, noop=1, fps=30, seed=0, callback=callback)
    finally:
        env.close()
    calls = env.calls
    assert calls[0] == ("reset", 0)  # play() reset the env with its seed before anything else
    # it stepped the env until the window closed, with the noop action as no key was pressed ...
    assert [c for c in calls if c[0] == "step"] == [("step", 1)] * 5 and len(steps) == 5
    assert all(obs.shape == (84, 84, 3) for obs, *_ in steps)
    # ... and showed a frame after every reset and every step
    for before, after in itertools.pairwise(calls):
        if before[0] in ("reset", "step"):
            assert after[0] == "render", calls
    assert calls[-1][0] == "render"
    shapes = {frame.shape for frame in env.frames}
    assert len(shapes) == 1 and next(iter(shapes))[2] == 3 and all(f.dtype == np.uint8 for f in env.frames)
