"""CorrectiveRetrieval end to end with scripted evaluators, searches and fetchers."""

from __future__ import annotations

import pytest

from affidavit.core.correction import WebResult
from affidavit.core.errors import ConfigError, GenerationError, WebSearchError
from affidavit.core.settings import CorrectSettings, load_settings
from affidavit.core.types import Chunk, Hit
from affidavit.correct import CorrectiveRetrieval, build_corrective_retrieval
from affidavit.correct.base import FetchedPage
from affidavit.correct.fakes import KeywordEvaluator, ScriptedGenerator
from affidavit.correct.rewrite import LLMQueryRewriter

HIGH = Chunk(text="Alpha fact one. Alpha fact two.", url="https://a.example/1")
MID = Chunk(text="Beta is related. Beta filler.", url="https://b.example/2")
LOW = Chunk(text="Gamma is unrelated. Gamma again.", url="https://c.example/3")


def _ev(high: float, mid: float, low: float) -> KeywordEvaluator:
    return KeywordEvaluator(
        fixed={
            HIGH.text: high,
            MID.text: mid,
            LOW.text: low,
            "Alpha fact one.": 9.0,
            "Alpha fact two.": 2.0,
            "Beta is related.": 6.0,
            "Beta filler.": 1.0,
            "Gamma is unrelated.": 0.5,
            "Web page sentence about the answer.": 9.5,
            "Web boilerplate.": 0.0,
        }
    )


class FakeWeb:
    name = "fakeweb"

    def __init__(self, results: list[WebResult] | Exception) -> None:
        self.results = results
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, *, max_results: int) -> list[WebResult]:
        self.queries.append((query, max_results))
        if isinstance(self.results, Exception):
            raise self.results
        return self.results[:max_results]


class FakeFetcher:
    def __init__(self, pages: dict[str, str | Exception]) -> None:
        self.pages = pages
        self.fetched: list[str] = []

    def fetch(self, url: str) -> FetchedPage:
        self.fetched.append(url)
        page = self.pages[url]
        if isinstance(page, Exception):
            raise page
        return FetchedPage(url=url, final_url=url, status=200, text=page, title="T")


def _web_result(url: str, rank: int = 1, content: str | None = None) -> WebResult:
    return WebResult(
        url=url, title="", snippet="snippet text", provider="fakeweb", rank=rank, content=content
    )


PAGE = "Web page sentence about the answer. Web boilerplate."
# CRAG's original refinement: each sentence scored alone
# CRAG as in the paper: every sentence scored alone, every chunk refined
ALONE = CorrectSettings(sentence_window=0, keep_whole_threshold=None)


def test_by_default_a_chunk_graded_at_the_strip_threshold_reaches_the_llm_whole() -> None:
    # keep_whole_threshold (default 5.0, the strip threshold): refinement dropped the answer's
    # sentence from relevant chunks too often (docs/benchmarks.md, evaluator_quality.py --crag)
    assert CorrectSettings().keep_whole_threshold == CorrectSettings().strip_threshold == 5.0
    crag = CorrectiveRetrieval(_ev(8.0, 4.0, 1.0), web=FakeWeb([]), settings=CorrectSettings())
    r = crag.run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "correct"
    assert r.chunks[0].text == HIGH.text and r.context[0].kept_whole


def test_correct_refines_only_top_chunks_and_never_searches() -> None:
    web = FakeWeb([_web_result("https://w.example/")])
    crag = CorrectiveRetrieval(_ev(8.0, 6.0, 1.0), web=web, settings=ALONE)
    r = crag.run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "correct"
    assert web.queries == []  # Correct never goes to the web
    assert r.trace.web is None
    assert [c.source_chunk_id for c in r.context] == [HIGH.id]
    assert r.chunks[0].text == "Alpha fact one."
    assert r.chunks[0].url == HIGH.url  # provenance kept
    assert [g.score for g in r.trace.grades] == [8.0, 6.0, 1.0]
    assert any(d.startswith(MID.id) for d in r.trace.dropped)


