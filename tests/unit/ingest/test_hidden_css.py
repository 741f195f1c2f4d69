"""Text a browser does not render is no evidence, whoever hides it: the rules of the page's own
style sheets (``<style>``) are applied as a browser applies them (selectors, cascade,
``!important``, ``@media``), so a statement hidden by a class is left out at ingest like one
hidden by an inline ``style``. It was kept: ``<style>.x{display:none}</style><p class=x>...``
stored a sentence no reader of the page sees, and an answer could be "proved" by it.

Where the page's style cannot be read (a linked or imported sheet, a sheet the parser fails
on), the text is kept, since nothing says it is hidden, and the metadata says what was not read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.core.errors import IngestError
from affidavit.ingest import html_style
from affidavit.ingest.loaders import load_html

SHOWN = (
    "<p>The Forth Bridge is a railway bridge across the Firth of Forth in Scotland, east of "
    "Edinburgh.</p><p>It opened on 4 March 1890 and was the longest cantilever bridge then.</p>"
)
SECRET = "SECRET the bridge was opened in 1925 by the King of Norway."


def page(css: str, body: str, *, head: str = "") -> bytes:
    style = f"<style>{css}</style>" if css else ""
    return (
        f"<html><head><title>The Forth Bridge</title>{style}{head}</head>"
        f"<body><article>{SHOWN}{body}{SHOWN}</article></body></html>"
    ).encode()


def text_of(tmp_path: Path, raw: bytes) -> str:
    [doc] = load_html(tmp_path / "page.html", raw)
    assert "4 March 1890" in doc.text
    return doc.text


P_X = f"<p class='x'>{SECRET}</p>"

HIDDEN_BY_RULES = {
    "class": (".x{display:none}", P_X),
    "id": ("#y{display:none}", f"<p id='y'>{SECRET}</p>"),
    "descendant": ("div.note p{display:none}", f"<div class='note'><p>{SECRET}</p></div>"),
    "child": ("article > .x{display:none}", P_X),
    "attribute": ("[data-h]{display:none}", f"<p data-h>{SECRET}</p>"),
    "attribute-value": ("[data-h='1']{display:none}", f"<p data-h='1'>{SECRET}</p>"),
    "selector-list": (".q, .x{display:none}", P_X),
    "is": (":is(.q, .x){display:none}", P_X),
    "visibility-hidden": (".x{visibility:hidden}", P_X),
    "visibility-collapse": (".x{visibility:collapse}", P_X),
    "font-size-0": (".x{font-size:0}", P_X),
    "font-size-0px": (".x{font-size:0px}", P_X),
    "font-size-tiny": (".x{font-size:0.05em}", P_X),
    "font-shorthand": (".x{font:0/0 a}", P_X),
    "opacity-0": (".x{opacity:0}", P_X),
    "opacity-percent": (".x{opacity:0%}", P_X),
    "opacity-product": (
        ".o{opacity:.2}",
        f"<div class='o'><div class='o'><p class='o'>{SECRET}</p></div></div>",
    ),
    "clip-rect": (".x{position:absolute;clip:rect(0 0 0 0)}", P_X),
    "clip-rect-1px": (".x{position:absolute;clip:rect(1px, 1px, 1px, 1px)}", P_X),
    "clip-path-inset": (".x{clip-path:inset(50%)}", P_X),
    "clip-path-circle": (".x{clip-path:circle(0)}", P_X),
    "off-screen-left": (".x{position:absolute;left:-9999px}", P_X),
    "off-screen-top": (".x{position:fixed;top:-100em}", P_X),
    "text-indent": (".x{text-indent:-9999px;overflow:hidden}", P_X),
    "content-visibility": (".x{content-visibility:hidden}", P_X),
    "important-beats-specificity": (
        ".x{display:none!important}#y{display:block}",
        f"<p class='x' id='y'>{SECRET}</p>",
    ),
    "important-beats-inline": (
        ".x{display:none !important}",
        f"<p class='x' style='display:block'>{SECRET}</p>",
    ),
    "several-rules": (".a{color:red}.b{margin:0 auto}.x{display:none}.c{padding:1px}", P_X),
    "later-rule-wins": (".x{display:block}.x{display:none}", P_X),
    "media-screen": ("@media screen{.x{display:none}}", P_X),
    "media-all-wide": ("@media only all and (min-width:0){.x{display:none}}", P_X),
    "media-not-print": ("@media not print{.x{display:none}}", P_X),
    "supports": ("@supports (display:grid){.x{display:none}}", P_X),
    "layer": ("@layer base{.x{display:none}}", P_X),
    "nesting": (".note{ .x{display:none} }", f"<div class='note'><p class='x'>{SECRET}</p></div>"),
    "nesting-ampersand": ("p{ &.x{display:none} }", P_X),
    "comments": ("/* .x{display:block} */ .x{/* c */display:/* c */none}", P_X),
    "uppercase-property": (".x{DISPLAY:NONE}", P_X),
    "uppercase-element": ("P.x{Display:None}", P_X),
    "escaped-value": (".x{display:n\\6f ne}", P_X),
    "style-in-body": ("", f"<style>.x{{display:none}}</style>{P_X}"),
    "dialog-closed": ("", f"<dialog><p>{SECRET}</p></dialog>"),
    "shown-in-print-only": (".x{display:none}@media print{.x{display:block}}", P_X),
    "shown-on-no-screen": (".x{display:none}@media (max-width:100px){.x{display:block}}", P_X),
    "hidden-in-any-state": (".x:hover,.x{display:none}", P_X),
    "bad-rule-before": ("p{color:red;;; display:} ..x{display:none} .x{display:none}", P_X),
}


@pytest.mark.parametrize("css,body", HIDDEN_BY_RULES.values(), ids=HIDDEN_BY_RULES.keys())
def test_text_hidden_by_a_style_rule_is_no_evidence(tmp_path: Path, css: str, body: str) -> None:
    text = text_of(tmp_path, page(css, body))
    assert "SECRET" not in text and "1925" not in text


def test_a_hidden_span_leaves_the_text_around_it(tmp_path: Path) -> None:
    body = (
        "<p>The bridge carries two railway tracks<span> SECRET it opened in 1925</span> over "
        "the firth, on three great double cantilevers.</p>"
    )
    text = text_of(tmp_path, page("span{display:none}", body))
    assert "SECRET" not in text
    assert "two railway tracks over the firth, on three great double cantilevers." in text


HIDDEN_INLINE = {
    "display-upper": f"<p style='DISPLAY: NONE'>{SECRET}</p>",
    "display-comment": f"<p style='display:/**/none'>{SECRET}</p>",
    "visibility": f"<p style='visibility : hidden !important'>{SECRET}</p>",
    "hidden-empty": f"<p hidden=''>{SECRET}</p>",
    "hidden-upper": f"<p HIDDEN>{SECRET}</p>",
    "opacity": f"<p style='opacity:0'>{SECRET}</p>",
    "font-size": f"<p style='font-size:0'>{SECRET}</p>",
    "off-screen": f"<p style='position:absolute;left:-9999px'>{SECRET}</p>",
    "in-hidden-parent": f"<div hidden><section><p>{SECRET}</p></section></div>",
}


@pytest.mark.parametrize("body", HIDDEN_INLINE.values(), ids=HIDDEN_INLINE.keys())
def test_text_hidden_inline_is_no_evidence(tmp_path: Path, body: str) -> None:
    text = text_of(tmp_path, page("", body))
    assert "SECRET" not in text and "1925" not in text


SHOWN_DESPITE_RULES = {
    "more-specific-shows": (".x{display:none}.x.y{display:block}", "class='x y'"),
    "later-shows": (".x{display:none}.x{display:block}", "class='x'"),
    "inline-shows": (".x{display:none}", "class='x' style='display:block'"),
    "author-shows-hidden": ("[hidden]{display:block}", "hidden"),
    "media-print": ("@media print{.x{display:none}}", "class='x'"),
    "media-some-screens": ("@media (max-width:600px){.x{display:none}}", "class='x'"),
    "media-dark": ("@media (prefers-color-scheme:dark){.x{display:none}}", "class='x'"),
    "supports-not": ("@supports not (display:block){.x{display:none}}", "class='x'"),
    "container": ("@container (width < 10px){.x{display:none}}", "class='x'"),
    "starting-style": ("@starting-style{.x{opacity:0}}", "class='x'"),
    "hover": (".x:hover{display:none}", "class='x'"),
    "focus-within": (".x:focus-within{display:none}", "class='x'"),
    "pseudo-element": (".x::before{display:none}", "class='x'"),
    "other-class": (".y{display:none}", "class='xy x-y'"),
    "class-is-case-sensitive": (".X{display:none}", "class='x'"),
    "unparseable-selector": ("..x{display:none} .x]{display:none}", "class='x'"),
    "namespace-selector": ("svg|p{display:none} *|x{display:none}", "class='x'"),
    "opacity-half": (".x{opacity:.5}", "class='x'"),
    "small-but-readable": (".x{font-size:.8em}", "class='x'"),
    "clip-not-positioned": (".x{clip:rect(0 0 0 0)}", "class='x'"),
    "near-left": (".x{position:absolute;left:-20px}", "class='x'"),
    "colour-not-evaluated": (".x{color:transparent}", "class='x'"),
    "display-inherit": (".x{display:inherit}", "class='x'"),
    "empty-style": ("", "class='x'"),
    "aria-hidden": ("", "aria-hidden='true' class='x'"),
    # shown on some screens, in some state (hovered, focused, ticked): a reader sees it
    "wide-screens-show": (
        ".x{display:none}@media screen and (min-width:768px){.x{display:block}}",
        "class='x'",
    ),
    "bootstrap-d-md-block": (
        ".d-none{display:none!important}"
        "@media (min-width:768px){.d-md-block{display:block!important}}",
        "class='d-none d-md-block'",
    ),
    "dark-mode-shows": (
        ".x{visibility:hidden}@media (prefers-color-scheme:dark){.x{visibility:visible}}",
        "class='x'",
    ),
    "hover-shows": (".x{display:none}article:hover .x{display:block}", "class='x'"),
    "focus-shows": (".x{opacity:0}.x:focus-within{opacity:1}", "class='x'"),
    "checked-shows": (".x{display:none}:checked ~ .x{display:block}", "class='x'"),
    "container-shows": (
        ".x{display:none}@container (min-width:1px){.x{display:block}}",
        "class='x'",
    ),
}


@pytest.mark.parametrize("css,attrs", SHOWN_DESPITE_RULES.values(), ids=SHOWN_DESPITE_RULES.keys())
def test_text_a_browser_shows_is_kept(tmp_path: Path, css: str, attrs: str) -> None:
    """Only what a browser would not render is left out: overridden rules, rules for print or
    for some screens only, dynamic states (``:hover``) and tricks not evaluated keep the text.
    The page is read with the style pass alone (trafilatura's boilerplate rules, which drop
    ``aria-hidden`` content among much else, are another matter)."""
    raw = page(css, f"<p {attrs}>Shown: the bridge is 2.5 km long.</p>")
    root = html_style.parse_page(raw.decode())
    report = html_style.drop_unrendered(root)
    assert "2.5 km long" in root.text_content(), report
    assert report.dropped == 0


def test_a_visible_child_of_a_hidden_parent_is_kept(tmp_path: Path) -> None:
    """visibility and font-size are inherited, and a child may set them back."""
    css = ".v{visibility:hidden}.v b{visibility:visible}.f{font-size:0}.f i{font-size:16px}"
    body = (
        f"<p class='v'>{SECRET} <b>Shown one: it is 2.5 km long.</b></p>"
        f"<p class='f'>{SECRET} <i>Shown two: a UNESCO site since 2015.</i></p>"
    )
    text = text_of(tmp_path, page(css, body))
    assert "SECRET" not in text
    assert "Shown one: it is 2.5 km long." in text and "Shown two" in text


def test_a_relative_size_under_font_size_0_stays_hidden(tmp_path: Path) -> None:
    css = ".f{font-size:0}.f i{font-size:2em}"
    text = text_of(tmp_path, page(css, f"<p class='f'><i>{SECRET}</i></p>"))
    assert "SECRET" not in text


KEPT_INERT = {
    "style-media-print": "<style media='print'>.x{display:none}</style>",
    "style-not-css": "<style type='text/plain'>.x{display:none}</style>",
    "style-in-template": "<template><style>.x{display:none}</style></template>",
    "style-in-noscript": "<noscript><style>.x{display:none}</style></noscript>",
}


@pytest.mark.parametrize("head", KEPT_INERT.values(), ids=KEPT_INERT.keys())
def test_style_sheets_a_screen_does_not_apply_hide_nothing(tmp_path: Path, head: str) -> None:
    text = text_of(tmp_path, page("", P_X.replace(SECRET, "Shown: 2.5 km long."), head=head))
    assert "Shown: 2.5 km long." in text


def test_what_the_style_hides_is_said_in_the_metadata(tmp_path: Path) -> None:
    body = f"<p class='x'>{SECRET}</p><div class='x'><p>{SECRET}</p></div><p class='x'> </p>"
    [doc] = load_html(tmp_path / "page.html", page(".x{display:none}", body))
    assert doc.metadata["left_out"] == "text the page does not show (2 elements)"
    assert "styles_not_read" not in doc.metadata


def test_nothing_hidden_nothing_said(tmp_path: Path) -> None:
    [doc] = load_html(tmp_path / "page.html", page(".x{color:red}", ""))
    assert "left_out" not in doc.metadata and "styles_not_read" not in doc.metadata


def test_style_sheets_not_read_are_said_and_their_text_kept(tmp_path: Path) -> None:
    head = "<link rel='stylesheet' href='site.css'><link rel='icon' href='x.ico'>"
    css = "@import url(more.css); .x{color:red}"
    [doc] = load_html(
        tmp_path / "page.html", page(css, P_X.replace(SECRET, "Shown: 2.5 km long."), head=head)
    )
    assert "Shown: 2.5 km long." in doc.text
    said = doc.metadata["styles_not_read"]
    assert "1 linked style sheet" in said and "1 imported style sheet" in said


def test_a_style_sheet_the_parser_fails_on_is_ignored_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails closed the right way: a sheet that cannot be read hides nothing (the text is
    kept, nothing says it is hidden); inline hiding still applies; the ingest goes on."""
    import tinycss2

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("parser blew up")

    monkeypatch.setattr(tinycss2, "parse_stylesheet", broken)
    body = P_X.replace(SECRET, "Shown: 2.5 km long.") + f"<p style='display:none'>{SECRET}</p>"
    [doc] = load_html(tmp_path / "page.html", page(".x{display:none}", body))
    assert "Shown: 2.5 km long." in doc.text and "SECRET" not in doc.text
    assert "1 unreadable style sheet" in doc.metadata["styles_not_read"]


