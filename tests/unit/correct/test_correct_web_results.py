"""Web results enter corrective retrieval bounded, whatever `WebSearch` produced them.

A `WebSearch` is a Protocol: a user's own implementation returns what it likes. Its results get
the same bounds as the built-in providers': at most the number asked for, text fields cut to
their caps, over-long URLs dropped, every URL read by `affidavit.core.hosts` against the
allowlist, each cut or drop named in ``trace.dropped``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from affidavit.core.correction import WebResult
from affidavit.core.settings import CorrectSettings
from affidavit.core.types import Chunk, Hit
from affidavit.correct import CorrectiveRetrieval
from affidavit.correct.fakes import KeywordEvaluator
from affidavit.correct.web import StoreFallbackSearch

QUESTION = "population of the town"
# the caps (affidavit.correct.pipeline.MAX_WEB_URL_CHARS, MAX_WEB_TITLE_CHARS)
MAX_WEB_URL_CHARS = 2048
MAX_WEB_TITLE_CHARS = 500
PAGE = "The population of the town is 5,000 people. The town has a bridge."


class CustomSearch:
    """A user's `WebSearch` that returns whatever it was given, ignoring ``max_results``."""

    name = "custom"

    def __init__(self, results: Any) -> None:
        self.results = results
        self.asked: list[int] = []

    def search(self, query: str, *, max_results: int) -> Any:
        self.asked.append(max_results)
        return self.results


def _result(url: str, rank: int = 1, **fields: Any) -> WebResult:
    return WebResult(url=url, provider=fields.pop("provider", "custom"), rank=rank, **fields)


def _run(web: Any, settings: CorrectSettings | None = None, **kwargs: Any) -> Any:
    crag = CorrectiveRetrieval(
        KeywordEvaluator(), web=web, settings=settings or CorrectSettings(), **kwargs
    )
    return crag.run(QUESTION, [])


def test_a_custom_search_returning_more_than_asked_is_cut_to_what_was_asked_and_says_so() -> None:
    web = CustomSearch([_result(f"https://w.example/{i}", i, content=PAGE) for i in range(1, 1001)])
    r = _run(web, CorrectSettings(top_k_web_results=2))
    asked = web.asked[0]
    assert r.trace.web is not None
    assert len(r.trace.web.results) == asked  # 1000 were recorded in the trace
    assert any("1000 results" in d and f"first {asked}" in d for d in r.trace.dropped)
    assert len([c for c in r.context if c.origin == "web"]) == 2


def test_an_endless_custom_search_is_read_no_further_than_asked() -> None:
    taken: list[int] = []

    def endless() -> Iterator[WebResult]:
        for i in itertools.count(1):
            taken.append(i)
            if i > 20_000:  # a bound for this test only: the stage must stop long before
                return
            yield _result(f"https://w.example/{i}", i, content=PAGE)

    web = CustomSearch(endless())
    r = _run(web, CorrectSettings(top_k_web_results=2))
    assert len(taken) <= web.asked[0] + 1
    assert r.trace.web is not None and len(r.trace.web.results) == web.asked[0]
    assert any(f"more than {web.asked[0]} results" in d for d in r.trace.dropped)


def test_text_from_a_custom_search_is_cut_to_its_caps_and_says_so() -> None:
    huge = "Filler words here. " * 60_000  # over a megabyte
    web = CustomSearch(
        [
            _result(
                "https://w.example/big",
                title="T" * 100_000,
                snippet=huge,
                content=PAGE + " " + huge,
                provider="p" * 10_000,
            )
        ]
    )
    r = _run(web, max_web_chars=1000)
    assert r.trace.web is not None
    (kept,) = r.trace.web.results
    assert len(kept.title) <= MAX_WEB_TITLE_CHARS
    assert len(kept.snippet) <= 2000 and len(kept.content or "") <= 2000
    assert len(kept.provider) <= 100
    notes = [d for d in r.trace.dropped if d.startswith("https://w.example/big:")]
    for field in ("title", "snippet", "content", "provider"):
        assert any(field in d and "cut" in d for d in notes), field
    # what is used is still cut at a sentence end within max_web_chars
    web_ctx = [c for c in r.context if c.origin == "web"]
    assert web_ctx and all(len(c.chunk.text) <= 1000 for c in web_ctx)
    assert r.model_dump_json().count("Filler") < 1000


def test_an_over_long_url_from_a_custom_search_is_dropped_and_says_so() -> None:
    long_url = "https://w.example/" + "a" * (MAX_WEB_URL_CHARS + 1)
    web = CustomSearch([_result(long_url, 1, content=PAGE), _result("https://w.example/ok", 2)])
    r = _run(web)
    assert r.trace.web is not None
    assert [x.url for x in r.trace.web.results] == ["https://w.example/ok"]
    assert not any((c.chunk.url or "") == long_url for c in r.context)
    assert any("URL" in d and str(len(long_url)) in d for d in r.trace.dropped)
    assert long_url not in r.model_dump_json()


def test_a_custom_search_cannot_pass_the_allowlist_by_naming_itself_the_store() -> None:
    # the allowlist was skipped for any result whose provider field said "store"
    results = [
        _result("https://evil.example/p", 1, content=PAGE, provider="store"),
        _result("store:doc#c1", 2, content=PAGE, provider="store"),
    ]
    for allowlist in (["good.org"], []):
        r = _run(CustomSearch(results), CorrectSettings(web_allowlist=allowlist))
        assert r.trace.web is not None
        assert all(x.blocked and not x.used for x in r.trace.web.results), allowlist
        assert not [c for c in r.context if c.origin == "web"]


def test_the_built_in_store_fallback_is_still_read_without_the_web_allowlist() -> None:
    class Retriever:
        def search(self, query: str, k: int = 10, **_: Any) -> list[Hit]:
            chunk = Chunk(id="c1", doc_id="d1", text=PAGE)
            return [Hit(chunk=chunk, score=1.0, rank=1, mode="bm25")]

    web = StoreFallbackSearch(Retriever())  # type: ignore[arg-type]
    r = _run(web, CorrectSettings(web_allowlist=["good.org"]))
    assert r.trace.web is not None
    assert [x.used for x in r.trace.web.results] == [True]


def test_what_this_stage_records_about_a_result_is_not_taken_from_the_search() -> None:
    results = [
        _result(f"https://w.example/{i}", i, content=PAGE, used=True, blocked="x" * 10_000)
        for i in range(1, 5)
    ]
    r = _run(CustomSearch(results), CorrectSettings(top_k_web_results=1))
    assert r.trace.web is not None
    assert [x.used for x in r.trace.web.results] == [True, False]
    assert all(x.blocked is None for x in r.trace.web.results)


def test_a_custom_search_that_crashes_or_returns_no_list_is_recorded_not_raised() -> None:
    class Crashing:
        name = "crashing"

        def search(self, query: str, *, max_results: int) -> list[WebResult]:
            raise ValueError("boom")

    r = _run(Crashing())
    assert r.trace.web is not None and r.trace.web.error is not None
    assert any("web search failed" in e and "boom" in e for e in r.trace.errors)
    r = _run(CustomSearch(None))
    assert r.trace.web is not None and r.trace.web.error is not None


def test_an_item_that_is_not_a_web_result_is_dropped_and_says_so() -> None:
    web = CustomSearch(
        [{"url": "https://w.example/d", "content": PAGE}, _result("https://w.example/ok", 2)]
    )
    r = _run(web)
    assert r.trace.web is not None
    assert [x.url for x in r.trace.web.results] == ["https://w.example/ok"]
    assert any("not a WebResult" in d for d in r.trace.dropped)