def test_ambiguous_refines_moderate_chunks_and_adds_web() -> None:
    web = FakeWeb([_web_result("https://w.example/p")])
    fetcher = FakeFetcher({"https://w.example/p": PAGE})
    gen = ScriptedGenerator(["beta query"])
    crag = CorrectiveRetrieval(
        _ev(7.9, 3.0, 2.9), web=web, rewriter=LLMQueryRewriter(gen), fetcher=fetcher, settings=ALONE
    )
    r = crag.run("What about beta?", [HIGH, MID, LOW])
    assert r.classification.kind == "ambiguous"
    # HIGH (7.9) and MID (3.0 = lower) are refined; LOW (2.9) is not
    local = [c for c in r.context if c.origin == "local"]
    assert [c.source_chunk_id for c in local] == [HIGH.id, MID.id]
    assert [c.chunk.text for c in local] == ["Alpha fact one.", "Beta is related."]
    assert web.queries == [("beta query", 2 * CorrectSettings().top_k_web_results)]
    web_ctx = [c for c in r.context if c.origin == "web"]
    assert len(web_ctx) == 1
    assert web_ctx[0].chunk.text == "Web page sentence about the answer."
    assert web_ctx[0].chunk.url == "https://w.example/p"
    assert r.trace.web is not None and r.trace.web.query is not None
    assert r.trace.web.query.rewritten and r.trace.web.query.original == "What about beta?"
    assert {"evaluate", "refine", "web", "search", "fetch", "total"} <= set(r.trace.timings_ms)


def test_incorrect_uses_web_only() -> None:
    web = FakeWeb([_web_result("https://w.example/p", content=PAGE)])
    fetcher = FakeFetcher({})
    crag = CorrectiveRetrieval(_ev(2.0, 1.0, 0.0), web=web, fetcher=fetcher)
    r = crag.run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "incorrect"
    assert all(c.origin == "web" for c in r.context) and len(r.context) == 1
    assert fetcher.fetched == []  # the provider gave the content already
    assert r.trace.web is not None and r.trace.web.query is not None
    assert r.trace.web.query.query == "q" and not r.trace.web.query.rewritten


def test_incorrect_without_web_has_empty_context_and_says_why() -> None:
    r = CorrectiveRetrieval(_ev(2.0, 1.0, 0.0)).run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "incorrect"
    assert r.context == ()
    assert r.trace.web is not None and r.trace.web.error == "no web search configured"


def _nothing_passes() -> KeywordEvaluator:
    # every chunk between the thresholds, no sentence reaching the strip threshold
    return KeywordEvaluator(
        fixed={
            HIGH.text: 3.5,
            MID.text: 4.5,
            LOW.text: 1.0,
            "Alpha fact one.": 2.0,
            "Alpha fact two.": 2.0,
            "Beta is related.": 2.0,
            "Beta filler.": 1.0,
            "Web page sentence about the answer.": 9.5,
        }  # a chunk joined from its sentences (window) is the chunk itself: below 5 too
    )


def test_ambiguous_with_nothing_refined_keeps_the_best_graded_chunk_whole() -> None:
    # CRAG would answer from nothing here: no sentence passes and there is no web
    r = CorrectiveRetrieval(_nothing_passes()).run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "ambiguous"
    assert [c.source_chunk_id for c in r.context] == [MID.id]  # 4.5 beats 3.5
    assert r.context[0].kept_whole and r.chunks[0].text == MID.text
    assert r.trace.fallback is not None and r.trace.fallback.startswith(f"{MID.id}:")
    assert "grade 4.50" in r.trace.fallback
    # the kept chunk is no longer listed as dropped; the others still are
    assert not any(d.startswith(MID.id) for d in r.trace.dropped)
    assert any(d.startswith(HIGH.id) for d in r.trace.dropped)
    assert any(d.startswith(LOW.id) for d in r.trace.dropped)


