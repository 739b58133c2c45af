"""``render_mode="rgb_array"`` (``hgin_env.ui.image``): the table as an image for
the AEC and Gymnasium envs, deterministic, hiding what the viewer may not see,
and accepted by Gymnasium's ``RecordVideo``."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from gymnasium.wrappers import RecordVideo, RenderCollection

import hgin_env
from hgin_env import actions as A
from hgin_env.cards import parse_cards
from hgin_env.envs.gym_env import HollywoodGinEnv
from hgin_env.rules import load_rules
from hgin_env.ui.image import HEIGHT, WIDTH, table_image
from tests.helpers.greedy_policy import greedy_action

SHORT = load_rules("bonus").replace(columns=1)

NONDEALER = "4H 5H 6H 9C 9D 9S AC 2C 3C KD"
DEALER = "TC JC QC KC 7C 7D 7S 8D 6S 4C"


def _deck(nondealer: str = NONDEALER, dealer: str = DEALER, upcard: str = "2H",
          swap: tuple[str, str] | None = None) -> np.ndarray:
    """A 52-card order (hands dealt alternately, non-dealer first, then the
    upcard and the stock); ``swap`` exchanges two cards' places."""
    a, b = parse_cards(nondealer), parse_cards(dealer)
    head = [card for pair in zip(a, b, strict=True) for card in pair] + parse_cards(upcard)
    deck = head + [c for c in range(52) if c not in head]
    if swap is not None:
        x, y = parse_cards(" ".join(swap))
        i, j = deck.index(x), deck.index(y)
        deck[i], deck[j] = deck[j], deck[i]
    return np.array(deck)


def _check_frame(frame: np.ndarray) -> None:
    assert isinstance(frame, np.ndarray)
    assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == np.uint8
    assert HEIGHT % 16 == 0 and WIDTH % 16 == 0  # what video encoders want


def _play_gym(seed: int, steps: int) -> list[np.ndarray]:
    env = HollywoodGinEnv(opponent="simple", rules=SHORT, render_mode="rgb_array", seat=1)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    frames = [env.render()]
    for _ in range(steps):
        obs, _, terminated, _, _ = env.step(greedy_action(obs, rng))
        frames.append(env.render())
        if terminated:
            break
    return frames


def test_gym_frames_have_shape_dtype_and_are_deterministic() -> None:
    first, second = _play_gym(3, 400), _play_gym(3, 400)
    assert len(first) == len(second) > 10
    for a, b in zip(first, second, strict=True):
        _check_frame(a)
        assert np.array_equal(a, b)
    assert not np.array_equal(first[0], first[1])  # the table changes as the game goes on


