"""The accessibility tree: OSWorld's linearized table, trimming and set-of-marks on a hand-written tree,
and the real AT-SPI tree of mousepad on a DesktopSession (its menu bar, the server route, clean close).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentrl.core.errors import SandboxUnavailable
from agentrl.envs.osworld import a11y
from agentrl.envs.osworld.a11y import LINEAR_HEADER, NAMESPACES, filter_nodes, linearize, marks, parse, trim
from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.som import draw_marks, marks_table, set_of_marks

ST = NAMESPACES["st"]
CP = NAMESPACES["cp"]
ATTR = NAMESPACES["attr"]
ON = 'st:visible="true" st:showing="true" st:enabled="true"'

FIXTURE = f"""<desktop-frame xmlns:st="{ST}" xmlns:cp="{CP}" xmlns:attr="{ATTR}">
  <application name="mousepad" st:visible="true" st:showing="true">
    <frame name="Untitled 1 - Mousepad" {ON} cp:screencoord="(0, 0)" cp:size="(640, 480)">
      <menu-bar name="" {ON} cp:screencoord="(0, 25)" cp:size="(640, 25)">
        <menu name="File" {ON} cp:screencoord="(5, 29)" cp:size="(39, 25)" attr:class="menu">
          <menu-item name="Open" st:visible="true" st:enabled="true"
              cp:screencoord="(-2147483648, -2147483648)" cp:size="(0, 0)"/>
        </menu>
        <menu name="Edit" {ON} cp:screencoord="(44, 29)" cp:size="(41, 25)"/>
      </menu-bar>
      <filler name="spacer" {ON} cp:screencoord="(0, 60)" cp:size="(640, 10)"/>
      <push-button name="Say" {ON} cp:screencoord="(100, 100)" cp:size="(80, 30)"
          attr:description="says hi">He said "hi"</push-button>
      <label name="Disabled" st:visible="true" st:showing="true" cp:screencoord="(0, 200)" cp:size="(50, 20)"/>
      <label name="Hidden" st:visible="true" st:enabled="true" cp:screencoord="(0, 220)" cp:size="(50, 20)"/>
      <image name="" {ON} image="true" cp:screencoord="(300, 300)" cp:size="(16, 16)"/>
      <entry name="" {ON} st:editable="true" cp:screencoord="(10, 400)" cp:size="(300, 24)">typed text</entry>
    </frame>
  </application>
</desktop-frame>"""
FIXTURE = re.sub(r">\s+<", "><", FIXTURE)  # no whitespace text between elements, as the dump writes it


# ---------------------------------------------------------------------------------------------- pure
def test_filter_keeps_what_osworld_keeps() -> None:
    kept = filter_nodes(FIXTURE)
    assert [(n.tag, n.get("name")) for n in kept] == [
        ("menu", "File"),
        ("menu", "Edit"),
        ("push-button", "Say"),
        ("entry", ""),
    ]
    with_images = [n.tag for n in filter_nodes(FIXTURE, check_image=True)]
    assert "image" in with_images and "menu-item" not in with_images and "filler" not in with_images


def test_linearize_table() -> None:
    lines = linearize(FIXTURE).split("\n")
    assert lines[0] == LINEAR_HEADER
    assert lines[1] == 'menu\tFile\t""\tmenu\t\t(5, 29)\t(39, 25)'
    assert lines[3] == 'push-button\tSay\t"He said ""hi"""\t\tsays hi\t(100, 100)\t(80, 30)'
    assert lines[4] == "entry\t\ttyped text\t\t\t(10, 400)\t(300, 24)"
    assert len(lines) == 5
    assert linearize("<desktop-frame/>") == LINEAR_HEADER


def test_trim_keeps_whole_lines() -> None:
    table = linearize(FIXTURE)
    assert trim(table, 10_000) == table
    cut = trim(table, 40)
    lines = cut.split("\n")
    assert lines[0] == LINEAR_HEADER
    assert lines[-1].startswith("[... ") and lines[-1].endswith("more lines trimmed]")
    assert all(line in table.split("\n") for line in lines[:-1])
    assert len(cut) < len(table)
    with pytest.raises(ValueError):
        trim(table, 0)


