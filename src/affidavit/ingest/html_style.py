"""What of an HTML page a browser renders: the page's own style, applied as a browser applies it.

Text a reader of the page never sees is no evidence. An attacker who hides a statement in a page
(``<style>.x{display:none}</style><p class=x>Paris is in Germany.</p>``) must not get it stored
and cited. So before the main text is extracted, `drop_unrendered` applies the rules of the
page's ``<style>`` sheets and ``style`` attributes (tinycss2 parses the CSS, cssselect matches the
selectors on the lxml tree, the cascade is CSS's: ``!important``, inline styles, layers,
specificity, order) and leaves out what they hide:

- the whole element: ``display:none``, ``content-visibility:hidden``, an opacity that comes to
  under 0.05 (multiplied down the tree), a zero-area ``clip`` (when positioned) or ``clip-path``
  (``inset(50%)``, ``circle(0)``), off-screen placement (``left``/``top`` at -999px or further
  when positioned, ``text-indent`` at -999px or further), the ``hidden`` attribute (unless a rule
  sets ``display``, as in a browser; not ``until-found``), a closed ``<dialog>``, ``<template>``;
- its own text, its children may show themselves: ``visibility:hidden|collapse`` and a computed
  font size under 2px (both inherited, so a child may set them back).

Text some reader sees is kept. A rule hides text only where it applies on every screen:
``@media`` of type ``screen``/``all`` whose width/height conditions hold from 320 to 7680 px wide
(240 to 4320 tall), ``@supports`` of declarations, ``@layer``. A rule that applies on some
screens or settings only (a width range, dark mode, ``@container``) or in some state the reader
brings about (``:hover``, ``:focus``, ``:checked``, ``:target``) may show text but never hides
it: its hiding declarations are left out of the cascade, so ``.x{display:none}`` with
``@media (min-width:768px){.x{display:block}}`` keeps the text, as a closed ``<details>`` is
kept. ``@media print``, ``@starting-style`` and ``@scope`` are not applied. Pseudo-elements,
``var()``/``calc()`` values, colours (text the colour of its background; ``color:transparent``
is also gradient text), sizes with ``overflow:hidden``, transforms and animations are not
evaluated: such text is kept.

Fails toward keeping text: a style sheet that cannot be read (linked with ``<link>``, imported
with ``@import``, or one the parser fails on) or a rule whose selector cannot be matched hides
nothing, and `StyleReport` says so; if the pass itself fails, only the hiding marked on
the elements (``hidden``, ``<template>``, an inline ``display:none``/``visibility:hidden``) is
applied, as before this pass existed.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

LOG = logging.getLogger(__name__)

# Properties that can hide text; a rule without any of them is never matched (most of a page's
# CSS), which keeps the pass cheap.
_PROPS = frozenset(
    {
        "display",
        "visibility",
        "opacity",
        "font-size",
        "font",
        "clip",
        "clip-path",
        "position",
        "left",
        "top",
        "text-indent",
        "content-visibility",
    }
)
# Never dropped themselves: page furniture a browser does not render in the page anyway
# (``<title>`` is the page's title, read as its metadata).
_FURNITURE = frozenset({"head", "title", "meta", "base", "link", "style", "script"})
MIN_OPACITY = 0.05  # multiplied down the tree; under it no reader makes the text out
MIN_FONT_PX = 2.0  # a computed font size under it is a line of dots, not text
OFF_SCREEN_PX = -999.0  # left/top/text-indent at or past it: placed outside any screen
SCREEN_WIDTHS = (320.0, 7680.0)  # "every screen" for @media width conditions
SCREEN_HEIGHTS = (240.0, 4320.0)
_ROOT_FONT_PX = 16.0
_HTML_SPACE = re.compile("[ \t\n\f\r]+")  # HTML splits class lists on these only
# Absolute lengths in px; em/rem at 16px where the element's own size is not tracked (left/top)
_PX = {
    "px": 1.0,
    "pt": 4 / 3,
    "pc": 16.0,
    "in": 96.0,
    "cm": 96 / 2.54,
    "mm": 96 / 25.4,
    "q": 96 / 101.6,
    "em": 16.0,
    "rem": 16.0,
    "ex": 8.0,
    "ch": 8.0,
    "vw": 12.8,
    "vh": 8.0,
    "vmin": 8.0,
    "vmax": 12.8,
}
_FONT_KEYWORDS = {
    "xx-small": 9.0,
    "x-small": 10.0,
    "small": 13.0,
    "medium": 16.0,
    "large": 18.0,
    "x-large": 24.0,
    "xx-large": 32.0,
    "xxx-large": 48.0,
}
# The fallback when the pass fails: the hiding marked on the elements themselves (the ``hidden``
# attribute, not "until-found"; <template>; an inline display:none or visibility:hidden).
_STYLE = "translate(@style, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ \t\r\n', 'abcdefghijklmnopqrstuvwxyz')"
HIDDEN_HTML_XPATH = (
    "//*[@hidden and translate(@hidden, 'UNTILFOD', 'untilfod') != 'until-found'] | //template"
    f" | //*[contains({_STYLE}, 'display:none') or contains({_STYLE}, 'visibility:hidden')]"
)

# Where a rule applies: on every screen, on some screens or in some state only (it may show text,
# never hide it), on none.
ALL, SOME, NONE = 2, 1, 0
# a cascade key: (origin and importance, inline, layer, specificity, order of appearance)
Key = tuple[int, int, int, tuple[int, int, int], int]
Winners = dict[Any, dict[str, tuple[Key, list[Any]]]]


@dataclass
class StyleReport:
    """What the style pass left out, and what of the page's style it could not read."""

    dropped: int = 0  # elements whose text was left out (those with text only)
    page_hidden: bool = False  # the root itself is hidden: the page shows nothing
    linked: int = 0  # <link rel=stylesheet>: not fetched
    imported: int = 0  # @import: not fetched
    unreadable: int = 0  # <style> sheets or style attributes the parser failed on
    unmatched: int = 0  # rules that could hide text, whose selectors could not be matched
    failed: str = ""  # the pass failed (the reason); only the fallback hiding was applied

    def left_out(self) -> str:
        """For ``metadata.left_out``, or ""."""
        if not self.dropped:
            return ""
        return f"text the page does not show ({self.dropped} element{_s(self.dropped)})"

    def not_read(self) -> str:
        """For ``metadata.styles_not_read``: style the page may have that was not applied (text
        it may hide is kept), or ""."""
        said = []
        if self.failed:
            said.append(f"the page's style sheets (the style pass failed: {self.failed})")
        for n, what in (
            (self.linked, "linked style sheet"),
            (self.imported, "imported style sheet"),
            (self.unreadable, "unreadable style sheet"),
            (self.unmatched, "rule with selectors it cannot match"),
        ):
            if n:
                said.append(f"{n} {what}{_s(n)}")
        return ", ".join(said)


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def parse_page(html: str) -> Any:
    """The page's lxml tree as trafilatura parses it (None where it sees no HTML)."""
    from trafilatura.utils import load_html

    return load_html(html)


