"""Rerankers: the identity (keeps the retriever's order) and the packaged cross-encoder.

`CrossEncoderReranker` reads each (question, chunk) pair together, as a cross-encoder does,
instead of comparing two separately made representations (BM25 terms, embeddings): it is the
stage that puts the chunk answering the question first. The packaged model
(``affidavit/retrieve/reranker/``, its model card beside it) is a four-layer MiniLM student
trained by the project on question -> passage pairs (``training/build_rerank_data.py``); like the
verifier, it ships only the layers it trained and joins the frozen lower layers of the installed
embedder at load. A hit's score becomes the reranker's relevance logit; the retriever's own
scores stay in ``Hit.scores`` for the trace.

Examples:
    >>> IdentityReranker().rerank("q", [], 5)
    []
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from affidavit.core.errors import ModelError, RetrievalError
from affidavit.core.types import Hit

log = logging.getLogger(__name__)

#: candidates a reranker reorders by default (the retriever's best ``depth`` hits)
DEFAULT_DEPTH = 20
#: how the reranker's order meets the retriever's: fused by reciprocal rank, or replacing it
FUSIONS = ("rrf", "replace")


class IdentityReranker:
    """Keeps the retriever's order (and truncates to ``k``).

    Examples:
        >>> IdentityReranker().rerank("q", [], 5)
        []
    """

    name = "identity"
    depth = 0

    def rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        """Return the first ``k`` hits, ranks renumbered."""
        del query
        return [h.model_copy(update={"rank": i}) for i, h in enumerate(hits[:k], start=1)]


def packaged_reranker_dir() -> Path:
    """Folder of the reranker model shipped inside the package."""
    return Path(__file__).resolve().parent / "reranker"


class CrossEncoderReranker:
    """Reorders the retriever's best ``depth`` hits by a cross-encoder's relevance score.

    Args:
        model_dir: an ONNX cross-encoder folder (``config.json``, tokenizer, model), default the
            packaged reranker; its score is the logit of the first ("relevant") label against
            the others.
        depth: how many of the retriever's hits are read (the rest keep their order below).
        threads: ONNX Runtime threads.
        scorer: a ready pair scorer with a ``logits(pairs)`` method (tests, a shared session).
        fusion: ``"rrf"`` (default): the head is ordered by reciprocal rank fusion of the
            retriever's rank and the reranker's rank (``1/(rrf_k + r1) + 1/(rrf_k + r2)``), so a
            chunk both rank high comes first; ``"replace"``: by the reranker's score alone.
        rrf_k: the fusion constant (the retriever's ``retrieve.rrf_k``).

    The model loads on first use. A model that cannot be loaded or run raises `RetrievalError`
    (the search fails with the reason): ranking without the configured reranker would silently
    change what the user asked for.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        depth: int = DEFAULT_DEPTH,
        threads: int = 2,
        scorer: Any = None,
        fusion: str = "rrf",
        rrf_k: int = 60,
    ) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1 (got {depth})")
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)} (got {fusion!r})")
        if rrf_k < 1:
            raise ValueError(f"rrf_k must be >= 1 (got {rrf_k})")
        self.fusion = fusion
        self.rrf_k = rrf_k
        self.model_dir = Path(model_dir) if model_dir is not None else packaged_reranker_dir()
        self.depth = depth
        self.threads = threads
        self._scorer = scorer
        self._lock = threading.Lock()
        self.name = "cross-encoder" if scorer is None else getattr(scorer, "name", "cross-encoder")

    def _model(self) -> Any:
        with self._lock:
            if self._scorer is None:
                from affidavit.verify.crossencoder import OnnxCrossEncoder

                try:
                    self._scorer = OnnxCrossEncoder(
                        self.model_dir, threads=self.threads, stage="reranker"
                    )
                except ModelError as exc:
                    raise RetrievalError(f"reranker model: {exc.message}") from exc
            return self._scorer

    def describe(self) -> dict[str, Any]:
        """Effective configuration (for traces and `StoreRetriever.config`)."""
        scorer = self._model()
        info = scorer.describe() if hasattr(scorer, "describe") else {}
        return {"name": self.name, "depth": self.depth, "fusion": self.fusion, **info}

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Relevance logits of ``texts`` for ``query`` (higher is more relevant)."""
        if not texts:
            return np.zeros(0)
        scorer = self._model()
        pairs = [(query, t) for t in texts]
        out: list[np.ndarray] = []
        step = int(getattr(scorer, "batch_size", 16)) or 16
        for i in range(0, len(pairs), step):
            logits, _ = scorer.logits(pairs[i : i + step])
            out.append(np.asarray(logits, dtype=np.float64))
        logits = np.concatenate(out)
        if logits.shape[1] == 1:
            return np.asarray(logits[:, 0], dtype=np.float64)
        # log-odds of the first label against all the others (logsumexp, overflow-safe)
        top = logits[:, 1:].max(axis=1)
        rest = np.log(np.exp(logits[:, 1:] - top[:, None]).sum(axis=1)) + top
        return np.asarray(logits[:, 0] - rest, dtype=np.float64)

    def rerank(self, query: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        """The best ``depth`` hits reordered (fused with their order, or by the model alone), then
        the rest in the retriever's order; the first ``k``."""
        head, tail = list(hits[: self.depth]), list(hits[self.depth :])
        try:
            s = self.scores(query, [h.chunk.text for h in head])
        except RetrievalError:
            raise
        except Exception as exc:  # an ONNX Runtime failure: the search fails with the reason
            raise RetrievalError(f"reranker failed: {type(exc).__name__}: {exc}") from exc
        by_model = sorted(range(len(head)), key=lambda i: (-s[i], i))
        model_rank = {i: r for r, i in enumerate(by_model, start=1)}
        if self.fusion == "rrf":
            fused = [
                1.0 / (self.rrf_k + i + 1) + 1.0 / (self.rrf_k + model_rank[i])
                for i in range(len(head))
            ]
            order = sorted(range(len(head)), key=lambda i: (-fused[i], i))
        else:
            fused = [float(x) for x in s]
            order = by_model
        ranked = [
            head[i].model_copy(
                update={
                    "score": float(fused[i]),
                    "mode": "rerank",
                    "scores": {
                        **head[i].scores,
                        f"{head[i].mode}_rank": float(i + 1),
                        "rerank": float(s[i]),
                        "rerank_rank": float(model_rank[i]),
                    },
                }
            )
            for i in order
        ] + tail
        return [h.model_copy(update={"rank": r}) for r, h in enumerate(ranked[:k], start=1)]