def test_a_failure_of_the_style_pass_keeps_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong in the style pass, the page is still read, with the hiding the
    loader did before it (hidden attribute, <template>, inline display/visibility)."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(html_style, "_plan", broken)
    body = f"<p class='x'>Shown: 2.5 km long.</p><p hidden>{SECRET}</p>"
    [doc] = load_html(tmp_path / "page.html", page(".x{display:none}", body))
    assert "Shown: 2.5 km long." in doc.text and "SECRET" not in doc.text
    assert "styles_not_read" in doc.metadata


def test_a_page_its_style_hides_whole_is_a_clear_error(tmp_path: Path) -> None:
    for css in ("body{display:none !important}", "html{opacity:0}"):
        with pytest.raises(IngestError, match="style hides"):
            load_html(tmp_path / "page.html", page(css, ""))


def test_garbage_css_never_crashes(tmp_path: Path) -> None:
    css = (
        "}}}{{{ @media {{ .x{display:none} ;; @supports ((( {} :is( {display:none} "
        "p{font:} p{clip:rect(} p{clip-path:inset()} p{left:calc(1px - )} p{opacity:x}"
        "@layer; @media screen and (min-width: 1/0) {p{display:none}} \\ \x00 \ufffd"
    )
    text_of(tmp_path, page(css, ""))


def test_deep_nesting_and_many_rules(tmp_path: Path) -> None:
    css = "".join(f".c{i} p{{margin:{i}px}}" for i in range(300)) + ".deep{display:none}"
    deep = "<div>" * 200 + f"<p class='deep'>{SECRET}</p>" + "</div>" * 200
    text = text_of(tmp_path, page(css, deep))
    assert "SECRET" not in text


def test_head_metadata_and_noscript_are_no_text(tmp_path: Path) -> None:
    """What the loader already leaves out: <head> metadata (descriptions) and <noscript>
    (a browser that runs scripts does not render it)."""
    head = f"<meta name='description' content='{SECRET}'><meta property='og:title' content='x'>"
    body = f"<noscript><p>{SECRET}</p></noscript>"
    text = text_of(tmp_path, page("", body, head=head))
    assert "SECRET" not in text
