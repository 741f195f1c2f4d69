"""verify.tier: fast, accurate, and the cascade sending uncertain claims to the accurate stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import CheckResult, Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.fakes import ScriptedScorer

POLICY = PolicySettings(tau_entail=0.5, tau_contradict=0.5)
CHUNKS = [Chunk(text="Paris is the capital of France. It lies on the Seine.", id="k1")]


def passing(claim: str, evidence: str) -> list[CheckResult]:
    return [CheckResult(check="number", status="pass")]


def contradicting(claim: str, evidence: str) -> list[CheckResult]:
    return [
        CheckResult(
            check="number", status="fail", claim_value="3", evidence_value="2", reason="3 vs 2"
        )
    ]


def tiered(fast: ScriptedScorer, accurate: ScriptedScorer | None, **kw: object) -> ClaimCascade:
    settings = VerifySettings(
        cascade=["checks", "cross_encoder"],
        threads=1,
        tier="cascade",
        **kw,  # type: ignore[arg-type]
    )
    scorers = {"cross_encoder": fast}
    if accurate is not None:
        scorers["accurate"] = accurate
    return ClaimCascade(settings, POLICY, scorers=scorers, check_fn=passing)


def test_a_confident_fast_verdict_never_reaches_the_accurate_stage() -> None:
    fast = ScriptedScorer(default=(0.97, 0.02, 0.01))
    acc = ScriptedScorer(default=(0.05, 0.9, 0.05))
    v = tiered(fast, acc).verify(claim_from_text("Paris is in France."), CHUNKS)
    assert v.label == "supported"
    assert acc.calls == []
    assert not any(s.stage.startswith("fast:") for s in v.stages)


def test_an_uncertain_fast_verdict_takes_the_accurate_stages_verdict() -> None:
    fast = ScriptedScorer(default=(0.45, 0.5, 0.05))
    acc = ScriptedScorer(default=(0.96, 0.03, 0.01))
    v = tiered(fast, acc).verify(claim_from_text("Paris is in France."), CHUNKS)
    assert acc.calls, "the accurate stage was not asked"
    assert v.label == "supported" and v.complete
    assert v.reason.startswith("accurate stage (fast p(supported) 0.45")
    stages = [s.stage for s in v.stages]
    assert "fast:cross_encoder" in stages and stages[-1] == "cross_encoder"
    # the fast stages stay in the trace but decide nothing
    assert not any(s.decided for s in v.stages if s.stage.startswith("fast:"))


def test_the_accurate_stage_can_also_refuse_what_the_fast_model_leaned_to() -> None:
    fast = ScriptedScorer(default=(0.8, 0.15, 0.05))
    acc = ScriptedScorer(default=(0.1, 0.85, 0.05))
    v = tiered(fast, acc).verify(claim_from_text("Paris is in Germany."), CHUNKS)
    assert v.label == "unsupported"


def test_a_model_contradiction_gets_a_second_look_a_typed_check_does_not() -> None:
    fast = ScriptedScorer(default=(0.02, 0.05, 0.93))
    acc = ScriptedScorer(default=(0.95, 0.04, 0.01))
    v = tiered(fast, acc).verify(claim_from_text("Paris is in France."), CHUNKS)
    assert acc.calls and v.label == "supported"

    settings = VerifySettings(cascade=["checks", "cross_encoder"], threads=1, tier="cascade")
    acc2 = ScriptedScorer(default=(0.95, 0.04, 0.01))
    casc = ClaimCascade(
        settings,
        POLICY,
        scorers={"cross_encoder": ScriptedScorer(default=(0.3, 0.3, 0.4)), "accurate": acc2},
        check_fn=contradicting,
    )
    v2 = casc.verify(claim_from_text("Paris has 3 rivers."), CHUNKS)
    assert v2.label == "contradicted"
    assert acc2.calls == []


def test_accurate_stage_unavailable_fails_closed_for_the_claims_that_need_it(
    tmp_path: Path,
) -> None:
    settings = VerifySettings(
        cascade=["checks", "cross_encoder"],
        threads=1,
        tier="cascade",
        accurate_model_path=tmp_path / "no-such-model",
    )
    fast_sure = ScriptedScorer(default=(0.97, 0.02, 0.01))
    casc = ClaimCascade(settings, POLICY, scorers={"cross_encoder": fast_sure}, check_fn=passing)
    assert "accurate" in casc.stage_errors
    # outside the band the fast verdict stands
    assert casc.verify(claim_from_text("Paris is in France."), CHUNKS).label == "supported"
    fast_unsure = ScriptedScorer(default=(0.6, 0.35, 0.05))
    casc2 = ClaimCascade(settings, POLICY, scorers={"cross_encoder": fast_unsure}, check_fn=passing)
    v = casc2.verify(claim_from_text("Paris is in France."), CHUNKS)
    assert v.label == "unsupported" and not v.complete and v.p_entail == 0.0
    assert any("accurate" in e for e in v.errors)
    assert "needs the accurate stage" in v.reason


def test_accurate_tier_without_its_model_never_verifies(tmp_path: Path) -> None:
    settings = VerifySettings(
        cascade=["checks", "cross_encoder"],
        threads=1,
        tier="accurate",
        accurate_model_path=tmp_path / "missing",
    )
    casc = ClaimCascade(settings, POLICY, check_fn=passing)
    assert "cross_encoder" in casc.stage_errors
    v = casc.verify(claim_from_text("Paris is in France."), CHUNKS)
    assert v.label != "supported" and not v.complete


def test_band_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="accurate_band"):
        VerifySettings(accurate_band=(0.9, 0.1))


def test_describe_and_identities_name_the_accurate_stage() -> None:
    fast = ScriptedScorer(default=(0.97, 0.02, 0.01))
    acc = ScriptedScorer(default=(0.5, 0.4, 0.1), name="accurate")
    desc = tiered(fast, acc).describe()
    assert "accurate:cross_encoder" in desc["stages"]


def test_the_band_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.core.errors import ConfigError
    from affidavit.core.settings import load_settings

    monkeypatch.setenv("AFFIDAVIT_VERIFY__ACCURATE_BAND", "0.1,0.9")
    assert load_settings().verify.accurate_band == (0.1, 0.9)
    monkeypatch.setenv("AFFIDAVIT_VERIFY__ACCURATE_BAND", "[0.2, 0.8]")
    assert load_settings().verify.accurate_band == (0.2, 0.8)
    monkeypatch.setenv("AFFIDAVIT_VERIFY__ACCURATE_BAND", "0.9,0.1")
    with pytest.raises(ConfigError, match="accurate_band"):
        load_settings()


@pytest.mark.parametrize(
    "stages",
    [["checks"], ["checks", "embed_head"], ["checks", "external"], ["llm_judge"]],
)
@pytest.mark.parametrize("tier", ["accurate", "cascade"])
def test_a_tier_that_names_the_accurate_model_needs_the_model_stage(
    tier: str, stages: list[str]
) -> None:
    # without cross_encoder the accurate model never ran: the checks' lexical coverage (or a
    # weaker model) decided, and a claim restated word for word came out supported
    with pytest.raises(ValueError, match="cross_encoder"):
        VerifySettings(tier=tier, cascade=stages)  # type: ignore[arg-type]


def test_an_empty_cascade_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from affidavit.core.errors import ConfigError
    from affidavit.core.settings import load_settings

    # no stage ran, yet the word-for-word rule supported a restated claim
    with pytest.raises(ValueError, match="at least one stage"):
        VerifySettings(cascade=[])
    monkeypatch.setenv("AFFIDAVIT_VERIFY__CASCADE", "[]")
    with pytest.raises(ConfigError, match=r"verify\.cascade"):
        load_settings()
