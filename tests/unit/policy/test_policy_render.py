"""Rendering: strict shows only verified sentences, verbatim; withheld parts leave no trace."""

from __future__ import annotations

import re
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from affidavit.core.policy import ClaimDecision
from affidavit.core.types import Claim, Decision, Verdict
from affidavit.policy import render, split_sentences

ANSWER = (
    "Intro line here.\n"
    "\n"
    "- Paris is the capital of France [1]. It was founded in 1925 [2].\n"
    "- The Eiffel Tower is 330 m tall. [3]\n"
    "\n"
    "Dr. Smith said so, e.g. in 2020. Done!"
)


def claim_at(cid: str, text: str, answer: str = ANSWER) -> Claim:
    start = answer.index(text)
    return Claim(id=cid, text=text, start=start, end=start + len(text))


def dec(cid: str, decision: Decision) -> ClaimDecision:
    return ClaimDecision(claim_id=cid, decision=decision, reason=f"{cid} is {decision}")


CLAIMS = [
    claim_at("c1", "Paris is the capital of France"),
    claim_at("c2", "It was founded in 1925"),
    claim_at("c3", "The Eiffel Tower is 330 m tall"),
    claim_at("c4", "Dr. Smith said so"),
]
DECISIONS = [
    dec("c1", "verified"),
    dec("c2", "blocked"),
    dec("c3", "verified"),
    dec("c4", "unverified"),
]


def test_split_keeps_citations_and_abbreviations() -> None:
    got = [ANSWER[s:e] for s, e in split_sentences(ANSWER)]
    assert got == [
        "Intro line here.",
        "Paris is the capital of France [1].",
        "It was founded in 1925 [2].",
        "The Eiffel Tower is 330 m tall. [3]",
        "Dr. Smith said so, e.g. in 2020.",
        "Done!",
    ]


def test_strict_keeps_verified_sentences_verbatim_and_removes_the_rest_cleanly() -> None:
    out = render(ANSWER, CLAIMS, DECISIONS, "strict")
    body = out.text.split("\n\n(")[0]
    assert body == "- Paris is the capital of France [1].\n- The Eiffel Tower is 330 m tall. [3]"
    assert "[2]" not in out.text and "1925" not in out.text and "Smith" not in out.text
    assert out.withheld_sentences == 4
    assert out.note.startswith("Withheld 4 of 6 sentences (1 contradicted by the evidence")
    assert "2 of 4 claims verified" in out.note
    assert (out.verified_claims, out.blocked_claims, out.unverified_claims) == (2, 1, 1)


def test_a_sentence_with_one_unverified_claim_is_withheld_whole() -> None:
    answer = "Paris is in France and has 9 million people [1]. Rome is in Italy."
    claims = [
        claim_at("c1", "Paris is in France", answer),
        claim_at("c2", "has 9 million people", answer),
        claim_at("c3", "Rome is in Italy", answer),
    ]
    decisions = [dec("c1", "verified"), dec("c2", "unverified"), dec("c3", "verified")]
    out = render(answer, claims, decisions, "strict")
    assert out.text.startswith("Rome is in Italy.\n\n(")
    assert "Paris" not in out.text and "[1]" not in out.text
    assert "1 verified claim was withheld" in out.note
    assert out.withheld_claims == 2
    first = out.sentences[0]
    assert not first.shown and first.decision == "unverified" and "c2" in first.reason


def test_missing_decision_counts_as_unverified() -> None:
    out = render(ANSWER, CLAIMS, DECISIONS[:1], "strict")
    assert "Eiffel" not in out.text


def test_an_unplaceable_unverified_claim_withholds_everything() -> None:
    ghost = Claim(id="c9", text="not in the answer", start=900, end=950, sentence="nowhere")
    out = render(ANSWER, [*CLAIMS, ghost], [*DECISIONS, dec("c9", "unverified")], "strict")
    assert all(not s.shown for s in out.sentences)
    assert out.note.startswith("Withheld everything: claims c9 could not be placed")
    assert "Paris" not in out.text


def test_all_verified_has_no_note() -> None:
    answer = "Paris is in France."
    claims = [claim_at("c1", "Paris is in France", answer)]
    out = render(answer, claims, [dec("c1", "verified")], "strict")
    assert out.text == answer
    assert out.note == ""


