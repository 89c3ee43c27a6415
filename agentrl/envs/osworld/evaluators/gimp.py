"""OSWorld's GIMP's config and the image metrics (structure similarity, brightness, palette...).

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``.
The two dicts below are merged by :mod:`agentrl.envs.osworld.evaluators`.

OSWorld computes these with scikit-image's ``structural_similarity`` and OpenCV; here the SSIM is
:func:`structural_similarity` (numpy only, scikit-image's defaults: a 7-wide uniform window, ``K1=0.01``,
``K2=0.03``, sample covariance, ``data_range`` from the dtype, the mean over the window-cropped map), and
the images are read with Pillow (the ``desktop`` extra).

OSWorld's structure check calls ``ssim(a, b, multichannel=True, channel_axis=-1)`` on every pair it is
given. On an RGB array that is the mean of the per-channel SSIMs; on a 2-D array (a grayscale image,
or one HSV band) the *last axis is taken as channels*, so it is the mean of column-wise 1-D SSIMs.
:func:`structure_check_by_ssim` keeps that, so its scores match OSWorld's.

Getter (``type`` of a ``result`` object):

====================  =====================================================================================
``gimp_config_file``  ``~/.config/GIMP/2.10/<file_name>`` (``gimprc``, ``sessionrc``, ``action-history``),
                      copied into the client's cache dir as ``dest``; ``None`` when missing or empty
====================  =====================================================================================

>>> a = np.arange(100, dtype=np.uint8).reshape(10, 10)
>>> structural_similarity(a, a)
1.0
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import DependencyNotInstalled

__all__ = [
    "GETTERS",
    "GIMP_CONFIG_DIR",
    "METRICS",
    "check_brightness_decrease_and_structure_sim",
    "check_config_status",
    "check_contrast_increase_and_structure_sim",
    "check_file_exists_and_structure_sim",
    "check_green_background",
    "check_image_file_size",
    "check_image_mirror",
    "check_image_size",
    "check_palette_and_structure_sim",
    "check_saturation_increase_and_structure_sim",
    "check_structure_sim",
    "check_structure_sim_resized",
    "check_textbox_on_leftside",
    "check_triangle_position",
    "compare_image_list",
    "compare_images",
    "config_items",
    "get_gimp_config_file",
    "structural_similarity",
    "structure_check_by_ssim",
]

GIMP_CONFIG_DIR = "~/.config/GIMP/2.10"
"""GIMP 2.10's per-user config folder on the desktop (OSWorld's getter reads the same)."""


SSIM_WIN_SIZE = 7
"""scikit-image's default (uniform) SSIM window, which OSWorld uses."""


SSIM_K1 = 0.01


SSIM_K2 = 0.03


def _pil() -> Any:
    """Pillow's ``Image`` module, or :class:`DependencyNotInstalled` naming the extra that brings it."""
    try:
        from PIL import Image
    except ImportError as error:  # pragma: no cover - Pillow comes with the desktop extra
        raise DependencyNotInstalled("pillow", extra="desktop") from error
    return Image


def _load(path: str | os.PathLike[str]) -> Any:
    """The image at ``path``, read in full (a GIF's first frame), with its file closed."""
    with _pil().open(path) as image:
        image.load()
        return image.copy()


_DOCTEST_DIR: list[str] = []  # the temp folder :func:`_doctest_file` writes to, made on first use


def _doctest_file(name: str, content: Any, mode: str | None = None) -> str:
    """Write ``content`` (text, or pixels saved as an image, converted to ``mode``) as ``name``: its path.

    For the doctests: the files go to one temp folder per process, removed at exit.
    """
    if not _DOCTEST_DIR:
        _DOCTEST_DIR.append(tempfile.mkdtemp(prefix="agentrl-gimp-doctest-"))
        atexit.register(shutil.rmtree, _DOCTEST_DIR[0], True)
    path = Path(_DOCTEST_DIR[0]) / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        image = _pil().fromarray(np.asarray(content, dtype=np.uint8))
        (image.convert(mode) if mode else image).save(path)
    return str(path)


def _data_range(first: np.dtype[Any], second: np.dtype[Any]) -> float:
    # scikit-image: integer images take their dtype's full range (from the first image); float ones must say it.
    if np.issubdtype(first, np.floating) or np.issubdtype(second, np.floating):
        raise ValueError("floating-point images need an explicit data_range (as scikit-image requires)")
    if first == np.bool_:
        return 1.0
    if np.issubdtype(first, np.integer):
        info = np.iinfo(first)
        return float(info.max) - float(info.min)
    raise ValueError(f"no data range for images of dtype {first}")


