"""Relevance evaluators: score a passage 0-10 for how well it helps answer a question.

Two backends behind `affidavit.correct.base.RelevanceEvaluator`:

* `ModelRelevanceEvaluator` (the default, fast): MiniLM cosine similarity blended with a
  corpus-free BM25 term-saturation score, mapped to 0-10 by a logistic calibration fitted on
  HaluEval qa dev (question -> its own knowledge passage vs BM25-hard negatives; see
  ``benchmarks/evaluator_quality.py`` and ``relevance_calibration.json``). ``score = 10 * p``.
* `LLMRelevanceEvaluator`: the CRAG rubric through any `Generator`, strict JSON
  ``{"score": int 0-10, "reason": str}``; anything unparsable scores 0 with the error recorded,
  and so does every passage left when its time budget runs out.
* `PairScorerRelevanceEvaluator`: any verifier `PairScorer` (the packaged NLI
  cross-encoder) as a relevance signal: ``10 * (1 - p_neutral)`` (the passage speaks to the
  question, for or against) or ``10 * p_entail``. Not calibrated for relevance; measure it first.

Examples:
    >>> from affidavit.correct.fakes import KeywordEvaluator
    >>> KeywordEvaluator().score("capital of France", ["Paris is the capital of France."])[0].score
    10.0
"""

from __future__ import annotations

import copy
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.correction import RelevanceScore
from affidavit.core.errors import GenerationError, ModelError
from affidavit.core.types import Message
from affidavit.correct.base import NOT_GRADED_BUDGET
from affidavit.generate.base import Generator
from affidavit.verify.base import PairScorer

log = logging.getLogger(__name__)

CALIBRATION_PATH = Path(__file__).resolve().parent / "relevance_calibration.json"

_STOP_WORDS = """a an the of in on at to for from by with about as into onto over under and or
    but nor not
    no is are was were be been being am do does did done has have had having it its it's this that
    these those there here which who whom whose what when where why how than then so such very can
    could would should will shall may might must i you he she we they me him her us them my your
    his our their one ones also both either neither each any all some many much more most other
    another same own s t just only what's who's if while during before after between through
    against up down out off again further once whether"""
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"\w+", re.UNICODE)

Embed = Callable[[Sequence[str]], np.ndarray]


