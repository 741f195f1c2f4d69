"""Issue 27 on the web page: the Eiffel question over the sample corpus, with the defaults.

With document-level fusion the chunk that says "March 1889" and "Gustave Eiffel" was never
retrieved, and the page withheld the true sentence "The Eiffel Tower was completed in March 1889."
Here a real ``affidavit serve`` (default retrieval, the shipped evaluator and verifier) gets a
scripted answer with that sentence and a false one; headless Chromium asks as a user would.
Skips (with the reason) when Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply
from affidavit.testing.server import ServedApi as Server
from affidavit.testing.server import ServedProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "tests" / "output" / "server"
SCREENS = OUTPUT / "screens"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

QUESTION = "When was the Eiffel Tower built, how tall is it, and who designed it?"
TRUE = "The Eiffel Tower was completed in March 1889"
FALSE = "The Eiffel Tower was completed in 1930"
ANSWER = f"{TRUE} [1]. {FALSE} [1]."


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    exe = os.environ.get("AFFIDAVIT_CHROMIUM") or shutil.which("chromium")
    exe = exe or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("no Chromium binary (apt-get install chromium; .ci/run does it)")
    with sync_api.sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        except Exception as exc:  # a broken browser install is an environment problem
            pytest.skip(f"Chromium at {exe} does not start: {exc}")
        yield b
        b.close()


@pytest.fixture(scope="module")
def eiffel(
    corpus: Path, home: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server over the sample corpus whose scripted LLM answers the Eiffel question."""
    home_dir, keys = home
    store = tmp_path_factory.mktemp("eiffel") / "store"
    shutil.copytree(corpus, store)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with FakeOpenAIServer([FakeReply(content=ANSWER, delay_s=0.03)]) as llm:
        env = {
            "AFFIDAVIT_HOME": str(home_dir),
            "AFFIDAVIT_STORE__PATH": str(store),
            "AFFIDAVIT_GENERATE__BACKEND": "openai",
            "AFFIDAVIT_GENERATE__BASE_URL": llm.url,
            "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
            "AFFIDAVIT_VERIFY__THREADS": "1",
            "AFFIDAVIT_EMBED__THREADS": "1",
            "AFFIDAVIT_SERVE__RATE_LIMIT_PER_MINUTE": "0",
        }
        with ServedProcess(env, log_path=OUTPUT / "eiffel.log") as srv:
            yield Server(url=srv.url, keys=keys, home=home_dir, store=store)


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
