r"""Untrusted text on the web page, in headless Chromium: what the page shows is what was checked.

A document, a web result or the model can carry bidi controls (U+202A-U+202E, U+2066-U+2069,
the marks) and other invisible controls. Put in the page as they are, they reorder what a reader
sees (Trojan Source: "opened in \u202e0981" reads "opened in 1890", a title
"\u202egro.aidepikiw" reads "wikipedia.org") while the checks saw the text as stored; the
terminal shows them escaped (`affidavit.core.text.safe_terminal`), and so must the page: in text
and in attributes (tooltips, accessible names), on every view. Markup stays text. A dropped
certificate file is anyone's text too: checked as it is, and shown as its say-so when invalid.

The app is the real one (`create_app`, its page, script and headers) served by uvicorn on
127.0.0.1 in this process, over scripted services whose every answer is hostile: no model loads.
Skips (with the reason) when Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from affidavit.core.answer import (
    AnswerSentence,
    AskResult,
    ClaimOutcome,
    Source,
    Trace,
    WebResultTrace,
)
from affidavit.core.certificate import CertificateVerification
from affidavit.core.retrieval import DocumentInfo, DocumentList
from affidavit.core.service import AskResponse, SearchResponse
from affidavit.core.settings import Settings, StoreSettings
from affidavit.core.types import Chunk, Claim, EvidenceSpan, Hit, Verdict
from affidavit.server.app import create_app
from affidavit.server.services import Services
from affidavit.testing.server import serving_in_thread

pytestmark = [pytest.mark.integration, pytest.mark.browser]

RLO, PDF, RLI, PDI, RLM = "\u202e", "\u202c", "\u2067", "\u2069", "\u200f"
HTML = '<img src=x onerror="window.__pwned=1">'
# stored as "0981", shown by a browser as "1890" when the override is left in the page
SAID = f"The bridge opened in {RLO}0981{PDF}."
PASSAGE = f"Records: the bridge opened in {RLO}0981{PDF}. {HTML}"
TITLE = f"{RLO}gro.aidepikiw{PDF} {HTML}"
URL = f"https://example.org/{RLI}fdp.exe{PDI}"
DRAFT = f"{SAID} It is red{RLM}.\x1b[32m"

CHUNK = Chunk(id="ch1", doc_id="d1", text=PASSAGE, title=TITLE, url=URL)
AT = PASSAGE.index("the bridge")


def _outcome(cid: str, text: str, start: int, end: int, decision: str) -> ClaimOutcome:
    supported = decision == "verified"
    span = EvidenceSpan(
        chunk_id="ch1",
        start=AT,
        end=len(PASSAGE) - len(HTML) - 1,
        text=PASSAGE[AT : len(PASSAGE) - len(HTML) - 1],
    )
    verdict = Verdict(
        claim_id=cid,
        label="supported" if supported else "unsupported",
        p_entail=0.9 if supported else 0.1,
        p_neutral=0.05,
        p_contradict=0.05,
        evidence=(span,) if supported else (),
        reason=f"the passage says {RLO}0981{PDF} {HTML}",
    )
    claim = Claim(id=cid, text=text, start=start, end=end, citations=(1,))
    return ClaimOutcome(claim=claim, verdict=verdict, decision=decision)  # type: ignore[arg-type]


def _result(mode: str) -> AskResult:
    second = DRAFT.index("It is")
    claims = (
        _outcome("c1", SAID, 0, len(SAID), "verified"),
        _outcome("c2", f"It is red{RLM}.", second, len(DRAFT), "unverified"),
    )
    trace = Trace(
        retrieval_hits=(Hit(chunk=CHUNK, score=1.0, rank=1, mode="bm25"),),
        context=(CHUNK,),
        web_queries=(f"bridge {RLO}0981",),
        web_results=(WebResultTrace(url=URL, title=TITLE, used=False, note=f"refused {RLO}x"),),
    )
    mixed = mode != "strict"
    sentences = (
        AnswerSentence(
            index=0, start=0, end=len(SAID), decision="verified", claim_ids=("c1",), shown=True,
            text=SAID,
        ),
        AnswerSentence(
            index=1, start=second, end=len(DRAFT), decision="unverified", claim_ids=("c2",),
            shown=mixed, lead=" " if mixed else "", text=DRAFT[second:] if mixed else "",
        ),
    )  # fmt: skip
    return AskResult(
        question=f"When did the bridge open{RLO}?",
        mode=mode,  # type: ignore[arg-type]
        answer=SAID if mode == "strict" else DRAFT,
        note=f"Withheld 1 of 2 sentences {RLO}." if mode == "strict" else "",
        draft=DRAFT,
        claims=claims,
        sentences=sentences,
        sources=(Source(number=1, chunk_id="ch1", url=URL, title=TITLE, doc_id="d1"),),
        trace=trace,
    )


class _Hostile(Services):
    """Every answer full of bidi controls, control characters and markup; nothing loads."""

    def ask(self, request: Any, *, on_token: Any = None, on_event: Any = None) -> AskResponse:
        mode = request.mode or "strict"
        if on_token is not None:
            for piece in (DRAFT[:12], DRAFT[12:]):
                on_token(piece)
        return AskResponse(result=_result(mode))

    def search(self, query: str, k: int, mode: str) -> SearchResponse:
        return SearchResponse(
            query=query, mode="bm25", hits=(Hit(chunk=CHUNK, score=1.0, rank=1, mode="bm25"),)
        )

    def documents(self) -> DocumentList:
        return DocumentList(documents=(self.document("d1"),), chunks_total=1)

    def document(self, doc_id: str) -> DocumentInfo:
        name = f"invoice{RLO}fdp.exe{PDF}"
        return DocumentInfo(
            id="d1",
            source=name,
            names=(name, f"b{RLI}c"),
            title=TITLE,
            mime="text/plain",
            chunks=1,
            content_hash="0" * 64,
        )

    def verify_certificate(self, tree: dict[str, Any]) -> CertificateVerification:
        if tree.get("answer") == "As signed.":  # the signature holds for this answer only
            return CertificateVerification(valid=True, key_id="k1", signature_ok=True, trusted=True)
        return CertificateVerification(
            valid=False, reasons=(f"the signature {RLO}fails",), key_id=f"k{RLO}1"
        )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app over `_Hostile` services, served on 127.0.0.1; its base URL."""
    tmp = tmp_path_factory.mktemp("hostile")
    settings = Settings(home=tmp / "home", store=StoreSettings(path=tmp / "store"))
    services = _Hostile(settings)
    services.ready = True
    with serving_in_thread(create_app(settings, services=services)) as url:
        yield url


