"""A user's own cross-encoder (MiniCheck, HHEM, DeBERTa-NLI...) from disk, as a PairScorer.

Two kinds of folder are accepted:

* an ONNX folder (``*.onnx`` + ``tokenizer.json``, optional ``config.json``): run by ONNX Runtime
  like the packaged model; the sha256 is checked when the config gives one;
* a Hugging Face folder (``config.json`` + weights): run by ``transformers`` + ``torch``,
  imported lazily; without them a `MissingDependencyError` names
  ``pip install "affidavit[external]"``.

The label order of the logits comes from ``settings.external_labels`` (names such as
``entailment``, ``neutral``, ``contradiction``, ``not_entailment``); a 2-label model's
"not entailed" mass counts as neutral.

Examples:
    >>> from affidavit.core.settings import VerifySettings
    >>> s = VerifySettings(external_model_path="~/models/deberta-nli",
    ...                    external_labels=["contradiction", "neutral", "entailment"])
    >>> scorer = load_external(s)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.core.settings import VerifySettings
from affidavit.core.types import StageScore
from affidavit.verify.crossencoder import (
    CONFIG_FILE,
    TOKENIZER_FILE,
    Canonical,
    OnnxCrossEncoder,
    canonical_labels,
    collapse,
    error_score,
    softmax,
    stage_label,
)

log = logging.getLogger(__name__)


def load_external(settings: VerifySettings) -> OnnxCrossEncoder | HFCrossEncoder:
    """The user's model named by ``settings.external_model_path``.

    Raises:
        ModelError: no path configured, the folder is missing or holds no usable model.
        MissingDependencyError: a Hugging Face folder without transformers/torch installed.
    """
    path = settings.external_model_path
    if path is None:
        raise ModelError("the external stage needs verify.external_model_path")
    folder = path.expanduser()
    if not folder.is_dir():
        raise ModelError(f"external model folder not found: {folder}", source=str(folder))
    onnx_files = sorted(folder.glob("*.onnx"))
    if onnx_files and (folder / TOKENIZER_FILE).is_file():
        if not (folder / CONFIG_FILE).is_file():
            _missing_config(folder, onnx_files[0].name, settings)
        return OnnxCrossEncoder(
            folder,
            threads=settings.threads,
            batch_size=settings.batch_size,
            require_sha256=False,
            labels=settings.external_labels,
            stage="external",
        )
    if (folder / CONFIG_FILE).is_file():
        return HFCrossEncoder(
            folder,
            labels=settings.external_labels,
            max_len=settings.max_len,
            threads=settings.threads,
            batch_size=settings.batch_size,
        )
    raise ModelError(
        f"{folder} holds neither an ONNX model with tokenizer.json nor a Hugging Face model",
        source=str(folder),
    )


def _missing_config(folder: Path, onnx_name: str, settings: VerifySettings) -> None:
    # an ONNX folder without a config: say exactly what to write rather than guess
    raise ModelError(
        f"{folder} has {onnx_name} but no config.json; write one with "
        f'{{"model_file": "{onnx_name}", "labels": {json.dumps(settings.external_labels)}, '
        f'"max_len": {settings.max_len}}}',
        source=str(folder),
    )


class HFCrossEncoder:
    """A Hugging Face sequence-classification model run by transformers + torch on CPU."""

    def __init__(
        self,
        folder: Path,
        *,
        labels: Sequence[str],
        max_len: int = 512,
        threads: int = 2,
        batch_size: int = 16,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                "transformers and torch", "external", purpose="a Hugging Face verifier model"
            ) from exc
        torch.set_num_threads(threads)
        self._torch = torch
        self.name = "external"
        self.folder = folder
        self.labels: list[Canonical] = canonical_labels(labels)
        self.max_len = max_len
        self.batch_size = batch_size
        try:
            self.hf_tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                str(folder), local_files_only=True
            ).eval()
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load {folder}: {exc}", source=str(folder)) from exc
        n_out = int(self.model.config.num_labels)
        if n_out != len(self.labels):
            raise ModelError(
                f"{folder} has {n_out} labels but external_labels lists {len(self.labels)}",
                source=str(folder),
            )

    def describe(self) -> dict[str, Any]:
        """Effective configuration."""
        return {"name": self.name, "path": str(self.folder), "labels": list(self.labels)}

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """Score pairs; a pair longer than max_len is an error score (never cut silently)."""
        out: list[StageScore] = []
        for s in range(0, len(pairs), self.batch_size):
            batch = list(pairs[s : s + self.batch_size])
            enc = self.hf_tokenizer(
                [c for c, _ in batch], [e for _, e in batch], padding=True, truncation=False
            )
            lengths = [sum(m) for m in enc["attention_mask"]]
            keep = [i for i, n in enumerate(lengths) if n <= self.max_len]
            scores: list[StageScore] = [
                error_score(self.name, f"pair of {n} tokens exceeds max_len {self.max_len}")
                for n in lengths
            ]
            if keep:
                sub = self.hf_tokenizer(
                    [batch[i][0] for i in keep],
                    [batch[i][1] for i in keep],
                    padding=True,
                    truncation=False,
                    return_tensors="pt",
                )
                with self._torch.no_grad():
                    logits = self.model(**sub).logits.float().numpy()
                probs = collapse(softmax(np.asarray(logits)), self.labels)
                for k, i in enumerate(keep):
                    pe, pn, pc = (float(x) for x in probs[k])
                    scores[i] = StageScore(
                        stage=self.name,
                        p_entail=pe,
                        p_neutral=pn,
                        p_contradict=pc,
                        label=stage_label((pe, pn, pc)),
                        detail=str(self.folder.name),
                    )
            out += scores
        return out