def test_mixed_labels_every_sentence() -> None:
    out = render(ANSWER, CLAIMS, DECISIONS, "mixed")
    assert "- [verified] Paris is the capital of France [1]. [blocked] It was founded" in out.text
    assert "[unverified] Intro line here." in out.text
    assert all(s.shown for s in out.sentences)


def test_debug_shows_scores_and_stages() -> None:
    v = Verdict(claim_id="c1", label="supported", p_entail=0.875, p_neutral=0.1, p_contradict=0.025)
    out = render(ANSWER, CLAIMS, DECISIONS, "debug", verdicts=[v])
    assert "p_entail=0.8750" in out.text
    assert "c2 (sentence 2, factual) blocked" in out.text
    assert "c3 (sentence 3, factual) verified" in out.text


# --- property: strict never shows a claim that is not verified -----------------------------

WORDS = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@st.composite
def answers(draw: st.DrawFn) -> tuple[str, list[Claim], list[ClaimDecision], dict[str, Decision]]:
    n = draw(st.integers(min_value=1, max_value=8))
    parts: list[str] = []
    specs: list[tuple[int, list[tuple[str, Decision]]]] = []
    for i in range(n):
        k = draw(st.integers(min_value=0, max_value=3))
        phrases = [
            (f"Q{i}x{j} " + " ".join(draw(st.lists(WORDS, min_size=1, max_size=3))), d)
            for j, d in enumerate(
                draw(
                    st.lists(
                        st.sampled_from(["verified", "unverified", "blocked"]),
                        min_size=k,
                        max_size=k,
                    )
                )
            )
        ]
        body = " and ".join(p for p, _ in phrases) or f"Q{i}x filler"
        cite = f" [{i + 1}]" if draw(st.booleans()) else ""
        sep = draw(st.sampled_from([" ", "  ", "\n", "\n\n", "\n- "]))
        parts.append(f"{body}{cite}.{sep if i < n - 1 else ''}")
        specs.append((i, phrases))
    answer = "".join(parts)
    claims: list[Claim] = []
    decisions: list[ClaimDecision] = []
    truth: dict[str, Decision] = {}
    for i, phrases in specs:
        for j, (phrase, d) in enumerate(phrases):
            cid = f"c{i}_{j}"
            start = answer.index(phrase)
            claims.append(Claim(id=cid, text=phrase, start=start, end=start + len(phrase)))
            truth[cid] = d
            if draw(st.booleans()) or d != "unverified":
                decisions.append(dec(cid, d))  # sometimes the decision is simply missing
    return answer, claims, decisions, truth


@settings(max_examples=200, deadline=None)
@given(answers())
def test_strict_never_shows_a_non_verified_claim(
    case: tuple[str, list[Claim], list[ClaimDecision], dict[str, Decision]],
) -> None:
    answer, claims, decisions, truth = case
    out = render(answer, claims, decisions, "strict")
    body = out.text.split("\n\n(Withheld")[0]
    for claim in claims:
        if truth[claim.id] != "verified":
            assert claim.text.split()[0] not in body
    for sent in out.sentences:
        ids = set(sent.claim_ids)
        wholly_verified = bool(ids) and all(truth[c] == "verified" for c in ids)
        assert sent.shown == wholly_verified
        if sent.shown:
            assert sent.text in body  # original wording, verbatim
        else:
            assert sent.text.split()[0] not in body
            for cite in re.findall(r"\[\d+\]", sent.text):
                assert cite not in body  # no dangling citation
    if "  " not in answer:
        assert "  " not in body  # removals leave no double space
    assert not body.startswith((" ", "\n")) and not body.endswith((" ", "\n"))
    assert "\n\n\n" not in out.text