def test_marks_and_table() -> None:
    found = marks(FIXTURE)
    assert [m["index"] for m in found] == [1, 2, 3, 4, 5]
    assert found[0] == {"index": 1, "tag": "menu", "name": "File", "text": "", "x": 5, "y": 29, "w": 39, "h": 25}
    assert found[3]["tag"] == "image"
    table = marks_table(found).split("\n")
    assert table[0] == "index\ttag\tname\ttext"
    assert table[1] == '1\tmenu\tFile\t""'
    assert table[3] == '3\tpush-button\tSay\t"He said ""hi"""'
    # With the screenshot, single-colour boxes drop out (OSWorld's draw_bounding_boxes does the same).
    img = np.full((480, 640, 3), 200, dtype=np.uint8)
    img[29:40, 5:20] = 0  # only the File menu's box has detail
    only_file = marks(FIXTURE, img)
    assert [(m["index"], m["name"]) for m in only_file] == [(1, "File")]


def test_draw_marks_draws_boxes_and_labels() -> None:
    img = np.full((480, 640, 3), 255, dtype=np.uint8)
    found = marks(FIXTURE)
    out = draw_marks(img, found)
    assert out.shape == img.shape and out.dtype == np.uint8
    assert (img == 255).all(), "the input is not modified"
    assert out[29, 20].tolist() == [255, 0, 0]  # the File box's top edge
    assert out[130, 100].tolist() != [255, 255, 255]  # label at the button's bottom-left
    assert (out[200:220, 400:600] == 255).all()  # away from every mark
    got, drawn, table = set_of_marks(img, FIXTURE)
    assert got == [] and (drawn == 255).all() and table == "index\ttag\tname\ttext"  # all one colour


def test_dump_script_is_the_program_and_writes_the_namespaces_the_parser_reads() -> None:
    from agentrl.envs.osworld.runtime.programs import a11y_dump

    compile(a11y.DUMP_SCRIPT, "<dump>", "exec")
    assert a11y.DUMP_SCRIPT == programs.source("a11y_dump") and a11y.NAMESPACES is a11y_dump.NAMESPACES
    assert "__NAMESPACES__" not in a11y.DUMP_SCRIPT  # no text substitution: the program holds the namespaces


