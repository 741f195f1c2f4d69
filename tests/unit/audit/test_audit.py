"""The audit API: supported/unsupported claims, report, policy, modes and bad input."""

from __future__ import annotations

import asyncio
import time
from datetime import date

import pytest

import affidavit
from affidavit.audit import Auditor
from affidavit.core.errors import ConfigError, EnforcementError, InputError
from affidavit.core.report import AuditReport
from affidavit.core.settings import AuditSettings, load_settings
from affidavit.core.types import Chunk, Claim, Verdict

CHUNKS = [
    {
        "text": "The Eiffel Tower in Paris was completed in 1889. It is 330 metres tall.",
        "url": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "metadata": {"published_at": "2025-06-01"},
    },
    {
        "text": "Apple reported revenue of $95B in 2023. Its headquarters are in Cupertino.",
        "url": "https://example.com/apple",
        "metadata": {"year": 2019},
    },
    {"text": "The Louvre is the most visited museum in the world.", "url": "https://louvre.fr/"},
]


def test_grounded_answer_passes_with_provenance() -> None:
    r = affidavit.audit(
        "Tell me about the Eiffel Tower",
        CHUNKS,
        "The Eiffel Tower was completed in 1889. Apple's revenue was 95 billion dollars in 2023.",
    )
    assert [c.supported for c in r.claims] == [True, True]
    assert r.compliance_rate == 1.0 and r.passed and r.trust_passed
    assert r.provenance == {
        "The Eiffel Tower was completed in 1889.": "https://en.wikipedia.org/wiki/Eiffel_Tower",
        "Apple's revenue was 95 billion dollars in 2023.": "https://example.com/apple",
    }
    c = r.claims[0]
    assert c.evidence is not None
    assert c.evidence.text == "The Eiffel Tower in Paris was completed in 1889."
    assert CHUNKS[0]["text"][c.evidence.start : c.evidence.end] == c.evidence.text
    assert r.response[c.start : c.end] == "The Eiffel Tower was completed in 1889."


@pytest.mark.parametrize(
    ("answer", "check"),
    [
        ("The Eiffel Tower was not completed in 1889.", "polarity"),
        ("The Eiffel Tower was completed in 1925.", "date"),
        ("The Eiffel Tower is 330 feet tall.", "unit"),
        ("Apple reported revenue of $59B in 2023.", "number"),
        ("The Eiffel Tower in London was completed in 1889.", "entity"),
    ],
)
def test_lexically_close_falsehoods_are_not_supported(answer: str, check: str) -> None:
    r = affidavit.audit("q", CHUNKS, answer)
    (claim,) = r.claims
    assert not claim.supported
    assert claim.confidence >= 0.5  # the words match: only the typed check catches it
    assert check in {f.check for f in claim.failed_checks}
    assert r.violations[0].kind == "contradicted"
    assert not r.trust_passed


def test_unrelated_claim_is_unsupported_with_low_confidence() -> None:
    r = affidavit.audit("q", CHUNKS, "Bananas are rich in potassium and grow in Ecuador.")
    assert not any(c.supported for c in r.claims)
    assert all(c.confidence < 0.5 for c in r.claims)
    assert r.compliance_rate == 0.0 and not r.passed


def test_report_round_trips_as_json() -> None:
    r = affidavit.audit("q", CHUNKS, "The Eiffel Tower was completed in 1925. It is in Paris.")
    again = AuditReport.model_validate_json(r.model_dump_json())
    assert again == r


def test_allowlist_blocks_before_matching() -> None:
    cfg = {"allowlist": ["wikipedia.org"]}
    r = affidavit.audit("q", CHUNKS, "Apple reported revenue of $95B in 2023.", cfg)
    assert {b.reason for b in r.blocked_sources} == {"not_allowlisted"}
    assert {b.url for b in r.blocked_sources} == {"https://example.com/apple", "https://louvre.fr/"}
    assert not r.claims[0].supported  # its only source was blocked
    kept = affidavit.filter(CHUNKS, cfg)
    assert [c.url for c in kept] == ["https://en.wikipedia.org/wiki/Eiffel_Tower"]
    assert all(isinstance(c, Chunk) for c in kept)


