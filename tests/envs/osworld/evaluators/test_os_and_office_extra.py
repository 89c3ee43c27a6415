"""OSWorld's os-domain metrics and extra LibreOffice metrics/getters (agentrl.envs.osworld.evaluators).

Fixtures are in the real formats: gsettings / timedatectl output text, a ``list_directory`` tree, an AT-SPI
accessibility-tree XML, an ODT zip (content.xml), and .docx / .pptx files written with python-docx / python-pptx.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

docx = pytest.importorskip("docx", reason="python-docx is the osworld-office extra (in dev); pip install python-docx")
pptx = pytest.importorskip("pptx", reason="python-pptx is the osworld-office extra (in dev); pip install python-pptx")

from docx.shared import RGBColor as DocxRGB  # noqa: E402
from lxml import etree  # noqa: E402
from PIL import Image  # noqa: E402
from pptx.util import Inches  # noqa: E402

from agentrl.envs.osworld.evaluators import basic_os, impress, writer  # noqa: E402

# What this file covers: OSWorld's os-domain metrics and the extra Writer/Impress metrics and getters.
COVERED_METRICS = {
    name: module.METRICS[name]
    for module, names in (
        (basic_os, ("check_gnome_favorite_apps", "is_utc_0", "check_text_enlarged", "check_moved_jpgs")),
        (writer, ("check_highlighted_words", "evaluate_colored_words_in_tables")),
        (impress, ("check_left_panel",)),
    )
    for name in names
}
COVERED_GETTERS = {name: impress.GETTERS[name] for name in ("audio_in_slide", "background_image_in_slide")}
from agentrl.envs.osworld.evaluators import METRICS  # noqa: E402
from agentrl.envs.osworld.tasks.evaluate import evaluate  # noqa: E402
from agentrl.envs.osworld.tasks.format import OSWorldTask, unsupported  # noqa: E402

# -- os domain --------------------------------------------------------------------------------------


def test_check_gnome_favorite_apps_reads_gsettings_lists() -> None:
    rules = {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}
    assert basic_os.check_gnome_favorite_apps("['thunderbird.desktop', 'google-chrome.desktop']\n", rules) == 1.0
    # the setup's starting value (vim still pinned) and a partial answer
    pinned = "['thunderbird.desktop', 'vim.desktop', 'google-chrome.desktop']\n"
    assert basic_os.check_gnome_favorite_apps(pinned, rules) == 0
    assert basic_os.check_gnome_favorite_apps("['thunderbird.desktop']\n", rules) == 0.0
    assert basic_os.check_gnome_favorite_apps("['thunderbird.desktop', 'thunderbird.desktop']", rules) == 0.0
    assert basic_os.check_gnome_favorite_apps("@as []\n", rules) == 0.0
    assert basic_os.check_gnome_favorite_apps("@as []\n", {"expected": []}) == 1.0
    assert basic_os.check_gnome_favorite_apps("No such schema “org.gnome.shell”\n", rules) == 0.0
    assert basic_os.check_gnome_favorite_apps(None, rules) == 0.0


TIMEDATECTL = """\
               Local time: Thu 2024-01-25 12:56:06 {abbr}
           Universal time: Thu 2024-01-25 12:56:06 UTC
                 RTC time: Thu 2024-01-25 12:56:05
                Time zone: {zone}
System clock synchronized: yes
              NTP service: inactive
          RTC in local TZ: no
