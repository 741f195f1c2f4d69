"""The web page in headless Chromium (Debian's, driven by Playwright) against a real server.

Asks a question on the sample corpus, watches the answer stream, opens a claim's evidence, reads
the trace, downloads the certificate and verifies it on the verify view, runs an audit, and
checks the phone-width layout. Each view is saved as a PNG under tests/output/server/screens/.
Skips (with the reason) when Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.browser]

SCREENS = Path(__file__).resolve().parents[3] / "tests" / "output" / "server" / "screens"

# counts how often the answer box changed while it was provisional (tokens streaming in)
STREAM_PROBE = """
window.__streamed = 0;
document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("answer");
  new MutationObserver(() => {
    if (box.classList.contains("provisional") && box.textContent) window.__streamed += 1;
  }).observe(box, { childList: true, characterData: true, subtree: true });
});
"""


def test_page_ask_evidence_trace_certificate_audit(
    browser: Any, served: Server, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    SCREENS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1100, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.add_init_script(STREAM_PROBE)
    page.goto(served.url + "/")

    # the key field, then a question, by keyboard
    page.click("summary")
    page.fill("#api-key", served.keys["write"])
    page.fill("#question", "Who discovered polonium?")
    page.select_option("#mode", "mixed")
    page.focus("#ask-button")
    page.keyboard.press("Enter")
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=60_000)
    # the pieces were shown one by one, before the verified rendering replaced them
    assert int(page.get_attribute("#answer", "data-pieces") or 0) > 5
    assert page.evaluate("window.__streamed") > 3, "the answer did not stream in"

    verified = page.locator(".sentence.verified").first
    expect(verified).to_be_visible()
    assert (
        page.locator(
            "#answer .sentence.verified, #answer .sentence.contradicted, "
            "#answer .sentence.unverified"
        ).count()
        >= 2
    )
    verified.focus()
    page.keyboard.press("Enter")
    evidence = page.locator("#evidence")
    expect(evidence).to_be_visible()
    expect(evidence.locator("mark").first).to_contain_text("polonium")
    expect(evidence).to_contain_text("p_entail")
    expect(evidence.locator("table.checks, .empty").first).to_be_visible()
    page.screenshot(path=str(SCREENS / "ask.png"), full_page=True)

    page.click("#tab-trace")
    trace = page.locator("#trace")
    expect(trace).to_contain_text("Retrieved chunks and grades")
    expect(trace).to_contain_text("thresholds")
    expect(trace).to_contain_text("Timings")
    assert trace.locator("table").first.locator("tbody tr").count() >= 3
    page.screenshot(path=str(SCREENS / "trace.png"), full_page=True)

    # the certificate: download it, then verify the downloaded file on the verify view
    page.keyboard.press("ArrowRight")  # keyboard tab switching
    expect(page.locator("#view-cert")).to_be_visible()
    with page.expect_download() as dl:
        page.click("#cert-download")
    saved = tmp_path / "answer.cert.json"
    dl.value.save_as(saved)
    cert = json.loads(saved.read_text())
    assert cert["signature"] and cert["key_id"]
    page.set_input_files("#cert-file", str(saved))
    expect(page.locator("#verify-result")).to_contain_text("VALID", timeout=20_000)
    expect(page.locator("#verify-result .valid")).to_be_visible()
    page.screenshot(path=str(SCREENS / "certificate.png"), full_page=True)
    cert["answer"] = cert["answer"] + " Also, the Moon."
    forged = tmp_path / "forged.cert.json"
    forged.write_text(json.dumps(cert))
    page.set_input_files("#cert-file", str(forged))
    expect(page.locator("#verify-result .invalid")).to_have_text("INVALID", timeout=20_000)
    expect(page.locator("#verify-result")).to_contain_text("signature")
    page.screenshot(path=str(SCREENS / "certificate-invalid.png"), full_page=True)

    # the audit view; untrusted text stays text
    page.click("#tab-audit")
    page.fill("#audit-query", "When did the Forth Bridge open?")
    page.fill(
        "#audit-chunks",
        "url: https://example.org/forth\nThe Forth Bridge opened on 4 March 1890.\n\n"
        '<img src=x onerror="window.__pwned=1"> lighthouses',
    )
    page.fill("#audit-response", "The Forth Bridge opened on 4 March 1890. It opened in 1990.")
    page.click("#audit-form button[type=submit]")
    report = page.locator("#audit-report")
    expect(report).to_contain_text("TRUST", timeout=20_000)
    expect(report).to_contain_text("compliance")
    expect(report).to_contain_text("https://example.org/forth")
    assert page.locator("#audit-report img").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    page.screenshot(path=str(SCREENS / "audit.png"), full_page=True)

    # a phone-width screen: nothing wider than the viewport
    page.set_viewport_size({"width": 390, "height": 844})
    page.click("#tab-ask")
    page.screenshot(path=str(SCREENS / "ask-phone.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 392

    # strict mode: what is not verified is withheld, and shown as such
    page.set_viewport_size({"width": 1100, "height": 900})
    page.select_option("#mode", "strict")
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("(strict mode)", timeout=60_000)
    expect(page.locator("#answer .sentence.withheld").first).to_be_visible()
    expect(page.locator("#answer-note")).to_contain_text("Withheld")
    # issue 25.2: the page shows exactly the guarded answer: nothing of the withheld sentence
    # (the fixture's invented "born on the Moon"), and no claim of it to click
    assert "Moon" not in page.inner_text("#answer")
    assert page.locator("#answer button.sentence.withheld").count() == 0
    page.screenshot(path=str(SCREENS / "ask-strict.png"), full_page=True)
    assert not errors, errors
    context.close()


def test_page_points_users_ran_into(browser: Any, served: Server) -> None:
    """Issue 28, the page: the legend before any question, a Stop button, an Audit that cannot
    reach the server, readable freshness, the compared passage of an unverified claim, what a
    certificate holds, titles on dropped lines, a phone-width trace, the /docs page."""
    from playwright.sync_api import expect

    SCREENS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(served.url + "/")
    # the colour legend waits for an answer (a display rule used to override `hidden`)
    expect(page.locator("#legend")).to_be_hidden()
    expect(page.locator("#stop-button")).to_be_hidden()

    page.click("summary")
    page.fill("#api-key", served.keys["write"])
    # Stop: the running question is cancelled and nothing unverified stays on the page
    page.fill("#question", "Who discovered polonium?")
    page.select_option("#mode", "mixed")
    page.click("#ask-button")
    expect(page.locator("#stop-button")).to_be_visible()
    page.click("#stop-button")
    expect(page.locator("#ask-status")).to_contain_text("stopped", timeout=20_000)
    expect(page.locator("#stop-button")).to_be_hidden()
    expect(page.locator("#ask-button")).to_be_enabled()

    # a full answer: its unverified sentence shows the passage it was compared with
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=60_000)
    expect(page.locator("#legend")).to_be_visible()
    unverified = page.locator("#answer .sentence.unverified").first
    unverified.click()
    card = page.locator("#evidence .claim-card").first
    expect(card).to_contain_text("Compared with")
    expect(card.locator(".chunk").first).to_contain_text("Curie")
    assert "No evidence span was found" not in card.inner_text()

    # the certificate view shows what the signature covers
    page.click("#tab-cert")
    content = page.locator("#cert-content")
    expect(content).to_contain_text("Who discovered polonium?")
    expect(content).to_contain_text("born on the Moon")
    assert content.locator(".cert-claims li").count() >= 2

    # dropped lines name the passage, not a chunk id; the trace fits a phone
    page.click("#tab-trace")
    for line in page.locator("#trace p.note").all_inner_texts():
        if line.startswith("dropped: "):
            assert line.startswith("dropped: ["), line
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SCREENS / "trace-phone.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 392
    page.set_viewport_size({"width": 1100, "height": 900})

    # Audit: readable freshness; a server that cannot be reached is said, not "auditing..."
    page.click("#tab-audit")
    page.fill("#audit-chunks", "The Forth Bridge opened on 4 March 1890.")
    page.fill("#audit-response", "The Forth Bridge opened on 4 March 1890.")
    page.click("#audit-form button[type=submit]")
    expect(page.locator("#audit-report")).to_contain_text("TRUST", timeout=20_000)
    assert "supported_fresh" not in page.inner_text("#audit-report")
    page.route("**/v1/audit*", lambda route: route.abort())
    page.click("#audit-form button[type=submit]")
    expect(page.locator("#audit-status")).to_contain_text("could not be reached", timeout=10_000)
    page.unroute("**/v1/audit*")
    # the one failed load is the audit request this test aborted
    assert [e for e in errors if "net::ERR_FAILED" not in e] == [], errors

    # the interactive API page, from this server alone
    api = context.new_page()
    api_errors: list[str] = []
    api.on("pageerror", lambda exc: api_errors.append(str(exc)))
    api.goto(served.url + "/docs")
    expect(api.locator(".swagger-ui").first).to_be_visible(timeout=20_000)
    expect(api.locator("body")).to_contain_text("/v1/ask", timeout=20_000)
    api.screenshot(path=str(SCREENS / "api-docs.png"))
    assert not api_errors, api_errors
    context.close()


# what the Trace view held when the first answer token arrived (the result comes much later)
TRACE_PROBE = """
window.__traceAtFirstToken = null;
document.addEventListener("DOMContentLoaded", () => {
  const box = document.getElementById("answer");
  new MutationObserver(() => {
    if (window.__traceAtFirstToken !== null) return;
    if (!box.classList.contains("provisional") || !box.textContent) return;
    const trace = document.getElementById("trace");
    const first = trace.querySelector("table");
    window.__traceAtFirstToken = {
      text: trace.textContent,
      rows: first ? first.querySelectorAll("tbody tr").length : 0,
      status: document.getElementById("ask-status").textContent,
    };
  }).observe(box, { childList: true, characterData: true, subtree: true });
});
"""


def _page(browser: Any, served: Server, **context: Any) -> tuple[Any, Any, list[str]]:
    """A new page and its context, its console errors collected."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, **context)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return ctx, page, errors