def drop_unrendered(root: Any) -> StyleReport:
    """Remove from ``root`` (in place) the text a browser would not render; say what."""
    report = StyleReport()
    try:
        drop, mute = _plan(root, report)
    except Exception as exc:  # a bug, or input the parsers did not expect: keep the page
        LOG.warning("HTML style pass failed, only inline hiding applied: %s", exc, exc_info=True)
        report = StyleReport(failed=f"{type(exc).__name__}: {exc}"[:200])
        found = set(root.xpath(HIDDEN_HTML_XPATH))
        drop = [e for e in found if not any(a in found for a in e.iterancestors())]
        mute = []
    for el in mute:  # first: a dropped child's tail inside a muted parent is muted too
        if (el.text or "").strip() or any((c.tail or "").strip() for c in el):
            report.dropped += 1
        el.text = _muted(el.text)
        for child in el:
            child.tail = _muted(child.tail)
    for el in drop:
        if el.getparent() is None:
            report.page_hidden = True
            continue
        if el.text_content().strip():
            report.dropped += 1
        _remove(el)
    return report


def _muted(text: str | None) -> str | None:
    """Hidden text out, a space in its place (words either side stay apart)."""
    return text if text is None or not text.strip() else " "


def _remove(el: Any) -> None:
    """Remove ``el`` and its subtree, keeping its tail (the text after it is its parent's)."""
    parent = el.getparent()
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _plan(root: Any, report: StyleReport) -> tuple[list[Any], list[Any]]:
    """The elements to drop whole, and those whose own text to mute."""
    winners: Winners = {}
    ua: Key = (0, 0, 0, (0, 0, 0), 0)
    for el in root.xpath("//*[@hidden] | //dialog[not(@open)] | //datalist"):
        if el.tag in ("dialog", "datalist") or el.get("hidden", "").lower() != "until-found":
            _declare(winners, el, "display", ua, _ident_tokens("none"))
    order = _Counter()
    index: _Index | None = None  # built for the first rule to match
    for sheet, media in _style_sheets(root, report):
        where = ALL if media is None else _media_where(media)
        if where == NONE:
            continue
        try:
            import tinycss2

            nodes = tinycss2.parse_stylesheet(sheet, skip_comments=True, skip_whitespace=True)
            rules = list(_style_rules(nodes, None, False, where, report, top=True))
        except Exception as exc:  # the parser should never fail; a sheet it fails on hides nothing
            LOG.warning("HTML style sheet not read: %s", exc)
            report.unreadable += 1
            continue
        for rule in rules:
            if index is None:
                index = _Index(root)
            _apply_rule(root, index, winners, rule, order, report)
    for el in root.xpath("//*[@style]"):
        try:
            decls = _declarations(_parse_declarations(el.get("style", "")))
        except Exception:
            report.unreadable += 1
            continue
        for name, important, value in decls:
            key: Key = (2 if important else 1, 1, 0, (0, 0, 0), order.next())
            _declare(winners, el, name, key, value)
    return _walk(root, winners)


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def _declare(winners: Winners, el: Any, name: str, key: Key, value: list[Any]) -> None:
    props = winners.setdefault(el, {})
    held = props.get(name)
    if held is None or key >= held[0]:
        props[name] = (key, value)