def test_keep_best_when_empty_off_is_the_papers_behaviour() -> None:
    paper = CorrectSettings(keep_best_when_empty=False)
    r = CorrectiveRetrieval(_nothing_passes(), settings=paper).run("q", [HIGH, MID, LOW])
    assert r.classification.kind == "ambiguous"
    assert r.context == () and r.trace.fallback is None


def test_no_fallback_when_the_web_brought_context_or_nothing_was_selected() -> None:
    web = FakeWeb([_web_result("https://w.example/p", content=PAGE)])
    r = CorrectiveRetrieval(_nothing_passes(), web=web).run("q", [HIGH, MID, LOW])
    assert [c.origin for c in r.context] == ["web"] and r.trace.fallback is None
    # Incorrect selects no chunk: nothing to fall back on
    r = CorrectiveRetrieval(_ev(2.0, 1.0, 0.0)).run("q", [HIGH, MID, LOW])
    assert r.context == () and r.trace.fallback is None


def test_thresholds_come_from_settings() -> None:
    ev = _ev(7.0, 1.0, 1.0)
    default = CorrectiveRetrieval(ev).run("q", [HIGH, MID, LOW])
    assert default.classification.kind == "ambiguous"
    low_upper = CorrectiveRetrieval(
        ev, settings=CorrectSettings(upper_threshold=7.0, lower_threshold=3.0)
    ).run("q", [HIGH, MID, LOW])
    assert low_upper.classification.kind == "correct"
    high_lower = CorrectiveRetrieval(
        ev, settings=CorrectSettings(upper_threshold=9.0, lower_threshold=7.5)
    ).run("q", [HIGH, MID, LOW])
    assert high_lower.classification.kind == "incorrect"


def test_strip_threshold_from_settings() -> None:
    ev = _ev(9.0, 0.0, 0.0)
    r = CorrectiveRetrieval(ev, settings=CorrectSettings(strip_threshold=1.5)).run("q", [HIGH])
    assert r.chunks[0].text == "Alpha fact one. Alpha fact two."  # 2.0 >= 1.5
    r = CorrectiveRetrieval(ev, settings=CorrectSettings(strip_threshold=9.5)).run("q", [HIGH])
    assert r.context[0].kept_whole  # no sentence >= 9.5, chunk grade 9 >= upper 8


def test_top_k_documents_limits_grading() -> None:
    ev = _ev(9.0, 9.0, 9.0)
    r = CorrectiveRetrieval(ev, settings=CorrectSettings(top_k_documents=2)).run(
        "q", [HIGH, MID, LOW]
    )
    assert [g.chunk_id for g in r.trace.grades] == [HIGH.id, MID.id]
    assert ev.calls[0][1] == [HIGH.text, MID.text]


def test_hits_keep_rank_and_retrieval_score() -> None:
    hits = [
        Hit(chunk=LOW, score=0.7, rank=1, mode="hybrid"),
        Hit(chunk=HIGH, score=0.5, rank=2, mode="hybrid"),
    ]
    r = CorrectiveRetrieval(_ev(9.0, 0.0, 0.0)).run("q", hits)
    assert [(g.rank, g.retrieval_score) for g in r.trace.grades] == [(1, 0.7), (2, 0.5)]


class Crashing:
    name = "crash"

    def score(self, question: str, passages: list[str]) -> list[object]:
        raise RuntimeError("boom")


def test_evaluator_crash_fails_closed() -> None:
    r = CorrectiveRetrieval(Crashing()).run("q", [HIGH])  # type: ignore[arg-type]
    assert r.classification.kind == "incorrect"
    assert r.context == ()
    assert r.trace.grades[0].score == 0.0 and r.trace.grades[0].error
    assert any("boom" in e for e in r.trace.errors)