def _fits_a_phone(page: Any, name: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SCREENS / name), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 392
    page.set_viewport_size({"width": 1100, "height": 900})


def test_page_audit_marks_each_claim_in_the_answer(browser: Any, served: Server) -> None:
    """Issue 28: the Audit view shows the audited answer with each claim's span marked by its
    outcome, the reason on hover and, on selection, a card; the table stays below."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, served)
    page.goto(served.url + "/")
    page.click("summary")
    page.fill("#api-key", served.keys["read"])
    page.click("#tab-audit")
    page.fill("#audit-query", "When did the Forth Bridge open?")
    page.fill(
        "#audit-chunks",
        "url: https://example.org/forth\nThe Forth Bridge opened on 4 March 1890. "
        "It is a railway bridge over the Firth of Forth.",
    )
    answer = (
        "The Forth Bridge opened on 4 March 1890. It opened in 1990. "
        "Penguins live in the Sahara desert."
    )
    page.fill("#audit-response", answer)
    page.select_option("#audit-mode", "guardrail")
    page.click("#audit-form button[type=submit]")
    report = page.locator("#audit-report")
    expect(report).to_contain_text("TRUST", timeout=20_000)

    text = report.locator(".audited-text")
    expect(text).to_have_text(answer)
    spans = text.locator("button.audit-claim")
    assert spans.count() == 3
    expect(spans.nth(0)).to_have_class("sentence audit-claim supported")
    expect(spans.nth(0)).to_have_text("The Forth Bridge opened on 4 March 1890.")
    # a failed date check: contradicted, and guardrail mode withholds it
    expect(spans.nth(1)).to_have_class("sentence audit-claim contradicted blocked")
    expect(spans.nth(2)).to_have_class("sentence audit-claim unsupported blocked")
    assert "1990 disagrees with 4 March 1890" in (spans.nth(1).get_attribute("title") or "")
    assert (spans.nth(2).get_attribute("title") or "").startswith("not supported, withheld: ")
    assert "supported" in (spans.nth(0).get_attribute("title") or "")

    # the reason as a card, by keyboard
    spans.nth(1).focus()
    page.keyboard.press("Enter")
    card = page.locator("#audit-evidence .claim-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("opened in 1990.")
    expect(card).to_contain_text("from the answer: It opened in 1990.")
    expect(card).to_contain_text("contradicted by a source (withheld)")
    expect(card.locator("table.checks tr.fail")).to_contain_text("date")
    spans.nth(0).click()
    expect(card).to_contain_text("4 March 1890")
    expect(card.locator("mark")).to_contain_text("The Forth Bridge opened on 4 March 1890.")
    # the table of claims stays
    assert report.locator(".audit-claims tbody tr").count() == 3
    page.screenshot(path=str(SCREENS / "audit-spans.png"), full_page=True)
    _fits_a_phone(page, "audit-spans-phone.png")
    assert not errors, errors
    context.close()


def test_page_search_view(browser: Any, served: Server) -> None:
    """Issue 28: a Search view over GET /v1/search."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, served)
    page.goto(served.url + "/")
    page.click("summary")
    page.fill("#api-key", served.keys["read"])
    page.click("#tab-search")
    page.fill("#search-query", "polonium")
    page.fill("#search-k", "3")
    page.focus("#search-query")
    page.keyboard.press("Enter")
    status = page.locator("#search-status")
    expect(status).to_contain_text("3 results", timeout=20_000)
    hits = page.locator("#search-results li")
    assert hits.count() == 3
    expect(hits.first.locator(".chunk")).to_contain_text("polonium")
    page.screenshot(path=str(SCREENS / "search.png"), full_page=True)
    _fits_a_phone(page, "search-phone.png")
    # a key the server does not know: said, not a blank list
    page.fill("#api-key", "afd_nobody_nothing")
    page.click("#search-form button[type=submit]")
    expect(status).to_contain_text("401", timeout=20_000)
    assert hits.count() == 0
    assert [e for e in errors if "401" not in e] == [], errors
    context.close()


