"""A user's own model by path: ONNX folders with a label mapping, HF folders need the extra."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.core.settings import VerifySettings
from affidavit.verify.crossencoder import OnnxCrossEncoder
from affidavit.verify.external import load_external
from affidavit.verify.fakes import build_tiny_model

PAIR = [("Paris is the capital of France.", "Paris is a city in France.")]


def test_onnx_folder_with_its_own_label_order(tmp_path: Path) -> None:
    d = build_tiny_model(
        tmp_path / "m", labels=("contradict", "neutral", "entail"), seed=5, write_sha256=False
    )
    ours = OnnxCrossEncoder(d, require_sha256=False, labels=["entail", "neutral", "contradict"])
    s = VerifySettings(
        external_model_path=d, threads=1, external_labels=["contradiction", "neutral", "entailment"]
    )
    ext = load_external(s)
    assert ext.name == "external"
    (a,), (b,) = ext.score(PAIR), ours.score(PAIR)
    assert a.p_entail == pytest.approx(b.p_contradict) and a.stage == "external"


def test_two_label_model_puts_not_entailed_mass_in_neutral(tmp_path: Path) -> None:
    d = build_tiny_model(tmp_path / "m", labels=("not_entailment", "entailment"))
    s = VerifySettings(external_model_path=d, external_labels=["not_entailment", "entailment"])
    (a,) = load_external(s).score(PAIR)
    assert a.p_contradict == 0.0
    assert a.p_entail + a.p_neutral == pytest.approx(1.0)


def test_missing_path_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="external_model_path"):
        load_external(VerifySettings())
    with pytest.raises(ModelError, match="not found"):
        load_external(VerifySettings(external_model_path=tmp_path / "none"))


def test_hf_folder_without_transformers_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text("{}")
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kw: Any) -> Any:
        if name in ("torch", "transformers"):
            raise ImportError(name)
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError) as info:
        load_external(VerifySettings(external_model_path=tmp_path))
    assert 'pip install "affidavit[external]"' in str(info.value)