"""


def test_is_utc_0_reads_timedatectl_status() -> None:
    assert basic_os.is_utc_0(TIMEDATECTL.format(abbr="UTC", zone="Etc/UTC (UTC, +0000)")) == 1.0
    assert basic_os.is_utc_0(TIMEDATECTL.format(abbr="WET", zone="Atlantic/Faroe (WET, +0000)")) == 1.0
    assert basic_os.is_utc_0(TIMEDATECTL.format(abbr="CST", zone="Asia/Shanghai (CST, +0800)")) == 0.0
    assert basic_os.is_utc_0(TIMEDATECTL.format(abbr="EST", zone="America/New_York (EST, -0500)")) == 0.0
    # without systemd timedatectl fails: its error text has no time zone line
    assert basic_os.is_utc_0("System has not been booted with systemd as init system (PID 1). Can't operate.\n") == 0.0
    assert basic_os.is_utc_0(None) == 0.0


def test_check_text_enlarged_reads_the_scaling_factor() -> None:
    assert basic_os.check_text_enlarged("1.25\n") == 1.0
    assert basic_os.check_text_enlarged("1.0\n") == 0.0
    assert basic_os.check_text_enlarged("0.8") == 0.0
    assert basic_os.check_text_enlarged("No such key “text-scaling-factor”") == 0.0
    assert basic_os.check_text_enlarged(None) == 0.0


JPGS = [
    "emnlp2023.jpg",
    "hk_group_photo.jpg",
    "hong-kong-china.jpg",
    "monk252520thailand252520wat252520arun252520scaled25255B225255D.jpg",
]


def test_check_moved_jpgs_compares_the_directory_children() -> None:
    tree = {"name": "cpjpg", "type": "directory", "children": [{"name": n, "type": "file"} for n in reversed(JPGS)]}
    rules = {"expected": JPGS}
    assert basic_os.check_moved_jpgs(tree, rules) == 1.0
    missing = {**tree, "children": tree["children"][:-1]}
    assert basic_os.check_moved_jpgs(missing, rules) == 0.0
    extra = {**tree, "children": [*tree["children"], {"name": "notes.txt", "type": "file"}]}
    assert basic_os.check_moved_jpgs(extra, rules) == 0.0
    assert basic_os.check_moved_jpgs({"name": "cpjpg", "type": "file"}, rules) == 0.0
    assert basic_os.check_moved_jpgs(None, rules) == 0.0


# -- Impress: check_left_panel -------------------------------------------------------------------------

NEW_NS = (
    'xmlns:st="https://accessibility.ubuntu.example.org/ns/state" '
    'xmlns:cp="https://accessibility.ubuntu.example.org/ns/component"'
)
OLD_NS = 'xmlns:st="uri:deskat:state.at-spi.gnome.org" xmlns:cp="uri:deskat:component.at-spi.gnome.org"'


def impress_tree(pane_x: int, *, visible: bool = True) -> str:
    """An Impress window as the dumper writes it: a split-pane in a panel of the root-pane."""
    state = 'st:visible="true" st:showing="true" ' if visible else ""
    return (
        f'<desktop-frame {NEW_NS} name="main"><application name="soffice"><frame name="Untitled 1 - LibreOffice '
        'Impress" cp:screencoord="(0, 0)"><root-pane cp:screencoord="(0, 0)"><panel cp:screencoord="(0, 90)">'
        f'<split-pane {state}cp:screencoord="({pane_x}, 90)" cp:size="(220, 900)" name="Slides Pane"/>'
        "</panel></root-pane></frame></application></desktop-frame>"
    )


def test_check_left_panel_on_accessibility_trees() -> None:
    assert impress.check_left_panel(impress_tree(0)) == 1.0
    assert impress.check_left_panel(impress_tree(240)) == 0.0  # only the main view, right of where the pane was
    assert impress.check_left_panel(impress_tree(0, visible=False)) == 0.0
    # OSWorld's own (older) tree: parent-relative coordinates in the uri:deskat namespaces
    old = (
        f'<desktop-frame {OLD_NS}><root-pane><panel><split-pane st:visible="true" cp:parentcoord="{{xy}}"/>'
        "</panel></root-pane></desktop-frame>"
    )
    assert impress.check_left_panel(old.format(xy="(0, 0)")) == 1.0
    assert impress.check_left_panel(old.format(xy="(240, 0)")) == 0.0
    # no root-pane around the panel
    assert impress.check_left_panel(impress_tree(0).replace("root-pane", "filler")) == 0.0
    assert impress.check_left_panel("<not xml") == 0.0
    assert impress.check_left_panel(None) == 0.0


# -- Writer: check_highlighted_words (ODT) ---------------------------------------------------------------

ODT_MIME = "application/vnd.oasis.opendocument.text"
MANIFEST = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
    f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{ODT_MIME}"/>'
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
    "</manifest:manifest>"
)


def make_odt(path: Path, paragraphs: list[list[tuple[str, str | None]]], highlight: str = "#ffff00") -> str:
    """An ODT as LibreOffice saves it: automatic text styles T1 (bold) and T2 (background ``highlight``);
    each paragraph is a list of ``(text, style)`` pieces, ``style`` ``None`` for plain text."""
    body = []
    for pieces in paragraphs:
        inner = "".join(
            text if style is None else f'<text:span text:style-name="{style}">{text}</text:span>'
            for text, style in pieces
        )
        body.append(f'<text:p text:style-name="Standard">{inner}</text:p>')
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.3">'
        "<office:automatic-styles>"
        '<style:style style:name="T1" style:family="text"><style:text-properties fo:font-weight="bold"/></style:style>'
        f'<style:style style:name="T2" style:family="text"><style:text-properties fo:background-color="{highlight}"/>'
        "</style:style></office:automatic-styles>"
        f"<office:body><office:text>{''.join(body)}</office:text></office:body></office:document-content>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), ODT_MIME)  # stored, first, as the ODF spec asks
        archive.writestr("META-INF/manifest.xml", MANIFEST, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return str(path)


def test_check_highlighted_words_on_odt(tmp_path: Path) -> None:
    gold = make_odt(tmp_path / "gold.odt", [[("Hello ", None), ("caller", "T1")], [("Thank you.", None)]])
    done = make_odt(tmp_path / "done.odt", [[("Hello ", None), ("caller", "T1")], [("Thank you.", None)]])
    left = make_odt(tmp_path / "left.odt", [[("Hello ", None), ("caller", "T2")], [("Thank you.", None)]])
    edited = make_odt(tmp_path / "edited.odt", [[("Hello ", None), ("caller", "T1")], [("Thanks.", None)]])
    green = make_odt(tmp_path / "green.odt", [[("Hello ", None), ("caller", "T2")], [("Thank you.", None)]], "#00ff00")
    assert writer.check_highlighted_words(done, gold) == 1.0
    assert writer.check_highlighted_words(left, gold) == 0.0  # a yellow highlight is still there
    assert writer.check_highlighted_words(edited, gold) == 0.0  # the text changed
    assert writer.check_highlighted_words(green, gold) == 1.0  # only yellow counts, as in OSWorld
    assert writer.check_highlighted_words(None, gold) == 0.0


# -- Writer: evaluate_colored_words_in_tables (DOCX) -----------------------------------------------------

RED, BLUE, GREEN = DocxRGB(0xFF, 0, 0), DocxRGB(0, 0, 0xFF), DocxRGB(0, 0x80, 0)


def make_word_table(path: Path, colors: dict[str, DocxRGB | None] | None = None) -> str:
    """The Dolch primer's shape: a paragraph, then a table of sight words, each word one run."""
    words = [["a", "and", "away"], ["big", "blue", "can"], ["Up", "it", "look"]]
    document = docx.Document()
    document.add_paragraph("Dolch Sight Words Primer")
    table = document.add_table(rows=len(words), cols=len(words[0]))
    for i, row in enumerate(words):
        for j, word in enumerate(row):
            run = table.cell(i, j).paragraphs[0].add_run(word)
            if colors is not None:
                color = colors.get(word, RED if word[0].lower() in "aeiou" else BLUE)
                if color is not None:
                    run.font.color.rgb = color
    document.save(path)
    return str(path)


