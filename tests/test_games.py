"""The game envs (AgentRL/FlashGame-*-v0): domain checks, action modes, bad input, faults, video."""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest

import agentrl  # noqa: F401  (registers the env ids)
from agentrl.envs.games.env import GAMES, BrowserGameEnv, parse_pointer_action, registered_game_ids

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

GAME_IDS = registered_game_ids()


def test_every_game_is_registered() -> None:
    """Every game with an oracle module has an id, and there are at least six canvas games and the SWF one."""
    assert len(GAME_IDS) >= 7
    for env_id in GAME_IDS:
        assert env_id in gym.registry


@pytest.mark.parametrize("name", sorted(GAMES))
def test_oracle_through_text_and_mouse(name: str) -> None:
    """The oracle wins through named moves and through real mouse/keyboard input."""
    for mode in ("text", "mouse_keyboard"):
        env = BrowserGameEnv(name, action_mode=mode, obs_size=(256, 256))
        env.reset(seed=1)
        terminated = truncated = False
        info: dict = {}
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(env.oracle_action())
            assert info["action_error"] is None, info
        assert info["won"] and info["done_reason"] == "won", (name, mode, info)
        env.close()


def test_dict_mouse_actions_and_pixels_text_observations() -> None:
    """The Dict form of mouse actions and the pixels+text observation."""
    env = BrowserGameEnv("memory", action_mode="mouse_keyboard", action_format="dict", obs_type="pixels_text")
    observation, _ = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    assert isinstance(env.action_space, gym.spaces.Dict)
    terminated = False
    while not terminated:
        observation, _, terminated, truncated, info = env.step(env.oracle_action())
        assert not truncated and info["action_error"] is None
    assert info["won"] and isinstance(observation["text"], str)
    env.close()


def test_frames_replay_and_differ_by_seed() -> None:
    """Same seed and actions -> the same frames; another seed -> another game."""

    def frames(seed: int) -> list[str]:
        env = BrowserGameEnv("g2048")
        observation, _ = env.reset(seed=seed)
        out = [hashlib.sha256(observation.tobytes()).hexdigest()]
        for action in (0, 1, 2, 3, 0, 1):
            observation, *_ = env.step(action)
            out.append(hashlib.sha256(observation.tobytes()).hexdigest())
        env.close()
        return out

    assert frames(3) == frames(3)
    assert frames(3) != frames(4)


def test_bad_mouse_input() -> None:
    """Clicks outside the screen, 10k keys, malformed text: error infos, the episode goes on."""
    env = BrowserGameEnv("memory", action_mode="mouse_keyboard")
    env.reset(seed=0)
    for bad in ("click(500, 500)", "type('" + "k" * 10_000 + "')", "rm -rf /", "", "press(F13)", "drag(1, 2)"):
        _, reward, terminated, _, info = env.step(bad)
        assert isinstance(info["action_error"], str) and not terminated and reward == 0, (bad, info)
    assert parse_pointer_action("click(nan, 3)") != {"kind": "click"}
    env.close()


def test_unknown_move_in_text_mode_suggests() -> None:
    """A text agent's unknown move names the closest one."""
    env = BrowserGameEnv("g2048", action_mode="text")
    env.reset(seed=0)
    _, _, _, _, info = env.step("lefft")
    assert "did you mean 'left'" in info["action_error"]
    env.close()


def test_hung_and_crashed_pages_end_the_episode_and_recover() -> None:
    """A page stuck in a script, or a crashed renderer: done_reason env_error; the next reset works."""
    env = BrowserGameEnv("memory", timeout_s=2.0)
    env.reset(seed=0)
    env._page.evaluate("() => setTimeout(() => { while (true) {} }, 0)")  # fires on the next frame
    _, reward, terminated, _, info = env.step(0)
    assert terminated and info["done_reason"] == "env_error" and reward == 0 and "did not answer" in info["env_error"]
    observation, _ = env.reset(seed=0)
    assert observation.shape == (84, 84, 3)

    async def crash(page) -> None:
        session = await page.context.new_cdp_session(page)
        await session.send("Page.crash")

    from agentrl.envs.games.browser import PageCrashed

    with pytest.raises(PageCrashed):
        env._page.call(crash)
    _, reward, terminated, _, info = env.step(0)
    assert terminated and info["done_reason"] == "env_error"
    observation, _ = env.reset(seed=0)
    assert observation.shape == (84, 84, 3)
    env.close()


def test_after_the_game_ended_step_raises() -> None:
    """Actions after the game ended: ResetNeeded (the Gymnasium contract)."""
    from agentrl.core.errors import ResetNeeded

    env = BrowserGameEnv("memory")
    env.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = env.step(env.oracle_action())
    with pytest.raises(ResetNeeded):
        env.step(0)
    env.close()


def test_rgb_array_render_and_record_video(tmp_path) -> None:
    """render_mode="rgb_array" gives frames at render_size; Gymnasium's RecordVideo writes a video."""
    pytest.importorskip("moviepy", reason="RecordVideo needs moviepy (pip install 'agentrl-gym[browser]')")
    env = gym.make(GAME_IDS[0], render_mode="rgb_array", render_size=(128, 128))
    frame_env = env.unwrapped
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (128, 128, 3)
    env = gym.wrappers.RecordVideo(
        env, str(tmp_path / "videos"), episode_trigger=lambda episode: True, disable_logger=True
    )
    env.reset(seed=0)
    for _ in range(5):
        env.step(frame_env.oracle_action())
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))


@pytest.mark.slow
def test_stable_baselines3_ppo_beats_random_on_catch() -> None:
    """SB3's PPO trains on FlashGame-Catch-v0 (Discrete(3), pixels) for 8192 steps and beats the random agent."""
    pytest.importorskip("stable_baselines3", reason="needs pip install 'agentrl-gym[sb3]'")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    def make() -> gym.Env:
        return gym.make("AgentRL/FlashGame-Catch-v0", obs_size=(24, 24))

    def mean_score(policy, seeds) -> float:
        env = make()
        scores = []
        for seed in seeds:
            observation, _ = env.reset(seed=seed)
            terminated = truncated = False
            while not (terminated or truncated):
                observation, _, terminated, truncated, info = env.step(policy(observation))
            scores.append(info["score"])
        env.close()
        return float(np.mean(scores))

    rng = np.random.default_rng(0)
    seeds = range(100, 120)
    random_score = mean_score(lambda observation: int(rng.integers(3)), seeds)
    envs = make_vec_env(make, n_envs=2, seed=0)
    model = PPO("MlpPolicy", envs, n_steps=256, batch_size=128, learning_rate=1e-3, ent_coef=0.01, seed=0, verbose=0)
    model.learn(8192)
    envs.close()
    trained_score = mean_score(lambda observation: int(model.predict(observation, deterministic=True)[0]), seeds)
    assert trained_score > max(2 * random_score, random_score + 1.0), (trained_score, random_score)


def test_realtime_mode_advances_with_wall_time() -> None:
    """realtime=True: the game runs on between steps (Tetris pieces fall while the agent waits)."""
    import time

    env = BrowserGameEnv("tetris", action_mode="text", obs_type="text", realtime=True)
    env.reset(seed=0)
    before = env.game_state()["piece"]["y"]
    time.sleep(1.2)  # about 72 frames: gravity drops the piece at least one row
    env.step("noop")
    assert env.game_state()["piece"]["y"] > before or env.game_state()["pieces"] > 1
    env.close()
