"""An allowlist that is set but empty closes the source policy; only an unset one is open."""

from __future__ import annotations

import affidavit
from affidavit.core.settings import AuditSettings
from affidavit.core.types import Chunk
from affidavit.policy.sources import apply_allowlist

WEB = Chunk(text="The Forth Bridge opened on 4 March 1890.", url="https://en.wikipedia.org/x")
LOCAL = Chunk(text="The Forth Bridge opened on 4 March 1890.", url=None)


def test_unset_allows_every_well_formed_url() -> None:
    kept, blocked = apply_allowlist([WEB, LOCAL], AuditSettings())
    assert kept == [WEB, LOCAL] and not blocked


def test_set_but_empty_allows_no_web_source() -> None:
    kept, blocked = apply_allowlist([WEB, LOCAL], AuditSettings(allowlist=[]))
    assert kept == [LOCAL]
    assert blocked[0].reason == "not_allowlisted" and "empty" in blocked[0].detail
    _, blocked2 = apply_allowlist([LOCAL], AuditSettings(allowlist=[], require_url=True))
    assert blocked2[0].reason == "missing_url"


def test_an_empty_allowlist_in_an_audit_fails_the_answer() -> None:
    report = affidavit.audit(
        "When did the Forth Bridge open?",
        [{"text": WEB.text, "url": WEB.url}],
        "The Forth Bridge opened on 4 March 1890.",
        {"mode": "guardrail", "allowlist": []},
    )
    assert report.trust_passed is False
