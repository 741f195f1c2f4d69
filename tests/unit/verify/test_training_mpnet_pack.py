"""The int8 pack that carries the MPNet base to the GPU machine (training/mpnet_pack.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

TRAINING = Path(__file__).resolve().parents[3] / "training"


@pytest.fixture(scope="module")
def mpnet_pack():  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    sys.path.insert(0, str(TRAINING))
    try:
        import mpnet_pack as module
    finally:
        sys.path.remove(str(TRAINING))
    return module


def test_pack_splits_and_unpack_rebuilds_every_tensor(mpnet_pack, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    rng = np.random.default_rng(0)
    base = tmp_path / "base"
    base.mkdir()
    weights = {
        "encoder.layer.0.dense.weight": rng.normal(0, 0.05, (1024, 768)).astype(np.float32),
        "encoder.layer.1.dense.weight": rng.normal(0, 0.05, (1024, 768)).astype(np.float32),
        "encoder.layer.0.dense.bias": rng.normal(0, 0.05, (1024,)).astype(np.float32),
        "embeddings.position_embeddings.weight": rng.normal(0, 0.3, (64, 32)).astype(np.float32),
    }
    weights["encoder.layer.1.dense.weight"][3] = 0.0  # an all-zero row must not divide by zero
    save_file(weights, str(base / "model.safetensors"))
    (base / "config.json").write_text("{}")
    packed = tmp_path / "packed"
    mpnet_pack.pack(base, packed, part_mib=1.0, check=False)
    parts = sorted(packed.glob("part*.safetensors"))
    assert len(parts) == 2  # each 1024x768 int8 matrix is 0.75 MiB: one per part
    assert all(p.stat().st_size < 1.1 * 2**20 for p in parts)
    out = tmp_path / "rebuilt"
    mpnet_pack.unpack(packed, out)
    got = load_file(str(out / "model.safetensors"))
    assert set(got) == set(weights)
    assert (out / "config.json").exists()
    for name, w in weights.items():
        assert got[name].dtype == np.float32 and got[name].shape == w.shape
        if w.size < 500_000:  # vectors and small matrices travel as they are
            assert np.array_equal(got[name], w)
        else:
            err = np.sqrt(((got[name] - w) ** 2).mean()) / np.sqrt((w**2).mean())
            assert 0 < err < 0.02
    assert not got["encoder.layer.1.dense.weight"][3].any()


def test_unpack_refuses_a_missing_part(mpnet_pack, tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    base = tmp_path / "base"
    base.mkdir()
    w = {f"l{i}.weight": np.ones((1024, 768), np.float32) for i in range(2)}
    save_file(w, str(base / "model.safetensors"))
    packed = tmp_path / "packed"
    mpnet_pack.pack(base, packed, part_mib=1.0, check=False)
    (packed / "part1.safetensors").unlink()
    with pytest.raises((SystemExit, FileNotFoundError)):
        mpnet_pack.unpack(packed, tmp_path / "rebuilt")
