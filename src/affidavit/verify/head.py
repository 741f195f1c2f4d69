"""The embedding-head verifier: a small classifier on frozen MiniLM, lexical and check features.

A `PairScorer` (cascade stage ``embed_head``) that needs only numpy and onnxruntime. The
features are `affidavit.verify.features.featurize`; the classifier is a numpy MLP (or a
linear layer when ``hidden`` is 0) trained by ``training/train_head.py``. The packaged model lives
in ``affidavit/verify/model_head/``: ``head.npz`` (weights, feature standardisation, hashed IDF)
and ``config.json`` (labels, calibration temperature, the dev-chosen threshold, the sha256 of
``head.npz``, checked at load).

Long evidence is never cut: every sentence is ranked lexically and the ``top_k`` best (a sentence
too long for MiniLM is split into overlapping windows) are embedded; ``detail`` says how many.

Examples:
    >>> scorer = EmbedHeadScorer(threads=1)  # doctest: +SKIP
    >>> s = scorer.score([("Paris is in France.", "Paris is the capital of France.")])[0]
    ... # doctest: +SKIP
    >>> s.p_entail > s.p_contradict  # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from affidavit.core.errors import AffidavitError, ModelError
from affidavit.core.settings import VerifySettings
from affidavit.core.types import StageScore
from affidavit.verify.crossencoder import error_score, file_sha256, softmax, stage_label
from affidavit.verify.features import (
    FEATURE_VERSION,
    N_FEATURES,
    CheckFn,
    Embed,
    IdfTable,
    featurize,
)

log = logging.getLogger(__name__)

HEAD_DIR = Path(__file__).resolve().parent / "model_head"
WEIGHTS_FILE = "head.npz"
CONFIG_FILE = "config.json"


class HeadConfig(BaseModel):
    """``config.json`` of an embedding-head model folder (extra keys such as metrics are kept)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(default="affidavit-embed-head", description="Model id for traces.")
    labels: list[str] = Field(
        default_factory=lambda: ["entail", "neutral", "contradict"],
        description="Label of each output, in order.",
    )
    temperature: float = Field(default=1.0, gt=0, description="Calibration temperature (dev).")
    threshold: float = Field(
        default=0.5, ge=0, le=1, description="p_entail threshold chosen on dev (informative)."
    )
    sha256: str = Field(description="sha256 of the weights file.")
    weights_file: str = Field(default=WEIGHTS_FILE, description="Weights file in the folder.")
    feature_version: int = Field(description="features.FEATURE_VERSION the head was trained on.")
    top_k: int = Field(default=3, ge=1, description="Evidence units embedded per pair.")
    n_features: int = Field(description="Input width.")


