"""The packaged (trained) verifier model end to end; skipped until training has shipped it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.core.types import Chunk
from affidavit.verify.cascade import ClaimCascade, claim_from_text
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir, read_config

pytestmark = pytest.mark.integration

MODEL = packaged_model_dir()
needs_model = pytest.mark.skipif(
    not (MODEL / "config.json").is_file(),
    reason="no packaged model yet (training/export_onnx.py writes src/affidavit/verify/model/)",
)

ENTAILED = [
    ("Paris is the capital of France.", "Paris is the capital and most populous city of France."),
    (
        "The bridge opened in 1932.",
        "Construction finished and the bridge opened to traffic in 1932.",
    ),
    (
        "Marie Curie won two Nobel Prizes.",
        "Marie Curie was awarded the Nobel Prize in Physics in 1903 and in Chemistry in 1911, "
        "making her the first person to win two Nobel Prizes.",
    ),
    ("The company is based in Oslo.", "The company has its headquarters in Oslo, Norway."),
]
NOT_ENTAILED = [
    ("Paris is the capital of Germany.", "Paris is the capital and most populous city of France."),
    ("The bridge never opened.", "Construction finished and the bridge opened to traffic in 1932."),
    (
        "Marie Curie was born in Vienna.",
        "Marie Curie was awarded the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    ),
    ("The company makes cars.", "The company has its headquarters in Oslo, Norway."),
]


@pytest.fixture(scope="module")
def model() -> OnnxCrossEncoder:
    return OnnxCrossEncoder(MODEL, threads=2)


@needs_model
def test_packaged_model_loads_with_its_sha256_and_labels(model: OnnxCrossEncoder) -> None:
    cfg = read_config(MODEL)
    assert model.sha256 == cfg.sha256
    assert model.labels == ["entail", "neutral", "contradict"]
    assert model.max_len >= 128


@needs_model
def test_model_ranks_entailed_pairs_above_non_entailed(model: OnnxCrossEncoder) -> None:
    pos = [s.p_entail for s in model.score(ENTAILED)]
    neg = [s.p_entail for s in model.score(NOT_ENTAILED)]
    # every entailed pair above its own corrupted twin (same evidence)
    assert sum(p > n for p, n in zip(pos, neg, strict=True)) >= 3, (pos, neg)
    # measured with the first shipped model (Dec 1): mean 0.51 vs 0.34; a weak but real margin
    assert sum(pos) / len(pos) > sum(neg) / len(neg) + 0.1


@needs_model
def test_scraps_and_same_topic_sentences_do_not_entail(model: OnnxCrossEncoder) -> None:
    # the models before the grounding fine-tune gave "offset." p_entail 0.55 and called the
    # Warsaw sentence a contradiction (0.59)
    claim = "Marie Curie won the Nobel Prize in Physics in 1903."
    scraps = ["offset.", "And we just ran.", "Marie Curie was born in Warsaw."]
    stating = "In 1903 Marie Curie shared the Nobel Prize in Physics with Pierre Curie."
    scores = model.score([(claim, e) for e in scraps])
    for s in scores:
        assert s.p_entail < 0.2 and s.p_contradict < 0.5
    # the stating sentence entails (strictly more than any scrap)
    assert model.score([(claim, stating)])[0].p_entail > max(s.p_entail for s in scores)


@needs_model
@pytest.mark.xfail(
    strict=True,
    reason="known regression of release 6: 'shared the Nobel Prize' against 'won' scores "
    "p_contradict 0.56, p_entail 0.37 (release 5: entailed); see the model card's limitations",
)
def test_shared_prize_paraphrase_entails(model: OnnxCrossEncoder) -> None:
    claim = "Marie Curie won the Nobel Prize in Physics in 1903."
    stating = "In 1903 Marie Curie shared the Nobel Prize in Physics with Pierre Curie."
    th = read_config(MODEL).model_extra["thresholds"]  # type: ignore[index]
    tau = th.get("model_tau_entail", th["tau_entail"])
    assert model.score([(claim, stating)])[0].p_entail >= tau


@needs_model
def test_a_pairs_score_does_not_depend_on_its_batch(model: OnnxCrossEncoder) -> None:
    # the base is quantised at load with run-time activation scales: batched, the Curie pair
    # below scored p_entail 0.40 alone and 0.68-0.72 next to other pairs
    claim = "Marie Curie discovered polonium and radium in 1898."
    ev = (
        "In 1898, working with her husband Pierre Curie, she announced the discovery of two new "
        "elements: polonium, which she named after her native Poland, and radium. Marie Curie was "
        "the first woman to win a Nobel Prize."
    )
    alone = model.score([(claim, ev)])[0]
    batched = model.score([ENTAILED[2], (claim, ev), NOT_ENTAILED[0]])[1]
    assert alone.p_entail == pytest.approx(batched.p_entail, abs=1e-5)
    # release 6 quantises nothing at run time (issue 12): batching is safe and allowed again
    assert not model.describe()["dynamic_quantization"]


@needs_model
def test_fact_deep_in_a_long_document_is_found_by_windows(model: OnnxCrossEncoder) -> None:
    filler = " ".join(
        f"In {1900 + i} the town council discussed the repair of road number {i}."
        for i in range(60)
    )
    doc = f"{filler} The Eiffel Tower was completed in 1889 for the World's Fair. {filler}"
    assert model.tokenizer.count(doc) > 4 * model.max_len
    v = ClaimCascade(
        VerifySettings(cascade=["checks", "cross_encoder"], threads=2),
        PolicySettings(),
        scorers={"cross_encoder": model},
    )
    verdict = v.verify(
        claim_from_text("The Eiffel Tower was completed in 1889."), [Chunk(text=doc, id="doc")]
    )
    assert verdict.complete, verdict.errors
    assert any("windows scored" in s.detail for s in verdict.stages if s.stage == "cross_encoder")
    if verdict.label == "supported":
        assert any("Eiffel" in e.text for e in verdict.evidence)
    wrong = v.verify(
        claim_from_text("The Eiffel Tower was completed in 1899."), [Chunk(text=doc, id="doc")]
    )
    assert wrong.label != "supported"


@needs_model
def test_check_cli_with_the_packaged_model(tmp_path: Path) -> None:
    rows = [{"id": i, "claim": c, "evidence": [e]} for i, (c, e) in enumerate(ENTAILED[:2])]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows))
    res = CliRunner().invoke(app, ["check", str(src), "--threads", "2"])
    assert res.exit_code == 0, res.output
    out = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert [o["id"] for o in out] == [0, 1]


def _default_cascade() -> ClaimCascade:
    from affidavit.core.settings import load_settings
    from affidavit.verify.calibration import effective_policy

    settings = load_settings()
    return ClaimCascade(settings.verify, effective_policy(settings))


@needs_model
def test_same_topic_unrelated_evidence_is_unsupported_not_contradicted() -> None:
    # issue 12: in ask, a claim about one university checked against a passage about another was
    # withheld as "contradicted"; unrelated evidence says nothing against a claim
    v = _default_cascade().verify(
        claim_from_text("The University of Texas at Austin was founded in 1883."),
        [
            Chunk(
                text="The University of Virginia is a public research university in "
                "Charlottesville. It was founded in 1819 by Thomas Jefferson, and its "
                "original Academical Village is a World Heritage Site."
            )
        ],
    )
    assert v.label == "unsupported", v.reason


EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "Construction began in January 1887 and was completed in March 1889."
)


@needs_model
@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "Marie Curie discovered polonium and radium in 1898.",
            "Marie Curie was a Polish and naturalised-French physicist and chemist. In 1898, "
            "working with her husband Pierre Curie, she announced the discovery of two new "
            "elements: polonium, which she named after her native Poland, and radium.",
        ),
        ("The Eiffel Tower was completed in March 1889.", EIFFEL),
        (
            "The Apollo 11 lunar module landed on the Moon on July 20, 1969.",
            "Apollo 11 was the American spaceflight that first landed humans on the Moon. Neil "
            "Armstrong and Buzz Aldrin landed the lunar module Eagle on July 20, 1969.",
        ),
    ],
)
def test_the_demos_true_answers_are_verified(claim: str, evidence: str) -> None:
    v = _default_cascade().verify(claim_from_text(claim), [Chunk(text=evidence)])
    assert v.label == "supported", v.reason
    assert v.complete and v.evidence


@needs_model
@pytest.mark.parametrize(
    "claim",
    ["The Eiffel Tower was completed in 1887.", "The Eiffel Tower was completed in January 1887."],
)
def test_a_date_taken_from_the_other_clause_is_not_verified(claim: str) -> None:
    # every word of the claim is in the evidence: only reading which event the date belongs to
    # tells it is false
    v = _default_cascade().verify(claim_from_text(claim), [Chunk(text=EIFFEL)])
    assert v.label != "supported", v.reason


@needs_model
def test_a_summary_with_an_invented_sentence_is_not_supported() -> None:
    doc = (
        "Marie Curie was a Polish and naturalised-French physicist and chemist. In 1898, working "
        "with her husband Pierre Curie, she announced the discovery of two new elements: "
        "polonium, which she named after her native Poland, and radium. She was awarded the "
        "Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911."
    )
    cascade = _default_cascade()
    first = "Marie Curie discovered polonium and radium in 1898."
    faithful = f"{first} She won the Nobel Prize in Chemistry in 1911."
    invented = f"{first} She later founded a hospital in Madrid."
    assert cascade.verify(claim_from_text(faithful), [Chunk(text=doc)]).label == "supported"
    assert cascade.verify(claim_from_text(invented), [Chunk(text=doc)]).label != "supported"


@needs_model
def test_the_models_contradiction_of_a_true_negated_sentence_is_not_shown() -> None:
    # HaluEval summaries, true sentences shown contradicted: the model read "did not damage" as
    # the opposite of "untouched by Saudi bombs" (p_contradict 0.96). Not verified, not
    # contradicted; an opposite statement is still caught by the typed checks.
    v = _default_cascade()
    ev = (
        "Dozens of buildings were destroyed. At the airport, the landing strips and airport "
        "terminal were untouched by Saudi bombs, but buildings on the outskirts of the airport "
        "and planes along the airstrip had been blown to bits."
    )
    verdict = v.verify(
        claim_from_text("The Saudi bombs did not damage the landing strips."),
        [Chunk(text=ev, id="ev")],
    )
    assert verdict.label == "unsupported", verdict.reason
    flip = v.verify(
        claim_from_text("Paris is not the capital of France."),
        [Chunk(text="Paris is the capital of France.", id="ev")],
    )
    assert flip.label == "contradicted", flip.reason