def test_web_search_failure_is_recorded() -> None:
    web = FakeWeb(WebSearchError("tavily search timed out"))
    r = CorrectiveRetrieval(_ev(5.0, 0.0, 0.0), web=web).run("q", [HIGH])
    assert r.classification.kind == "ambiguous"
    assert r.trace.web is not None and r.trace.web.error == "tavily search timed out"
    assert any("timed out" in e for e in r.trace.errors)
    assert [c.origin for c in r.context] == ["local"]


def test_rewrite_failure_falls_back_to_question() -> None:
    web = FakeWeb([])
    rewriter = LLMQueryRewriter(ScriptedGenerator([GenerationError("llm down")]))
    r = CorrectiveRetrieval(_ev(0.0, 0.0, 0.0), web=web, rewriter=rewriter).run("orig?", [LOW])
    assert web.queries[0][0] == "orig?"
    assert r.trace.web is not None and r.trace.web.query is not None
    q = r.trace.web.query
    assert not q.rewritten and q.error is not None and "llm down" in q.error


def test_allowlist_blocks_results_and_refused_fetch_is_recorded() -> None:
    results = [
        _web_result("https://evil.example/x", 1),
        _web_result("https://docs.good.org/refused", 2),
        _web_result("https://docs.good.org/broken", 3),
        _web_result("https://good.org/ok", 4),
    ]
    fetcher = FakeFetcher(
        {
            "https://docs.good.org/refused": WebSearchError(
                "refused: private address", reason="private address"
            ),
            "https://docs.good.org/broken": WebSearchError("HTTP 500"),
            "https://good.org/ok": PAGE,
        }
    )
    settings = CorrectSettings(web_allowlist=["good.org"], top_k_web_results=3)
    r = CorrectiveRetrieval(
        _ev(0.0, 0.0, 0.0), web=FakeWeb(results), fetcher=fetcher, settings=settings
    ).run("q", [LOW])
    assert r.trace.web is not None
    by_url = {x.url: x for x in r.trace.web.results}
    assert by_url["https://evil.example/x"].blocked == "not in the domain allowlist"
    assert "https://evil.example/x" not in fetcher.fetched  # never fetched
    assert by_url["https://docs.good.org/refused"].blocked is not None
    assert by_url["https://docs.good.org/broken"].fetch_error == "HTTP 500"
    assert by_url["https://good.org/ok"].content == PAGE
    urls = [c.chunk.url for c in r.context]
    assert "https://good.org/ok" in urls and "https://evil.example/x" not in urls
    used = {x.url for x in r.trace.web.results if x.used}
    # the broken page still contributes its snippet; refused ones never do
    assert used == {"https://docs.good.org/broken", "https://good.org/ok"}


class RedirectingFetcher:
    """A fetcher that follows redirects without knowing the CRAG allowlist."""

    def __init__(self, final: dict[str, str]) -> None:
        self.final = final

    def fetch(self, url: str) -> FetchedPage:
        return FetchedPage(url=url, final_url=self.final.get(url, url), status=200, text=PAGE)


def test_a_fetch_redirected_outside_the_allowlist_is_blocked() -> None:
    # the allowlist holds for the page the text came from, not only for the search result's URL
    results = [
        _web_result("https://good.org/go", 1),
        _web_result("https://good.org/stay", 2),
    ]
    fetcher = RedirectingFetcher(
        {
            "https://good.org/go": "https://evil.example/landing",
            "https://good.org/stay": "https://docs.good.org/stay",
        }
    )
    settings = CorrectSettings(web_allowlist=["good.org"], top_k_web_results=3)
    r = CorrectiveRetrieval(
        _ev(0.0, 0.0, 0.0), web=FakeWeb(results), fetcher=fetcher, settings=settings
    ).run("q", [LOW])
    assert r.trace.web is not None
    by_url = {x.url: x for x in r.trace.web.results}
    went = by_url["https://good.org/go"]
    assert went.blocked is not None and "evil.example" in went.blocked
    assert not went.used and went.content is None
    assert by_url["https://good.org/stay"].used
    assert [c.chunk.url for c in r.context if c.origin == "web"] == ["https://good.org/stay"]