def test_evaluate_colored_words_in_tables(tmp_path: Path) -> None:
    gold = make_word_table(tmp_path / "gold.docx", {})
    assert writer.evaluate_colored_words_in_tables(make_word_table(tmp_path / "ok.docx", {}), gold) == 1.0
    near = make_word_table(tmp_path / "near.docx", {"big": DocxRGB(0, 0, 0xF8)})  # ΔE00 well under 3.5
    assert writer.evaluate_colored_words_in_tables(near, gold) == 1.0
    swapped = make_word_table(tmp_path / "swapped.docx", {"Up": BLUE})  # a capital vowel must be red too
    assert writer.evaluate_colored_words_in_tables(swapped, gold) == 0.0
    green = make_word_table(tmp_path / "green.docx", {"can": GREEN})
    assert writer.evaluate_colored_words_in_tables(green, gold) == 0.0
    uncoloured = make_word_table(tmp_path / "plain.docx")  # the untouched input
    assert writer.evaluate_colored_words_in_tables(uncoloured, gold) == 0.0
    # a loose threshold lets a far colour pass
    assert writer.evaluate_colored_words_in_tables(green, gold, threshold=200) == 1.0
    other = docx.Document()
    other.add_paragraph("Another text")
    other.save(tmp_path / "other.docx")
    assert writer.evaluate_colored_words_in_tables(str(tmp_path / "other.docx"), gold) == 0.0
    assert writer.evaluate_colored_words_in_tables(None, gold) == 0.0


