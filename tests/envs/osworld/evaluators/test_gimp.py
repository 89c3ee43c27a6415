"""OSWorld's GIMP getter and image metrics (evaluators.gimp) on real PNG/JPEG/GIF files and GIMP config files.

The images are built with Pillow; the config fixtures follow GIMP 2.10's ``gimprc``/``sessionrc``/``action-history``
s-expression line format. The evaluator objects at the end are copied in shape from OSWorld's
evaluation_examples/examples/{gimp,multi_apps,vlc} task files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

Image = pytest.importorskip("PIL.Image")
ImageDraw = pytest.importorskip("PIL.ImageDraw")
ImageEnhance = pytest.importorskip("PIL.ImageEnhance")

from agentrl.envs.osworld.evaluators import METRICS, gimp  # noqa: E402
from agentrl.envs.osworld.tasks.evaluate import evaluate  # noqa: E402
from agentrl.envs.osworld.tasks.format import OSWorldTask  # noqa: E402

# -- fixtures -----------------------------------------------------------------------------------------------------


def photo(width: int = 64, height: int = 48) -> Any:
    """A deterministic photo-like RGB picture: smooth waves, a gradient and a red block."""
    y, x = np.mgrid[0:height, 0:width]
    red = 128 + 100 * np.sin(x / 7.0)
    green = 128 + 90 * np.cos(y / 5.0)
    blue = (x * 3 + y * 2) % 256
    pixels = np.stack([red, green, blue], -1).astype(np.uint8)
    pixels[10:30, 20:40] = [200, 40, 60]
    return Image.fromarray(pixels)


def noisy(image: Any, amount: int = 80) -> Any:
    pixels = np.asarray(image).astype(np.int32)
    y, x = np.mgrid[0 : pixels.shape[0], 0 : pixels.shape[1]]
    noise = ((x * 7919 + y * 104729) % (2 * amount + 1)) - amount  # deterministic "noise"
    return Image.fromarray(np.clip(pixels + noise[..., None], 0, 255).astype(np.uint8))


def save(tmp_path: Path, name: str, image: Any, **kwargs: Any) -> str:
    path = tmp_path / name
    image.save(path, **kwargs)
    return str(path)


GIMPRC = """\
# GIMP gimprc
#
# This is your personal gimprc file.  Any variable defined in this file takes
# precedence over the value defined in the system-wide gimprc:
# /etc/gimp/2.0/gimprc
# Most values can be set within GIMP by changing some options in the
# Preferences dialog.

(undo-levels 100)
(layer-new-name "Square")
(default-image
    (width 1920)
    (height 1080))
(theme "Light")

# end of gimprc
"""

SESSIONRC = """\
# GIMP sessionrc
#
# This file takes session-specific info (that is info, you want to keep
# between two GIMP sessions).  You are not supposed to edit it manually, but
# of course you can do.  The sessionrc will be entirely rewritten every time
# you quit GIMP.  If this file isn't found, defaults are used.

(session-info "toplevel"
    (factory-entry "image-window")
    (position 416 116)
    (size 1152 869)
    (open-on-exit)
    (aux-info
        (left-docks-width "80")
        (right-docks-width "286")
        (maximized "yes")))
(hide-docks yes)
(single-window-mode yes)
(show-tabs yes)
(tabs-position 0)
(last-tip-shown 0)

# end of sessionrc
"""

ACTION_HISTORY = """\
# GIMP action-history

(history-item "filters-vignette" 1)
(history-item "image-flip-horizontal" 0)