def _box_mean(values: np.ndarray, axes: tuple[int, ...], size: int) -> np.ndarray:
    # scipy.ndimage.uniform_filter(size=size, mode="reflect") over ``axes``: "reflect" is numpy's "symmetric"
    # padding (d c b a | a b c d); a separable filter pads and averages one axis after the other.
    pad = size // 2
    out = values
    for axis in axes:
        widths = [(0, 0)] * values.ndim
        widths[axis] = (pad, pad)
        padded = np.pad(out, widths, mode="symmetric")
        length = out.shape[axis]
        # the window sum as ``size`` shifted slices added up: whole-array adds, far faster than a strided view
        total = np.zeros(out.shape, dtype=np.float64)
        for shift in range(size):
            window = [slice(None)] * values.ndim
            window[axis] = slice(shift, shift + length)
            total += padded[tuple(window)]
        out = total / size
    return out


def structural_similarity(
    im1: Any,
    im2: Any,
    *,
    channel_axis: int | None = None,
    data_range: float | None = None,
    win_size: int = SSIM_WIN_SIZE,
) -> float:
    """Mean structural similarity of two same-shaped arrays, as scikit-image's ``structural_similarity``.

    Its defaults: a ``win_size``-wide uniform window, ``K1=0.01``, ``K2=0.03``, sample covariance
    (``N/(N-1)``), ``data_range`` taken from the dtype of integer images (255 for ``uint8``), and the
    mean of the SSIM map cropped by ``(win_size - 1) // 2`` on every side. With ``channel_axis`` the
    score is the mean of the per-channel scores. 1.0 means identical. Raises ``ValueError`` on shapes
    that differ, a side shorter than ``win_size``, or float images without ``data_range``.

    >>> a = np.zeros((8, 8), dtype=np.uint8)
    >>> round(structural_similarity(a, a + 100), 4)  # flat images: (2xy + C1) / (x² + y² + C1)
    0.0006
    """
    x = np.asarray(im1)
    y = np.asarray(im2)
    if x.shape != y.shape:
        raise ValueError(f"images of different shapes: {x.shape} and {y.shape}")
    if win_size < 1 or win_size % 2 == 0:
        raise ValueError("win_size must be odd")
    channel = None if channel_axis is None else channel_axis % x.ndim
    axes = tuple(axis for axis in range(x.ndim) if axis != channel)
    if not axes:
        raise ValueError("an image with no axis besides its channel axis")
    if any(x.shape[axis] < win_size for axis in axes):
        raise ValueError(f"win_size {win_size} exceeds the image extent {x.shape}")
    rng = _data_range(x.dtype, y.dtype) if data_range is None else float(data_range)

    xf = x.astype(np.float64)
    yf = y.astype(np.float64)
    n = win_size ** len(axes)
    cov_norm = n / (n - 1)
    ux = _box_mean(xf, axes, win_size)
    uy = _box_mean(yf, axes, win_size)
    vx = cov_norm * (_box_mean(xf * xf, axes, win_size) - ux * ux)
    vy = cov_norm * (_box_mean(yf * yf, axes, win_size) - uy * uy)
    vxy = cov_norm * (_box_mean(xf * yf, axes, win_size) - ux * uy)
    c1 = (SSIM_K1 * rng) ** 2
    c2 = (SSIM_K2 * rng) ** 2
    ssim_map = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))

    pad = (win_size - 1) // 2
    crop = tuple(slice(pad, dim - pad) if axis in axes else slice(None) for axis, dim in enumerate(x.shape))
    # Every channel keeps the same number of pixels, so the mean of per-channel means is the overall mean.
    return float(ssim_map[crop].mean(dtype=np.float64))


def structure_check_by_ssim(img1: Any, img2: Any, threshold: float = 0.9) -> bool:
    """OSWorld's structure check: SSIM(``img1``, ``img2``) with the last axis as channels, ``>= threshold``.

    Images of different shapes (sizes, or RGB against RGBA) are not the same structure (OSWorld raises).

    >>> a = np.arange(64, dtype=np.uint8).reshape(8, 8) * 4
    >>> structure_check_by_ssim(a, a), structure_check_by_ssim(a, 255 - a), structure_check_by_ssim(a, a[:4])
    (True, False, False)
    """
    try:
        return structural_similarity(np.asarray(img1), np.asarray(img2), channel_axis=-1) >= threshold
    except ValueError:
        return False