def _style_sheets(root: Any, report: StyleReport) -> Iterator[tuple[str, list[Any] | None]]:
    """The text of each ``<style>`` a browser applies, with its ``media`` (tokens) or None.

    A ``<style>`` in ``<template>`` is inert, one in ``<noscript>`` is text to a browser that
    runs scripts; one whose ``type`` is not CSS is no style sheet."""
    import tinycss2

    for link in root.iter("link"):
        if "stylesheet" in (link.get("rel") or "").lower().split():
            report.linked += 1
    for style in root.iter("style"):
        if any(True for _ in style.iterancestors("template", "noscript")):
            continue
        kind = (style.get("type") or "").strip().lower()
        if kind not in ("", "text/css"):
            continue
        media = style.get("media")
        yield (
            style.text or "",
            None if media is None else tinycss2.parse_component_value_list(media),
        )


def _parse_declarations(text: str) -> list[Any]:
    import tinycss2

    return list(tinycss2.parse_declaration_list(text, skip_comments=True, skip_whitespace=True))


def _declarations(nodes: Iterable[Any]) -> list[tuple[str, bool, list[Any]]]:
    """The declarations of properties that can hide text: (name, important, value tokens)."""
    out = []
    for node in nodes:
        if node.type == "declaration" and node.lower_name in _PROPS:
            out.append((node.lower_name, bool(node.important), _significant(node.value)))
    return out


def _significant(tokens: Iterable[Any]) -> list[Any]:
    return [t for t in tokens if t.type not in ("whitespace", "comment")]


Rule = tuple[str, bool, int, list[tuple[str, bool, list[Any]]]]