def test_freshness_stale_warn_and_fail() -> None:
    answer = "Apple reported revenue of $95B in 2023. The Eiffel Tower was completed in 1889."
    warn = Auditor({"max_age_days": 365}, today=date(2026, 1, 1)).audit("q", CHUNKS, answer)
    assert [c.freshness for c in warn.claims] == ["supported_stale", "supported_fresh"]
    assert warn.claims[0].source_date == "2019-01-01"  # year only -> 1 January
    assert warn.trust_passed
    fail = Auditor({"max_age_days": 365, "stale_action": "fail"}, today=date(2026, 1, 1))
    r = fail.audit("q", CHUNKS, answer)
    assert r.passed and not r.trust_passed
    assert [v.kind for v in r.violations] == ["stale_source"]


def test_odd_dates_become_policy_issues_not_crashes() -> None:
    chunks = [
        {
            "text": "The bridge opened in 1932.",
            "url": "https://b.org",
            "metadata": {"date": "sometime in spring"},
        }
    ]
    r = affidavit.audit("q", chunks, "The bridge opened in 1932.", {"max_age_days": 30})
    assert "unparseable_date" in {i.kind for i in r.policy_issues}
    assert r.claims[0].freshness == "supported_stale"  # unknown age counts as stale (fail closed)


def test_guardrail_withholds_failing_claims() -> None:
    answer = "The Eiffel Tower was completed in 1889. The Eiffel Tower is 500 metres tall."
    r = affidavit.audit("q", CHUNKS, answer, {"mode": "guardrail"})
    assert r.guarded_response is not None
    assert "completed in 1889" in r.guarded_response
    assert "500" not in r.guarded_response
    assert "[withheld" in r.guarded_response


def test_enforce_raises_with_the_report() -> None:
    with pytest.raises(EnforcementError) as ei:
        affidavit.audit("q", CHUNKS, "The Eiffel Tower was completed in 1925.", {"mode": "enforce"})
    assert isinstance(ei.value.report, AuditReport)
    assert not ei.value.report.claims[0].supported
    ok = affidavit.audit(
        "q", CHUNKS, "The Eiffel Tower was completed in 1889.", {"mode": "enforce"}
    )
    assert ok.trust_passed


def test_min_compliance() -> None:
    answer = "The Eiffel Tower was completed in 1889. The Eiffel Tower was completed in 1925."
    assert not affidavit.audit("q", CHUNKS, answer).passed
    assert affidavit.audit("q", CHUNKS, answer, {"min_compliance": 0.5}).passed


def test_config_forms() -> None:
    s = load_settings(overrides={"audit": {"support_threshold": 0.9}})
    for cfg in (s, s.audit, {"support_threshold": 0.9}, {"audit": {"support_threshold": 0.9}}):
        assert Auditor(cfg).settings.support_threshold == 0.9
    with pytest.raises(ConfigError, match="unknown setting"):
        Auditor({"suport_threshold": 0.9})
    with pytest.raises(ConfigError):
        Auditor({"mode": "block"})
    with pytest.raises(ConfigError):
        Auditor(42)  # type: ignore[arg-type]


def test_empty_inputs_fail_closed() -> None:
    r = affidavit.audit("q", [], "The Eiffel Tower was completed in 1889.")
    assert not r.claims[0].supported and not r.trust_passed
    assert "no_chunks" in {i.kind for i in r.policy_issues}
    r = affidavit.audit("q", CHUNKS, "")
    assert r.claims == () and r.compliance_rate == 0.0 and not r.trust_passed
    assert "empty_response" in {i.kind for i in r.policy_issues}
    r = affidavit.audit("q", CHUNKS, "Hello! How can I help you today?")
    assert not r.trust_passed and "no_claims" in {i.kind for i in r.policy_issues}


def test_chunks_without_text() -> None:
    with pytest.raises(InputError, match=r"chunks\[1\]\.text"):
        affidavit.audit("q", [CHUNKS[0], {"url": "https://x.org"}], "x")
    with pytest.raises(InputError, match=r"chunks\[0\]"):
        affidavit.audit("q", ["just a string"], "x")  # type: ignore[list-item]
    r = affidavit.audit("q", [{"text": "   ", "url": "https://x.org"}], "Rome is in Italy.")
    assert "empty_chunk" in {i.kind for i in r.policy_issues}
    assert not r.trust_passed


def test_wrong_types_are_input_errors() -> None:
    with pytest.raises(InputError):
        affidavit.audit("q", CHUNKS, None)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        affidavit.audit("q", "not a list", "x")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="metadata"):
        affidavit.audit("q", [{"text": "a", "metadata": "x"}], "x")