def test_dump_program_writes_osworlds_xml_from_a_fake_atspi() -> None:
    """The dumper's walk over a fake ``Atspi`` tree: the XML that filter_nodes and linearize read."""
    from types import SimpleNamespace

    from agentrl.envs.osworld.runtime.programs import a11y_dump

    class Node:
        def __init__(self, role: str, name: str, children: tuple[Node, ...] = (), text: str = "") -> None:
            self.role, self.name, self.children, self.text = role, name, children, text

        def get_name(self) -> str:
            return self.name

        def get_state_set(self) -> Any:
            return SimpleNamespace(get_states=lambda: ["visible", "showing", "enabled"])

        def get_attributes(self) -> dict[str, str]:
            return {"toolkit": "gtk", "bad key": "x"}

        def get_component_iface(self) -> Any:
            return SimpleNamespace(get_extents=lambda kind: SimpleNamespace(x=5, y=29, width=40, height=20))

        def get_text_iface(self) -> Any:
            if not self.text:
                return None
            return SimpleNamespace(get_character_count=lambda: len(self.text), get_text=lambda a, b: self.text[a:b])

        def get_image_iface(self) -> None:
            return None

        def get_selection_iface(self) -> None:
            return None

        def get_value_iface(self) -> None:
            return None

        def get_action_iface(self) -> Any:
            return SimpleNamespace(get_n_actions=lambda: 1, get_action_name=lambda i: "click",
                                   get_action_description=lambda i: "", get_key_binding=lambda i: "<Alt>f")

        def get_role_name(self) -> str:
            return self.role

        def get_child_count(self) -> int:
            return len(self.children)

        def get_child_at_index(self, i: int) -> Node:
            return self.children[i]

    app = Node("application", "gedit", (Node("frame", "Untitled", (Node("push button", "File"),
                                                                    Node("text", "", text="hello\x00 world"))),))
    atspi = SimpleNamespace(StateType=lambda st: SimpleNamespace(value_nick=st), CoordType=SimpleNamespace(SCREEN=0),
                            set_timeout=lambda *a: None, get_desktop=lambda i: Node("desktop", "", (app,)))
    root = a11y_dump.Dump(atspi, NAMESPACES, max_nodes=100, max_depth=50, max_width=1024, max_text=8).desktop()
    tree = parse(ET.tostring(root, encoding="unicode"))
    button = tree.find(".//push-button")
    assert tree.tag == "desktop-frame" and button is not None and button.get("name") == "File"
    def attribute(prefix: str, name: str) -> str | None:
        return button.get("{" + NAMESPACES[prefix] + "}" + name)

    assert attribute("st", "visible") == "true" and attribute("cp", "size") == "(40, 20)"
    assert attribute("attr", "toolkit") == "gtk" and attribute("attr", "bad key") is None
    assert attribute("act", "click_kb") == "<Alt>f"
    assert tree.find(".//text").text == "hello w"  # the first max_text characters, without the NUL
    assert tree.get("truncated") is None
    cut = a11y_dump.Dump(atspi, NAMESPACES, max_nodes=2, max_depth=50, max_width=1024, max_text=8).desktop()
    assert cut.get("truncated") == "true" and len(cut.findall(".//*")) == 2


# ---------------------------------------------------------------------------------------------- desktop
def desktop(test):  # type: ignore[no-untyped-def]
    """The marks of test_desktop.py's tests: a 300 s timeout (the desktop tier comes from tests/tiers.py)."""
    return pytest.mark.timeout(300)(test)


needs_mousepad = pytest.mark.skipif(not shutil.which("mousepad"), reason="needs mousepad (apt-get install -y mousepad)")


@pytest.fixture(scope="module")
def session() -> Iterator[object]:
    from agentrl.envs.osworld.runtime.desktop import DesktopSession

    try:
        s = DesktopSession(width=1024, height=768)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    if s.bus_address is None:
        s.close()
        pytest.skip(f"no AT-SPI here: {s.accessibility_note}")
    yield s
    s.close()


def _wait_tree(s: object, predicate, timeout_s: float = 20.0) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    xml = ""
    while time.monotonic() < deadline:
        xml = s.accessibility_tree()  # type: ignore[attr-defined]
        if predicate(ET.fromstring(xml)):
            return xml
        time.sleep(0.3)
    raise AssertionError(f"the tree never matched; last dump: {xml[:2000]}")


def _mousepad_menu(root: ET.Element) -> ET.Element | None:
    for app in root:
        if app.tag == "application" and app.get("name", "").lower() == "mousepad":
            for bar in app.iter("menu-bar"):
                for menu in bar.iter("menu"):
                    if menu.get("name") == "File":
                        return menu
    return None


@desktop
@needs_mousepad
def test_mousepad_tree_has_its_menu_bar(session) -> None:  # type: ignore[no-untyped-def]
    session.reset()
    try:
        empty = session.accessibility_tree()
    except SandboxUnavailable as exc:
        pytest.skip(f"AT-SPI is unavailable: {exc}")
    assert ET.fromstring(empty).tag == "desktop-frame"
    session.launch(["mousepad"])
    xml = _wait_tree(session, lambda root: _mousepad_menu(root) is not None)
    root = ET.fromstring(xml)
    menu = _mousepad_menu(root)
    assert menu is not None
    assert menu.get(f"{{{ST}}}showing") == "true" and menu.get(f"{{{ST}}}visible") == "true"
    x, y, w, h = a11y.box(menu)  # type: ignore[misc]
    assert 0 <= x < session.width and 0 <= y < session.height // 2 and 0 < w < 300 and 0 < h < 100
    # Closed menus' items report huge negative extents; the filter drops them.
    table = linearize(xml)
    assert "\tFile\t" in table and "-2147483648" not in table
    found = marks(xml, session.screenshot())
    assert any(m["name"] == "File" and m["tag"] == "menu" for m in found), marks_table(found)
    drawn = draw_marks(session.screenshot(), found)
    assert drawn.shape == (session.height, session.width, 3)
    start = time.monotonic()
    session.accessibility_tree()
    assert time.monotonic() - start < 10


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