def _style_rules(
    nodes: Iterable[Any],
    parent: str | None,
    layered: bool,
    where: int,
    report: StyleReport,
    *,
    top: bool,
) -> Iterator[Rule]:
    """(selector list, in a layer, where it applies, declarations) of each style rule that
    applies on some screen, nested rules (CSS nesting) resolved to whole selectors, in order of
    appearance."""
    import tinycss2

    for node in nodes:
        if node.type == "qualified-rule":
            selector = tinycss2.serialize(node.prelude).strip()
            if parent is not None:
                selector = _nest(parent, node.prelude)
            inner = tinycss2.parse_blocks_contents(
                node.content, skip_comments=True, skip_whitespace=True
            )
            decls = _declarations(inner)
            if decls:
                yield selector, layered, where, decls
            yield from _style_rules(inner, selector, layered, where, report, top=False)
        elif node.type == "at-rule":
            name = node.lower_at_keyword
            if name == "import":
                report.imported += 1
                continue
            if node.content is None:
                continue
            if name == "media":
                here = _media_where(node.prelude)
            elif name == "supports":
                here = ALL if _supports(node.prelude) else NONE
            elif name == "layer":
                here = ALL
            elif name == "container":  # the size of a container: some pages, some screens
                here = SOME
            else:  # @scope, @starting-style, @font-face, @keyframes, @page, ...: not applied
                here = NONE
            here = min(where, here)
            if here == NONE:
                continue
            if top:
                inner = tinycss2.parse_rule_list(
                    node.content, skip_comments=True, skip_whitespace=True
                )
            else:
                inner = tinycss2.parse_blocks_contents(
                    node.content, skip_comments=True, skip_whitespace=True
                )
            in_layer = layered or name == "layer"
            if parent is not None:  # declarations directly in a nested @media apply to parent
                decls = _declarations(inner)
                if decls:
                    yield parent, in_layer, here, decls
            yield from _style_rules(inner, parent, in_layer, here, report, top=top)
        # parse errors: skipped, as a browser skips them


def _nest(parent: str, prelude: Sequence[Any]) -> str:
    """A nested rule's selector list as a whole one: ``&`` is the parent (``:is(parent)``);
    a selector without ``&`` is a descendant of it."""
    import tinycss2

    outer = f":is({parent})"
    parts = []
    for part in _split_commas(prelude):
        text = tinycss2.serialize(part).strip()
        parts.append(text.replace("&", outer) if "&" in text else f"{outer} {text}")
    return ", ".join(parts)


def _split_commas(tokens: Sequence[Any]) -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    for t in tokens:
        if t.type == "literal" and t.value == ",":
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


# Pseudo-classes of a state the reader brings about (hovering, focusing, ticking a box, following
# a link to an anchor, opening a popover): a rule with one applies in some state only.
_STATES = (
    "hover",
    "focus",
    "focus-within",
    "focus-visible",
    "active",
    "target",
    "target-within",
    "checked",
    "indeterminate",
    "visited",
    "open",
    "popover-open",
    "modal",
    "fullscreen",
    "user-valid",
    "user-invalid",
    "playing",
    "paused",
)


def _state_translator() -> Any:
    """cssselect's HTML translator that matches each state pseudo-class as if the reader had
    brought it about (``:hover`` matches the element), and says whether a selector had one."""
    from cssselect import HTMLTranslator

    class StateTranslator(HTMLTranslator):
        stateful = False

    def in_state(self: Any, xpath: Any) -> Any:
        self.stateful = True
        return xpath

    for name in _STATES:
        setattr(StateTranslator, f"xpath_{name.replace('-', '_')}_pseudo", in_state)
    return StateTranslator()


@dataclass(frozen=True)
class _Compiled:
    """One selector of a rule, ready to match."""

    specificity: tuple[int, int, int]
    xpath: str  # from the root: every element it matches
    self_xpath: str | None  # one compound, no combinator: tests the element itself
    stateful: bool  # applies in some state only (:hover, :checked, ...)
    subject: tuple[str, str] | None  # ("id" | "class" | "tag", name) the matched element has
    needs: frozenset[tuple[str, str]]  # ids and classes some element must have for any match