def _structure_check_by_mse(img1: Any, img2: Any, threshold: float = 0.03) -> bool:
    # OSWorld: the mean squared difference of the images scaled to [0, 1], in float32, under ``threshold``.
    a = np.asarray(img1, dtype=np.float32) / 255
    b = np.asarray(img2, dtype=np.float32) / 255
    if a.shape != b.shape:
        return False
    return bool(np.mean((a - b) ** 2) < threshold)


def _brightness(image: Any) -> float:
    return float(np.asarray(image.convert("L"), dtype=np.float64).mean())


def _normalize_brightness(image: Any, target: float) -> Any:
    # OSWorld scales every band (alpha too) by target / brightness, truncating and clipping to [0, 255].
    factor = target / _brightness(image)
    return image.point(lambda value: min(255, max(0, int(value * factor))))


def compare_images(image1_path: Any, image2_path: Any, **options: Any) -> float:
    """The SSIM of the two images in grayscale, in ``[-1, 1]`` (1.0: the same picture) (OSWorld's VLC metric).

    Both are resized (Lanczos) to the smaller size, where "smaller" compares ``(width, height)`` tuples
    the way OSWorld's ``min(size1, size2)`` does: by width first. A GIF counts by its first frame. A
    missing path, or a picture under 7 pixels a side, scores 0.

    >>> a = _doctest_file("gradient.png", np.arange(64).reshape(8, 8) * 4)
    >>> compare_images(a, a), compare_images(a, None)
    (1.0, 0.0)
    """
    if not image1_path or not image2_path:
        return 0.0
    image = _pil()
    first = _load(image1_path).convert("L")
    second = _load(image2_path).convert("L")
    size = min(first.size, second.size)
    first = first.resize(size, image.Resampling.LANCZOS)
    second = second.resize(size, image.Resampling.LANCZOS)
    try:
        return structural_similarity(np.asarray(first), np.asarray(second))
    except ValueError:
        return 0.0


def compare_image_list(pred_img_path_list: Any, gold_img_path_list: Any, **options: Any) -> float:
    """1 if every predicted image equals its gold image pixel for pixel (a single path is a list of one).

    Pairs are taken with ``zip`` (as OSWorld does). A missing image, or two images of different modes,
    scores 0.

    >>> black = _doctest_file("black.png", np.zeros((2, 2, 3)))
    >>> gray = _doctest_file("gray.png", np.full((2, 2, 3), 9))
    >>> compare_image_list([black, gray], [black, gray]), compare_image_list(black, gray)
    (1.0, 0.0)
    >>> compare_image_list([None], [gray])
    0.0
    """
    preds = pred_img_path_list if isinstance(pred_img_path_list, list) else [pred_img_path_list]
    golds = gold_img_path_list if isinstance(gold_img_path_list, list) else [gold_img_path_list]
    _pil()
    from PIL import ImageChops

    for pred, gold in zip(preds, golds, strict=False):
        if not pred or not gold:
            return 0.0
        try:
            # Pillow compares the images' common area; bbox None means no pixel differs there.
            if ImageChops.difference(_load(pred), _load(gold)).getbbox():
                return 0.0
        except ValueError:  # "images do not match": different modes
            return 0.0
    return 1.0


