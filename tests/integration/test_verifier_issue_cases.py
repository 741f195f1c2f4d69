"""Issue 24: the clear cases users found, against the verifier ``affidavit check`` runs by default.

Each came out wrong before (the fast MiniLM verifier alone): the README's own audit example
unsupported, a sentence of the evidence restated with a name for its pronoun contradicted,
a wrong country supported, swapped roles verified.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.core.settings import load_settings
from affidavit.pipeline.check import check

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

CURIE = (
    "Marie Curie was the first woman to win a Nobel Prize. She shared the 1903 Nobel Prize in "
    "Physics with Pierre Curie and Henri Becquerel, and she won the 1911 Nobel Prize in Chemistry "
    "alone. She remains the only person to win Nobel Prizes in two different scientific fields."
)
APOLLO = json.loads((ROOT / "sample_corpus" / "docs" / "space.jsonl").read_text().splitlines()[0])[
    "text"
]
FORTH = json.loads((ROOT / "examples" / "audit_sample.json").read_text())["chunks"][0]["text"]
# HaluEval qa knowledge of "Are Thom Yorke and Bruce Guthro both members of ... Radiohead?"
RADIOHEAD = (
    "Thomas Edward Yorke (born 7 October 1968) is an English musician and composer best known as "
    "the singer and principal songwriter of the alternative rock band Radiohead.Bruce Guthro (born "
    "Bruce Guthrie on August 31, 1961) is a Canadian singer / songwriter, from Cape Breton Island, "
    "Nova Scotia. Guthro has recorded as a solo artist, and in 1998 joined the Scottish folk rock "
    "band Runrig, whilst still pursuing his solo career."
)


def _label(claim: str, evidence: str) -> str:
    return check(claim, [evidence], settings=load_settings()).label


def test_the_readme_example_sentence_is_supported() -> None:
    assert _label("The Forth Bridge opened on 4 March 1890.", FORTH) == "supported"


def test_the_readme_audit_certify_example_passes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"AFFIDAVIT_HOME": str(home)}
    runner = CliRunner()
    assert runner.invoke(app, ["keys", "generate"], env=env).exit_code == 0
    cert = tmp_path / "cert.json"
    out = runner.invoke(
        app,
        ["audit", str(ROOT / "examples" / "audit_sample.json"), "--certify", str(cert)],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert runner.invoke(app, ["certificate", "verify", str(cert)], env=env).exit_code == 0


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # the fast model supports it (p 0.63): the wrong-place check withholds it
        ("Paris is in Germany.", "Paris is the capital of France."),
        # the lexical who-did-what check: the evidence gives the predicate to Armstrong
        ("Buzz Aldrin became the first person to step onto the lunar surface.", APOLLO),
        # the fast model supports it (p 0.66) from the sentences about Armstrong and Aldrin;
        # against the sentences about Collins it does not (subject focus)
        ("Michael Collins walked on the Moon with Armstrong.", APOLLO),
        # a wrong attribute (ask, HaluEval qa): the model supports it (p 0.88) from Yorke's
        # sentence naming the band and Guthro's naming another band; the sentences about
        # Guthro alone do not name Radiohead (subject focus)
        ("Bruce Guthro is a member of the alternative rock band Radiohead.", RADIOHEAD),
    ],
)
@pytest.mark.parametrize("case", ["as written", "lower case"])
def test_wrong_place_and_swapped_roles_are_not_supported(
    claim: str, evidence: str, case: str
) -> None:
    # written all in lower case, each was supported (p 0.58 to 0.92): the checks and the
    # who-did-what rules find names by their capitals, and the claim had none
    if case == "lower case":
        claim = claim.lower()
    settings = load_settings()
    verdict = check(claim, [evidence], settings=settings)
    assert verdict.label != "supported"
    # a withheld claim never reports a p(supported) that a consumer thresholding p_entail would
    # read as support (it was the combiner's 0.63 for "Paris is in Germany."); the stages keep it
    assert verdict.p_entail < settings.policy.tau_entail


@pytest.mark.parametrize(
    "claim",
    [
        "Thomas Edward Yorke is the singer of the alternative rock band Radiohead.",
        "Bruce Guthro joined the Scottish folk rock band Runrig in 1998.",
    ],
)
def test_what_the_evidence_says_of_each_member_stays_supported(claim: str) -> None:
    assert _label(claim, RADIOHEAD) == "supported"
    assert _label(claim.lower(), RADIOHEAD) == "supported"


# HaluEval qa knowledge of "What county is the Moscow Hemp Fest held in?"
HEMP_FEST = (
    "The Moscow Hemp Fest (sometimes Moscow Hempfest) is an annual cannabis event held in Moscow, "
    "Idaho, in the United States. It began in 1996 for the University of Idaho's Mom's Weekend."
    'The University of Idaho (officially abbreviated UI, locally referred to as "the U of I") is '
    "the U.S. state of Idaho's oldest public university, located in the city of Moscow in Latah "
    "County in the northern portion of the state."
)


def test_a_county_the_evidence_does_not_name_is_not_supported() -> None:
    # a hallucinated answer fed to ask was shown verified: every word of "Idaho County" is in
    # the passage, the county it names is Latah County
    assert _label("The Moscow Hemp Fest is held in Idaho County.", HEMP_FEST) != "supported"
    assert _label("The Moscow Hemp Fest is held in Latah County.", HEMP_FEST) == "supported"


def test_a_fort_founded_by_someone_else_is_not_supported() -> None:
    # a hallucinated answer fed to ask was shown verified (p 0.85)
    evidence = (
        "The Kern and Sutter massacres refer to a campaign of terrorism on March 23, 1847 in which "
        "men led by Captain Edward M. Kern and rancher John Sutter killed twenty California "
        "Indians.John Augustus Sutter (February 20, 1803 – June 18, 1880), born Johann August "
        "Suter, was a German-born Swiss pioneer of California known for establishing Sutter's "
        "Fort in the area that would eventually become Sacramento, California, the state's capital."
    )
    claim = "Captain Edward M. Kern established a fort in Sacramento, California."
    assert _label(claim, evidence) != "supported"


def test_a_birth_date_in_a_parenthesis_is_supported() -> None:
    # ask withheld this right answer (HaluEval qa): the model scores it p_entail 0.25
    evidence = (
        "Elspeth Mary Campbell, Baroness Campbell of Pittenweem (born January 1940) is the wife "
        "of the former Liberal Democrat leader Sir Menzies Campbell."
    )
    assert _label("Elspeth Campbell was born on January 1940.", evidence) == "supported"
    assert _label("Elspeth Campbell was born in 1941.", evidence) != "supported"


def test_unrelated_same_topic_evidence_is_unsupported_not_contradicted() -> None:
    assert _label("Marie Curie was born in Warsaw.", CURIE) == "unsupported"


# the sample corpus's Marie Curie document as `make demo` retrieves it
DEMO_CURIE = (
    "Marie Curie\nMarie Skłodowska Curie (7 November 1867 - 4 July 1934) was a Polish and "
    "naturalised-French physicist and chemist who conducted pioneering research on "
    "radioactivity.\nIn 1898, working with her husband Pierre Curie, she announced the discovery "
    "of two new elements: polonium, which she named after her native Poland, and radium."
)
DEMO_EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "Construction began in January 1887 and was completed in March 1889."
)


# as `ask` refines it: the relevant sentences, the one naming her after the dated one
DEMO_CURIE_REFINED = (
    "In 1898, working with her husband Pierre Curie, she announced the discovery of two new "
    "elements: polonium, which she named after her native Poland, and radium. Marie Curie was the "
    "first woman to win a Nobel Prize."
)


@pytest.mark.parametrize("evidence", [DEMO_CURIE, DEMO_CURIE_REFINED])
def test_the_demo_curie_answer_is_supported(evidence: str) -> None:
    # the demo's true answer was unverified (p 0.25-0.48): the model reads a date at the end of
    # a claim as a sign of contradiction; the statement without it is supported (p 0.90) by the
    # sentence that dates it "In 1898"
    assert _label("Marie Curie discovered polonium and radium in 1898.", evidence) == "supported"
    assert _label("Pierre Curie discovered polonium and radium in 1898.", evidence) != "supported"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Marie Curie discovered polonium and radium in 1899.", DEMO_CURIE),
        ("Marie Curie discovered uranium and radium in 1898.", DEMO_CURIE),
        ("Pierre Curie discovered polonium and radium in 1898.", DEMO_CURIE),
        # the model reads a date in front as support whatever its value (p 0.71)
        ("In 1887, the Eiffel Tower was completed.", DEMO_EIFFEL),
        ("The Eiffel Tower was completed in 1887.", DEMO_EIFFEL),
    ],
)
def test_a_wrong_date_or_word_beside_it_is_not_supported(claim: str, evidence: str) -> None:
    assert _label(claim, evidence) != "supported"