@functools.lru_cache(maxsize=4096)
def _compile(selector: str) -> tuple[_Compiled, ...] | None:
    """Each selector of a list, translated to XPath by cssselect; None if the list cannot be
    read (a browser drops such a rule whole). Pseudo-elements (``::before``) style no element's
    text and are left out. Cached: a site's pages share their style sheets."""
    from cssselect import SelectorError, parse
    from cssselect.xpath import ExpressionError

    try:
        out = []
        for sel in parse(selector):
            if sel.pseudo_element is not None:
                continue
            translator = _state_translator()
            xpath = translator.selector_to_xpath(sel)
            subject, needs, combined = _keys(sel.parsed_tree)
            self_xpath = None
            if not combined:
                candidate = translator.selector_to_xpath(sel, prefix="self::")
                self_xpath = None if "/" in candidate else candidate
            out.append(
                _Compiled(
                    sel.specificity(), xpath, self_xpath, bool(translator.stateful), subject, needs
                )
            )
    except (SelectorError, ExpressionError, ValueError, TypeError):
        return None
    return tuple(out)


def _keys(tree: Any) -> tuple[tuple[str, str] | None, frozenset[tuple[str, str]], bool]:
    """From cssselect's parse tree: an id, class or tag the matched element must have (None if
    none), the ids and classes elements must have for any match (each compound's own, not those
    in :not() or :is()), and whether the selector has a combinator."""
    from cssselect.parser import Class, CombinedSelector, Element, Hash

    subject: tuple[str, str] | None = None
    tag: tuple[str, str] | None = None
    needs: set[tuple[str, str]] = set()
    combined = isinstance(tree, CombinedSelector)
    chain = [(tree, True)]
    while chain:
        node, is_subject = chain.pop()
        if isinstance(node, CombinedSelector):
            chain += [(node.selector, False), (node.subselector, is_subject)]
            continue
        while node is not None:
            if isinstance(node, Hash):
                needs.add(("id", node.id))
                if is_subject:
                    subject = ("id", node.id)
            elif isinstance(node, Class):
                needs.add(("class", node.class_name))
                if is_subject and (subject is None or subject[0] != "id"):
                    subject = ("class", node.class_name)
            elif isinstance(node, Element):
                if is_subject and node.element not in (None, "*"):
                    tag = ("tag", str(node.element).lower())
                break
            elif isinstance(node, CombinedSelector):  # not expected inside a compound
                chain.append((node, is_subject))
                break
            node = getattr(node, "selector", None)
    return subject or tag, frozenset(needs), combined


class _Index:
    """The page's elements by id, class and tag: a selector whose id or class no element has
    is never evaluated, and a one-compound selector is tested on its candidates only."""

    def __init__(self, root: Any) -> None:
        self.by: dict[tuple[str, str], list[Any]] = {}
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            self.by.setdefault(("tag", el.tag), []).append(el)
            ident = el.get("id")
            if ident:
                self.by.setdefault(("id", ident), []).append(el)
            for name in set(_HTML_SPACE.split(el.get("class") or "")) - {""}:
                self.by.setdefault(("class", name), []).append(el)

    def matches(self, root: Any, c: _Compiled) -> list[Any]:
        from lxml import etree

        if any(key not in self.by for key in c.needs):
            return []
        if c.subject is not None and c.self_xpath is not None:
            test = etree.XPath(c.self_xpath)
            return [el for el in self.by.get(c.subject, ()) if test(el)]
        return list(root.xpath(c.xpath))


def _apply_rule(
    root: Any,
    index: _Index,
    winners: Winners,
    rule: tuple[str, bool, int, list[tuple[str, bool, list[Any]]]],
    order: _Counter,
    report: StyleReport,
) -> None:
    """Declare a rule's declarations on the elements it matches. A rule that applies on some
    screens or in some state only (``SOME``) may show text, never hide it: its hiding
    declarations are left out, the others take part in the cascade."""
    from lxml import etree

    selector, layered, where, decls = rule
    compiled = _compile(selector)
    if compiled is None:
        report.unmatched += 1
        return
    seq = order.next()
    for c in compiled:
        here = min(where, SOME) if c.stateful else where
        shown = decls if here == ALL else [d for d in decls if not _hiding(d[0], d[2])]
        if not shown:
            continue
        try:
            matched = index.matches(root, c)
        except etree.XPathError:  # e.g. a namespace prefix (svg|p) lxml does not know
            report.unmatched += 1
            return
        for name, important, value in shown:
            # unlayered beats layered for normal declarations; the other way for !important
            layer = (1 if layered else 0) if important else (0 if layered else 1)
            key: Key = (2 if important else 1, 0, layer, c.specificity, seq)
            for el in matched:
                _declare(winners, el, name, key, value)


