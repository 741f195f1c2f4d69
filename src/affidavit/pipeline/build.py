"""Wire the real components from settings into an `AskPipeline`.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> pipe = build_pipeline(load_settings(), store_path=Path(".affidavit"))  # doctest: +SKIP
    >>> pipe.ask("What does the contract say about termination?").answer  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from affidavit.core.answer import AskResult
from affidavit.core.correction import RefinedContext
from affidavit.core.errors import ConfigError
from affidavit.core.policy import ClaimDecision
from affidavit.core.settings import Settings
from affidavit.core.types import Claim, DisplayMode, Verdict
from affidavit.generate.base import Generator
from affidavit.pipeline.ask import AskPipeline, Corrector, TokenCallback

log = logging.getLogger(__name__)


def model_identities(pipe: AskPipeline) -> list[dict[str, str]]:
    """The models that ran (name and sha256) as far as each component reports them."""
    out: list[dict[str, str]] = []
    gen_cfg = pipe.config().get("generator")
    if isinstance(gen_cfg, dict) and gen_cfg.get("backend") == "llamacpp":
        from affidavit.generate.model_cache import MODEL_FILENAME, MODEL_SHA256

        if gen_cfg.get("model_file") == MODEL_FILENAME:
            out.append({"name": MODEL_FILENAME, "sha256": MODEL_SHA256})
    identities = getattr(pipe.verifier, "model_identities", None)
    if callable(identities):
        out.extend(identities())
    retriever_cfg = pipe.config().get("retriever")
    if isinstance(retriever_cfg, dict):
        emb = getattr(getattr(pipe.retriever, "embedder", None), "config", None)
        if callable(emb):
            cfg = emb()
            if isinstance(cfg, dict) and cfg.get("sha256"):
                out.append({"name": str(cfg.get("name")), "sha256": str(cfg["sha256"])})
        describe = getattr(getattr(pipe.retriever, "reranker", None), "describe", None)
        if callable(describe):  # the reranker chose which passages the answer was drawn from
            info = describe()
            if info.get("sha256"):
                out.append({"name": f"reranker:{info.get('name')}", "sha256": str(info["sha256"])})
    return out


class SignedCertificateWriter:
    """Signs with the configured key and writes the certificate (a `CertificateWriter`).

    The key is loaded in ``__init__`` so a missing key fails before any generation.

    Args:
        settings: the effective settings (recorded in the certificate; key from ``certify``).
        models: the models that ran, ``{"name", "sha256"}`` each.

    Raises:
        SigningKeyError: no signing key is configured or it is unreadable.
    """

    def __init__(self, settings: Settings, models: Sequence[dict[str, str]] = ()) -> None:
        from affidavit.certify.keys import load_signing_key

        self.settings = settings
        self.models = list(models)
        self._key = load_signing_key(settings)

    def __call__(
        self,
        question: str,
        answer: str,
        claims: Sequence[Claim],
        verdicts: Sequence[Verdict],
        decisions: Sequence[ClaimDecision],
        path: Path,
        *,
        context: Sequence[RefinedContext] = (),
    ) -> None:
        """Build, sign and write the certificate."""
        from affidavit.certify.certificate import certify_answer

        certify_answer(
            question,
            answer,
            claims,
            verdicts,
            self.settings,
            decisions=decisions,
            models=self.models,
            context=context,
            path=path,
            key=self._key,
        )


def default_corrector(settings: Settings, generator: Generator) -> Corrector | None:
    """The corrective-retrieval stage, when the ``correct`` package provides one.

    Returns None (the pipeline then uses the retrieved chunks as they are, and says so in the
    trace) when ``affidavit.correct.pipeline`` is not available.
    """
    try:
        module = importlib.import_module("affidavit.correct.pipeline")
    except ImportError:
        log.info("affidavit.correct.pipeline not available: corrective stage off")
        return None
    factory = getattr(module, "build_corrective_retrieval", None)
    if callable(factory):
        corrector = factory(settings, generator=generator)
        if isinstance(corrector, Corrector):
            return corrector
    cls = getattr(module, "CorrectiveRetrieval", None)
    from_settings = getattr(cls, "from_settings", None)
    if callable(from_settings):
        corrector = from_settings(settings, generator=generator)
        if isinstance(corrector, Corrector):
            return corrector
    log.warning("affidavit.correct.pipeline has no usable corrector; corrective stage off")
    return None


def build_pipeline(
    settings: Settings,
    *,
    store_path: str | Path | None = None,
    generator: Generator | None = None,
    corrector: Corrector | bool | None = True,
    certify: bool = False,
    store: Any = None,
    embedder: Any = None,
) -> AskPipeline:
    """Build the ask pipeline with the real components the settings name.

    Args:
        settings: the effective settings.
        store_path: store folder (default ``settings.store.path``).
        generator: use this LLM instead of the configured one (tests, a shared instance).
        corrector: True builds the default corrective stage, False/None turns it off, or pass one.
        certify: prepare a signed certificate writer (fails now if no key is configured).
        store: use this open store instead of opening ``store_path`` (a server shares one).
        embedder: use this embedder instead of building the configured one.

    Raises:
        ConfigError: no store at the path, or an unusable configuration.
        StoreError / RetrievalError: the store cannot be opened or its embedder differs.
        SigningKeyError: ``certify`` and no signing key.
    """
    from affidavit.claims.extractor import RuleBasedExtractor
    from affidavit.generate.factory import make_generator
    from affidavit.retrieve.retriever import StoreRetriever
    from affidavit.store.factory import make_store
    from affidavit.verify.calibration import effective_policy
    from affidavit.verify.cascade import ClaimCascade

    if store is None:
        where = Path(store_path) if store_path is not None else settings.store.path
        if settings.store.backend == "local" and not (where / "store.sqlite").exists():
            raise ConfigError(f"no store at {where} (run `affidavit ingest PATH` first)")
        store = make_store(settings.store, path=where)
    if embedder is None and settings.retrieve.mode != "bm25":
        from affidavit.retrieve.embedders import make_embedder

        embedder = make_embedder(settings.embed)
    retriever = StoreRetriever.from_settings(store, embedder, settings.retrieve)
    llm = generator or make_generator(
        settings.generate, cache_dir=settings.resolved_home() / "models"
    )
    if corrector is True:
        chosen: Corrector | None = default_corrector(settings, llm)
    elif corrector is False or corrector is None:
        chosen = None
    else:
        chosen = corrector
    writer = SignedCertificateWriter(settings) if certify else None
    pipe = AskPipeline(
        retriever=retriever,
        generator=llm,
        extractor=RuleBasedExtractor(settings.claims),
        verifier=ClaimCascade(settings.verify, effective_policy(settings)),
        settings=settings,
        corrector=chosen,
        certificate_writer=writer,
    )
    if writer is not None:
        writer.models = model_identities(pipe)
    return pipe


async def aask(
    question: str,
    *,
    pipeline: AskPipeline | None = None,
    settings: Settings | None = None,
    store_path: str | Path | None = None,
    mode: DisplayMode | None = None,
    on_token: TokenCallback | None = None,
    certify: Path | str | None = None,
) -> AskResult:
    """Answer ``question`` without blocking the event loop.

    Args:
        question: the question.
        pipeline: a built `AskPipeline` to reuse (recommended: building one loads the
            models); when None one is built from ``settings`` and ``store_path``, off the loop.
        settings: the effective settings (default: `load_settings`).
        store_path: the store folder (default ``settings.store.path``).
        mode: display mode (default ``settings.policy.display``).
        on_token: called on the event loop with each generated piece.
        certify: write a signed certificate of the answer to this path.

    Raises:
        AffidavitError: the errors of `build_pipeline` and `AskPipeline.ask`.

    Examples:
        >>> import asyncio
        >>> result = asyncio.run(aask("Who discovered polonium?"))  # doctest: +SKIP
        >>> result.answer  # doctest: +SKIP
    """
    from affidavit.concurrency import offload
    from affidavit.core.settings import load_settings

    if pipeline is None:
        s = settings or load_settings()
        pipeline = await offload(
            build_pipeline, s, store_path=store_path, certify=certify is not None
        )
    return await pipeline.aask(question, mode=mode, on_token=on_token, certify=certify)