def check_brightness_decrease_and_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src`` is darker than ``tgt`` and, both scaled to mean brightness 128, they differ by MSE < 0.03.

    ``src`` is the edited picture (the result), ``tgt`` the original (the expected). A black picture
    (brightness 0, which OSWorld divides by) scores 0.

    >>> original = np.arange(64).reshape(8, 8) * 4 + 2
    >>> src, tgt = _doctest_file("darker.png", original // 2), _doctest_file("original.png", original)
    >>> check_brightness_decrease_and_structure_sim(src, tgt), check_brightness_decrease_and_structure_sim(tgt, src)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    src = _load(src_path)
    tgt = _load(tgt_path)
    brightness_src = _brightness(src)
    brightness_tgt = _brightness(tgt)
    if brightness_src == 0 or brightness_tgt == 0:
        return 0.0
    reduced = brightness_tgt > brightness_src
    same = _structure_check_by_mse(_normalize_brightness(src, 128), _normalize_brightness(tgt, 128))
    return float(reduced and same)


def check_saturation_increase_and_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src`` has a higher mean HSV saturation than ``tgt`` and both its H and V bands pass the SSIM check.

    The bands are 2-D, so (as in OSWorld) each check is the mean column-wise SSIM, ``>= 0.9``.

    >>> v = np.arange(64).reshape(8, 8) * 4  # reds: the same hue and value, more saturated in src
    >>> src = _doctest_file("vivid.png", np.dstack([v, v * 0.4, v * 0.4]))
    >>> tgt = _doctest_file("pale.png", np.dstack([v, v * 0.8, v * 0.8]))
    >>> check_saturation_increase_and_structure_sim(src, tgt), check_saturation_increase_and_structure_sim(tgt, src)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    hsv_src = _load(src_path).convert("HSV")
    hsv_tgt = _load(tgt_path).convert("HSV")
    h_src, s_src, v_src = hsv_src.split()
    h_tgt, s_tgt, v_tgt = hsv_tgt.split()
    increased = float(np.mean(np.asarray(s_tgt))) < float(np.mean(np.asarray(s_src)))
    same = structure_check_by_ssim(h_src, h_tgt) and structure_check_by_ssim(v_src, v_tgt)
    return float(increased and same)


def check_file_exists_and_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if the exported file ``src`` exists and passes the SSIM check (``>= 0.9``) against ``tgt``.

    >>> tgt = _doctest_file("gradient.png", np.arange(64).reshape(8, 8) * 4)
    >>> check_file_exists_and_structure_sim(tgt, tgt), check_file_exists_and_structure_sim(tgt + ".missing", tgt)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    if not os.path.isfile(src_path):
        return 0.0
    return float(structure_check_by_ssim(_load(src_path), _load(tgt_path)))


def check_triangle_position(tgt_path: Any, **options: Any) -> float:
    """1 if the pixels of the picture's "triangle colour" have their centroid within 5% of the centre.

    As in OSWorld, that colour is the second entry of the colours sorted by ascending pixel count
    (with two colours: the more common one). A picture without colour bands or with a single colour
    scores 0.

    >>> p = np.full((20, 20, 3), 255); p[19, 19] = (0, 0, 255); p[7:13, 7:13] = (255, 0, 0)
    >>> check_triangle_position(_doctest_file("centred.png", p))  # red: the second-rarest colour
    1.0
    >>> p[7:13, 7:13] = 255; p[:6, :6] = (255, 0, 0)
    >>> check_triangle_position(_doctest_file("corner.png", p)), check_triangle_position(None)
    (0.0, 0.0)
    """
    if tgt_path is None:
        return 0.0
    pixels = np.asarray(_load(tgt_path))
    if pixels.ndim != 3:
        return 0.0
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    if len(colours) < 2:
        return 0.0
    triangle = colours[np.argsort(counts)][1]
    coords = np.argwhere(np.all(pixels == triangle, axis=2))
    centroid = coords.mean(axis=0)
    shape = np.array(pixels.shape[:2], dtype=np.float64)
    return float(np.all(np.abs(centroid - shape / 2) < 0.05 * shape))


def check_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if the two pictures pass the SSIM check (same shape, SSIM ``>= 0.9``).

    An RGB picture against an RGBA one has another shape and scores 0, as in OSWorld.

    >>> a = np.arange(64).reshape(8, 8) * 4
    >>> src, inverted = _doctest_file("gradient.png", a), _doctest_file("inverted.png", 255 - a)
    >>> check_structure_sim(src, src), check_structure_sim(src, inverted), check_structure_sim(None, src)
    (1.0, 0.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    return float(structure_check_by_ssim(_load(src_path), _load(tgt_path)))


def check_structure_sim_resized(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src``, resized to ``tgt``'s size (Pillow's default filter), passes the SSIM check against it.

    >>> a = np.arange(64).reshape(8, 8) * 4
    >>> big, small = _doctest_file("big.png", np.kron(a, np.ones((2, 2)))), _doctest_file("small.png", a)
    >>> check_structure_sim_resized(big, small), check_structure_sim_resized(big, None)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    tgt = _load(tgt_path)
    src = _load(src_path).resize(tgt.size)
    return float(structure_check_by_ssim(src, tgt))


def check_contrast_increase_and_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src`` has a higher contrast (pixel standard deviation) than ``tgt`` and SSIM ``>= 0.65``.

    >>> a = np.arange(64).reshape(8, 8) * 4
    >>> src, tgt = _doctest_file("contrast.png", a), _doctest_file("flat.png", 64 + a // 2)
    >>> check_contrast_increase_and_structure_sim(src, tgt), check_contrast_increase_and_structure_sim(tgt, src)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    src = _load(src_path)
    tgt = _load(tgt_path)
    higher = float(np.std(np.asarray(tgt, dtype=np.float32))) < float(np.std(np.asarray(src, dtype=np.float32)))
    return float(higher and structure_check_by_ssim(src, tgt, threshold=0.65))


def check_palette_and_structure_sim(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src`` is an indexed (palette, mode ``P``) picture whose RGB passes the SSIM check against ``tgt``.

    >>> a = np.arange(64).reshape(8, 8) * 4
    >>> indexed, rgb = _doctest_file("indexed.png", a, mode="P"), _doctest_file("rgb.png", a, mode="RGB")
    >>> check_palette_and_structure_sim(indexed, rgb), check_palette_and_structure_sim(rgb, rgb)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    src = _load(src_path)
    palette = src.mode == "P"
    return float(palette and structure_check_by_ssim(src.convert("RGB"), _load(tgt_path)))


def check_textbox_on_leftside(src_path: Any, **options: Any) -> float:
    """1 if the left-most dark pixel (gray < 128) lies within the left 5% of the picture's width.

    >>> p = np.full((4, 20), 255); p[1, 0] = 0  # one dark pixel in the first column
    >>> left, right = _doctest_file("left.png", p), _doctest_file("right.png", p[:, ::-1])
    >>> check_textbox_on_leftside(left), check_textbox_on_leftside(right)
    (1.0, 0.0)
    """
    if src_path is None:
        return 0.0
    gray = np.asarray(_load(src_path).convert("L"))
    width = gray.shape[1]
    dark_columns = np.flatnonzero((gray < 128).any(axis=0))
    left_most = int(dark_columns[0]) if dark_columns.size else width
    return float(left_most < width * 0.05)


def check_image_mirror(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if ``src`` flipped left-right passes the SSIM check against ``tgt`` at ``>= 0.99``.

    >>> p = np.zeros((8, 8)); p[:, 4:] = 255  # black left half, white right half
    >>> src, flipped = _doctest_file("halves.png", p), _doctest_file("flipped.png", p[:, ::-1])
    >>> check_image_mirror(src, flipped), check_image_mirror(src, src)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    flipped = _load(src_path).transpose(_pil().Transpose.FLIP_LEFT_RIGHT)
    return float(structure_check_by_ssim(flipped, _load(tgt_path), threshold=0.99))


def _rgb(image: Any) -> np.ndarray:
    if image.mode not in ("RGB", "RGBA"):
        image = image.convert("RGB")
    return np.asarray(image)[..., :3]


def check_green_background(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """1 if every pixel that is not black in ``tgt`` (the background) is green in ``src`` (G > R and G > B).

    Departure: OSWorld indexes the arrays as ``[x, y]``, so it checks a square picture fully and fails
    (or crashes) on any other; here every pixel is checked at ``[y, x]``. A ``src`` smaller than ``tgt``
    scores 0.

    >>> tgt = np.zeros((4, 4, 3)); tgt[:, 2:] = 255  # the background: the right half
    >>> green = np.zeros((4, 4, 3)); green[..., 1] = 200
    >>> mask = _doctest_file("mask.png", tgt)
    >>> check_green_background(_doctest_file("green.png", green), mask), check_green_background(mask, mask)
    (1.0, 0.0)
    """
    if src_path is None or tgt_path is None:
        return 0.0
    src = _rgb(_load(src_path)).astype(np.int16)
    tgt = _rgb(_load(tgt_path))
    height, width = tgt.shape[:2]
    if src.shape[0] < height or src.shape[1] < width:
        return 0.0
    src = src[:height, :width]
    background = np.any(tgt != 0, axis=-1)
    red, green, blue = src[..., 0], src[..., 1], src[..., 2]
    return float(np.all(((green > red) & (green > blue))[background]))


def check_image_size(src_path: Any, rule: Mapping[str, Any], **options: Any) -> float:
    """1 if the picture is ``rule["width"]`` wide and ``rule["height"]`` high (a missing key is not checked).

    >>> path = _doctest_file("5x3.png", np.zeros((3, 5)))
    >>> check_image_size(path, {"width": 5, "height": 3}), check_image_size(path, {"width": 4})
    (1.0, 0.0)
    >>> check_image_size(None, {})
    0.0
    """
    if src_path is None:
        return 0.0
    width, height = _load(src_path).size
    height_ok = rule.get("height") is None or height == rule["height"]
    width_ok = rule.get("width") is None or width == rule["width"]
    return float(height_ok and width_ok)


def check_image_file_size(src_path: Any, rule: Mapping[str, Any], **options: Any) -> float:
    """1 if the file is smaller than ``rule["max_size"]`` bytes.

    >>> path = _doctest_file("ten_bytes.txt", "x" * 10)
    >>> check_image_file_size(path, {"max_size": 11}), check_image_file_size(path, {"max_size": 10})
    (1.0, 0.0)
    """
    if src_path is None:
        return 0.0
    return float(os.path.getsize(src_path) < rule["max_size"])


def config_items(line: str) -> list[str] | None:
    r"""The words of one top-level-style line of a GIMP config file, as OSWorld splits it; ``None`` to skip.

    Comments and blank lines are skipped; the outer parentheses are stripped and the rest split on
    whitespace, so a quoted value keeps its quotes.

    >>> config_items('(theme "Light")\n')
    ['theme', '"Light"']
    >>> config_items('(history-item "filters-vignette" 1)')
    ['history-item', '"filters-vignette"', '1']
    >>> config_items("# GIMP gimprc") is None
    True
    """
    if line.startswith("#"):
        return None
    items = line.strip().lstrip("(").rstrip(")\n").split()
    return items or None  # OSWorld skips "\n" only, and crashes on a line of spaces: skip those too


def check_config_status(actual_config_path: Any, rule: Mapping[str, Any], **options: Any) -> float:
    r"""1 if a line of the GIMP config file reads ``(<key> ... <value>)``.

    ``rule["key"]`` is a word (first word of the line) or a list of two (first two words);
    ``rule["value"]`` is the line's last word, quotes included (``'"Light"'``, ``"100"``, ``"yes"``).

    >>> rc = _doctest_file("gimprc", '# GIMP gimprc\n(theme "Light")\n(history-item "filters-vignette" 1)\n')
    >>> light, dark = {"key": "theme", "value": '"Light"'}, {"key": "theme", "value": '"Dark"'}
    >>> check_config_status(rc, light), check_config_status(rc, dark), check_config_status(None, light)
    (1.0, 0.0, 0.0)
    >>> check_config_status(rc, {"key": ["history-item", '"filters-vignette"'], "value": "1"})
    1.0
    """
    if actual_config_path is None:
        return 0.0
    key = rule["key"]
    value = rule["value"]
    text = Path(actual_config_path).read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines():
        items = config_items(line)
        if items is None:
            continue
        if isinstance(key, str):
            if items[0] == key and items[-1] == value:
                return 1.0
        elif isinstance(key, list) and len(key) == 2:
            if len(items) >= 2 and items[0] == key[0] and items[1] == key[1] and items[-1] == value:
                return 1.0
    return 0.0


def get_gimp_config_file(client: Any, spec: Mapping[str, Any]) -> str | None:
    """``~/.config/GIMP/2.10/<spec["file_name"]>`` copied to ``client.cache_dir / spec["dest"]``: its local path.

    ``None`` when the file is missing or empty (GIMP writes it when it quits).
    """
    name = str(spec["file_name"])
    data = client.read_file(f"{GIMP_CONFIG_DIR}/{name}")
    if not data:
        return None
    local = Path(client.cache_dir) / Path(str(spec.get("dest") or name)).name  # never escape the cache dir
    local.write_bytes(data)
    return str(local)


GETTERS: dict[str, Callable[..., Any]] = {
    "gimp_config_file": get_gimp_config_file,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_brightness_decrease_and_structure_sim": check_brightness_decrease_and_structure_sim,
    "check_config_status": check_config_status,
    "check_contrast_increase_and_structure_sim": check_contrast_increase_and_structure_sim,
    "check_file_exists_and_structure_sim": check_file_exists_and_structure_sim,
    "check_green_background": check_green_background,
    "check_image_file_size": check_image_file_size,
    "check_image_mirror": check_image_mirror,
    "check_image_size": check_image_size,
    "check_palette_and_structure_sim": check_palette_and_structure_sim,
    "check_saturation_increase_and_structure_sim": check_saturation_increase_and_structure_sim,
    "check_structure_sim": check_structure_sim,
    "check_structure_sim_resized": check_structure_sim_resized,
    "check_textbox_on_leftside": check_textbox_on_leftside,
    "check_triangle_position": check_triangle_position,
    "compare_image_list": compare_image_list,
    "compare_images": compare_images,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