def _hiding(name: str, value: list[Any]) -> bool:
    """A declaration that hides text by itself (or makes it unreadably small or faint)."""
    if name == "display":
        return _ident(value) == "none"
    if name == "content-visibility":
        return _ident(value) == "hidden"
    if name == "visibility":
        return _visibility(value, False)
    if name == "opacity":
        return _opacity(value) < MIN_OPACITY
    if name in ("font-size", "font"):
        size = value if name == "font-size" else _font_size_in(value)
        return _font_px(size, _ROOT_FONT_PX) < MIN_FONT_PX
    if name == "clip":
        return _zero_clip(value)
    if name == "clip-path":
        return _zero_clip_path(value)
    if name in ("left", "top"):
        return _off_screen(value)
    if name == "text-indent":
        return _off_screen(value[:1])
    return False  # position: hides nothing by itself


def _walk(root: Any, winners: Winners) -> tuple[list[Any], list[Any]]:
    drop: list[Any] = []
    mute: list[Any] = []
    stack: list[tuple[Any, bool, float, float]] = [(root, False, _ROOT_FONT_PX, 1.0)]
    while stack:
        el, invisible, font_px, opacity = stack.pop()
        if not isinstance(el.tag, str):  # comments, processing instructions
            continue
        props = winners.get(el, {})
        furniture = el.tag in _FURNITURE
        if el.tag == "template" or (not furniture and _hides_box(props)):
            drop.append(el)
            continue
        opacity *= _opacity(_value(props, "opacity"))
        if opacity < MIN_OPACITY and not furniture:
            drop.append(el)
            continue
        invisible = _visibility(_value(props, "visibility"), invisible)
        font_px = _font_px(_font_size_tokens(props), font_px)
        if (invisible or font_px < MIN_FONT_PX) and not furniture:
            mute.append(el)
        stack.extend((child, invisible, font_px, opacity) for child in el)
    return drop, mute


def _value(props: dict[str, tuple[Key, list[Any]]], name: str) -> list[Any] | None:
    held = props.get(name)
    return None if held is None else held[1]


def _ident(tokens: list[Any] | None) -> str | None:
    if tokens and len(tokens) == 1 and tokens[0].type == "ident":
        return str(tokens[0].lower_value)
    return None


def _ident_tokens(name: str) -> list[Any]:
    import tinycss2

    return _significant(tinycss2.parse_component_value_list(name))


def _px(token: Any) -> float | None:
    """An absolute length in px (em/rem at 16px), 0 for a bare 0, else None."""
    if token.type == "number" and token.value == 0:
        return 0.0
    if token.type == "dimension":
        factor = _PX.get(token.lower_unit)
        return None if factor is None else float(token.value) * factor
    return None


def _hides_box(props: dict[str, tuple[Key, list[Any]]]) -> bool:
    """The element and all it holds are not rendered (or rendered outside any screen)."""
    if not props:
        return False
    if _ident(_value(props, "display")) == "none":
        return True
    if _ident(_value(props, "content-visibility")) == "hidden":
        return True
    position = _ident(_value(props, "position"))
    if position in ("absolute", "fixed") and _zero_clip(_value(props, "clip")):
        return True
    if _zero_clip_path(_value(props, "clip-path")):
        return True
    if position in ("absolute", "fixed", "relative", "sticky"):
        for side in ("left", "top"):
            if _off_screen(_value(props, side)):
                return True
    indent = _value(props, "text-indent")
    return _off_screen(indent[:1] if indent else None)  # "-9999px hanging": the length


def _off_screen(tokens: list[Any] | None) -> bool:
    if not tokens or len(tokens) != 1:
        return False
    px = _px(tokens[0])
    return px is not None and px <= OFF_SCREEN_PX


def _zero_clip(tokens: list[Any] | None) -> bool:
    """``clip: rect(top, right, bottom, left)`` with no area (``auto`` is the edge)."""
    if not tokens or len(tokens) != 1 or tokens[0].type != "function":
        return False
    fn = tokens[0]
    if fn.lower_name != "rect":
        return False
    args = [t for t in _significant(fn.arguments) if not (t.type == "literal" and t.value == ",")]
    if len(args) != 4:
        return False
    top, right, bottom, left = (None if _ident([t]) == "auto" else _px(t) for t in args)
    return (top is not None and bottom is not None and bottom <= top) or (
        left is not None and right is not None and right <= left
    )