def content_terms(text: str) -> list[str]:
    """Lower-cased word tokens without stop words, with a light plural/possessive stem."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        if len(w) > 4 and w.endswith("es") and not w.endswith("ses"):
            w = w[:-2]
        elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def bm25_saturation(
    question: str, passage: str, *, k1: float = 1.2, b: float = 0.75, avgdl: float = 40.0
) -> float:
    """A corpus-free, normalised BM25: mean over the question's content terms of the BM25
    term-frequency saturation in the passage, divided by its maximum ``k1 + 1``. In ``[0, 1)``.

    IDF is left out on purpose: a grade must not depend on which other chunks were retrieved, and
    the stop-word list removes the terms IDF would discount most.
    """
    q = set(content_terms(question))
    if not q:
        return 0.0
    p = content_terms(passage)
    dl = len(p)
    if dl == 0:
        return 0.0
    tf: dict[str, int] = {}
    for w in p:
        if w in q:
            tf[w] = tf.get(w, 0) + 1
    norm = k1 * (1 - b + b * dl / avgdl)
    total = sum(f * (k1 + 1) / (f + norm) for f in tf.values())
    return total / (len(q) * (k1 + 1))


def _features(cos: np.ndarray, lex: np.ndarray) -> np.ndarray:
    return np.stack([cos, lex, cos * lex], axis=1)


FEATURE_NAMES = ("cosine", "bm25_saturation", "cosine*bm25_saturation")


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, l2: float = 1e-3, iters: int = 50
) -> tuple[np.ndarray, float]:
    """Fit ``p = sigmoid(x @ w + b)`` by Newton's method with a small L2 penalty on ``w``."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) / n + reg * w
        hess = (xb.T * (p * (1 - p))) @ xb / n + np.diag(reg)
        step = np.linalg.solve(hess + 1e-9 * np.eye(d + 1), grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


class ModelRelevanceEvaluator:
    """Fast model-based relevance: MiniLM cosine + BM25 saturation, calibrated to 0-10.

    Args:
        embed: a function mapping texts to L2-normalised vectors (default: the store's packaged
            MiniLM, `affidavit.retrieve.embedders.MiniLMEmbedder`; the calibration was
            fitted on its vectors, so another embedder needs its own calibration).
        calibration: the calibration dict (default: the packaged ``relevance_calibration.json``).
        threads: inference threads for the default embedder.

    Examples:
        >>> ev = ModelRelevanceEvaluator()  # doctest: +SKIP
        >>> ev.score("Who founded Bauer?", ["Bauer was founded by ..."])  # doctest: +SKIP
    """

    name = "model:minilm+bm25"

    def __init__(
        self,
        embed: Embed | None = None,
        *,
        calibration: dict[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        if calibration is None:
            calibration = load_calibration()
        try:
            self.coef = np.asarray(calibration["coef"], dtype=np.float64)
            self.intercept = float(calibration["intercept"])
            self.avgdl = float(calibration.get("avgdl", 40.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"invalid relevance calibration: {exc}", stage="correct") from exc
        if self.coef.shape != (len(FEATURE_NAMES),):
            raise ModelError(
                f"relevance calibration has {self.coef.shape} coefficients, "
                f"expected {len(FEATURE_NAMES)}",
                stage="correct",
            )
        # an infinite weight graded every passage 10 (Correct), a NaN one every passage failed:
        # a calibration that cannot grade is refused, never used
        if not (np.isfinite(self.coef).all() and np.isfinite(self.intercept)):
            raise ModelError(
                "relevance calibration has a coefficient or intercept that is not a finite "
                f"number (coef {self.coef.tolist()}, intercept {self.intercept})",
                stage="correct",
            )
        if not (np.isfinite(self.avgdl) and self.avgdl > 0):
            raise ModelError(
                f"relevance calibration's avgdl must be a positive number, not {self.avgdl}",
                stage="correct",
            )
        if embed is None:
            # the store's embedder: the calibration was fitted on its vectors
            from affidavit.retrieve.embedders import MiniLMEmbedder

            embed = MiniLMEmbedder(threads=threads).embed
        self._embed = embed

    def features(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """The ``(n, 3)`` feature matrix (cosine, BM25 saturation, their product)."""
        vecs = self._embed([question, *passages])
        cos = np.clip(vecs[1:] @ vecs[0], -1.0, 1.0).astype(np.float64)
        lex = np.array(
            [bm25_saturation(question, p, avgdl=self.avgdl) for p in passages], dtype=np.float64
        )
        return _features(cos, lex)

    def probabilities(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Calibrated probability that each passage is relevant."""
        if not passages:
            return np.zeros(0)
        z = self.features(question, passages) @ self.coef + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage 0-10 (``10 * p(relevant)``); an embedder failure scores 0."""
        if not passages:
            return []
        try:
            feats = self.features(question, passages)
        except Exception as exc:  # fail closed: any model failure means "not relevant"
            log.warning("relevance model failed", extra={"error": repr(exc)})
            err = f"relevance model failed: {exc!r}"
            return [RelevanceScore(score=0.0, error=err) for _ in passages]
        z = feats @ self.coef + self.intercept
        p = 1.0 / (1.0 + np.exp(-z))
        return [
            RelevanceScore(
                score=round(float(10.0 * pi), 4),
                reason=f"cos={f[0]:.3f} bm25={f[1]:.3f} p={pi:.3f}",
            )
            if np.isfinite(pi)
            # fail closed for this passage only (a NaN vector raised for the whole batch)
            else RelevanceScore(score=0.0, error=f"relevance is not a number (cos={f[0]})")
            for f, pi in zip(feats, p, strict=True)
        ]


def load_calibration(path: Path = CALIBRATION_PATH) -> dict[str, Any]:
    """Read the relevance calibration JSON.

    Raises:
        ModelError: the file is missing or not valid JSON.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(
            f"cannot read relevance calibration: {exc}", stage="correct", source=str(path)
        ) from exc
    if not isinstance(data, dict):
        raise ModelError("relevance calibration is not an object", stage="correct")
    return data


RUBRIC = """You grade how useful a passage is for answering a question. Reply with JSON only:
{"score": <integer 0-10>, "reason": "<at most 12 words>"}
Rubric:
10 = the passage states the answer directly.
7-9 = the passage contains most of the facts needed to answer.
4-6 = on the topic and partly helpful, but the answer is not in it.
1-3 = mentions a related name or subject but does not help answer.
0 = unrelated."""

SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}


def parse_llm_score(text: str) -> RelevanceScore:
    """Parse the LLM's strict-JSON reply; anything else scores 0 with the error recorded.

    Examples:
        >>> parse_llm_score('{"score": 7, "reason": "mostly"}').score
        7.0
        >>> parse_llm_score("seven").error is not None
        True
    """
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        return RelevanceScore(score=0.0, error=f"unparsable evaluator output: {exc.msg}")
    if not isinstance(data, dict):
        return RelevanceScore(score=0.0, error="evaluator output is not a JSON object")
    raw = data.get("score")
    # bool is an int subclass; a float like 7.5 is outside the contract
    if isinstance(raw, bool) or not isinstance(raw, int):
        return RelevanceScore(score=0.0, error=f"score is not an integer: {raw!r}")
    if not 0 <= raw <= 10:
        return RelevanceScore(score=0.0, error=f"score out of range 0-10: {raw}")
    reason = data.get("reason", "")
    return RelevanceScore(score=float(raw), reason=str(reason)[:500])


class LLMRelevanceEvaluator:
    """The CRAG rubric evaluator: one LLM call per passage, strict JSON output, fail closed.

    Args:
        generator: any `Generator` (embedded llama.cpp, OpenAI-compatible, scripted fake).
        max_passage_chars: longer passages are cut (the cut is noted in the reason).
        max_tokens: generation budget per call.
        budget_s: the time one `score` call may take (one call per passage, each bounded by
            the generator's own timeout): passages left when it runs out are not graded, a
            failed grade (score 0, ``error`` starting with `NOT_GRADED_BUDGET`). A call already
            running is not interrupted. `within` gives a copy whose calls share one deadline
            (the corrective retrieval's budget per question).

    Examples:
        >>> from affidavit.correct.fakes import ScriptedGenerator
        >>> ev = LLMRelevanceEvaluator(ScriptedGenerator(['{"score": 9, "reason": "direct"}']))
        >>> ev.score("q?", ["passage"])[0].score
        9.0
    """

    def __init__(
        self,
        generator: Generator,
        *,
        max_passage_chars: int = 2000,
        max_tokens: int = 60,
        budget_s: float = 120.0,
    ) -> None:
        if max_passage_chars < 1 or max_tokens < 1 or not budget_s > 0:
            raise ValueError("max_passage_chars, max_tokens and budget_s must be positive")
        self.generator = generator
        self.max_passage_chars = max_passage_chars
        self.max_tokens = max_tokens
        self.budget_s = budget_s
        # set by `within`: a deadline shared by every call (time.monotonic()), and its budget
        self._deadline: tuple[float, float] | None = None
        self.name = f"llm:{getattr(generator, 'name', type(generator).__name__)}"

    def within(self, budget_s: float) -> LLMRelevanceEvaluator:
        """A copy whose `score` calls, all together, stop grading ``budget_s`` from now (each
        call still within its own ``budget_s``): one question's budget."""
        if not budget_s > 0:
            raise ValueError("budget_s must be positive")
        scoped = copy.copy(self)
        scoped._deadline = (time.monotonic() + budget_s, budget_s)
        return scoped

    def score_one(self, question: str, passage: str) -> RelevanceScore:
        """Score one passage."""
        cut = len(passage) > self.max_passage_chars
        text = passage[: self.max_passage_chars]
        messages = [
            Message(role="system", content=RUBRIC),
            Message(role="user", content=f"Question: {question}\n\nPassage: {text}"),
        ]
        try:
            out = self.generator.generate(
                messages, max_tokens=self.max_tokens, json_schema=SCORE_SCHEMA
            )
        except GenerationError as exc:
            return RelevanceScore(score=0.0, error=f"generator failed: {exc.message}")
        result = parse_llm_score(out)
        if cut and result.error is None:
            return result.model_copy(
                update={"reason": f"{result.reason} (passage cut at {self.max_passage_chars})"}
            )
        return result

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage (sequentially: a local LLM gains nothing from threads here);
        those left when the time budget runs out are not graded (fail closed)."""
        deadline, budget = time.monotonic() + self.budget_s, self.budget_s
        if self._deadline is not None and self._deadline[0] < deadline:
            deadline, budget = self._deadline
        out: list[RelevanceScore] = []
        for passage in passages:
            if time.monotonic() >= deadline:
                error = f"{NOT_GRADED_BUDGET} ({budget:g} s)"
                out.append(RelevanceScore(score=0.0, error=error))
                continue
            out.append(self.score_one(question, passage))
        skipped = sum(1 for s in out if (s.error or "").startswith(NOT_GRADED_BUDGET))
        if skipped:
            log.warning(
                "relevance evaluator out of time",
                extra={"budget_s": budget, "not_graded": skipped, "passages": len(passages)},
            )
        return out


class PairScorerRelevanceEvaluator:
    """A verifier cross-encoder (`PairScorer`) used as a relevance evaluator.

    The question is scored as the "claim" against each passage as "evidence". An NLI model does
    not entail a question, so the default signal is ``1 - p_neutral``: how much the passage
    bears on the question at all. A stage error scores 0 (fail closed).

    Args:
        scorer: the pair scorer (e.g. ``affidavit.verify.crossencoder.OnnxCrossEncoder``).
        signal: ``"not_neutral"`` (default) or ``"entail"``.

    Examples:
        >>> from affidavit.verify.crossencoder import load_cross_encoder  # doctest: +SKIP
        >>> ev = PairScorerRelevanceEvaluator(load_cross_encoder(settings.verify))  # doctest: +SKIP
    """

    def __init__(self, scorer: PairScorer, *, signal: str = "not_neutral") -> None:
        if signal not in ("not_neutral", "entail"):
            raise ValueError(f"signal must be 'not_neutral' or 'entail', not {signal!r}")
        self.scorer = scorer
        self.signal = signal
        self.name = f"pair:{scorer.name}:{signal}"

    def score(self, question: str, passages: Sequence[str]) -> list[RelevanceScore]:
        """Score each passage 0-10 from the scorer's 3-way probabilities."""
        if not passages:
            return []
        try:
            stages = self.scorer.score([(question, p) for p in passages])
        except Exception as exc:  # fail closed: a scorer crash means "not relevant"
            return [
                RelevanceScore(score=0.0, error=f"pair scorer failed: {exc!r}") for _ in passages
            ]
        if len(stages) != len(passages):
            err = f"pair scorer returned {len(stages)} scores for {len(passages)} passages"
            return [RelevanceScore(score=0.0, error=err) for _ in passages]
        out = []
        for st in stages:
            if st.error is not None:
                out.append(RelevanceScore(score=0.0, error=st.error))
                continue
            p = st.p_entail if self.signal == "entail" else 1.0 - st.p_neutral
            out.append(
                RelevanceScore(
                    score=round(10.0 * min(max(p, 0.0), 1.0), 4),
                    reason=f"e={st.p_entail:.2f} n={st.p_neutral:.2f} c={st.p_contradict:.2f}",
                )
            )
        return out