# every text node and attribute of the page that holds a character the terminal would escape
# (C0 controls but tab and line breaks, DEL, C1 controls, the bidi controls)
UNESCAPED = r"""() => {
  const bad = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
  const found = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) if (bad.test(walk.currentNode.data)) found.push(walk.currentNode.data);
  for (const n of document.body.querySelectorAll("*"))
    for (const a of n.attributes) if (bad.test(a.value)) found.push(n.tagName + " " + a.name);
  return found;
}"""


def _page(browser: Any, base: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(base + "/")
    return context, page, errors


def _shown_as_text(page: Any) -> None:
    assert page.evaluate(UNESCAPED) == []
    assert page.locator("main img").count() == 0
    assert page.evaluate("window.__pwned === undefined")


@pytest.mark.parametrize("mode", ["mixed", "strict"])
def test_ask_answer_evidence_and_trace_show_controls_escaped(
    browser: Any, hostile: str, mode: str
) -> None:
    from playwright.sync_api import expect

    context, page, errors = _page(browser, hostile)
    page.fill("#question", "When did the bridge open?")
    page.select_option("#mode", mode)
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=20_000)
    answer = page.locator("#answer")
    # the override shows as what it is, where it stands
    expect(answer).to_contain_text("opened in \\u202e0981\\u202c.")
    if mode == "strict":
        assert "It is red" not in answer.inner_text()  # withheld stays withheld
    page.locator("#answer .sentence.verified").first.click()
    evidence = page.locator("#evidence")
    expect(evidence.locator("mark")).to_contain_text("opened in \\u202e0981\\u202c.")
    expect(page.locator("#sources")).to_contain_text("\\u202egro.aidepikiw\\u202c")
    _shown_as_text(page)
    page.click("#tab-trace")
    expect(page.locator("#trace")).to_contain_text("Timings")
    expect(page.locator("#trace")).to_contain_text("https://example.org/\\u2067fdp.exe\\u2069")
    _shown_as_text(page)
    assert not errors, errors
    context.close()


