"""Issue 27 on the web page: the Eiffel question over the sample corpus, with the defaults.

With document-level fusion the chunk that says "March 1889" and "Gustave Eiffel" was never
retrieved, and the page withheld the true sentence "The Eiffel Tower was completed in March 1889."
Here a real ``affidavit serve`` (default retrieval, the shipped evaluator and verifier) gets a
scripted answer with that sentence and a false one; headless Chromium asks as a user would.
Skips (with the reason) when Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from affidavit.testing.server import ServedApi as Server

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "tests" / "output" / "server"
SCREENS = OUTPUT / "screens"

QUESTION = "When was the Eiffel Tower built, how tall is it, and who designed it?"
TRUE = "The Eiffel Tower was completed in March 1889"
FALSE = "The Eiffel Tower was completed in 1930"
ANSWER = f"{TRUE} [1]. {FALSE} [1]."


@pytest.fixture(scope="module")
def eiffel(serve_answer: Callable[[str, str], Server]) -> Server:
    """A server over the sample corpus whose scripted LLM answers the Eiffel question."""
    return serve_answer(ANSWER, "eiffel")


def _ask(page: Any, mode: str) -> None:
    from playwright.sync_api import expect

    page.fill("#question", QUESTION)
    page.select_option("#mode", mode)
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=90_000)


def test_page_shows_the_true_eiffel_sentence_verified(browser: Any, eiffel: Server) -> None:
    from playwright.sync_api import expect

    SCREENS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(eiffel.url + "/")
    page.click("summary")
    page.fill("#api-key", eiffel.keys["read"])

    # strict (the default): the true sentence is shown, marked verified; the false one is not
    _ask(page, "strict")
    answer = page.locator("#answer")
    verified = answer.locator(".sentence.verified")
    expect(verified).to_have_count(1)
    expect(verified).to_have_class("sentence verified")
    expect(verified).to_contain_text(TRUE)
    expect(answer).not_to_contain_text("1930")
    # its evidence is the passage that says it
    verified.click()
    evidence = page.locator("#evidence")
    expect(evidence).to_be_visible()
    expect(evidence).to_contain_text("March 1889")
    page.screenshot(path=str(SCREENS / "eiffel-strict.png"), full_page=True)

    # mixed: both sentences shown, each with its decision
    _ask(page, "mixed")
    verified = answer.locator(".sentence.verified")
    expect(verified).to_have_count(1)
    expect(verified).to_contain_text(TRUE)
    wrong = answer.locator(".sentence", has_text=FALSE)
    expect(wrong).to_have_count(1)
    assert "verified" not in (wrong.get_attribute("class") or "").split()
    page.screenshot(path=str(SCREENS / "eiffel-mixed.png"), full_page=True)
    assert not errors, errors
    context.close()


def test_page_shows_the_quoting_retry_and_keeps_the_first_draft_in_the_trace(
    browser: Any, serve_answer: Any
) -> None:
    """generate.quote_retry on the page: the first draft (a wrong year) is withheld, the model's
    copy of the passage is the answer, and the trace shows the first draft's claim."""
    from playwright.sync_api import expect

    server = serve_answer([f"{FALSE} [1].", f"{TRUE} [1]."], "eiffel-quote-retry")
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(server.url + "/")
    page.click("summary")
    page.fill("#api-key", server.keys["read"])
    _ask(page, "strict")
    answer = page.locator("#answer")
    expect(answer.locator(".sentence.verified")).to_contain_text(TRUE)
    expect(answer).not_to_contain_text("1930")
    page.click("#tab-trace")
    trace = page.locator("#trace")
    expect(trace).to_contain_text("Quote retry")
    expect(trace).to_contain_text("the answer is that copy")
    expect(trace).to_contain_text(FALSE)
    page.screenshot(path=str(SCREENS / "eiffel-quote-retry-trace.png"), full_page=True)
    assert not errors, errors
    context.close()