def _zero_clip_path(tokens: list[Any] | None) -> bool:
    """``clip-path`` that leaves nothing: ``inset()`` of half or more each way in percent,
    ``circle(0)``, ``ellipse()`` with a zero radius."""
    for fn in tokens or []:
        if fn.type != "function":
            continue
        args = _significant(fn.arguments)
        if fn.lower_name == "inset":
            values = []
            for t in args:
                if t.type == "ident":  # "round <radius>" follows the insets
                    break
                values.append(float(t.value) if t.type == "percentage" else None)
            if not 1 <= len(values) <= 4:
                return False
            top, right, bottom, left = (values * 4)[:4] if len(values) == 1 else _box(values)
            if top is not None and bottom is not None and top + bottom >= 100:
                return True
            return left is not None and right is not None and left + right >= 100
        if fn.lower_name in ("circle", "ellipse"):
            radii = []
            for t in args:
                if t.type == "ident":  # "at <position>" or closest-side
                    break
                radii.append(t)
            return any(_px(t) == 0 or (t.type == "percentage" and t.value == 0) for t in radii)
    return False


def _box(values: list[float | None]) -> tuple[float | None, ...]:
    """CSS's 2-, 3- and 4-value box shorthands as (top, right, bottom, left)."""
    if len(values) == 2:
        return values[0], values[1], values[0], values[1]
    if len(values) == 3:
        return values[0], values[1], values[2], values[1]
    return tuple(values)


def _opacity(tokens: list[Any] | None) -> float:
    if not tokens or len(tokens) != 1:
        return 1.0
    t = tokens[0]
    if t.type == "number":
        return min(max(float(t.value), 0.0), 1.0)
    if t.type == "percentage":
        return min(max(float(t.value) / 100, 0.0), 1.0)
    return 1.0


def _visibility(tokens: list[Any] | None, inherited: bool) -> bool:
    """Whether the element's own text is invisible (visibility is inherited)."""
    name = _ident(tokens)
    if name in ("hidden", "collapse"):
        return True
    if name in ("visible", "initial", "revert", "revert-layer"):
        return False
    return inherited  # inherit, unset, not set, or a value a browser would not take


def _font_size_tokens(props: dict[str, tuple[Key, list[Any]]]) -> list[Any] | None:
    """The winning font size: ``font-size`` or the size in the ``font`` shorthand."""
    size, font = props.get("font-size"), props.get("font")
    if font is not None and (size is None or font[0] > size[0]):
        return _font_size_in(font[1])
    return None if size is None else size[1]


def _font_size_in(font: list[Any]) -> list[Any] | None:
    """The size in a ``font`` shorthand (None for a system font or a value a browser drops)."""
    for t in font:
        if t.type in ("dimension", "percentage") or (t.type == "number" and t.value == 0):
            return [t]
        if t.type == "ident" and (
            t.lower_value in _FONT_KEYWORDS or t.lower_value in ("smaller", "larger")
        ):
            return [t]
    return None


def _font_px(tokens: list[Any] | None, parent: float) -> float:
    """The computed font size in px (relative sizes follow the parent's)."""
    if not tokens or len(tokens) != 1:
        return parent
    t = tokens[0]
    if t.type == "ident":
        name = t.lower_value
        if name in _FONT_KEYWORDS:
            return _FONT_KEYWORDS[name]
        if name in ("initial", "revert", "revert-layer"):
            return _ROOT_FONT_PX
        if name == "smaller":
            return parent / 1.2
        if name == "larger":
            return parent * 1.2
        return parent
    if t.type == "number":
        return 0.0 if t.value == 0 else parent
    if t.type == "percentage":
        return parent if t.value < 0 else parent * float(t.value) / 100
    if t.type == "dimension" and t.value >= 0:
        unit = t.lower_unit
        if unit == "em":
            return parent * float(t.value)
        if unit in ("ex", "ch"):
            return parent * float(t.value) / 2
        px = _px(t)
        return parent if px is None else px
    return parent  # calc() and the like: not evaluated


