"""The web page, in headless Chromium, shows a citation only where the verifier found support.

In mixed mode the page drew the model's draft (its claims marked), so an unverified sentence
kept the model's "[2]" next to it. It now draws the answer's sentences as the renderer shows
them, like every other surface.

The app is the real one (`create_app`, its page and script) over the real ask pipeline on the
shipped fakes (`FakeGenerator`, `KeywordVerifier`), served by uvicorn on 127.0.0.1 in this
process. Skips (with the reason) when Playwright or a Chromium binary is not available.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.core.settings import Settings, StoreSettings
from affidavit.core.types import Chunk, Hit
from affidavit.pipeline import AskPipeline
from affidavit.server.app import create_app
from affidavit.server.services import Services
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.server import serving_in_thread
from affidavit.testing.verifiers import KeywordVerifier

pytestmark = [pytest.mark.integration, pytest.mark.browser]

ARMSTRONG = Chunk(text="Neil Armstrong was the first person on the Moon.")
ALDRIN = Chunk(text="Buzz Aldrin flew on Apollo 11.")
TRUE = "Neil Armstrong was the first person on the Moon"
FALSE = "Buzz Aldrin was the first person on the Moon"


class _Retriever:
    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
        return [
            Hit(chunk=c, score=1.0, rank=i + 1, mode="bm25")
            for i, c in enumerate([ARMSTRONG, ALDRIN])
        ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app over the real pipeline on fakes; its base URL."""
    tmp = tmp_path_factory.mktemp("citations")
    settings = Settings(home=tmp / "home", store=StoreSettings(path=tmp / "store"))
    settings = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"quote_retry": False})}
    )
    services = Services(settings)
    services.ready = True
    pipe = AskPipeline(
        retriever=_Retriever(),
        generator=FakeGenerator([f"{TRUE} [2]. {FALSE} [2]."], repeat_last=True),
        extractor=RuleBasedExtractor(settings.claims),
        verifier=KeywordVerifier(),
        settings=settings,
    )
    services.pipe, services.plain = pipe, pipe
    with serving_in_thread(create_app(settings, services=services)) as url:
        yield url


@pytest.mark.parametrize("mode", ["mixed", "debug", "strict"])
def test_the_page_cites_only_what_the_verifier_found(browser: Any, served: str, mode: str) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(served + "/")
    page.fill("#question", "Who was first on the Moon?")
    page.select_option("#mode", mode)
    page.click("#ask-button")
    expect(page.locator("#ask-status")).to_contain_text("done:", timeout=20_000)
    answer = page.inner_text("#answer")
    # the model cited [2] for both; the verifier found the first in passage 1, the second nowhere
    assert f"{TRUE} [1]." in answer
    assert "[2]" not in answer
    verified = page.locator("#answer .sentence.verified")
    expect(verified).to_have_count(1)
    if mode == "strict":
        assert "Aldrin" not in answer
    else:
        unverified = page.locator("#answer .sentence.unverified")
        expect(unverified).to_have_text(f"{FALSE}.")
        unverified.click()
        expect(page.locator("#evidence")).to_contain_text("decision: unverified")
    verified.click()
    expect(page.locator("#evidence mark")).to_contain_text("Neil Armstrong")
    assert not errors, errors
    context.close()
