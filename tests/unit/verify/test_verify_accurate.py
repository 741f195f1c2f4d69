"""The accurate verifier's assembly: registry pieces + shipped delta + weight-free graph.

A tiny stand-in model (an embedding mean and a 3x3 classifier) goes through the same path as
the real MPNet: a zip split in pieces, a safetensors file inside it, LoRA factors merged in
float64, a graph whose weights were left out, sha256 checks and the probe parity check.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.verify import accurate
from affidavit.verify.crossencoder import OnnxCrossEncoder, packaged_model_dir

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(7)
VOCAB = 30522  # the packaged MiniLM tokenizer stands in for MPNet's


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    header: dict[str, object] = {}
    blobs = b""
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(arr.shape),
            "data_offsets": [len(blobs), len(blobs) + len(raw)],
        }
        blobs += raw
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + blobs


def tiny_graph() -> bytes:
    """logits = mean_t(emb[input_ids]) @ W_t, with both weights emptied."""
    emb, w_t = TensorProto(), TensorProto()
    for t, name, dims in ((emb, "emb", [VOCAB, 3]), (w_t, "W_t", [3, 3])):
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(dims)  # no data: the installer fills it
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["g"]),
        helper.make_node("ReduceMean", ["g"], ["m"], axes=[1], keepdims=0),
        helper.make_node("MatMul", ["m", "W_t"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 3])],
        initializer=[emb, w_t],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class Fixture:
    def __init__(self, root: Path) -> None:
        self.src = root / "shipped"
        self.src.mkdir()
        self.emb = RNG.normal(size=(VOCAB, 3)).astype(np.float32)
        self.cls = RNG.normal(size=(3, 3)).astype(np.float32)
        a = RNG.normal(size=(1, 3)).astype(np.float32)
        b = RNG.normal(size=(3, 1)).astype(np.float32)
        self.scale = 2.0
        self.merged_cls = (
            self.cls.astype(np.float64) + self.scale * (b.astype(np.float64) @ a)
        ).astype(np.float32)
        tok = (packaged_model_dir() / "tokenizer.json").read_bytes()
        st = safetensors_bytes({"emb.weight": self.emb, "cls.weight": self.cls})
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("base/model.safetensors", st)
            zf.writestr("base/tokenizer.json", tok)
        self.zip = buf.getvalue()
        third = len(self.zip) // 3
        self.parts = []
        for i, piece in enumerate(
            (self.zip[:third], self.zip[third : 2 * third], self.zip[2 * third :])
        ):
            p = root / f"piece.{i:03d}"
            p.write_bytes(piece)
            self.parts.append(p)
        (self.src / "graph.onnx").write_bytes(tiny_graph())
        np.savez(self.src / "delta.npz", **{"lora_A/m.cls.weight": a, "lora_B/m.cls.weight": b})
        probe_pairs = [("Paris is in France.", "Paris is the capital of France.")]
        self.tok_path = root / "tok.json"
        self.tok_path.write_bytes(tok)
        self.recipe = {
            "model": {
                "name": "tiny-accurate",
                "labels": ["entail", "neutral", "contradict"],
                "max_len": 64,
            },
            "assembly": {
                "base": {
                    "zip_sha256": sha(self.zip),
                    "members": {
                        "base/model.safetensors": sha(st),
                        "base/tokenizer.json": sha(tok),
                    },
                    "weights": "base/model.safetensors",
                    "tokenizer": "base/tokenizer.json",
                    "prefix": "m.",
                },
                "lora_scale": self.scale,
                "initializers": {
                    "emb": {"param": "m.emb.weight", "transpose": False},
                    "W_t": {"param": "m.cls.weight", "transpose": True},
                },
                "files": {
                    "graph.onnx": sha((self.src / "graph.onnx").read_bytes()),
                    "delta.npz": sha((self.src / "delta.npz").read_bytes()),
                },
                "probe": [
                    {"claim": c, "evidence": e, "logits": self.reference(c, e).tolist()}
                    for c, e in probe_pairs
                ],
            },
        }
        self.write_recipe()

    def write_recipe(self) -> None:
        (self.src / "config.json").write_text(json.dumps(self.recipe))

    def reference(self, claim: str, evidence: str) -> np.ndarray:
        from tokenizers import Tokenizer

        ids = (
            Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
            .encode(claim, evidence)
            .ids
        )
        out: np.ndarray = self.emb[ids].mean(0) @ self.merged_cls.T
        return out


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path)


def test_assembles_a_checked_verifier_folder_once(fx: Fixture, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = accurate.ensure_accurate_model(cache, src=fx.src, parts=fx.parts)
    enc = OnnxCrossEncoder(folder, threads=1, batch_size=4)
    claim, ev = "The Seine flows through Paris.", "Paris lies on the Seine."
    got, _ = enc.logits([(claim, ev)])
    assert np.allclose(got[0], fx.reference(claim, ev), atol=1e-5)
    assert enc.config.name == "tiny-accurate" and enc.config.sha256 == enc.sha256
    mtime = (folder / "model.onnx").stat().st_mtime_ns
    # the second call reuses the checked folder
    assert accurate.ensure_accurate_model(cache, src=fx.src, parts=fx.parts) == folder
    assert (folder / "model.onnx").stat().st_mtime_ns == mtime
    assert [p.name for p in cache.iterdir() if p.name.startswith(".verifier-accurate.")] == [
        ".verifier-accurate.lock"
    ]


def test_a_changed_recipe_reassembles(fx: Fixture, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = accurate.ensure_accurate_model(cache, src=fx.src, parts=fx.parts)
    fx.recipe["model"]["name"] = "tiny-accurate-2"
    fx.write_recipe()
    accurate.ensure_accurate_model(cache, src=fx.src, parts=fx.parts)
    assert json.loads((folder / "config.json").read_text())["name"] == "tiny-accurate-2"


def test_a_corrupt_piece_is_refused_and_nothing_is_left(fx: Fixture, tmp_path: Path) -> None:
    data = bytearray(fx.parts[1].read_bytes())
    data[10] ^= 0xFF
    fx.parts[1].write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(ModelError, match="sha256"):
        accurate.ensure_accurate_model(cache, src=fx.src, parts=fx.parts)
    assert not (cache / accurate.FOLDER).exists()


def test_pieces_out_of_order_are_refused(fx: Fixture, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="sha256"):
        accurate.ensure_accurate_model(tmp_path / "c", src=fx.src, parts=fx.parts[::-1])


def test_an_altered_shipped_delta_is_refused(fx: Fixture, tmp_path: Path) -> None:
    np.savez(
        fx.src / "delta.npz",
        **{"lora_A/m.cls.weight": np.ones((1, 3)), "lora_B/m.cls.weight": np.ones((3, 1))},
    )
    with pytest.raises(ModelError, match="altered"):
        accurate.ensure_accurate_model(tmp_path / "c", src=fx.src, parts=fx.parts)


def test_a_model_that_misses_its_probe_logits_is_refused(fx: Fixture, tmp_path: Path) -> None:
    probe = fx.recipe["assembly"]["probe"][0]
    probe["logits"] = [x + 0.01 for x in probe["logits"]]
    fx.write_recipe()
    with pytest.raises(ModelError, match="differs from the exported"):
        accurate.ensure_accurate_model(tmp_path / "c", src=fx.src, parts=fx.parts)
    assert not (tmp_path / "c" / accurate.FOLDER).exists()


def test_no_probe_no_trust(fx: Fixture, tmp_path: Path) -> None:
    fx.recipe["assembly"]["probe"] = []
    fx.write_recipe()
    with pytest.raises(ModelError, match="probe"):
        accurate.ensure_accurate_model(tmp_path / "c", src=fx.src, parts=fx.parts)


def test_missing_part_packages_name_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> object:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(accurate.importlib.metadata, "distribution", missing)
    with pytest.raises(MissingDependencyError) as err:
        accurate.part_paths()
    assert 'pip install "affidavit[accurate]"' in str(err.value)


def test_merge_is_float64_then_rounded_once() -> None:
    w = np.array([[1.0, 2.0]], dtype=np.float32)
    a = np.array([[0.5, 0.25]], dtype=np.float32)
    b = np.array([[2.0]], dtype=np.float32)
    out = accurate.merge_delta({"x": w}, {"lora_A/x": a, "lora_B/x": b, "full/y": np.zeros(2)}, 0.5)
    assert out["x"].dtype == np.float32
    assert np.array_equal(out["x"], np.array([[1.5, 2.25]], dtype=np.float32))
    assert out["y"].dtype == np.float32
    with pytest.raises(ModelError, match="unknown weight"):
        accurate.merge_delta({}, {"lora_A/x": a, "lora_B/x": b}, 1.0)
    with pytest.raises(ModelError, match="does not fit"):
        accurate.merge_delta({"x": np.zeros((3, 3))}, {"lora_A/x": a, "lora_B/x": b}, 1.0)


def test_safetensors_reader_round_trips_and_rejects_garbage() -> None:
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = accurate.read_safetensors(safetensors_bytes({"t": arr}))
    assert np.array_equal(got["t"], arr)
    with pytest.raises(ModelError):
        accurate.read_safetensors(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")


def test_fill_graph_checks_shapes() -> None:
    with pytest.raises(ModelError, match="shape"):
        accurate.fill_graph(
            tiny_graph(),
            {"e": np.zeros((2, 2))},
            {"emb": {"param": "e", "transpose": False}},
        )
    model = accurate.fill_graph(
        tiny_graph(),
        {"e": np.ones((VOCAB, 3)), "c": np.eye(3)},
        {"emb": {"param": "e"}, "W_t": {"param": "c", "transpose": True}},
    )
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert inits["emb"].shape == (VOCAB, 3) and np.array_equal(inits["W_t"], np.eye(3))


def test_the_model_cache_variable_is_not_a_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from affidavit.core.settings import load_settings

    monkeypatch.setenv("AFFIDAVIT_MODEL_CACHE", str(tmp_path / "mc"))
    load_settings()  # the strict environment source accepts it
    assert accurate.default_cache() == tmp_path / "mc"
    monkeypatch.delenv("AFFIDAVIT_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert accurate.default_cache() == tmp_path / "xdg" / "affidavit" / "models"


def test_an_int8_delta_reads_back_as_its_scaled_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(0, 0.02, (4, 6)).astype(np.float32)
    a[2] = 0.0  # an all-zero row keeps a usable scale
    q, s = accurate.quantize_rows(a)
    assert q.dtype == np.int8 and s.shape == (4, 1) and np.abs(q).max() == 127
    head = np.ones((2, 2), np.float16)
    np.savez(
        tmp_path / "delta.npz",
        **{"lora_A/x": q, "scale/lora_A/x": s, "full/y": head},
    )
    got = accurate.read_delta(tmp_path / "delta.npz")
    assert set(got) == {"lora_A/x", "full/y"}
    assert got["lora_A/x"].dtype == np.float32
    assert np.array_equal(got["lora_A/x"], q.astype(np.float32) * s)
    assert np.abs(got["lora_A/x"] - a).max() <= s.max() / 2 + 1e-9
    assert not got["lora_A/x"][2].any()
    assert np.array_equal(got["full/y"], head)


def test_an_int8_tensor_without_its_scale_is_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "delta.npz", **{"lora_A/x": np.ones((2, 2), np.int8)})
    with pytest.raises(ModelError, match="no scale"):
        accurate.read_delta(tmp_path / "delta.npz")


def test_an_unwritable_cache_is_a_clear_error(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ModelError, match="cannot write the model cache"):
        accurate.ensure_accurate_model(blocker / "cache", src=fx.src, parts=fx.parts)
    # the command line says so in one line and exits 2, without a traceback
    with pytest.raises(SystemExit) as exc:
        accurate.main(["--cache", str(blocker / "cache")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write the model cache") and "Traceback" not in err