def test_ciede2000_matches_sharma_reference_pairs() -> None:
    # Sharma, Wu & Dalal (2005) test data: (Lab1, Lab2, ΔE00)
    pairs = [
        ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
        ((50.0, -1.0, 2.0), (50.0, 0.0, 0.0), 2.3669),
        ((50.0, 2.49, -0.001), (50.0, -2.49, 0.0011), 7.2195),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
        ((2.0776, 0.0795, -1.135), (0.9033, -0.0636, -0.5514), 0.9082),
    ]
    for lab1, lab2, want in pairs:
        assert writer.delta_e_ciede2000(lab1, lab2) == pytest.approx(want, abs=1e-4)
    assert writer.delta_e_ciede2000(writer.rgb_to_lab((255, 0, 0)), writer.rgb_to_lab((0, 0, 255))) > 50


# -- Impress getters -------------------------------------------------------------------------------------

OSW_HOME = "/home/user"
AUDIO_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio"
MEDIA_REL = "http://schemas.microsoft.com/office/2007/relationships/media"
PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"


class FakeClient:
    """Serves ``/home/user/...`` from ``home``, as DesktopClient serves the desktop's HOME."""

    def __init__(self, home: Path, cache: Path) -> None:
        self.home, self.cache_dir = home, cache
        cache.mkdir(parents=True, exist_ok=True)

    def read_file(self, path: str) -> bytes | None:
        local = self.home / path.removeprefix(OSW_HOME + "/")
        return local.read_bytes() if local.is_file() else None

    def _vm_file(self, path: str, dest: str | None) -> str | None:
        data = self.read_file(path)
        if data is None:
            return None
        local = self.cache_dir / Path(dest or Path(path).name).name
        local.write_bytes(data)
        return str(local)


def wav_bytes(frames: int = 800) -> bytes:
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x01" * frames)
    return buffer.getvalue()


def png_bytes(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 9), color).save(buffer, "PNG")
    return buffer.getvalue()


def save_with_audio(path: Path, slides: int, audio_slide: int, *, linked: str | None = None) -> bytes:
    """A python-pptx deck whose slide ``audio_slide`` has an audio relationship as LibreOffice writes it
    (``relationships/audio`` + ``relationships/media`` to ``../media/media1.wav``, or an external link)."""
    presentation = pptx.Presentation()
    for _ in range(slides):
        presentation.slides.add_slide(presentation.slide_layouts[6])
    presentation.save(path)
    audio = wav_bytes()
    rels_name = f"ppt/slides/_rels/slide{audio_slide + 1}.xml.rels"
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    rels = etree.fromstring(members[rels_name])
    for rid, rel_type in (("rId90", AUDIO_REL), ("rId91", MEDIA_REL)):
        rel = etree.SubElement(rels, f"{{{PKG_REL_NS}}}Relationship", Id=rid, Type=rel_type)
        if linked:
            rel.set("Target", linked)
            rel.set("TargetMode", "External")
        else:
            rel.set("Target", "../media/media1.wav")
    members[rels_name] = etree.tostring(rels, xml_declaration=True, encoding="UTF-8", standalone=True)
    if not linked:
        members["ppt/media/media1.wav"] = audio
        types = etree.fromstring(members["[Content_Types].xml"])
        ns = types.nsmap[None]
        etree.SubElement(types, f"{{{ns}}}Default", Extension="wav", ContentType="audio/x-wav")
        members["[Content_Types].xml"] = etree.tostring(types, xml_declaration=True, encoding="UTF-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return audio


def test_audio_in_slide_extracts_embedded_audio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "Desktop").mkdir(parents=True)
    audio = save_with_audio(home / "Desktop" / "deck.pptx", slides=2, audio_slide=0)
    client = FakeClient(home, tmp_path / "cache")
    spec = {"type": "audio_in_slide", "ppt_file_path": f"{OSW_HOME}/Desktop/deck.pptx", "slide_index": 0}
    path = impress.audio_in_slide(client, {**spec, "dest": "Baseball.mp3"})
    assert path is not None and Path(path).read_bytes() == audio
    assert Path(path).is_relative_to(client.cache_dir)
    assert impress.audio_in_slide(client, {**spec, "slide_index": 1, "dest": "x.mp3"}) is None  # no audio there
    assert impress.audio_in_slide(client, {**spec, "slide_index": 5, "dest": "x.mp3"}) is None  # no such slide
    assert impress.audio_in_slide(client, {**spec, "ppt_file_path": f"{OSW_HOME}/Desktop/gone.pptx"}) is None


