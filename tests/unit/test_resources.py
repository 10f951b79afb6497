"""Every badge kind has a template icon in both sizes; a missing one is an error, not a blank."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage
from workroom import resources
from workroom.core.badge import BADGE_SPECS, BadgeKind

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _rgba(image: QImage) -> list[tuple[int, int, int, int]]:
    img = image.convertToFormat(QImage.Format.Format_ARGB32)
    out = []
    for y in range(img.height()):
        for x in range(img.width()):
            c = img.pixelColor(x, y)
            out.append((c.red(), c.green(), c.blue(), c.alpha()))
    return out


def _alpha(image: QImage) -> bytes:
    img = image.convertToFormat(QImage.Format.Format_Alpha8)
    bits, stride, width = bytes(img.constBits()), img.bytesPerLine(), img.width()
    return b"".join(bits[y * stride : y * stride + width] for y in range(img.height()))


@pytest.mark.parametrize("kind", list(BadgeKind), ids=lambda k: k.value)
def test_every_badge_kind_has_both_template_sizes(kind: BadgeKind) -> None:
    one, two = resources.badge_icon_paths(kind)
    assert one.name.endswith("Template.png") and two.name.endswith("Template@2x.png")
    for path, size in ((one, 18), (two, 36)):
        image = QImage(str(path))
        assert not image.isNull(), path
        assert (image.width(), image.height()) == (size, size)
        pixels = _rgba(image)
        assert any(a > 0 for *_, a in pixels), f"{path} is blank"
        assert all(r == g == b == 0 for r, g, b, a in pixels if a > 0), f"{path} is not black + alpha"


def test_the_module_knows_every_badge_kind() -> None:
    assert sorted(resources.badge_kinds()) == sorted(k.value for k in BadgeKind)


def test_badge_icons_look_different_from_each_other() -> None:
    drawn = {k: tuple(_rgba(QImage(str(resources.badge_icon_paths(k)[1])))) for k in BadgeKind}
    assert len(set(drawn.values())) == len(BadgeKind)


def test_badge_icon_is_a_template_qicon(qapp: object) -> None:
    icon = resources.badge_icon(BadgeKind.BUSY)
    assert not icon.isNull() and icon.isMask()
    assert {(s.width(), s.height()) for s in icon.availableSizes()} >= {(18, 18), (36, 36)}


@pytest.mark.parametrize("size", resources.APP_ICON_SIZES)
def test_app_icon_sizes(size: int) -> None:
    image = QImage(str(resources.app_icon_path(size)))
    assert (image.width(), image.height()) == (size, size)


def test_no_icon_problems_in_the_checkout() -> None:
    assert resources.icon_problems() == []


def test_a_missing_icon_raises_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "resources"
    shutil.copytree(ROOT / "resources", copy)
    (copy / "icons" / "menubar" / "badge_asleepTemplate@2x.png").unlink()
    monkeypatch.setenv(resources.ENV_OVERRIDE, str(copy))
    assert resources.resources_dir() == copy
    with pytest.raises(resources.MissingResourceError, match=r"badge_asleepTemplate@2x\.png"):
        resources.badge_icon_paths(BadgeKind.ASLEEP)
    assert any("asleep" in p for p in resources.icon_problems())
    resources.badge_icon_paths(BadgeKind.IDLE)  # the others are still found


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(resources.MissingResourceError, match="'nonsense'"):
        resources.badge_icon_paths("nonsense")
    with pytest.raises(TypeError):
        resources.badge_icon_paths(3)


def test_committed_pngs_match_what_make_icons_draws(qapp: object) -> None:
    """The committed icons came from build/make_icons.py (allowing anti-aliasing drift across Qt versions)."""
    spec = importlib.util.spec_from_file_location("make_icons", ROOT / "build" / "make_icons.py")
    assert spec and spec.loader
    make_icons = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_icons", make_icons)
    spec.loader.exec_module(make_icons)
    assert set(make_icons.BADGE_ICONS) == {BADGE_SPECS[k].icon for k in BadgeKind}
    for path, drawn in make_icons.all_images().items():
        committed = _alpha(QImage(str(path)))
        fresh = _alpha(drawn)
        assert len(committed) == len(fresh), path
        far_off = sum(1 for a, b in zip(committed, fresh) if abs(a - b) > 64)
        assert far_off <= len(fresh) // 100, f"{path}: {far_off} pixels differ; rerun build/make_icons.py"
