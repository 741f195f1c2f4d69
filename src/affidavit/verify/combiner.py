"""The fitted combiner: one calibrated p(supported) from the cascade's signals, claim by claim.

A text longer than one sentence (a summary, a multi-sentence answer) is judged sentence by
sentence, each sentence against its own best evidence windows, and also whole. The signals of
those verdicts (the cross-encoder's p_entail and p_contradict, the lexical coverage of the best
window, the typed checks' outcomes, the evidence length, the number of sentences) are combined
by a logistic regression fitted on the verifier's dev rows (``training/fit_combiner.py``), not by
hand-set rules. Its weights, feature standardisation, the dev-chosen threshold and its dev fit
(next to the balanced accuracy of every input alone) are published in
``affidavit/verify/model/combiner.json``, whose sha256 the model's ``config.json`` pins.

Fail closed: the combiner only ever runs on complete verdicts; a text with any incomplete part
is unsupported whatever the combiner says (``ClaimCascade`` enforces it).

Examples:
    >>> import numpy as np
    >>> c = Combiner(features=["pe_whole"], mean=[0.5], scale=[0.25], coef=[4.0], intercept=0.0,
    ...              tau=0.5)
    >>> round(c.probability({"pe_whole": 0.9}), 3)
    0.998
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from affidavit.core.errors import ModelError

COMBINER_FILE = "combiner.json"

# every signal the combiner may use; a fitted file names the subset it kept, in order
FEATURES = (
    "pe_whole",  # model p_entail of the whole text against its best window
    "pc_whole",  # model p_contradict, whole text
    "pe_min",  # lowest p_entail over the text's sentences (the weakest sentence)
    "pe_mean",  # mean p_entail over sentences
    "pc_max",  # highest p_contradict over sentences
    "cov_whole",  # share of the text's content words in its best window
    "cov_min",  # lowest per-sentence coverage
    "conflict_any",  # a typed check found a conflicting value (number, date, polarity...)
    "missing_frac",  # share of sentences stating a number or date the evidence never mentions
    "name_missing_frac",  # share of sentences naming someone/something the evidence lacks
    "log_evidence_tokens",  # log(1 + whitespace tokens of all the evidence)
    "log_sentences",  # log(number of sentences)
    "matched_frac",  # share of sentences stating numbers or dates that all appear in the evidence
    "ovd_whole",  # share of the text's content words found anywhere in all its evidence
    "ovd_min",  # lowest per-sentence share of content words found anywhere in the evidence
    "ovd_all",  # 1 when every content word of the text is somewhere in the evidence, else 0
)


@dataclass(frozen=True)
class PartSignals:
    """The signals of one verdict (a sentence, or the whole text)."""

    p_entail: float
    p_contradict: float
    coverage: float
    conflict: bool
    missing: bool
    name_missing: bool
    # the text states a number or date and the typed checks found every one in the evidence
    # (the model cannot compare values: it scored "formed in 2001" lower than "formed in 1988")
    matched: bool = False
    # share of the text's content words found anywhere in all the evidence (not one window)
    doc_coverage: float = 0.0


def feature_vector(
    whole: PartSignals, parts: Sequence[PartSignals], evidence_tokens: int
) -> dict[str, float]:
    """All of `FEATURES` for a text; ``parts`` is ``[whole]`` for a one-sentence claim."""
    parts = list(parts) or [whole]
    n = len(parts)
    return {
        "pe_whole": whole.p_entail,
        "pc_whole": whole.p_contradict,
        "pe_min": min(p.p_entail for p in parts),
        "pe_mean": sum(p.p_entail for p in parts) / n,
        "pc_max": max(p.p_contradict for p in parts),
        "cov_whole": whole.coverage,
        "cov_min": min(p.coverage for p in parts),
        "conflict_any": float(whole.conflict or any(p.conflict for p in parts)),
        "missing_frac": sum(p.missing for p in parts) / n,
        "name_missing_frac": sum(p.name_missing for p in parts) / n,
        "log_evidence_tokens": math.log1p(max(0, evidence_tokens)),
        "log_sentences": math.log(n),
        "matched_frac": sum(p.matched for p in parts) / n,
        "ovd_whole": whole.doc_coverage,
        "ovd_min": min(p.doc_coverage for p in parts),
        "ovd_all": float(whole.doc_coverage >= 1.0),
    }


@dataclass(frozen=True)
class Combiner:
    """Standardised logistic regression over named features.

    Args:
        features: feature names (a subset of `FEATURES`), in weight order.
        mean: per-feature mean used for standardisation.
        scale: per-feature standard deviation (> 0).
        coef: per-feature weight.
        intercept: bias.
        tau: dev-chosen threshold on the probability for "supported".
        model_tau: the model's own dev threshold on p_entail, which picks the evidence shown
            (the combiner decides the label); None: the policy's tau_entail.
        sha256: of the file it was read from (for certificates), if any.
    """

    features: Sequence[str]
    mean: Sequence[float]
    scale: Sequence[float]
    coef: Sequence[float]
    intercept: float
    tau: float
    model_tau: float | None = None
    sha256: str = ""

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n) or n == 0:
            raise ModelError("combiner: features, mean, scale and coef must have one length")
        unknown = sorted(set(self.features) - set(FEATURES))
        if unknown:
            raise ModelError(f"combiner: unknown features {unknown}; known: {list(FEATURES)}")
        numbers = [*self.mean, *self.scale, *self.coef, self.intercept, self.tau]
        if self.model_tau is not None:
            numbers.append(self.model_tau)
        if not all(math.isfinite(x) for x in numbers):
            # a NaN passes every bound below and makes p(supported) NaN
            raise ModelError("combiner: every weight, mean, scale and threshold must be finite")
        if any(s <= 0 for s in self.scale):
            raise ModelError("combiner: every scale must be > 0")
        if not 0.0 < self.tau < 1.0:
            raise ModelError(f"combiner: tau {self.tau} not in (0, 1)")

    def probability(self, x: Mapping[str, float]) -> float:
        """Calibrated p(supported) for one feature mapping (missing features raise KeyError)."""
        z = self.intercept
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += w * (float(x[name]) - m) / s
        # numerically safe logistic
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def describe(self) -> dict[str, Any]:
        return {
            "name": "affidavit-combiner",
            "features": list(self.features),
            "tau": self.tau,
            "sha256": self.sha256,
        }


def load_combiner(path: str | Path, expected_sha256: str | None = None) -> Combiner:
    """Read a ``combiner.json``; check its sha256 when the model config pins one.

    Raises:
        ModelError: unreadable, malformed or altered file.
    """
    import hashlib

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read combiner: {exc}", source=str(path)) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if expected_sha256 and digest != expected_sha256:
        raise ModelError(
            f"combiner sha256 mismatch: expected {expected_sha256}, got {digest}", source=str(path)
        )
    try:
        d = json.loads(raw)
        return Combiner(
            features=tuple(d["features"]),
            mean=tuple(float(v) for v in d["mean"]),
            scale=tuple(float(v) for v in d["scale"]),
            coef=tuple(float(v) for v in d["coef"]),
            intercept=float(d["intercept"]),
            tau=float(d["tau"]),
            model_tau=float(d["model_tau_entail"]) if d.get("model_tau_entail") else None,
            sha256=digest,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"malformed combiner file: {exc}", source=str(path)) from exc


__all__ = [
    "COMBINER_FILE",
    "FEATURES",
    "Combiner",
    "PartSignals",
    "feature_vector",
    "load_combiner",
]