def test_audio_in_slide_fetches_linked_audio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "Desktop").mkdir(parents=True)
    (home / "Desktop" / "planet.wav").write_bytes(wav_bytes(100))
    save_with_audio(
        home / "Desktop" / "deck.pptx", slides=1, audio_slide=0, linked=f"file://{OSW_HOME}/Desktop/planet.wav"
    )
    client = FakeClient(home, tmp_path / "cache")
    spec = {"ppt_file_path": f"{OSW_HOME}/Desktop/deck.pptx", "slide_index": 0, "dest": "planet.wav"}
    path = impress.audio_in_slide(client, spec)
    assert path == str(client.cache_dir / "planet.wav")
    assert Path(path).read_bytes() == wav_bytes(100)
    (home / "Desktop" / "planet.wav").unlink()
    assert impress.audio_in_slide(client, spec) is None  # the linked file is gone


def save_with_background(path: Path, picture: bytes) -> None:
    """Slide 2 (index 1) gets a picture background (``p:bg/p:bgPr/a:blipFill``), as Impress saves one."""
    presentation = pptx.Presentation()
    for _ in range(3):
        presentation.slides.add_slide(presentation.slide_layouts[6])
    slide = presentation.slides[1]
    slide.shapes.add_picture(io.BytesIO(png_bytes((0, 0, 0))), Inches(1), Inches(1))  # a picture that is no background
    _, rid = slide.part.get_or_add_image_part(io.BytesIO(picture))
    background = etree.fromstring(
        '<p:bg xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:bgPr>'
        f'<a:blipFill rotWithShape="0"><a:blip r:embed="{rid}"/><a:stretch><a:fillRect/></a:stretch></a:blipFill>'
        "<a:effectLst/></p:bgPr></p:bg>"
    )
    slide._element.cSld.insert(0, background)
    presentation.save(path)


def test_background_image_in_slide_extracts_the_picture(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "Desktop").mkdir(parents=True)
    picture = png_bytes((10, 200, 30))
    save_with_background(home / "Desktop" / "Robotic.pptx", picture)
    client = FakeClient(home, tmp_path / "cache")
    spec = {"ppt_file_path": f"{OSW_HOME}/Desktop/Robotic.pptx", "slide_index": 1, "dest": "landscape.png"}
    path = impress.background_image_in_slide(client, spec)
    assert path is not None and Path(path).read_bytes() == picture
    with Image.open(path) as image:
        assert image.getpixel((0, 0)) == (10, 200, 30)
    assert impress.background_image_in_slide(client, {**spec, "slide_index": 0}) is None  # plain background
    assert impress.background_image_in_slide(client, {**spec, "slide_index": 9}) is None
    assert impress.background_image_in_slide(client, {**spec, "ppt_file_path": f"{OSW_HOME}/Desktop/no.pptx"}) is None


# -- wiring: the real tasks' evaluator shapes ------------------------------------------------------------

