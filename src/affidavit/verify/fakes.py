"""Fakes for tests (ours and users'): a scripted pair scorer and a tiny random ONNX verifier.

``build_tiny_model`` writes a model folder with the same signature as the packaged verifier
(``input_ids``, ``attention_mask``, ``token_type_ids`` -> ``logits[batch, n_labels]``), a word-level
``tokenizer.json`` and a ``config.json`` with the right sha256, so the ONNX path can be tested
without the trained model. It needs the ``onnx`` package (dev extra).

Examples:
    >>> s = ScriptedScorer({"cats": (0.9, 0.05, 0.05)})
    >>> s.score([("cats purr", "Cats purr.")])[0].label
    'supported'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from affidavit.core.errors import MissingDependencyError
from affidavit.core.types import StageScore
from affidavit.verify.crossencoder import file_sha256, stage_label

Probs = tuple[float, float, float]


class ScriptedScorer:
    """A PairScorer whose (entail, neutral, contradict) come from a rule.

    Args:
        rules: claim substring -> probabilities; the first rule whose key is in the claim and whose
            evidence condition holds wins. A key may be ``"claim_substring|evidence_substring"``.
        default: probabilities when no rule matches.
        fn: instead of rules, any function (claim, evidence) -> probabilities.
        name: stage name.
        fail_on: raise RuntimeError when the claim contains this (to test fail-closed paths).
    """

    def __init__(
        self,
        rules: dict[str, Probs] | None = None,
        *,
        default: Probs = (0.05, 0.9, 0.05),
        fn: Callable[[str, str], Probs] | None = None,
        name: str = "cross_encoder",
        fail_on: str | None = None,
    ) -> None:
        self.rules = rules or {}
        self.default = default
        self.fn = fn
        self.name = name
        self.fail_on = fail_on
        self.calls: list[tuple[str, str]] = []

    def probs(self, claim: str, evidence: str) -> Probs:
        """The scripted probabilities of one pair."""
        if self.fn is not None:
            return self.fn(claim, evidence)
        for key, p in self.rules.items():
            c, _, e = key.partition("|")
            if c in claim and (not e or e in evidence):
                return p
        return self.default

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[StageScore]:
        """Score pairs by the rules."""
        out = []
        for claim, evidence in pairs:
            self.calls.append((claim, evidence))
            if self.fail_on and self.fail_on in claim:
                raise RuntimeError(f"scripted failure on {claim!r}")
            pe, pn, pc = self.probs(claim, evidence)
            out.append(
                StageScore(
                    stage=self.name,
                    p_entail=pe,
                    p_neutral=pn,
                    p_contradict=pc,
                    label=stage_label((pe, pn, pc)),
                    detail="scripted",
                )
            )
        return out


_TINY_TEXT = (
    "the a of in is was not no paris france capital city london england river population "
    "million born died year founded company president study found results trial patients "
    "drug increased decreased risk percent one two three four five six seven eight nine ten "
    "january february march april may june july august september october november december "
    "it has had he she they and or but by on at for with from to as that this which"
)
TINY_WORDS = _TINY_TEXT.split()


def build_tiny_model(
    folder: Path,
    *,
    labels: Sequence[str] = ("entail", "neutral", "contradict"),
    max_len: int = 64,
    temperature: float = 1.0,
    dim: int = 16,
    seed: int = 0,
    write_sha256: bool = True,
) -> Path:
    """Write a tiny random cross-encoder folder (verifier.onnx, tokenizer.json, config.json).

    The graph mean-pools token embeddings under the attention mask (so padding never changes a
    score), adds a token-type embedding, and projects to ``len(labels)`` logits.
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:
        raise MissingDependencyError("onnx", "dev", purpose="building the tiny test model") from exc
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    folder.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    words = list(dict.fromkeys(TINY_WORDS + [str(i) for i in range(100)]))
    vocab = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    from tokenizers import normalizers

    tok.normalizer = normalizers.Lowercase()
    tok.save(str(folder / "tokenizer.json"))

    rng = np.random.default_rng(seed)
    n_lab = len(labels)
    emb = rng.normal(0, 1, (len(vocab), dim)).astype(np.float32)
    type_emb = rng.normal(0, 1, (2, dim)).astype(np.float32)
    w = rng.normal(0, 1, (dim, n_lab)).astype(np.float32)
    b = rng.normal(0, 0.1, (n_lab,)).astype(np.float32)
    inits = [
        numpy_helper.from_array(emb, "emb"),
        numpy_helper.from_array(type_emb, "type_emb"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(b, "b"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([1e-6], dtype=np.float32), "eps"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["tok_e"]),
        helper.make_node("Gather", ["type_emb", "token_type_ids"], ["typ_e"]),
        helper.make_node("Add", ["tok_e", "typ_e"], ["e"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "axis2"], ["mask3"]),
        helper.make_node("Mul", ["e", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["mask_f", "axis1"], ["count"], keepdims=1),
        helper.make_node("Add", ["count", "eps"], ["count_e"]),
        helper.make_node("Div", ["summed", "count_e"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "w"], ["proj"]),
        helper.make_node("Add", ["proj", "b"], ["logits"]),
    ]
    inits.append(numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"))
    ins = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", n_lab])
    graph = helper.make_graph(nodes, "tiny_verifier", ins, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "verifier.onnx"))
    config = {
        "name": "tiny-random-verifier",
        "labels": list(labels),
        "max_len": max_len,
        "temperature": temperature,
    }
    if write_sha256:
        config["sha256"] = file_sha256(folder / "verifier.onnx")
    (folder / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return folder


def word_overlap_probs(claim: str, evidence: str) -> Probs:
    """A deterministic rule for scripted tests: share of claim words found in the evidence,
    contradiction when the claim has 'not' and the evidence does not (or vice versa)."""
    cw = set(re.findall(r"\w+", claim.lower()))
    ew = set(re.findall(r"\w+", evidence.lower()))
    if not cw:
        return (0.0, 1.0, 0.0)
    cov = len(cw & ew) / len(cw)
    if ("not" in cw) != ("not" in ew) and cov > 0.6:
        return (0.02, 0.08, 0.9)
    pe = min(0.98, cov**3)
    return (pe, 1.0 - pe - 0.01, 0.01)
