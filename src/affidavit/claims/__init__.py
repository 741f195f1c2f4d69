"""The claims stage: turn an answer into atomic, checkable claims with exact offsets.

Examples:
    >>> from affidavit.claims import extract_claims
    >>> [c.text for c in extract_claims("Sure! Marie Curie won two Nobel Prizes.")]
    ['Marie Curie won two Nobel Prizes.']
"""

from __future__ import annotations

from affidavit.claims.base import ClaimExtractor
from affidavit.claims.extractor import RuleBasedExtractor, extract_claims
from affidavit.claims.llm import LLMClaimCompiler, LLMOutputError, build_extractor
from affidavit.claims.segment import Segment, split_sentences

__all__ = [
    "ClaimExtractor",
    "LLMClaimCompiler",
    "LLMOutputError",
    "RuleBasedExtractor",
    "Segment",
    "build_extractor",
    "extract_claims",
    "split_sentences",
]