# end of action-history
"""


# -- SSIM ---------------------------------------------------------------------------------------------------------


def test_ssim_identical_is_one_and_noise_or_shift_lower() -> None:
    image = np.asarray(photo().convert("L"))
    assert gimp.structural_similarity(image, image) == pytest.approx(1.0)
    noisy_score = gimp.structural_similarity(image, np.asarray(noisy(photo()).convert("L")))
    shifted_score = gimp.structural_similarity(image, np.roll(image, 5, axis=1))
    assert noisy_score < 0.9
    assert shifted_score < 0.9
    # more noise, lower score
    assert gimp.structural_similarity(image, np.asarray(noisy(photo(), 20).convert("L"))) > noisy_score


def test_ssim_matches_the_closed_form_on_flat_images() -> None:
    # With no variance the map is (2xy + C1) / (x² + y² + C1) everywhere; C1 = (0.01 * 255)².
    x = np.full((10, 12), 40, dtype=np.uint8)
    y = np.full((10, 12), 200, dtype=np.uint8)
    c1 = (0.01 * 255) ** 2
    assert gimp.structural_similarity(x, y) == pytest.approx((2 * 40 * 200 + c1) / (40**2 + 200**2 + c1))


def test_ssim_matches_scikit_image_reference_values() -> None:
    # Reference values from scikit-image 0.26 structural_similarity on the same arrays.
    y, x = np.mgrid[0:24, 0:32]
    a = ((x * 7 + y * 13) % 256).astype(np.uint8)
    b = ((x * 7 + y * 13 + (x * y) % 17) % 256).astype(np.uint8)
    assert gimp.structural_similarity(a, b) == pytest.approx(0.8531537044688566, abs=1e-12)
    # 2-D with channel_axis=-1: the columns are the "channels" (what OSWorld's structure check computes)
    assert gimp.structural_similarity(a, b, channel_axis=-1) == pytest.approx(0.8793337771523286, abs=1e-12)
    rgb1, rgb2 = np.stack([a, b, 255 - a], -1), np.stack([b, a, 255 - b], -1)
    assert gimp.structural_similarity(rgb1, rgb2, channel_axis=-1) == pytest.approx(0.8531300850304877, abs=1e-12)


def test_ssim_rejects_what_scikit_image_rejects() -> None:
    a = np.zeros((8, 8), dtype=np.uint8)
    with pytest.raises(ValueError, match="shapes"):
        gimp.structural_similarity(a, np.zeros((8, 9), dtype=np.uint8))
    with pytest.raises(ValueError, match="win_size"):
        gimp.structural_similarity(a[:6], a[:6])
    with pytest.raises(ValueError, match="data_range"):
        gimp.structural_similarity(a.astype(np.float32), a.astype(np.float32))
    assert gimp.structural_similarity(a.astype(np.float32), a.astype(np.float32), data_range=1.0) == 1.0
    # uint16 images take their full range: a small difference barely moves the score
    wide = (np.arange(100, dtype=np.uint16).reshape(10, 10) * 600).astype(np.uint16)
    assert gimp.structural_similarity(wide, wide + 1) > 0.99


def test_structure_check_by_ssim_thresholds_and_shapes() -> None:
    rgb = photo()
    assert gimp.structure_check_by_ssim(rgb, rgb)
    assert not gimp.structure_check_by_ssim(rgb, noisy(rgb))
    assert not gimp.structure_check_by_ssim(rgb, rgb.convert("RGBA"))  # other shape: OSWorld raises
    assert not gimp.structure_check_by_ssim(rgb, rgb.resize((32, 24)))


# -- compare_images / compare_image_list ----------------------------------------------------------------------------


def test_compare_images_is_the_grayscale_ssim(tmp_path: Path) -> None:
    base = save(tmp_path, "a.png", photo())
    same_jpg = save(tmp_path, "a.jpg", photo(), quality=95)
    other = save(tmp_path, "b.png", noisy(photo()))
    assert gimp.compare_images(base, base) == pytest.approx(1.0)
    assert gimp.compare_images(base, same_jpg) > 0.9
    assert gimp.compare_images(base, other) < 0.9
    assert gimp.compare_images(None, base) == 0.0
    assert gimp.compare_images(base, "") == 0.0


def test_compare_images_resizes_to_the_smaller_and_reads_gif(tmp_path: Path) -> None:
    base = save(tmp_path, "a.png", photo(64, 48))
    big = save(tmp_path, "big.png", photo(64, 48).resize((128, 96), Image.Resampling.LANCZOS))
    gif = save(tmp_path, "a.gif", photo(64, 48))
    assert gimp.compare_images(big, base) > 0.9
    assert gimp.compare_images(base, gif) > 0.8  # GIF: 256 colours, first frame
    tiny = save(tmp_path, "tiny.png", photo(64, 48).resize((5, 5)))
    assert gimp.compare_images(base, tiny) == 0.0  # under the 7-pixel window


def test_compare_image_list_needs_every_pair_identical(tmp_path: Path) -> None:
    one = save(tmp_path, "1.png", photo())
    one_gold = save(tmp_path, "1_gold.png", photo())
    two = save(tmp_path, "2.png", photo().rotate(180))
    two_gold = save(tmp_path, "2_gold.png", photo().rotate(180))
    changed = photo().rotate(180)
    changed.putpixel((3, 3), (0, 0, 0))
    two_changed = save(tmp_path, "2_changed.png", changed)
    assert gimp.compare_image_list([one, two], [one_gold, two_gold]) == 1.0
    assert gimp.compare_image_list([one, two_changed], [one_gold, two_gold]) == 0.0
    assert gimp.compare_image_list(one, one_gold) == 1.0
    assert gimp.compare_image_list(one, two_gold) == 0.0
    assert gimp.compare_image_list([one, None], [one_gold, two_gold]) == 0.0
    assert gimp.compare_image_list(one, save(tmp_path, "l.png", photo().convert("L"))) == 0.0  # modes differ


# -- GIMP config ----------------------------------------------------------------------------------------------------


def test_check_config_status_on_gimprc_sessionrc_and_action_history(tmp_path: Path) -> None:
    gimprc = tmp_path / "gimprc"
    gimprc.write_text(GIMPRC)
    sessionrc = tmp_path / "sessionrc"
    sessionrc.write_text(SESSIONRC)
    history = tmp_path / "action-history"
    history.write_text(ACTION_HISTORY)
    assert gimp.check_config_status(str(gimprc), {"type:": "key-value", "key": "theme", "value": '"Light"'}) == 1.0
    assert gimp.check_config_status(str(gimprc), {"key": "theme", "value": '"Dark"'}) == 0.0
    assert gimp.check_config_status(str(gimprc), {"key": "undo-levels", "value": "100"}) == 1.0
    assert gimp.check_config_status(str(gimprc), {"key": "undo-levels", "value": "5"}) == 0.0
    assert gimp.check_config_status(str(gimprc), {"key": "layer-new-name", "value": '"Square"'}) == 1.0
    assert gimp.check_config_status(str(sessionrc), {"key": "hide-docks", "value": "yes"}) == 1.0
    assert gimp.check_config_status(str(sessionrc), {"key": "hide-docks", "value": "no"}) == 0.0
    vignette = {"key": ["history-item", '"filters-vignette"'], "value": "1"}
    assert gimp.check_config_status(str(history), vignette) == 1.0
    flip = {"key": ["history-item", '"image-flip-horizontal"'], "value": "1"}
    assert gimp.check_config_status(str(history), flip) == 0.0
    assert gimp.check_config_status(None, vignette) == 0.0
    # a line of blanks (OSWorld would crash on it) is skipped
    spaced = tmp_path / "spaced"
    spaced.write_text('   \n(theme "Light")\n')
    assert gimp.check_config_status(str(spaced), {"key": "theme", "value": '"Light"'}) == 1.0


class FakeClient:
    """Serves ``~/...`` files from a tmp dir, like DesktopClient.read_file does from the desktop's HOME."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home = home
        self.cache_dir = cache
        self.reads: list[str] = []

    def read_file(self, path: str) -> bytes | None:
        self.reads.append(path)
        assert path.startswith("~/")
        local = self.home / path[2:]
        return local.read_bytes() if local.is_file() else None