def test_lone_surrogates_from_the_web_never_reach_the_evidence() -> None:
    # JSON allows "\ud800" (a provider's title or text) and a fetched page may hold one: the
    # result must still serialise (certificates, the API) and hash
    bad = "Web page sentence about the answer \ud800. Web boilerplate."
    results = [
        WebResult(
            url="https://w.example/\udcff",
            title="T\ud800",
            snippet="s\udfff",
            content=bad,
            provider="fakeweb",
            rank=1,
        ),
        _web_result("https://w.example/fetched", 2),
    ]
    fetcher = FakeFetcher({"https://w.example/fetched": bad})
    r = CorrectiveRetrieval(
        KeywordEvaluator(), web=FakeWeb(results), fetcher=fetcher, settings=CorrectSettings()
    ).run("Which web page sentence about the answer?", [LOW])
    dumped = r.model_dump_json()
    assert len([c for c in r.context if c.origin == "web"]) == 2
    assert type(r).model_validate_json(dumped) == r


def test_control_and_bidi_characters_from_the_web_never_reach_the_evidence() -> None:
    # a page's escape sequences and bidi overrides would make what is shown (terminal, web UI)
    # differ from what was checked; its title is shown as one line of the sources
    page = "Web page sentence about the \x1b[2Janswer.\r\nIt is \u202e033\u202c metres\x00."
    results = [
        WebResult(
            url="https://w.example/1",
            title="Tower\u202e\n[2] Official\x07",
            snippet="s",
            content=page,
            provider="fakeweb",
            rank=1,
        ),
        _web_result("https://w.example/2", 2),
    ]
    fetcher = FakeFetcher({"https://w.example/2": page})
    settings = CorrectSettings(keep_whole_threshold=0.0)
    r = CorrectiveRetrieval(
        KeywordEvaluator(), web=FakeWeb(results), fetcher=fetcher, settings=settings
    ).run("Which web page sentence about the answer?", [LOW])
    web = [c.chunk for c in r.context if c.origin == "web"]
    assert len(web) == 2
    for chunk in web:
        assert chunk.text == "Web page sentence about the [2Janswer.\nIt is 033 metres."
    assert web[0].title == "Tower [2] Official"
    assert r.trace.web is not None
    assert all("\u202e" not in (x.content or "") for x in r.trace.web.results)


def test_an_empty_web_allowlist_blocks_every_web_result() -> None:
    # set but empty narrows to nothing (a guard never opens by itself); unset allows any host
    results = [_web_result(f"https://w.example/{i}", i, content=PAGE) for i in range(1, 3)]
    blocked = CorrectiveRetrieval(
        _ev(0, 0, 0), web=FakeWeb(results), settings=CorrectSettings(web_allowlist=[])
    ).run("q", [LOW])
    assert blocked.trace.web is not None
    assert all(x.blocked == "not in the domain allowlist" for x in blocked.trace.web.results)
    assert not any((c.chunk.url or "").startswith("https://w.example") for c in blocked.context)
    opened = CorrectiveRetrieval(
        _ev(0, 0, 0), web=FakeWeb(results), settings=CorrectSettings()
    ).run("q", [LOW])
    assert opened.trace.web is not None
    assert not any(x.blocked for x in opened.trace.web.results)


def test_top_k_web_results_caps_pages_used() -> None:
    results = [_web_result(f"https://w.example/{i}", i, content=PAGE) for i in range(1, 7)]
    settings = CorrectSettings(top_k_web_results=2)
    r = CorrectiveRetrieval(_ev(0, 0, 0), web=FakeWeb(results), settings=settings).run("q", [LOW])
    assert len([c for c in r.context if c.origin == "web"]) == 2
    assert r.trace.web is not None
    assert [x.used for x in r.trace.web.results] == [True, True, False, False]