def forward(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Logits of the head for standardised-or-raw features ``x`` (standardised here).

    ``params`` holds ``mean``, ``std``, ``W1``, ``b1`` and, with a hidden layer, ``W2``, ``b2``
    (ReLU between).
    """
    z = (x.astype(np.float64) - params["mean"]) / params["std"]
    h = z @ params["W1"] + params["b1"]
    if "W2" in params:
        h = np.maximum(h, 0.0) @ params["W2"] + params["b2"]
    out: np.ndarray = h
    return out


class EmbedHeadScorer:
    """Scores (claim, evidence) pairs with the embedding head (a PairScorer).

    Args:
        model_dir: folder with ``config.json`` and the weights (default: the packaged model).
        threads: onnxruntime threads of the MiniLM embedder.
        batch_size: texts per embedder call.
        embed: an embedding function to use instead of MiniLM (tests); it must return
            L2-normalised 384-d rows.
        check_fn: the typed checks (default ``affidavit.verify.checks.run_checks``).

    Raises:
        ModelError: config or weights missing, invalid, of another feature version, or the
            weights' sha256 does not match.
        MissingDependencyError: onnxruntime / tokenizers / the MiniLM package are missing.
    """

    name = "embed_head"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        threads: int = 2,
        batch_size: int = 32,
        embed: Embed | None = None,
        check_fn: CheckFn | None = None,
    ) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else HEAD_DIR
        self.config = read_head_config(self.model_dir)
        wpath = self.model_dir / self.config.weights_file
        if not wpath.is_file():
            raise ModelError(f"embed head weights not found: {wpath}", source=str(wpath))
        digest = file_sha256(wpath)
        if digest != self.config.sha256:
            raise ModelError(
                f"embed head sha256 mismatch: {digest} != {self.config.sha256}", source=str(wpath)
            )
        with np.load(wpath) as z:
            self.params = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
        missing = {"mean", "std", "W1", "b1", "idf", "idf_default"} - set(self.params)
        if missing:
            raise ModelError(f"embed head weights lack {sorted(missing)}", source=str(wpath))
        if self.params["W1"].shape[0] != N_FEATURES or self.config.n_features != N_FEATURES:
            raise ModelError(
                f"embed head expects {self.config.n_features} features, code makes {N_FEATURES}",
                source=str(wpath),
            )
        if self.config.feature_version != FEATURE_VERSION:
            raise ModelError(
                f"embed head trained on feature version {self.config.feature_version}, "
                f"code has {FEATURE_VERSION}",
                source=str(wpath),
            )
        self.idf = IdfTable(self.params["idf"], float(self.params["idf_default"]))
        if check_fn is None:
            from affidavit.verify.checks import run_checks

            check_fn = run_checks
        self.check_fn = check_fn
        if embed is None:
            from affidavit.retrieve.embedders import MiniLMEmbedder

            embedder = MiniLMEmbedder(threads=threads, batch_size=batch_size)
            embed = embedder.embed
            self.embedder_name = embedder.name
        else:
            self.embedder_name = getattr(embed, "__name__", "custom")
        self.embed = embed
        self.threads = threads

    def describe(self) -> dict[str, Any]:
        """Effective configuration (for traces and certificates)."""
        return {
            "name": self.config.name,
            "kind": "embed_head",
            "sha256": self.config.sha256,
            "temperature": self.config.temperature,
            "top_k": self.config.top_k,
            "embedder": self.embedder_name,
            "threads": self.threads,
        }

    def predict_proba(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[str]]:
        """Calibrated (p_entail, p_neutral, p_contradict) rows and a detail string per pair.

        Raises:
            AffidavitError: the embedder failed.
        """
        x, used = featurize(
            pairs, self.embed, self.idf, top_k=self.config.top_k, check_fn=self.check_fn
        )
        probs = softmax(forward(self.params, x), self.config.temperature)
        details = [f"{self.config.name}: {k} of {n} evidence units embedded" for n, k in used]
        return probs, details

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """One StageScore per pair, in order; an empty claim or evidence, or an embedder
        failure, gives an error score (fail closed), never an exception."""
        out: list[StageScore | None] = [None] * len(pairs)
        todo = []
        for i, (claim, evidence) in enumerate(pairs):
            if not claim.strip():
                out[i] = error_score(self.name, "empty claim")
            elif not evidence.strip():
                out[i] = error_score(self.name, "empty evidence")
            else:
                todo.append(i)
        if todo:
            try:
                probs, details = self.predict_proba([pairs[i] for i in todo])
            except AffidavitError as exc:
                log.warning("embed head failed on %d pairs: %s", len(todo), exc)
                for i in todo:
                    out[i] = error_score(self.name, f"embedder failed: {exc.message}")
                return [s for s in out if s is not None]
            for k, i in enumerate(todo):
                p = [float(v) for v in probs[k]]
                out[i] = StageScore(
                    stage=self.name,
                    p_entail=p[0],
                    p_neutral=p[1],
                    p_contradict=p[2],
                    label=stage_label(p),
                    detail=details[k],
                )
        return [s for s in out if s is not None]


def read_head_config(model_dir: str | Path) -> HeadConfig:
    """Read and validate ``config.json`` of an embed-head folder.

    Raises:
        ModelError: missing or invalid.
    """
    path = Path(model_dir) / CONFIG_FILE
    if not path.is_file():
        raise ModelError(f"embed head config not found: {path}", source=str(path))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        cfg = HeadConfig.model_validate(raw)
    except (OSError, json.JSONDecodeError, ValidationError) as exc:
        raise ModelError(f"invalid embed head config {path}: {exc}", source=str(path)) from exc
    if cfg.labels != ["entail", "neutral", "contradict"]:
        raise ModelError(f"embed head labels must be entail/neutral/contradict: {cfg.labels}")
    return cfg


def load_embed_head(settings: VerifySettings) -> EmbedHeadScorer:
    """The packaged embed head with the verify settings' threads (cascade stage ``embed_head``).

    Examples:
        >>> from affidavit.core.settings import VerifySettings
        >>> load_embed_head(VerifySettings(threads=1)).name  # doctest: +SKIP
        'embed_head'
    """
    return EmbedHeadScorer(threads=settings.threads, batch_size=settings.batch_size)


__all__ = ["EmbedHeadScorer", "HeadConfig", "forward", "load_embed_head", "read_head_config"]