def test_gimp_config_file_getter(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".config" / "GIMP" / "2.10"
    config.mkdir(parents=True)
    (config / "gimprc").write_text(GIMPRC)
    (config / "sessionrc").write_text("")
    cache = tmp_path / "cache"
    cache.mkdir()
    client = FakeClient(tmp_path / "home", cache)
    path = gimp.get_gimp_config_file(client, {"type": "gimp_config_file", "file_name": "gimprc", "dest": "gimprc"})
    assert path == str(cache / "gimprc")
    assert Path(path).read_text() == GIMPRC
    assert client.reads == ["~/.config/GIMP/2.10/gimprc"]
    assert gimp.get_gimp_config_file(client, {"file_name": "action-history", "dest": "action-history"}) is None
    assert gimp.get_gimp_config_file(client, {"file_name": "sessionrc", "dest": "sessionrc"}) is None  # empty
    escaped = gimp.get_gimp_config_file(client, {"file_name": "gimprc", "dest": "../../evil"})
    assert escaped == str(cache / "evil")


# -- metrics with a source and a target picture ---------------------------------------------------------------------


def test_check_brightness_decrease_and_structure_sim(tmp_path: Path) -> None:
    original = save(tmp_path, "orig.png", photo())
    darker = save(tmp_path, "dark.png", ImageEnhance.Brightness(photo()).enhance(0.6))
    brighter = save(tmp_path, "bright.png", ImageEnhance.Brightness(photo()).enhance(1.3))
    other = save(tmp_path, "other.png", ImageEnhance.Brightness(photo().rotate(90)).enhance(0.6))
    black = save(tmp_path, "black.png", Image.new("RGB", (64, 48)))
    assert gimp.check_brightness_decrease_and_structure_sim(darker, original) == 1.0
    assert gimp.check_brightness_decrease_and_structure_sim(brighter, original) == 0.0
    assert gimp.check_brightness_decrease_and_structure_sim(other, original) == 0.0
    assert gimp.check_brightness_decrease_and_structure_sim(black, original) == 0.0
    assert gimp.check_brightness_decrease_and_structure_sim(None, original) == 0.0


def test_check_saturation_increase_and_structure_sim(tmp_path: Path) -> None:
    original = save(tmp_path, "orig.png", photo())
    saturated = save(tmp_path, "sat.png", ImageEnhance.Color(photo()).enhance(1.1))
    washed = save(tmp_path, "desat.png", ImageEnhance.Color(photo()).enhance(0.5))
    assert gimp.check_saturation_increase_and_structure_sim(saturated, original) == 1.0
    assert gimp.check_saturation_increase_and_structure_sim(washed, original) == 0.0
    assert gimp.check_saturation_increase_and_structure_sim(original, original) == 0.0  # not increased
    assert gimp.check_saturation_increase_and_structure_sim(saturated, None) == 0.0


def test_check_file_exists_and_structure_sim(tmp_path: Path) -> None:
    original = save(tmp_path, "The_Lost_River_Of_Dreams.jpg", photo(), quality=95)
    export = save(tmp_path, "export.jpg", photo(), quality=90)
    assert gimp.check_file_exists_and_structure_sim(export, original) == 1.0
    assert gimp.check_file_exists_and_structure_sim(str(tmp_path / "missing.jpg"), original) == 0.0
    assert gimp.check_file_exists_and_structure_sim(save(tmp_path, "n.jpg", noisy(photo())), original) == 0.0


def test_check_structure_sim_and_resized(tmp_path: Path) -> None:
    gold = save(tmp_path, "gold.png", photo().convert("RGBA"))
    same = save(tmp_path, "same.png", photo().convert("RGBA"))
    rgb = save(tmp_path, "rgb.png", photo())
    assert gimp.check_structure_sim(same, gold) == 1.0
    assert gimp.check_structure_sim(rgb, gold) == 0.0  # RGB against RGBA: other shape
    assert gimp.check_structure_sim(save(tmp_path, "n.png", noisy(photo()).convert("RGBA")), gold) == 0.0
    resized = save(tmp_path, "resized.png", photo(128, 96).resize((64, 48), Image.Resampling.LANCZOS))
    big = save(tmp_path, "big.png", photo(128, 96))
    assert gimp.check_structure_sim_resized(resized, big) == 1.0
    assert gimp.check_structure_sim_resized(save(tmp_path, "r.png", photo(128, 96).rotate(180)), big) == 0.0
    assert gimp.check_structure_sim(None, gold) == 0.0


def test_check_contrast_increase_and_structure_sim(tmp_path: Path) -> None:
    berries = save(tmp_path, "berries.png", photo())
    contrast = save(tmp_path, "berries_contrast.png", ImageEnhance.Contrast(photo()).enhance(1.4))
    flat = save(tmp_path, "flat.png", ImageEnhance.Contrast(photo()).enhance(0.6))
    assert gimp.check_contrast_increase_and_structure_sim(contrast, berries) == 1.0
    assert gimp.check_contrast_increase_and_structure_sim(flat, berries) == 0.0
    other = save(tmp_path, "o.png", ImageEnhance.Contrast(photo().rotate(180)).enhance(1.4))
    assert gimp.check_contrast_increase_and_structure_sim(other, berries) == 0.0


def test_check_palette_and_structure_sim(tmp_path: Path) -> None:
    few_colours = photo().quantize(64).convert("RGB")  # a picture that an indexed palette can hold exactly
    computer = save(tmp_path, "computer.png", few_colours)
    indexed = save(tmp_path, "palette_computer.png", few_colours.quantize(255))
    assert Image.open(indexed).mode == "P"
    assert gimp.check_palette_and_structure_sim(indexed, computer) == 1.0
    assert gimp.check_palette_and_structure_sim(computer, computer) == 0.0  # RGB, not indexed
    wrong = photo().rotate(180).convert("P", palette=Image.Palette.ADAPTIVE, colors=255)
    assert gimp.check_palette_and_structure_sim(save(tmp_path, "w.png", wrong), computer) == 0.0


def test_check_image_mirror(tmp_path: Path) -> None:
    berry = save(tmp_path, "berry.png", photo())
    mirrored = save(tmp_path, "berry_mirror.png", photo().transpose(Image.Transpose.FLIP_LEFT_RIGHT))
    flipped = save(tmp_path, "berry_flip.png", photo().transpose(Image.Transpose.FLIP_TOP_BOTTOM))
    assert gimp.check_image_mirror(mirrored, berry) == 1.0
    assert gimp.check_image_mirror(berry, berry) == 0.0
    assert gimp.check_image_mirror(flipped, berry) == 0.0


def test_check_green_background(tmp_path: Path) -> None:
    for size in ((60, 60), (80, 50)):  # OSWorld's [x, y] indexing handled square pictures only
        white = Image.new("RGB", size, "white")
        ImageDraw.Draw(white).rectangle([10, 10, 30, 30], fill="black")
        green = Image.new("RGB", size, (20, 200, 30))
        ImageDraw.Draw(green).rectangle([10, 10, 30, 30], fill="black")
        spotted = green.copy()
        ImageDraw.Draw(spotted).rectangle([40, 5, 45, 8], fill=(200, 0, 0))
        target = save(tmp_path, f"white{size}.png", white)
        assert gimp.check_green_background(save(tmp_path, f"green{size}.png", green), target) == 1.0
        assert gimp.check_green_background(save(tmp_path, f"spot{size}.png", spotted), target) == 0.0
        assert gimp.check_green_background(target, target) == 0.0
    small = save(tmp_path, "small.png", Image.new("RGB", (10, 10), (0, 255, 0)))
    assert gimp.check_green_background(small, target) == 0.0


# -- metrics with one picture or a rule -----------------------------------------------------------------------------


def triangle(size: tuple[int, int], centre: tuple[int, int], marker: bool) -> Any:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    cx, cy = centre
    draw.polygon([(cx - 15, cy + 10), (cx + 15, cy + 10), (cx, cy - 16)], fill="yellow")
    if marker:  # a third, rarest colour: the triangle is then the second-rarest colour OSWorld picks
        image.putpixel((0, 0), (0, 0, 255))
    return image


def test_check_triangle_position(tmp_path: Path) -> None:
    middle = save(tmp_path, "mid.png", triangle((100, 100), (50, 53), marker=True))
    corner = save(tmp_path, "corner.png", triangle((100, 100), (20, 25), marker=True))
    assert gimp.check_triangle_position(middle) == 1.0
    assert gimp.check_triangle_position(corner) == 0.0
    # OSWorld's quirk kept: with two colours the "triangle colour" is the background, centred enough here
    two_colours = save(tmp_path, "two.png", triangle((100, 100), (20, 25), marker=False))
    assert gimp.check_triangle_position(two_colours) == 1.0
    assert gimp.check_triangle_position(save(tmp_path, "plain.png", Image.new("RGB", (20, 20)))) == 0.0
    assert gimp.check_triangle_position(save(tmp_path, "gray.png", Image.new("L", (20, 20)))) == 0.0
    assert gimp.check_triangle_position(None) == 0.0


def test_check_textbox_on_leftside(tmp_path: Path) -> None:
    left = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(left).rectangle([4, 40, 60, 50], fill="black")
    right = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(right).rectangle([40, 40, 100, 50], fill="black")
    assert gimp.check_textbox_on_leftside(save(tmp_path, "left.png", left)) == 1.0
    assert gimp.check_textbox_on_leftside(save(tmp_path, "right.png", right)) == 0.0
    assert gimp.check_textbox_on_leftside(save(tmp_path, "blank.png", Image.new("RGB", (200, 100), "white"))) == 0.0


def test_check_image_size(tmp_path: Path) -> None:
    resized = save(tmp_path, "resized.png", photo(128, 128))
    assert gimp.check_image_size(resized, {"height": 128, "width": 128}) == 1.0
    assert gimp.check_image_size(resized, {"height": 128}) == 1.0
    assert gimp.check_image_size(resized, {"height": 512}) == 0.0
    assert gimp.check_image_size(resized, {"height": 128, "width": 64}) == 0.0
    assert gimp.check_image_size(None, {"height": 128}) == 0.0


def test_check_image_file_size(tmp_path: Path) -> None:
    compressed = save(tmp_path, "compressed.jpeg", photo(), quality=50)
    size = Path(compressed).stat().st_size
    assert gimp.check_image_file_size(compressed, {"max_size": 600000}) == 1.0
    assert gimp.check_image_file_size(compressed, {"max_size": size}) == 0.0  # strictly under
    assert gimp.check_image_file_size(None, {"max_size": 600000}) == 0.0


# -- the real tasks' shapes -----------------------------------------------------------------------------------------

POSTCONFIG = [
    {
        "type": "execute",
        "parameters": {"command": ["python3", "-c", 'import pyautogui; pyautogui.hotkey(["ctrl", "q"]);']},
    }
]


def vm_file(name: str) -> dict[str, Any]:
    return {"type": "vm_file", "path": f"/home/user/Desktop/{name}", "dest": name}


def cloud_file(name: str) -> dict[str, Any]:
    return {
        "type": "cloud_file",
        "path": "https://drive.usercontent.google.com/download?id=x&export=download",
        "dest": name,
    }


REAL_EVALUATORS: dict[str, dict[str, Any]] = {
    # gimp/7767eef2-56a3-4cea-8c9f-48c070c7d65b
    "theme": {
        "postconfig": POSTCONFIG,
        "func": "check_config_status",
        "expected": {"type": "rule", "rules": {"type:": "key-value", "key": "theme", "value": '"Light"'}},
        "result": {"type": "gimp_config_file", "file_name": "gimprc", "dest": "gimprc"},
    },
    # gimp/a746add2-cab0-4740-ac36-c3769d9bfb46
    "vignette": {
        "postconfig": POSTCONFIG,
        "func": "check_config_status",
        "expected": {
            "type": "rule",
            "rules": {"type:": "key-value", "key": ["history-item", '"filters-vignette"'], "value": "1"},
        },
        "result": {"type": "gimp_config_file", "file_name": "action-history", "dest": "action-history"},
    },
    # gimp/d52d6308-ec58-42b7-a2c9-de80e4837b2b
    "docks": {
        "func": "check_config_status",
        "expected": {"type": "rule", "rules": {"type:": "key-value", "key": "hide-docks", "value": "yes"}},
        "result": {"type": "gimp_config_file", "file_name": "sessionrc", "dest": "sessionrc"},
    },
    # gimp/2a729ded-3296-423d-aec4-7dd55ed5fbb3
    "structure": {
        "func": "check_structure_sim",
        "expected": vm_file("dog_cutout_gold.png"),
        "result": vm_file("dog_without_background.png"),
    },
    # gimp/d16c99dc-2a1e-46f2-b350-d97c86c85c15
    "resize": {
        "func": ["check_image_size", "check_structure_sim_resized"],
        "expected": [{"type": "rule", "rules": {"height": 512}}, vm_file("dog_with_background.png")],
        "result": [vm_file("dog_with_background.png"), vm_file("resized.png")],
    },
    # gimp/7a4deb26-d57d-4ea9-9a73-630f66a7b568
    "darker": {
        "func": "check_brightness_decrease_and_structure_sim",
        "expected": vm_file("woman_sitting_by_the_tree.png"),
        "result": vm_file("edited_darker.png"),
    },
    # gimp/554785e9-4523-4e7a-b8e1-8016f565f56a
    "colorful": {
        "func": "check_saturation_increase_and_structure_sim",
        "expected": vm_file("woman_sitting_by_the_tree2.png"),
        "result": vm_file("edited_colorful.png"),
    },
    # gimp/77b8ab4d-994f-43ac-8930-8ca087d7c4b4
    "export": {
        "func": "check_file_exists_and_structure_sim",
        "expected": vm_file("The_Lost_River_Of_Dreams.jpg"),
        "result": vm_file("export.jpg"),
    },
    # gimp/f4aec372-4fb0-4df5-a52b-79e0e2a5d6ce
    "triangle": {"func": "check_triangle_position", "result": vm_file("Triangle_In_The_Middle.png")},
    # gimp/06ca5602-62ca-47f6-ad4f-da151cde54cc
    "palette": {
        "func": "check_palette_and_structure_sim",
        "expected": vm_file("computer.png"),
        "result": vm_file("palette_computer.png"),
    },
    # gimp/e2dd0213-26db-4349-abe5-d5667bfd725c
    "textbox": {"func": "check_textbox_on_leftside", "result": vm_file("leftside_textbox.png")},
    # gimp/f723c744-e62c-4ae6-98d1-750d3cd7d79d
    "contrast": {
        "func": "check_contrast_increase_and_structure_sim",
        "expected": vm_file("berries.png"),
        "result": vm_file("berries_contrast.png"),
    },
    # gimp/72f83cdc-bf76-4531-9a1b-eb893a13f8aa
    "mirror": {"func": "check_image_mirror", "expected": vm_file("berry.png"), "result": vm_file("berry_mirror.png")},
    # gimp/734d6579-c07d-47a8-9ae2-13339795476b
    "green": {
        "func": "check_green_background",
        "expected": vm_file("white_background_with_object.png"),
        "result": vm_file("green_background_with_object.png"),
    },
    # multi_apps/3c8f201a-009d-4bbe-8b65-a6f8b35bb57f
    "filesize": {
        "func": "check_image_file_size",
        "result": vm_file("compressed.jpeg"),
        "expected": {"type": "rule", "rules": {"max_size": 600000}},
    },
    # vlc/fba2c100-79e8-42df-ae74-b592418d54f4
    "compare": {
        "func": "compare_images",
        "expected": cloud_file("interstellar_gold.png"),
        "result": vm_file("interstellar.png"),
    },
    # multi_apps/82e3c869-49f6-4305-a7ce-f3e64a0618e7
    "list": {
        "func": "compare_image_list",
        "result": {
            "type": "vm_file",
            "path": ["/home/user/Desktop/presenter/DSC00657.jpg", "/home/user/Desktop/presenter/DSC00574.jpg"],
            "dest": ["DSC00657.jpg", "DSC00574.jpg"],
            "multi": "true",
        },
        "expected": {
            "type": "cloud_file",
            "path": [
                "https://drive.google.com/uc?id=a&export=download",
                "https://drive.google.com/uc?id=b&export=download",
            ],
            "dest": ["DSC00657_gold.jpg", "DSC00574_gold.jpg"],
            "multi": "true",
        },
    },
}


def write_fixtures(root: Path) -> None:
    """The desktop's files (by ``dest``) that make every evaluator above score 1."""
    config = root / "home" / ".config" / "GIMP" / "2.10"
    config.mkdir(parents=True)
    (config / "gimprc").write_text(GIMPRC)
    (config / "sessionrc").write_text(SESSIONRC)
    (config / "action-history").write_text(ACTION_HISTORY)
    files = root / "files"
    files.mkdir()
    base = photo()
    rgba = photo().convert("RGBA")
    pictures: dict[str, Any] = {
        "dog_cutout_gold.png": rgba,
        "dog_without_background.png": rgba,
        "dog_with_background.png": photo(512, 512),
        "resized.png": photo(512, 512).resize((256, 256)),
        "woman_sitting_by_the_tree.png": base,
        "edited_darker.png": ImageEnhance.Brightness(base).enhance(0.7),
        "woman_sitting_by_the_tree2.png": base,
        "edited_colorful.png": ImageEnhance.Color(base).enhance(1.1),
        "The_Lost_River_Of_Dreams.jpg": base,
        "export.jpg": base,
        "Triangle_In_The_Middle.png": triangle((100, 100), (50, 53), marker=True),
        "computer.png": base.quantize(64).convert("RGB"),
        "palette_computer.png": base.quantize(64),
        "berries.png": base,
        "berries_contrast.png": ImageEnhance.Contrast(base).enhance(1.4),
        "berry.png": base,
        "berry_mirror.png": base.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
        "compressed.jpeg": base,
        "interstellar.png": base,
        "interstellar_gold.png": base,
        "DSC00657.jpg": base,
        "DSC00657_gold.jpg": base,
        "DSC00574.jpg": base.rotate(90),
        "DSC00574_gold.jpg": base.rotate(90),
    }
    textbox = Image.new("RGB", (200, 100), "white")
    ImageDraw.Draw(textbox).rectangle([2, 40, 60, 50], fill="black")
    pictures["leftside_textbox.png"] = textbox
    white = Image.new("RGB", (80, 50), "white")
    ImageDraw.Draw(white).rectangle([10, 10, 30, 30], fill="black")
    green = Image.new("RGB", (80, 50), (20, 200, 30))
    ImageDraw.Draw(green).rectangle([10, 10, 30, 30], fill="black")
    pictures["white_background_with_object.png"] = white
    pictures["green_background_with_object.png"] = green
    for name, image in pictures.items():
        image.save(files / name, **({"quality": 95} if name.endswith((".jpg", ".jpeg")) else {}))
    # two JPEG copies of one picture must be byte-identical to compare equal pixel for pixel
    for name in ("DSC00657", "DSC00574"):
        (files / f"{name}_gold.jpg").write_bytes((files / f"{name}.jpg").read_bytes())


def make_get(root: Path) -> Any:
    client = FakeClient(root / "home", root / "cache")
    (root / "cache").mkdir(exist_ok=True)

    def one(dest: str) -> str | None:
        path = root / "files" / dest
        return str(path) if path.is_file() else None

    def get(spec: dict[str, Any]) -> Any:
        if spec["type"] in gimp.GETTERS:
            return gimp.GETTERS[spec["type"]](client, spec)
        assert spec["type"] in ("vm_file", "cloud_file")
        dest = spec["dest"]
        return [one(d) for d in dest] if isinstance(dest, list) else one(dest)

    return get


def as_task(name: str, evaluator: dict[str, Any]) -> OSWorldTask:
    return OSWorldTask.from_dict({"id": name, "instruction": "x", "evaluator": evaluator})


def test_every_registered_name_is_used_by_a_real_task_shape() -> None:
    used_funcs: set[str] = set()
    used_getters: set[str] = set()
    for evaluator in REAL_EVALUATORS.values():
        funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
        used_funcs.update(funcs)
        for key in ("result", "expected"):
            specs = evaluator.get(key, [])
            for spec in specs if isinstance(specs, list) else [specs]:
                used_getters.add(spec["type"])
    assert set(gimp.METRICS) <= used_funcs
    assert set(gimp.GETTERS) <= used_getters
    for name, func in gimp.METRICS.items():
        assert METRICS[name] is func  # wired into the evaluator's registry


def test_real_task_shapes_score_one_and_zero(tmp_path: Path) -> None:
    write_fixtures(tmp_path)
    get = make_get(tmp_path)
    for name, evaluator in REAL_EVALUATORS.items():
        score, details = evaluate(as_task(name, evaluator), last_action="DONE", get=get)
        assert score == 1.0, (name, details)
    # break the desktop: GIMP's config reverted, the exports gone
    (tmp_path / "home" / ".config" / "GIMP" / "2.10" / "gimprc").write_text(GIMPRC.replace('"Light"', '"Dark"'))
    (tmp_path / "home" / ".config" / "GIMP" / "2.10" / "action-history").unlink()
    for dest in ("edited_darker.png", "export.jpg", "berry_mirror.png", "DSC00574.jpg"):
        (tmp_path / "files" / dest).unlink()
    for name in ("theme", "vignette", "darker", "export", "mirror", "list"):
        score, details = evaluate(as_task(name, REAL_EVALUATORS[name]), last_action="DONE", get=get)
        assert score == 0.0, (name, details)