def _media_where(tokens: Sequence[Any]) -> int:
    """Where a media query list applies: on every screen (``ALL``; an empty list is ``all``),
    on some screens or settings (``SOME``: a width range, dark mode, an unknown feature) or on
    none (``NONE``: print, speech, a query a browser cannot read)."""
    queries = _split_commas(tokens)
    if len(queries) == 1 and not _significant(queries[0]):
        return ALL
    return max(_query_where(_significant(q)) for q in queries)


def _query_where(toks: list[Any]) -> int:
    if not toks:
        return NONE
    negate = False
    if toks[0].type == "ident" and toks[0].lower_value in ("not", "only"):
        negate = toks[0].lower_value == "not"
        toks = toks[1:]
    conditions = toks
    screen = True
    if toks and toks[0].type == "ident":
        if toks[0].lower_value in ("and", "or", "not", "only"):
            return NONE
        screen = toks[0].lower_value in ("all", "screen")
        conditions = toks[1:]
        if conditions:
            if conditions[0].type != "ident" or conditions[0].lower_value != "and":
                return NONE
            conditions = conditions[1:]
            if not conditions:
                return NONE
    elif negate:
        return SOME  # "not (condition)": some screens, or none
    if negate:  # "not print": every screen; "not screen and (x)": narrower screens at most
        return (SOME if conditions else NONE) if screen else ALL
    if not screen:
        return NONE
    where = ALL
    for i, c in enumerate(conditions):
        if i % 2:
            if c.type != "ident" or c.lower_value not in ("and", "or"):
                return NONE
            if c.lower_value == "or":
                where = min(where, SOME)  # "(a) or (b)": not worked out further
        elif c.type != "() block":
            return NONE
        else:
            where = min(where, _feature_where(_significant(c.content)))
    return where if len(conditions) % 2 == 1 or not conditions else NONE


def _feature_where(toks: list[Any]) -> int:
    """A media feature's reach: width and height conditions against the screens from 320 to
    7680 px wide, 240 to 4320 tall; any other feature (dark mode, hover, resolution, range
    syntax) holds on some screens."""
    if len(toks) != 3 or toks[0].type != "ident" or toks[1].type != "literal":
        return SOME
    if toks[1].value != ":":
        return SOME
    px = _px(toks[2])
    name = toks[0].lower_value.replace("-device-", "-")
    if px is None or not name.endswith(("width", "height")):
        return SOME
    low, high = SCREEN_WIDTHS if name.endswith("width") else SCREEN_HEIGHTS
    if name.startswith("min-"):
        return ALL if px <= low else NONE if px > high else SOME
    if name.startswith("max-"):
        return ALL if px >= high else NONE if px < low else SOME
    return SOME if low <= px <= high else NONE


def _supports(tokens: Sequence[Any]) -> bool:
    """``@supports``: a browser of today supports a declaration it is asked about (a made-up
    one may make a rule apply that a browser drops: text dropped, never text kept wrongly)."""
    toks = _significant(tokens)
    if not toks:
        return False
    if toks[0].type == "ident" and toks[0].lower_value == "not":
        return len(toks) == 2 and not _supports_one(toks[1])
    joins = toks[1::2]
    if len(toks) % 2 == 0 or any(
        t.type != "ident" or t.lower_value not in ("and", "or") for t in joins
    ):
        return False
    ops = {t.lower_value for t in joins}
    if len(ops) > 1:  # "a and b or c" is invalid CSS
        return False
    results = [_supports_one(t) for t in toks[0::2]]
    return any(results) if ops == {"or"} else all(results)


def _supports_one(block: Any) -> bool:
    if block.type == "function":
        return bool(block.lower_name == "selector")
    if block.type != "() block":
        return False
    inner = _significant(block.content)
    if len(inner) >= 2 and inner[0].type == "ident" and inner[1].type == "literal":
        return bool(inner[1].value == ":")
    return _supports(inner)


__all__ = ["HIDDEN_HTML_XPATH", "StyleReport", "drop_unrendered", "parse_page"]