def test_page_documents_list_upload_delete(browser: Any, served: Server, tmp_path: Path) -> None:
    """Issue 28: a Documents view lists the store by name, uploads a file (its job polled to the
    end, each file's outcome shown) and deletes a document after a confirmation, write key only.
    The served store is shared: only the document uploaded here is deleted."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, served)
    page.goto(served.url + "/")
    page.click("summary")
    page.fill("#api-key", served.keys["read"])
    page.click("#tab-docs")
    listing = page.locator("#docs-list")
    for name in ("marie_curie.docx", "eiffel_tower.pdf", "us_constitution.txt"):
        expect(listing).to_contain_text(name, timeout=20_000)
    for cell in listing.locator("td.doc-name").all_inner_texts():
        assert not cell.startswith("/"), cell
    assert str(served.store) not in listing.inner_text()
    expect(page.locator("#docs-status")).to_contain_text("documents")

    # show one
    row = listing.locator("tr", has_text="marie_curie.docx")
    row.get_by_role("button", name="Show marie_curie.docx").click()
    detail = page.locator("#doc-detail")
    expect(detail).to_contain_text("sha256")
    expect(detail.locator("h3")).to_have_text("marie_curie.docx")

    # upload: a read key is refused, a write key ingests it
    name = "page-upload-tapir.txt"
    upload = tmp_path / name
    upload.write_text("The tapir Zelvorn-9 crossed the Okavango delta on 5 June 2031.\n")
    page.set_input_files("#upload-files", str(upload))
    page.click("#upload-button")
    expect(page.locator("#upload-status")).to_contain_text("403", timeout=20_000)
    page.fill("#api-key", served.keys["write"])
    page.set_input_files("#upload-files", str(upload))
    page.click("#upload-button")
    expect(page.locator("#upload-status")).to_contain_text(": done", timeout=60_000)
    job = page.locator("#upload-job")
    expect(job).to_contain_text(name)
    expect(job).to_contain_text("added")
    mine = listing.locator("tr", has_text=name)
    expect(mine).to_have_count(1, timeout=20_000)
    page.screenshot(path=str(SCREENS / "documents.png"), full_page=True)
    _fits_a_phone(page, "documents-phone.png")

    # delete: asked first; cancel keeps it
    mine.get_by_role("button", name="Delete " + name).click()
    expect(detail).to_contain_text("Delete " + name + "?")
    detail.get_by_role("button", name="Cancel").click()
    expect(detail).to_be_hidden()
    expect(mine).to_have_count(1)
    mine.get_by_role("button", name="Delete " + name).click()
    expect(page.locator("#doc-delete-confirm")).to_be_focused()
    page.screenshot(path=str(SCREENS / "documents-delete.png"), full_page=True)
    page.keyboard.press("Enter")
    expect(detail).to_contain_text("deleted " + name, timeout=20_000)
    expect(mine).to_have_count(0, timeout=20_000)
    expect(listing).to_contain_text("marie_curie.docx")
    # the one failed load is the upload the read key was refused
    assert [e for e in errors if "403" not in e] == [], errors
    context.close()


def test_page_trace_grows_while_the_answer_streams(browser: Any, served: Server) -> None:
    """Issue 28: the Trace view shows retrieval, grades, the decision with its thresholds and
    refinement as their events arrive, before the answer's result; the result completes it."""
    from playwright.sync_api import expect

    context, page, errors = _page(browser, served)
    page.add_init_script(TRACE_PROBE)
    page.goto(served.url + "/")
    page.click("summary")
    page.fill("#api-key", served.keys["read"])
    page.fill("#question", "Who discovered polonium?")
    page.select_option("#mode", "mixed")
    page.click("#ask-button")
    page.click("#tab-trace")
    trace = page.locator("#trace")
    expect(trace.locator("table").first).to_be_visible(timeout=60_000)
    if trace.get_attribute("data-live") == "running":
        page.screenshot(path=str(SCREENS / "trace-live.png"), full_page=True)
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=60_000)

    early = page.evaluate("window.__traceAtFirstToken")
    assert early is not None, "no token was seen"
    assert "done:" not in early["status"]
    assert "Retrieved chunks and grades" in early["text"]
    assert early["rows"] >= 3
    assert "thresholds: correct >= " in early["text"]
    assert "What refinement kept" in early["text"]
    assert "strip sentences <" in early["text"]  # the refinement event carries it
    assert "Timings" not in early["text"]
    # the result completes it: timings, and every claim with its decision
    expect(trace).to_have_attribute("data-live", "done")
    expect(trace).to_contain_text("Timings")
    expect(trace).to_contain_text("strip sentences <")
    claims = trace.locator(".trace-claims")
    expect(claims).to_contain_text("verified")
    assert claims.locator("tbody tr").count() >= 2
    assert not errors, errors
    context.close()
