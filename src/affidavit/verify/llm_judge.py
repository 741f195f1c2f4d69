"""An LLM judge as a PairScorer: any `Generator` asked for a strict JSON verdict.

Used by the cascade only for the uncertain band. The reply must be exactly one JSON object
``{"label": "supported" | "contradicted" | "unsupported", "confidence": 0..1, "reason": str}``;
anything else (prose, extra keys, a wrong type, a generator error) is an error score: the judge
fails closed and the claim is not verified on its word.

Examples:
    >>> from affidavit.verify.fakes import ScriptedScorer
    >>> class Echo:
    ...     name = "echo"
    ...     def generate(self, messages, *, max_tokens=None, json_schema=None):
    ...         return '{"label": "supported", "confidence": 0.9, "reason": "stated"}'
    ...     def stream(self, messages, *, max_tokens=None):
    ...         yield ""
    >>> LLMJudge(Echo()).score([("Paris is in France.", "Paris is in France.")])[0].p_entail
    0.9
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from affidavit.core.errors import AffidavitError
from affidavit.core.types import Label, Message, StageScore
from affidavit.generate.base import Generator
from affidavit.verify.crossencoder import error_score

log = logging.getLogger(__name__)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["supported", "contradicted", "unsupported"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 400},
    },
    "required": ["label", "confidence", "reason"],
    "additionalProperties": False,
}

SYSTEM = (
    "You check whether EVIDENCE supports a CLAIM. Use only the evidence, no outside knowledge.\n"
    "supported: the evidence states or directly implies every part of the claim.\n"
    "contradicted: the evidence states something incompatible with the claim (a different "
    "number, date, name, or the opposite).\n"
    "unsupported: anything else, including partly supported claims.\n"
    'Reply with one JSON object only: {"label": ..., "confidence": 0-1, "reason": "..."}.'
)


def parse_verdict(text: str) -> tuple[Label, float, str]:
    """Parse a judge reply strictly.

    Raises:
        ValueError: not exactly one JSON object of the verdict schema.
    """
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        raise ValueError(f"judge reply is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError("judge reply is not a JSON object")
    keys = set(data)
    if keys != {"label", "confidence", "reason"}:
        raise ValueError(f"judge reply has keys {sorted(keys)}, want label, confidence, reason")
    label, conf, reason = data["label"], data["confidence"], data["reason"]
    if label not in ("supported", "contradicted", "unsupported"):
        raise ValueError(f"judge label {label!r} is not supported/contradicted/unsupported")
    if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0 <= conf <= 1:
        raise ValueError(f"judge confidence {conf!r} is not a number in [0, 1]")
    if not isinstance(reason, str):
        raise ValueError("judge reason is not a string")
    return label, float(conf), reason


def verdict_probs(label: Label, confidence: float) -> tuple[float, float, float]:
    """(entail, neutral, contradict): the confidence on the judged label, the rest spread evenly."""
    rest = (1.0 - confidence) / 2
    if label == "supported":
        return (confidence, rest, rest)
    if label == "contradicted":
        return (rest, rest, confidence)
    return (rest, confidence, rest)


class LLMJudge:
    """A PairScorer that asks a chat model for a JSON verdict on each pair.

    Args:
        generator: any Generator (embedded llama.cpp, OpenAI-compatible, scripted fake).
        max_tokens: reply budget.
        max_evidence_chars: longer evidence is an error score, never cut silently (the cascade
            hands the judge a window that fits).
    """

    def __init__(
        self, generator: Generator, *, max_tokens: int = 160, max_evidence_chars: int = 6000
    ) -> None:
        self.generator = generator
        self.name = "llm_judge"
        self.max_tokens = max_tokens
        self.max_evidence_chars = max_evidence_chars

    def describe(self) -> dict[str, Any]:
        """Effective configuration."""
        return {"name": self.name, "generator": getattr(self.generator, "name", "?")}

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """One generator call per pair; bad replies and errors become error scores."""
        return [self._one(claim, evidence) for claim, evidence in pairs]

    def _one(self, claim: str, evidence: str) -> StageScore:
        if len(evidence) > self.max_evidence_chars:
            return error_score(self.name, f"evidence longer than {self.max_evidence_chars} chars")
        messages = [
            Message(role="system", content=SYSTEM),
            Message(role="user", content=f"EVIDENCE:\n{evidence}\n\nCLAIM:\n{claim}"),
        ]
        try:
            reply = self.generator.generate(
                messages, max_tokens=self.max_tokens, json_schema=VERDICT_SCHEMA
            )
            label, conf, reason = parse_verdict(reply)
        except (AffidavitError, ValueError) as exc:
            log.warning("llm judge failed: %s", exc)
            return error_score(self.name, f"judge failed: {exc}")
        pe, pn, pc = verdict_probs(label, conf)
        return StageScore(
            stage=self.name,
            p_entail=pe,
            p_neutral=pn,
            p_contradict=pc,
            label=label,
            detail=f"{getattr(self.generator, 'name', 'llm')}: {reason[:200]}",
        )