def test_invalid_settings_rejected() -> None:
    with pytest.raises(ConfigError):
        CorrectiveRetrieval(
            KeywordEvaluator(),
            settings=CorrectSettings.model_construct(upper_threshold=2.0, lower_threshold=5.0),
        )


def test_result_round_trips_as_json() -> None:
    web = FakeWeb([_web_result("https://w.example/p", content=PAGE)])
    r = CorrectiveRetrieval(_ev(5.0, 0.0, 0.0), web=web).run("q", [HIGH, MID])
    again = type(r).model_validate_json(r.model_dump_json())
    assert again == r


def test_build_from_settings_wires_providers() -> None:
    s = load_settings(
        overrides={
            "correct": {
                "evaluator": "llm",
                "web_provider": "searxng",
                "searxng_url": "http://127.0.0.1:9",
            }
        }
    )
    crag = build_corrective_retrieval(s, generator=ScriptedGenerator([]))
    assert crag.evaluator.name.startswith("llm:")
    assert crag.web is not None and crag.web.name == "searxng"
    assert crag.rewriter is not None and crag.fetcher is not None
    with pytest.raises(ConfigError):
        build_corrective_retrieval(s, generator=None)  # llm evaluator needs a generator
    s2 = load_settings(overrides={"correct": {"evaluator": "llm", "web_provider": "tavily"}})
    with pytest.raises(ConfigError):
        build_corrective_retrieval(s2, generator=ScriptedGenerator([]))  # no key


def test_sentence_evaluator_scores_refinement() -> None:
    chunk_ev = KeywordEvaluator(fixed={HIGH.text: 9.0})
    sent_ev = KeywordEvaluator(fixed={"Alpha fact one.": 1.0, "Alpha fact two.": 6.0})
    r = CorrectiveRetrieval(chunk_ev, sentence_evaluator=sent_ev, settings=ALONE).run("q", [HIGH])
    assert r.chunks[0].text == "Alpha fact two."
    assert sent_ev.calls[0][1] == ["Alpha fact one.", "Alpha fact two."]
    assert chunk_ev.calls == [("q", [HIGH.text])]  # the chunk evaluator grades chunks only


def test_build_passes_web_timeout_and_store_needs_a_path() -> None:
    s = load_settings(
        overrides={
            "correct": {
                "web_provider": "brave",
                "brave_api_key": "k",
                "web_timeout_s": 2.5,
            }
        }
    )
    crag = build_corrective_retrieval(s, generator=ScriptedGenerator([]))
    assert crag.web is not None and getattr(crag.web, "timeout_s", None) == 2.5
    assert crag.fetcher is not None and getattr(crag.fetcher, "timeout_s", None) == 2.5
    with pytest.raises(ConfigError):
        build_corrective_retrieval(load_settings(overrides={"correct": {"web_provider": "store"}}))


def test_default_window_scores_sentences_with_their_predecessor() -> None:
    # "Alpha fact two." alone scores 2.0, but joined with its predecessor it is HIGH.text (9.0)
    ev = _ev(9.0, 0.0, 0.0)
    assert CorrectSettings().sentence_window == 2
    # grade 9 would keep HIGH whole by default: switch that off to see the window alone
    r = CorrectiveRetrieval(ev, settings=CorrectSettings(keep_whole_threshold=None)).run(
        "q", [HIGH]
    )
    assert r.chunks[0].text == HIGH.text
    assert [(s.score, s.own_score) for s in r.context[0].strips] == [(9.0, 9.0), (9.0, 2.0)]
    r0 = CorrectiveRetrieval(ev, settings=ALONE).run("q", [HIGH])
    assert r0.chunks[0].text == "Alpha fact one."