def test_invalid_urls_are_blocked_as_malformed() -> None:
    chunks = [{"text": "The bridge opened in 1932.", "url": "http//broken url"}]
    r = affidavit.audit("q", chunks, "The bridge opened in 1932.")
    assert [b.reason for b in r.blocked_sources] == ["malformed_url"]
    assert not r.trust_passed


def test_large_answer_is_audited_without_crashing() -> None:
    sentence = "The Eiffel Tower was completed in 1889. "
    answer = sentence * (5_000_000 // len(sentence))
    t = time.perf_counter()
    r = affidavit.audit("q", CHUNKS, answer)
    assert time.perf_counter() - t < 60
    assert "response_truncated" in {i.kind for i in r.policy_issues}
    assert r.claims[0].supported  # the audited part is fine...
    assert not r.claims[-1].supported  # ...the unchecked rest is not shown as supported
    assert not r.trust_passed


async def test_aaudit_does_not_block_the_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    answer = " ".join(f"The Eiffel Tower was completed in {1800 + i}." for i in range(300))
    r = await affidavit.aaudit("q", CHUNKS, answer)
    task.cancel()
    assert len(r.claims) > 1
    assert ticks > 1


class _FakeVerifier:
    def __init__(self, label: str) -> None:
        self.label = label
        self.calls = 0

    def verify(self, claim: Claim, chunks: object) -> Verdict:
        self.calls += 1
        return Verdict(
            claim_id=claim.id,
            label=self.label,  # type: ignore[arg-type]
            p_entail=0.9 if self.label == "supported" else 0.1,
            p_neutral=0.05,
            p_contradict=0.05 if self.label == "supported" else 0.85,
            reason="fake",
        )


def test_verifier_hook_can_only_take_support_away() -> None:
    cfg = AuditSettings(use_verifier=True)
    answer = "The Eiffel Tower was completed in 1889."
    no = _FakeVerifier("contradicted")
    r = Auditor(cfg, verifier=no).audit("q", CHUNKS, answer)
    assert no.calls == 1 and not r.claims[0].supported
    assert r.claims[0].verdict is not None
    yes = _FakeVerifier("supported")
    assert Auditor(cfg, verifier=yes).audit("q", CHUNKS, answer).claims[0].supported


def test_use_verifier_without_one_builds_the_default_cascade(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 28: ``audit(..., {"use_verifier": True})`` raised ConfigError where Haystack and
    MCP built the settings' default verifier; every path builds it now."""
    import affidavit.pipeline.check as check_mod

    built: list[object] = []

    def fake_default(settings: object = None) -> _FakeVerifier:
        built.append(settings)
        return _FakeVerifier("contradicted")

    monkeypatch.setattr(check_mod, "default_verifier", fake_default)
    answer = "The Eiffel Tower was completed in 1889."
    r = affidavit.audit("q", CHUNKS, answer, {"use_verifier": True})
    assert len(built) == 1 and r.claims[0].verdict is not None
    assert not r.claims[0].supported  # the verifier ran and took support away
    assert Auditor(AuditSettings(use_verifier=True)).verifier is not None
    r = asyncio.run(affidavit.aaudit("q", CHUNKS, answer, {"use_verifier": True}))
    assert r.claims[0].verdict is not None and not r.claims[0].supported


@pytest.mark.parametrize("n_chunks", [100, 2500])
def test_claim_copied_verbatim_from_any_near_identical_chunk_passes(n_chunks: int) -> None:
    # issue 13: BM25 ignores numbers, so 100 chunks that differ only in their numbers all tied
    # and the checks compared a sentence copied from chunk 17 with chunk 0
    # ("year 1961 disagrees with 1301"); 2500 chunks take the bm25s path
    chunks = [
        {
            "text": f"The stone bridge of the old town was finished in {1300 + i} "
            f"and measured {40 + i} metres.",
            "url": f"https://example.org/bridge/{i}",
        }
        for i in range(n_chunks)
    ]
    for pick in (17, 61, n_chunks - 1):
        answer = chunks[pick]["text"]
        report = Auditor().audit("When was the bridge finished?", chunks, answer)
        assert report.trust_passed, [c.reason for c in report.claims]
        assert all(c.source_url == chunks[pick]["url"] for c in report.claims)


def test_reauditing_a_guarded_answer_does_not_audit_the_marker() -> None:
    """Issue 28: the "[withheld: ...]" marker of a guarded answer was read as a claim and
    failed a second audit; it is skipped (and recorded), so the supported rest passes."""
    chunks = [{"text": "The Forth Bridge opened on 4 March 1890.", "url": "https://e.org/f"}]
    first = affidavit.audit(
        "q",
        chunks,
        "The Forth Bridge opened on 4 March 1890. It was painted blue by Napoleon in 1700.",
        {"mode": "guardrail"},
    )
    assert "[withheld: " in first.guarded_response
    again = affidavit.audit("q", chunks, first.guarded_response, {"mode": "guardrail"})
    assert [c.text for c in again.claims] == ["The Forth Bridge opened on 4 March 1890."]
    assert again.trust_passed and again.guarded_response == first.guarded_response
    assert "withheld_marker" in [i.kind for i in again.policy_issues]
    # only affidavit's own marker is skipped: other bracketed text is still audited
    forged = affidavit.audit("q", chunks, "[withheld: it opened in 1925].", {"mode": "guardrail"})
    assert not forged.trust_passed and forged.claims


def test_a_stale_source_sharing_its_id_with_a_fresh_one_stays_stale() -> None:
    """Freshness was looked up by chunk id: two chunks with one id (caller-given ids, a
    framework copying metadata) kept only the last one's date, so a claim resting on a 2001
    source read "supported_fresh" (dated 2024) and passed ``stale_action = fail``."""
    chunks = [
        {
            "id": "c1",
            "text": "The Forth Bridge opened on 4 March 1890.",
            "url": "https://a.org/old",
            "metadata": {"published_at": "2001-01-01"},
        },
        {
            "id": "c1",
            "text": "Cats sleep for most of the day.",
            "url": "https://a.org/new",
            "metadata": {"published_at": "2024-05-01"},
        },
    ]
    auditor = Auditor({"max_age_days": 365, "stale_action": "fail"}, today=date(2024, 6, 1))
    r = auditor.audit("q", chunks, "The Forth Bridge opened on 4 March 1890.")
    claim = r.claims[0]
    assert claim.source_url == "https://a.org/old"
    assert claim.freshness == "supported_stale" and claim.source_date == "2001-01-01"
    assert not r.trust_passed
    # every chunk's freshness is reported, not one per id
    assert sorted(f.status for f in r.freshness) == ["fresh", "stale"]


def test_text_past_the_claim_limit_is_not_passed_unchecked() -> None:
    """Sentences the extractor did not turn into claims because of ``claims.max_claims`` were
    never audited, yet the answer passed trust and guardrail showed them as written (a false
    third sentence, or the second half of a sentence cut at the limit)."""
    chunks = [
        {
            "text": "The Forth Bridge opened on 4 March 1890. It was designed by John Fowler.",
            "url": "https://a.org/f",
        }
    ]
    cfg = {"audit": {"mode": "guardrail"}, "claims": {"max_claims": 2}}
    answer = (
        "The Forth Bridge opened on 4 March 1890. The bridge was designed by John Fowler. "
        "The Forth Bridge was painted blue by Napoleon in 1700."
    )
    r = affidavit.audit("q", chunks, answer, cfg)
    assert not r.trust_passed
    assert "Napoleon" not in r.guarded_response
    assert r.guarded_response.startswith("The Forth Bridge opened on 4 March 1890.")
    # a sentence cut at the limit: its second claim was dropped, the sentence shown whole
    cut = "The Forth Bridge opened on 4 March 1890 and was painted blue by Napoleon in 1700."
    r = affidavit.audit("q", chunks, cut, {**cfg, "claims": {"max_claims": 1}})
    assert not r.trust_passed and "Napoleon" not in r.guarded_response
    # under the limit nothing changes
    assert affidavit.audit("q", chunks, answer.rsplit(" The", 1)[0], cfg).trust_passed


@pytest.mark.parametrize(
    "answer",
    ["Einstein was a carpenter.", "Albert Einstein was a carpenter.", "einstein was a carpenter."],
)
def test_names_alone_do_not_carry_a_lexical_match(answer: str) -> None:
    """Coverage counted the name: "Einstein was a carpenter." covered half its content words
    (einstein, not carpenter) in "Albert Einstein was born in Ulm" and passed at 0.5. What a
    claim says about a name, a word besides the names, must be covered as well."""
    chunks = [{"text": "Albert Einstein was born in Ulm.", "url": "https://example.org/e"}]
    report = affidavit.audit("Who was Einstein?", chunks, answer)
    claim = report.claims[0]
    assert not claim.supported and not report.trust_passed, claim
    assert claim.reason is not None and "only names" in claim.reason
    said = affidavit.audit("Who was Einstein?", chunks, "Einstein was born in Ulm.")
    assert said.claims[0].supported and said.trust_passed