# Evaluators copied in shape from the OSWorld task files that use these names.
REAL_EVALUATORS: list[dict[str, Any]] = [
    {  # os/ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3
        "func": "check_gnome_favorite_apps",
        "result": {
            "type": "vm_command_line",
            "command": "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
            "gsettings get org.gnome.shell favorite-apps",
            "shell": True,
        },
        "expected": {"type": "rule", "rules": {"expected": ["google-chrome.desktop", "thunderbird.desktop"]}},
    },
    {  # os/b6781586-6346-41cd-935a-a6b1487918fc
        "func": "is_utc_0",
        "result": {"type": "vm_command_line", "command": "timedatectl status", "shell": True},
    },
    {  # os/3ce045a0-877b-42aa-8d2c-b4a863336ab8
        "func": "check_text_enlarged",
        "result": {
            "type": "vm_command_line",
            "command": "gsettings get org.gnome.desktop.interface text-scaling-factor",
            "shell": True,
        },
    },
    {  # os/23393935-50c7-4a86-aeea-2b78fd089c5c
        "func": "check_moved_jpgs",
        "result": {"type": "list_directory", "path": "/home/user/Desktop/cpjpg"},
        "expected": {"type": "rule", "rules": {"expected": JPGS}},
    },
    {  # libreoffice_impress/ef9d12bd-bcee-4ba0-a40e-918400f43ddf
        "func": "check_left_panel",
        "result": {"type": "accessibility_tree"},
    },
    {  # libreoffice_writer/6a33f9b9-0a56-4844-9c3f-96ec3ffb3ba2
        "func": "check_highlighted_words",
        "expected": {"type": "cloud_file", "path": "https://example.invalid/gold", "dest": "script_Gold.odt"},
        "result": {"type": "vm_file", "path": "/home/user/Desktop/script.odt", "dest": "script.odt"},
    },
    {  # libreoffice_writer/8472fece-c7dd-4241-8d65-9b3cd1a0b568
        "func": "evaluate_colored_words_in_tables",
        "expected": {"type": "cloud_file", "path": "https://example.invalid/gold", "dest": "Primer_Gold.docx"},
        "result": {"type": "vm_file", "path": "/home/user/Desktop/Primer.docx", "dest": "Primer.docx"},
    },
    {  # libreoffice_impress/c59742c0-4323-4b9d-8a02-723c251deaa0
        "func": "compare_audios",
        "result": {
            "type": "audio_in_slide",
            "ppt_file_path": "/home/user/Desktop/Mady_and_Mia_Baseball.pptx",
            "slide_index": 0,
            "dest": "Baseball.mp3",
        },
        "expected": {"type": "vm_file", "path": "/home/user/Desktop/Baseball.mp3", "dest": "Baseball_placed.mp3"},
    },
    {  # multi_apps/47f7c0ce-a5fb-4100-a5e6-65cd0e7429e5
        "func": "compare_images",
        "result": {
            "type": "background_image_in_slide",
            "ppt_file_path": "/home/user/Desktop/Robotic_Workshop_Infographics.pptx",
            "slide_index": 1,
            "dest": "landscape.png",
        },
        "expected": {"type": "cloud_file", "path": "https://example.invalid/gold", "dest": "gold_landscape.png"},
    },
]


def test_every_registered_name_is_used_by_a_real_task_shape() -> None:
    used_metrics = {ev["func"] for ev in REAL_EVALUATORS}
    used_getters = {spec["type"] for ev in REAL_EVALUATORS for spec in (ev.get("result"), ev.get("expected")) if spec}
    assert set(COVERED_METRICS) <= used_metrics
    assert set(COVERED_GETTERS) <= used_getters
    for ev in REAL_EVALUATORS:
        task = OSWorldTask.from_dict({"id": ev["func"], "instruction": "x", "evaluator": ev})
        blockers = [(u.kind, u.name) for u in unsupported(task)]
        ours = [b for b in blockers if b[1] in set(COVERED_METRICS) | set(COVERED_GETTERS)]
        assert ours == [], blockers


def test_real_task_shapes_score_through_evaluate(tmp_path: Path) -> None:
    gold = make_word_table(tmp_path / "Primer_Gold.docx", {})
    done = make_word_table(tmp_path / "Primer.docx", {})
    answers: dict[str, Any] = {
        "gsettings get org.gnome.shell favorite-apps": "['thunderbird.desktop', 'google-chrome.desktop']\n",
        "timedatectl status": TIMEDATECTL.format(abbr="UTC", zone="Etc/UTC (UTC, +0000)"),
        "text-scaling-factor": "1.5\n",
    }

    def get(spec: dict[str, Any]) -> Any:
        kind = spec["type"]
        if kind == "vm_command_line":
            return next(v for k, v in answers.items() if k in spec["command"])
        if kind == "list_directory":
            return {"name": "cpjpg", "type": "directory", "children": [{"name": n, "type": "file"} for n in JPGS]}
        if kind == "accessibility_tree":
            return impress_tree(0)
        return gold if kind == "cloud_file" else done

    for ev in REAL_EVALUATORS:
        if ev["func"] not in COVERED_METRICS or ev["func"] == "check_highlighted_words":
            continue
        task = OSWorldTask.from_dict({"id": ev["func"], "instruction": "x", "evaluator": ev})
        assert METRICS[ev["func"]] is COVERED_METRICS[ev["func"]]
        score, details = evaluate(task, last_action="DONE", get=get)
        assert score == 1.0, details
    answers["text-scaling-factor"] = "1.0\n"
    enlarged = next(ev for ev in REAL_EVALUATORS if ev["func"] == "check_text_enlarged")
    task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": enlarged})
    assert evaluate(task, last_action="DONE", get=get)[0] == 0.0