def test_search_and_documents_views_show_controls_escaped(browser: Any, hostile: str) -> None:
    from playwright.sync_api import expect

    context, page, errors = _page(browser, hostile)
    page.click("#tab-search")
    page.fill("#search-query", "bridge")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-status")).to_contain_text("1 results", timeout=20_000)
    expect(page.locator("#search-results .chunk")).to_contain_text("opened in \\u202e0981")
    _shown_as_text(page)

    page.click("#tab-docs")
    listing = page.locator("#docs-list")
    expect(listing).to_contain_text("invoice\\u202efdp.exe\\u202c", timeout=20_000)
    listing.get_by_role("button", name="Show invoice\\u202efdp.exe\\u202c").click()
    expect(page.locator("#doc-detail")).to_contain_text("sha256")
    _shown_as_text(page)
    listing.get_by_role("button", name="Delete invoice\\u202efdp.exe\\u202c").click()
    expect(page.locator("#doc-detail")).to_contain_text("Delete invoice\\u202efdp.exe\\u202c?")
    _shown_as_text(page)
    assert not errors, errors
    context.close()


def test_an_invalid_certificate_file_shows_nothing_as_verified(
    browser: Any, hostile: str, tmp_path: Path
) -> None:
    """A certificate file is anyone's text: when it is INVALID, what it says is shown as its
    say-so (no green "verified" chip, no "signed by" a key it only names), escaped."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, hostile)
    cert = tmp_path / "hostile.cert.json"
    cert.write_text(
        '{"question": "q\\u202e", "answer": "opened in \\u202e0981\\u202c.", "claims": '
        '[{"decision": "verified", "claim": {"text": "opened in \\u202e0981"}, "reason": "r"}]}'
    )
    page.click("#tab-cert")
    page.set_input_files("#cert-file", str(cert))
    result = page.locator("#verify-result")
    expect(result.locator(".invalid")).to_have_text("INVALID", timeout=20_000)
    expect(result).to_contain_text("opened in \\u202e0981\\u202c.")
    assert result.locator(".sentence.verified").count() == 0
    expect(result).to_contain_text("not verified")
    assert "signed by" not in result.inner_text()
    expect(result).to_contain_text("the signature \\u202efails")
    _shown_as_text(page)
    assert not errors, errors
    context.close()


def test_a_certificate_file_is_checked_as_it_is_not_as_the_page_read_it(
    browser: Any, hostile: str, tmp_path: Path
) -> None:
    """A file with a duplicate key (a forged answer first, the signed one after it) is refused
    by the server, as by `certificate verify`: the page sends the file's own bytes, not its
    own reading of them (which kept the last answer, where another reader shows the first)."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, hostile)
    cert = tmp_path / "twice.cert.json"
    cert.write_text('{"answer": "FORGED.", "answer": "As signed.", "claims": []}')
    page.click("#tab-cert")
    page.set_input_files("#cert-file", str(cert))
    result = page.locator("#verify-result")
    expect(result.locator(".invalid")).to_contain_text("duplicate key 'answer'", timeout=20_000)
    assert "VALID" not in result.inner_text().replace("INVALID", "")
    assert not errors, errors
    context.close()