@desktop
@needs_mousepad
def test_server_route_and_client(session) -> None:  # type: ignore[no-untyped-def]
    from agentrl.envs.osworld.client import DesktopClient
    from agentrl.envs.osworld.server import serve_desktop

    session.reset()
    session.launch(["mousepad"])
    _wait_tree(session, lambda root: _mousepad_menu(root) is not None)
    with serve_desktop(session) as handle:
        client = DesktopClient(handle.base_url)
        xml = client.accessibility_tree()
        assert xml is not None and _mousepad_menu(ET.fromstring(xml)) is not None
        got = client.get({"type": "accessibility_tree"})
        assert isinstance(got, str) and got.startswith("<desktop-frame")


@desktop
def test_server_route_without_at_spi_is_503() -> None:
    import urllib.error
    import urllib.request

    from agentrl.envs.osworld.client import DesktopClient
    from agentrl.envs.osworld.runtime.desktop import DesktopSession
    from agentrl.envs.osworld.server import serve_desktop

    try:
        s = DesktopSession(width=320, height=240, window_manager=False, accessibility=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here: {exc}")
    with s, serve_desktop(s) as handle:
        with pytest.raises(SandboxUnavailable, match=r"apt-get install|accessibility=False"):
            s.accessibility_tree()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(handle.base_url + "/accessibility", timeout=30)
        assert info.value.code == 503
        assert "unavailable" in info.value.read().decode()
        assert DesktopClient(handle.base_url).accessibility_tree() is None


@desktop
def test_close_leaves_no_bus_or_at_spi_process() -> None:
    from agentrl.envs.osworld.runtime.desktop import DesktopSession

    try:
        s = DesktopSession(width=640, height=480)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here: {exc}")
    if s.bus_address is None:
        s.close()
        pytest.skip(f"no AT-SPI here: {s.accessibility_note}")
    marker = str(s.home.parent)
    if shutil.which("mousepad"):
        s.launch(["mousepad"])
        _wait_tree(s, lambda root: _mousepad_menu(root) is not None)
    else:
        s.accessibility_tree()
    # Every process carrying this session's temp dir (the bus, the launcher, its a11y bus and registryd).
    ours = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _environ_mentions(p, marker)]
    assert len(ours) >= 3
    pids = set(s.pids) | set(ours)
    s.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]
    assert not Path(marker).exists()


def _environ_mentions(proc: Path, marker: str) -> bool:
    try:
        return marker.encode() in (proc / "environ").read_bytes() or marker.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


@desktop
def test_without_dbus_the_desktop_works_and_the_tree_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentrl.envs.osworld.runtime import desktop as desktop_module

    real_which = shutil.which
    monkeypatch.setattr(
        desktop_module.shutil, "which", lambda name, *a, **k: None if name == "dbus-daemon" else real_which(name)
    )
    try:
        s = desktop_module.DesktopSession(width=320, height=240, window_manager=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here: {exc}")
    with s:
        assert s.bus_address is None and "dbus-daemon" in s.accessibility_note
        assert "GTK_MODULES" not in s.env() or s.env()["GTK_MODULES"] == os.environ.get("GTK_MODULES")
        assert s.screenshot().shape == (240, 320, 3)
        with pytest.raises(SandboxUnavailable, match=re.escape("at-spi2-core dbus-x11 python3-gi gir1.2-atspi-2.0")):
            s.accessibility_tree()
