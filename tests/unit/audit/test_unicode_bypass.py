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
    ],
)
def test_each_trick_is_caught_and_withheld(response: str) -> None:
    report = affidavit.audit(QUESTION, EVIDENCE, response, {"mode": "guardrail"})
    assert report.trust_passed is False
    assert report.guarded_response != response


def test_the_plain_faithful_answer_still_passes() -> None:
    ok = "Polonium was discovered by Marie Curie in 1898 in Paris."
    report = affidavit.audit(QUESTION, EVIDENCE, ok, {"mode": "guardrail"})
    assert report.trust_passed is True
    # fullwidth digits and a soft hyphen inside a word are the same text, and pass
    same = "Polonium was disco\u00advered by Marie Curie in \uff11\uff18\uff19\uff18 in Paris."
    assert affidavit.audit(QUESTION, EVIDENCE, same, {"mode": "guardrail"}).trust_passed
