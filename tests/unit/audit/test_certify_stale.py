"""An audit certificate never records as verified what the audit's freshness policy rejects."""

from __future__ import annotations

from affidavit.audit import audit
from affidavit.audit.certify import report_verdicts
from affidavit.core.types import Verdict

CHUNK = {
    "text": "The Forth Bridge opened on 4 March 1890.",
    "url": "https://en.wikipedia.org/wiki/Forth_Bridge",
}
ANSWER = "The Forth Bridge opened on 4 March 1890."


def _with_verifier_support(freshness: str):  # type: ignore[no-untyped-def]
    """The audit report as if the entailment verifier supported its one claim."""
    report = audit("When did the Forth Bridge open?", [CHUNK], ANSWER)
    claim = report.claims[0]
    verdict = Verdict(
        claim_id=claim.id,
        label="supported",
        p_entail=0.97,
        p_neutral=0.02,
        p_contradict=0.01,
        reason="combiner: p(supported) 0.97 >= 0.5",
        evidence=(claim.evidence,) if claim.evidence is not None else (),
    )
    return report.model_copy(
        update={"claims": (claim.model_copy(update={"verdict": verdict, "freshness": freshness}),)}
    )


def test_a_stale_source_under_stale_action_fail_is_not_certified_verified() -> None:
    report = _with_verifier_support("supported_stale")
    [v] = report_verdicts(report, verifier_used=True, stale_fails=True)
    assert v.label == "unsupported"
    assert "stale" in v.reason
    assert v.complete  # a decision of the policy, not a check that could not run


def test_a_stale_source_that_only_warns_stays_verified() -> None:
    report = _with_verifier_support("supported_stale")
    [v] = report_verdicts(report, verifier_used=True, stale_fails=False)
    assert v.label == "supported"
    [fresh] = report_verdicts(
        _with_verifier_support("supported_fresh"), verifier_used=True, stale_fails=True
    )
    assert fresh.label == "supported"


def test_the_signed_certificate_does_not_say_verified(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from affidavit.audit.certify import certify_report
    from affidavit.certify.keys import default_key_path, generate_key
    from affidavit.core.settings import Settings

    settings = Settings(
        home=tmp_path / "home",
        audit={"use_verifier": True, "stale_action": "fail", "max_age_days": 30},
    )
    generate_key(default_key_path(settings))
    path = certify_report(_with_verifier_support("supported_stale"), settings, tmp_path / "c.json")
    [claim] = json.loads(path.read_text())["claims"]
    assert claim["decision"] != "verified", claim
    # the same audit with a fresh source is certified verified
    path = certify_report(_with_verifier_support("supported_fresh"), settings, tmp_path / "f.json")
    [claim] = json.loads(path.read_text())["claims"]
    assert claim["decision"] == "verified", claim
