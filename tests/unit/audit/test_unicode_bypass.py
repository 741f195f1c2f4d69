"""Issue 25.10: Unicode tricks that walked past the default audit's typed checks."""

from __future__ import annotations

import pytest

import affidavit

EVIDENCE = [
    {
        "text": "Polonium was discovered by Marie Curie in 1898 in Paris.",
        "url": "https://en.wikipedia.org/wiki/Polonium",
    }
]
QUESTION = "Who discovered polonium?"


@pytest.mark.parametrize(
    "response",
    [
        "Polonium was n\u200do\u200dt discovered by Marie Curie in 1898 in Paris.",  # ZWJ
        "Polonium was n\u200co\u200ct discovered by Marie Curie in 1898 in Paris.",  # ZWNJ
        "Polonium was \uff4e\uff4f\uff54 discovered by Marie Curie in 1898 in Paris.",  # fullwidth
        "Polonium was n\u043et discovered by Marie Curie in 1898 in Paris.",  # Cyrillic o
        "Polonium was n\u0435ver discovered by Marie Curie in 1898 in Paris.",  # Cyrillic e
        "Polonium wasn\u200b't discovered by Marie Curie in 1898 in Paris.",  # ZWSP in n't
        "Polonium was discovered by Marie Curie in \u00b9\u2079\u00b2\u2075 in Paris.",  # sup
        "Polonium was discovered by \u0420ierre Curie in 1898 in Paris.",  # Cyrillic P
        "Polonium was discovered by Marie Curie in 1898 in L\u043endon.",  # Cyrillic o
        # found by probing after the fix: invisible marks that are not format characters, and
        # look-alikes outside Cyrillic and Greek
        "Polonium was n\ufe0fot discovered by Marie Curie in 1898 in Paris.",  # variation sel.
        "Polonium was n\u034fot discovered by Marie Curie in 1898 in Paris.",  # grapheme joiner
        "Polonium was n\u3164ot discovered by Marie Curie in 1898 in Paris.",  # Hangul filler
        "Polonium was \u0274\u1d0f\u1d1b discovered by Marie Curie in 1898 in Paris.",  # ɴᴏᴛ
        "Polonium was n\u0585t discovered by Marie Curie in 1898 in Paris.",  # Armenian oh
        "Polonium was discovered by P\u0131erre Curie in 1898 in Paris.",  # dotless i
        "Polonium was discovered by \u1d18\u026a\u1d07\u0280\u0280\u1d07 Curie in 1898 in Paris.",
    ],
)
def test_each_trick_is_caught_and_withheld(response: str) -> None:
    report = affidavit.audit(QUESTION, EVIDENCE, response, {"mode": "guardrail"})
    assert report.trust_passed is False
    assert report.guarded_response != response
    assert report.claims[0].text == response  # the user is shown the text as written


def test_the_plain_faithful_answer_still_passes() -> None:
    ok = "Polonium was discovered by Marie Curie in 1898 in Paris."
    report = affidavit.audit(QUESTION, EVIDENCE, ok, {"mode": "guardrail"})
    assert report.trust_passed is True
    # fullwidth digits and a soft hyphen inside a word are the same text, and pass
    same = "Polonium was disco\u00advered by Marie Curie in \uff11\uff18\uff19\uff18 in Paris."
    assert affidavit.audit(QUESTION, EVIDENCE, same, {"mode": "guardrail"}).trust_passed
