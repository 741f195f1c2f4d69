"""Verify one claim against evidence passages: ``check`` and its async twin ``acheck``.

The library form of ``affidavit check``: the claim goes through the verifier cascade
(typed checks, then the project's cross-encoder) and comes back as a
`Verdict`. A stage that cannot run leaves the claim unsupported
(fail closed), and the verdict says why in ``errors``.

Examples:
    >>> from affidavit.testing.verifiers import KeywordVerifier
    >>> v = check("Paris is in France.", ["Paris is in France."], verifier=KeywordVerifier())
    >>> v.label
    'supported'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from affidavit.concurrency import offload
from affidavit.core.errors import InputError
from affidavit.core.settings import PolicySettings, Settings, load_settings
from affidavit.core.types import Verdict
from affidavit.verify.base import ClaimVerifier

_cache_lock = threading.Lock()
_cached: tuple[str, ClaimVerifier] | None = None


def effective_policy(settings: Settings) -> PolicySettings:
    """The policy thresholds to verify with (`affidavit.verify.calibration.effective_policy`).

    Explicit ``policy.tau_entail`` / ``policy.tau_contradict`` settings win; otherwise the
    preset, with the packaged model's dev-tuned values from its config.json when it has them.
    """
    from affidavit.verify.calibration import effective_policy as _effective_policy

    result: PolicySettings = _effective_policy(settings)
    return result


def default_verifier(settings: Settings | None = None) -> ClaimVerifier:
    """The verifier cascade the settings describe, built once and reused while they stay equal.

    Loading the cross-encoder takes about a second, so consecutive calls with the same settings
    share one instance (the cascade is safe to call from several threads).
    """
    global _cached
    from affidavit.verify.cascade import ClaimCascade

    s = settings or load_settings()
    key = s.model_dump_json(include={"verify", "policy"})
    with _cache_lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
        verifier = ClaimCascade(s.verify, effective_policy(s))
        _cached = (key, verifier)
        return verifier


def check(
    claim: str,
    evidence: Sequence[str],
    *,
    settings: Settings | None = None,
    verifier: ClaimVerifier | None = None,
) -> Verdict:
    """Verify ``claim`` against ``evidence`` (one chunk per passage).

    Args:
        claim: the claim text.
        evidence: evidence passages.
        settings: the effective settings (default: `load_settings`).
        verifier: a verifier to use instead of the settings' cascade (tests, a shared instance).

    Returns:
        The verdict: ``label`` supported / contradicted / unsupported, probabilities, the
        minimal evidence, and ``errors`` for any stage that could not run.

    Raises:
        InputError: an empty claim, or evidence that is not a list of strings.

    Examples:
        >>> from affidavit.testing.verifiers import KeywordVerifier
        >>> check("Rome is in Spain.", ["Rome is in Italy."], verifier=KeywordVerifier()).label
        'unsupported'
    """
    from affidavit.verify.cascade import chunks_from_texts, claim_from_text

    if not isinstance(claim, str) or not claim.strip():
        raise InputError("claim must be a non-empty string")
    if isinstance(evidence, str) or not all(isinstance(e, str) for e in evidence):
        raise InputError("evidence must be a list of strings")
    v = verifier or default_verifier(settings)
    return v.verify(claim_from_text(claim), chunks_from_texts(list(evidence)))


async def acheck(
    claim: str,
    evidence: Sequence[str],
    *,
    settings: Settings | None = None,
    verifier: ClaimVerifier | None = None,
) -> Verdict:
    """`check` in the shared worker pool, so the event loop keeps running.

    Examples:
        >>> import asyncio
        >>> from affidavit.testing.verifiers import KeywordVerifier
        >>> asyncio.run(acheck("Rome is in Italy.", ["Rome is in Italy."],
        ...                    verifier=KeywordVerifier())).label
        'supported'
    """
    return await offload(check, claim, evidence, settings=settings, verifier=verifier)


__all__ = ["acheck", "check", "default_verifier", "effective_policy"]