def test_claims_from_the_real_extractor_land_in_the_right_sentences() -> None:
    from affidavit.claims.extractor import extract_claims

    answer = (
        "The tower was completed in 1889 and is 330 m tall [1]. It was designed by Eiffel's firm."
        "\n\n- Paris has 2.1 million inhabitants [2].\n- The U.S. embassy is on Avenue Gabriel."
    )
    claims = extract_claims(answer)
    by_sentence: dict[int, list[str]] = {}
    for c in claims:
        by_sentence.setdefault(c.sentence_index, []).append(c.id)
    # the first sentence holds two claims; verify only one of them, and everything else
    first = by_sentence[0]
    assert len(first) == 2
    decisions = [dec(c.id, "unverified" if c.id == first[1] else "verified") for c in claims]
    out = render(answer, claims, decisions, "strict")
    assert out.text.split("\n\n(")[0] == (
        "It was designed by Eiffel's firm.\n\n"
        "- Paris has 2.1 million inhabitants [2].\n- The U.S. embassy is on Avenue Gabriel."
    )
    assert [s.claim_ids for s in out.sentences] == [tuple(v) for v in by_sentence.values()]


def test_unknown_mode_lists_valid_ones() -> None:
    import pytest

    from affidavit.core.errors import PolicyError

    with pytest.raises(PolicyError, match="valid modes: strict, mixed, debug"):
        render(ANSWER, CLAIMS, DECISIONS, "loud")  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="ab .!?\n-[]1#:", max_size=80),
    st.lists(
        st.tuples(
            st.integers(0, 90),
            st.integers(0, 30),
            st.sampled_from(["verified", "unverified", "blocked"]),
        ),
        max_size=6,
    ),
    st.sampled_from(["strict", "mixed", "debug"]),
)
def test_render_never_crashes_and_strict_shows_only_verified(
    answer: str, specs: list[tuple[int, int, Decision]], mode: Literal["strict", "mixed", "debug"]
) -> None:
    claims = [Claim(id=f"c{i}", text="x", start=s, end=s + n) for i, (s, n, _) in enumerate(specs)]
    decisions = [dec(f"c{i}", d) for i, (_, _, d) in enumerate(specs)]
    out = render(answer, claims, decisions, mode)
    truth = {f"c{i}": d for i, (_, _, d) in enumerate(specs)}
    for sent in out.sentences:
        assert answer[sent.start : sent.end] == sent.text
        if mode == "strict" and sent.shown:
            assert sent.claim_ids and all(truth[c] == "verified" for c in sent.claim_ids)
    if mode == "strict":
        placed = {c for s in out.sentences for c in s.claim_ids}
        if any(truth[c.id] != "verified" and c.id not in placed for c in claims):
            assert not any(s.shown for s in out.sentences)  # unplaceable: nothing shown


# --- citations are shown only where the verifier found support ---------------------------------


def test_mixed_and_debug_show_no_citation_on_a_sentence_that_is_not_verified() -> None:
    for mode in ("mixed", "debug"):
        out = render(ANSWER, CLAIMS, DECISIONS, mode)  # type: ignore[arg-type]
        body = out.text.split("\n--- debug ---")[0]
        assert "[verified] Paris is the capital of France [1]." in body
        assert "[blocked] It was founded in 1925." in body and "[2]" not in body
        assert "[verified] The Eiffel Tower is 330 m tall. [3]" in body
        founded = out.sentences[2]
        assert founded.text == "It was founded in 1925 [2]."  # the original wording, kept
        assert founded.shown_text == "It was founded in 1925."
        assert (founded.citations, founded.withdrawn_citations) == ((), (2,))
        assert out.sentences[1].citations == (1,)


def test_a_verified_sentence_shows_only_the_passages_its_evidence_came_from() -> None:
    answer = "Paris is in France [1][2]. Rome is in Italy [3]."
    claims = [claim_at("c1", "Paris is in France", answer), claim_at("c2", "Rome", answer)]
    decisions = [dec("c1", "verified"), dec("c2", "verified")]
    out = render(answer, claims, decisions, "strict", evidence={"c1": (2,), "c2": ()})
    assert out.text == "Paris is in France [2]. Rome is in Italy."
    assert [(s.citations, s.withdrawn_citations) for s in out.sentences] == [
        ((2,), (1,)),
        ((), (3,)),
    ]


def test_the_rendered_text_is_the_sentences_as_shown() -> None:
    for mode in ("strict", "mixed"):
        out = render(ANSWER, CLAIMS, DECISIONS, mode)  # type: ignore[arg-type]
        body = out.text.split("\n\n(Withheld")[0]
        joined = "".join(
            s.lead + (s.shown_text if mode == "strict" else f"[{s.decision}] {s.shown_text}")
            for s in out.sentences
            if s.shown
        )
        assert joined == body