def test_aec_rgb_array_covers_a_whole_match() -> None:
    env = hgin_env.env(rules=SHORT, reward="match", render_mode="rgb_array")
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    frames = [env.render()]
    for _ in env.agent_iter(5000):
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else greedy_action(obs, rng))
        if env.agents:
            frames.append(env.render())
    assert env.unwrapped.match_over
    for frame in frames[:: max(1, len(frames) // 20)] + frames[-2:]:
        _check_frame(frame)
    assert env.unwrapped.metadata["render_fps"] > 0


def test_spectator_sees_both_hands_and_viewer_only_its_own() -> None:
    """Swapping a card of the dealer's hidden hand with one deep in the stock
    changes nothing the non-dealer may see, so its frame is byte-identical;
    the spectator's frame (both hands face up) does change."""
    hidden_swap = ("7D", "5C")  # 7♦ in the dealer's hand, 5♣ in the stock
    frames = {}
    for name, deck in (("a", _deck()), ("b", _deck(swap=hidden_swap))):
        raw = hgin_env.raw_env(rules="friendly", render_mode="rgb_array")
        raw.reset(seed=0, options={"deck": deck, "dealer": 1})
        frames[name, "spectator"] = raw.render()
        frames[name, "player_0"] = raw.render_image(viewer="player_0")
        frames[name, "player_1"] = raw.render_image(viewer="player_1")
    assert np.array_equal(frames["a", "player_0"], frames["b", "player_0"])
    assert not np.array_equal(frames["a", "spectator"], frames["b", "spectator"])
    assert not np.array_equal(frames["a", "player_1"], frames["b", "player_1"])


def _take_then_discard(obs: dict[str, np.ndarray]) -> np.ndarray:
    """An opponent that takes the upcard, then discards its lowest other card."""
    mask = obs["action_mask"][0]
    if mask[A.TAKE_DISCARD]:
        return np.array([A.TAKE_DISCARD])
    return np.array([int(np.flatnonzero(mask[: A.KNOCK])[0])])


def test_gym_view_hides_the_opponents_cards_but_shows_the_ones_it_took() -> None:
    frames = {}
    decks = {
        "a": _deck(),
        "hidden": _deck(swap=("7D", "5C")),  # a hidden dealer card differs
        "upcard": _deck(swap=("2H", "5C")),  # the upcard the dealer takes differs
    }
    for name, deck in decks.items():
        env = HollywoodGinEnv(opponent=_take_then_discard, render_mode="rgb_array", seat=0)
        env.reset(seed=0, options={"deck": deck, "dealer": 1})
        frames[name, "start"] = env.render()
        env.step(A.PASS)  # the dealer takes the upcard and discards
        assert env.table.game.known[0, 1] != 0
        frames[name, "taken"] = env.render()
    assert np.array_equal(frames["a", "start"], frames["hidden", "start"])
    assert np.array_equal(frames["a", "taken"], frames["hidden", "taken"])
    # The card the dealer took is shown face up in its hand (the top row) ...
    diff = np.flatnonzero((frames["a", "taken"] != frames["upcard", "taken"]).any(axis=(1, 2)))
    assert diff.size and 40 <= diff.min() and diff.max() < 130


def test_forfeit_and_match_end_frames() -> None:
    env = hgin_env.env(render_mode="rgb_array")
    env.reset(seed=1)
    before = env.render()
    env.step(0)  # a discard on the upcard offer: illegal, the mover forfeits
    after = env.render()
    _check_frame(after)
    assert not np.array_equal(before, after)
    # Once the match is over both hands are shown: player_0's view is the
    # spectator's (who also sees player_0 at the bottom).
    raw = env.unwrapped
    assert np.array_equal(raw.render_image("player_0"), after)
    before_view = hgin_env.raw_env()
    before_view.reset(seed=1)
    assert not np.array_equal(before_view.render_image("player_0"), before_view.render_image())


def test_table_image_checks_viewer() -> None:
    raw = hgin_env.raw_env()
    raw.reset(seed=0)
    with pytest.raises(ValueError, match="viewer"):
        table_image(raw.game, 0, viewer=2)
    with pytest.raises(ValueError, match="viewer"):
        raw.render_image(viewer="player_9")


def test_render_collection_and_record_video_accept_the_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RecordVideo needs moviepy only to encode; a stand-in records what it is
    handed, so the test checks the wrapper takes our frames without moviepy."""
    collected = RenderCollection(HollywoodGinEnv(opponent="simple", render_mode="rgb_array"))
    obs, _ = collected.reset(seed=0)
    collected.step(int(np.flatnonzero(obs["action_mask"])[0]))
    frames = collected.render()
    assert len(frames) == 2 and all(f.shape == (HEIGHT, WIDTH, 3) for f in frames)

    written: dict[str, object] = {}

    class Clip:
        def __init__(self, frames: list[np.ndarray], fps: float) -> None:
            written.update(frames=list(frames), fps=fps)

        def write_videofile(self, path: str, logger: object = None) -> None:
            written["path"] = path

    fake = types.ModuleType("moviepy")
    clip_module = types.ModuleType("moviepy.video.io.ImageSequenceClip")
    clip_module.ImageSequenceClip = Clip
    for name, module in (("moviepy", fake), ("moviepy.video", types.ModuleType("v")),
                         ("moviepy.video.io", types.ModuleType("io")),
                         ("moviepy.video.io.ImageSequenceClip", clip_module)):
        monkeypatch.setitem(sys.modules, name, module)
    env = RecordVideo(HollywoodGinEnv(opponent="simple", rules=SHORT, render_mode="rgb_array"),
                      str(tmp_path / "videos"), episode_trigger=lambda episode: True)
    obs, _ = env.reset(seed=1)
    rng = np.random.default_rng(1)
    steps, terminated = 0, False
    while not terminated and steps < 2000:
        obs, _, terminated, _, _ = env.step(greedy_action(obs, rng))
        steps += 1
    env.close()
    assert terminated
    assert len(written["frames"]) == steps + 1 and written["fps"] == 4
    assert all(f.shape == (HEIGHT, WIDTH, 3) and f.dtype == np.uint8 for f in written["frames"])
    assert str(written["path"]).endswith(".mp4")


def test_record_video_writes_a_file_with_real_moviepy(tmp_path: Path) -> None:
    pytest.importorskip("moviepy", reason="moviepy (gymnasium[other]) is not installed")
    env = RecordVideo(HollywoodGinEnv(opponent="simple", render_mode="rgb_array"),
                      str(tmp_path / "videos"), episode_trigger=lambda episode: True,
                      video_length=20)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(25):
        obs, *_ = env.step(greedy_action(obs, rng))
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))
