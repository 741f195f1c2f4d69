"""StreamGuard: a streamed answer is released sentence by sentence, each once decided."""

from __future__ import annotations

import pytest

from affidavit.audit.auditor import Auditor
from affidavit.audit.stream import StreamGuard
from affidavit.core.errors import EnforcementError
from affidavit.core.report import WITHHELD_MARKER

CHUNKS = [
    {
        "text": "The Forth Bridge opened on 4 March 1890. It was designed by John Fowler.",
        "url": "https://en.wikipedia.org/wiki/Forth_Bridge",
    }
]
GOOD = "The Forth Bridge opened on 4 March 1890."
BAD = "The Forth Bridge opened on 4 March 1925."
ANSWER = f"{GOOD} {BAD}\n\n- The bridge was designed by John Fowler."


def _stream(guard: StreamGuard, text: str, size: int) -> list[str]:
    out = [guard.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return [*out, guard.finish()]


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_guardrail_stream_equals_the_guarded_answer_however_it_is_split(size: int) -> None:
    auditor = Auditor({"mode": "guardrail"})
    guard = StreamGuard(auditor, "When did it open?", CHUNKS)
    pieces = _stream(guard, ANSWER, size)
    assert "".join(pieces) == guard.released
    assert guard.report is not None and guard.report.trust_passed is False
    assert guard.released == guard.report.guarded_response
    assert "1925" not in guard.released and WITHHELD_MARKER in guard.released
    assert guard.released.startswith(GOOD)
    assert len(guard.decision_ms) == 3


def test_nothing_is_released_before_its_sentence_is_complete() -> None:
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", CHUNKS)
    shown = ""
    for i, ch in enumerate(BAD):
        shown += guard.feed(ch)
        # the hallucinated date is typed out in full and still nothing of it shows
        assert shown == "", i
    assert guard.finish() == WITHHELD_MARKER


def test_without_evidence_every_sentence_is_withheld() -> None:
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", [])
    assert GOOD not in "".join(_stream(guard, f"{GOOD} {GOOD}", 5))


def test_enforce_raises_at_the_first_failing_sentence_having_released_only_what_passed() -> None:
    guard = StreamGuard(Auditor({"mode": "enforce"}), "q", CHUNKS)
    shown = ""
    with pytest.raises(EnforcementError) as err:
        for i in range(0, len(ANSWER), 4):
            shown += guard.feed(ANSWER[i : i + 4])
        shown += guard.finish()
    assert shown == GOOD
    assert err.value.report is not None and "1925" in err.value.report.response


def test_audit_mode_releases_every_sentence_as_written_once_decided() -> None:
    guard = StreamGuard(Auditor({"mode": "audit"}), "q", CHUNKS)
    assert "".join(_stream(guard, ANSWER, 2)) == ANSWER
    assert guard.report is not None and guard.report.trust_passed is False


def test_a_sentence_said_twice_is_withheld_twice() -> None:
    """The extractor keeps one claim for a repeated sentence; guardrail withheld only the first
    occurrence and showed the repeat (streamed or not)."""
    twice = f"{BAD} {BAD}"
    report = Auditor({"mode": "guardrail"}).audit("q", CHUNKS, twice)
    assert report.guarded_response == f"{WITHHELD_MARKER} {WITHHELD_MARKER}"
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", CHUNKS)
    assert "1925" not in "".join(_stream(guard, twice, 3))


@pytest.mark.parametrize(
    "twice",
    [
        f"{BAD[:-1]} [1]. {BAD[:-1]} [2].",  # the repeat cites another passage
        f"{BAD} {BAD[:-1]}!",  # or ends differently
        f"{BAD}\n\n- **{BAD[:-1]}**",  # or is a list item in bold
    ],
)
def test_a_sentence_repeated_with_other_citations_or_punctuation_is_withheld_twice(
    twice: str,
) -> None:
    """The extractor keeps one claim for both (its text normalised: citations, markdown and
    punctuation dropped); guardrail withheld only the exact repeat and showed these."""
    report = Auditor({"mode": "guardrail"}).audit("q", CHUNKS, twice)
    assert report.guarded_response is not None
    assert "1925" not in report.guarded_response
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", CHUNKS)
    assert "1925" not in "".join(_stream(guard, twice, 3))


EINSTEIN = [{"text": "Albert Einstein was born in Ulm in 1879.", "url": "https://example.org/e"}]


def test_a_sentence_the_extractor_rewrote_is_withheld_where_it_is_said_again() -> None:
    """The claim's text is the extractor's rewrite ("Albert Einstein died in 1955." for "He died
    in 1955."): guardrail looked for the rewrite, found only the first occurrence's span, and
    showed the sentence said again."""
    answer = "Albert Einstein was born in Ulm in 1879. He died in 1955. He died in 1955."
    report = Auditor({"mode": "guardrail"}).audit("q", EINSTEIN, answer)
    assert [c.text for c in report.claims][1] != "He died in 1955."  # rewritten
    assert report.guarded_response is not None
    assert "1955" not in report.guarded_response
    assert report.guarded_response.startswith("Albert Einstein was born in Ulm in 1879.")
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", EINSTEIN)
    assert "1955" not in "".join(_stream(guard, answer, 3))


def test_a_rewritten_sentence_said_again_of_someone_else_keeps_its_own_verdict() -> None:
    # the same words, rewritten for another person and passing: audited on its own, shown
    chunks = [
        *EINSTEIN,
        {"text": "Niels Bohr was born in Copenhagen. He died in 1955.", "url": "https://b.org"},
    ]
    answer = (
        "Albert Einstein was born in Ulm in 1879. He died in 1955. "
        "Niels Bohr was born in Copenhagen. He died in 1955."
    )
    report = Auditor({"mode": "guardrail"}).audit("q", chunks, answer)
    assert [c.supported for c in report.claims] == [True, False, True, True], report.claims
    assert report.guarded_response == (
        f"Albert Einstein was born in Ulm in 1879. {WITHHELD_MARKER} "
        "Niels Bohr was born in Copenhagen. He died in 1955."
    )
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", chunks)
    assert "".join(_stream(guard, answer, 3)) == report.guarded_response


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 11, 1000])
@pytest.mark.parametrize(
    "answer",
    [
        f"{BAD} [1]\n\n{GOOD} [1]",  # the citation after the full stop, as models often put it
        f"{GOOD} [1] {BAD} [1] {GOOD} [1]",
        f"{BAD} [1, 2]\n- The bridge was designed by John Fowler. [1]",
    ],
    ids=["blank-line", "between-good-ones", "before-a-list"],
)
def test_a_citation_after_the_stop_of_a_withheld_sentence_adds_no_second_marker(
    answer: str, size: int
) -> None:
    """The sentence is decided at its full stop; the "[1]" after it arrives later and belongs to
    the same withheld claim. The stream showed a second withheld marker for it, where the
    non-streamed guarded answer shows one."""
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", CHUNKS)
    _stream(guard, answer, size)
    assert guard.report is not None
    assert guard.released == guard.report.guarded_response
    assert guard.released.count(WITHHELD_MARKER) == 1


FOWLER = "It was designed by John Fowler."


@pytest.mark.parametrize("cut", [1, 10, 25, len(BAD) - 1])
def test_a_piece_that_completes_two_sentences_releases_nothing_of_the_third(cut: int) -> None:
    """One piece held two whole sentences and the start of a third: the second was decided up
    to its end plus the first's length, so the start of the third (of a sentence withheld once
    complete) was released undecided ("The Forth Bridge opened o")."""
    answer = f"{GOOD} {FOWLER} {BAD} {FOWLER}"
    at = len(GOOD) + len(FOWLER) + 2 + cut
    guard = StreamGuard(Auditor({"mode": "guardrail"}), "q", CHUNKS)
    first = guard.feed(answer[:at])
    assert first == f"{GOOD} {FOWLER}"
    guard.feed(answer[at:])
    guard.finish()
    assert guard.report is not None
    assert guard.released == guard.report.guarded_response
    assert guard.released == f"{GOOD} {FOWLER} {WITHHELD_MARKER} {FOWLER}"
