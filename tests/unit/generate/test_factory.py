"""make_generator: backend selection and config errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from affidavit.core.errors import ConfigError, MissingDependencyError
from affidavit.core.settings import GenerateSettings
from affidavit.core.types import Message
from affidavit.generate import make_generator
from affidavit.generate.base import Generator
from affidavit.generate.llamacpp import LlamaCppGenerator
from affidavit.generate.openai_compat import OpenAICompatGenerator


def test_openai_backend_needs_base_url() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        make_generator(GenerateSettings(backend="openai"))


def test_openai_backend_built_from_settings() -> None:
    g = make_generator(
        GenerateSettings(
            backend="openai",
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-secret-123",
            max_retries=5,
        )
    )
    assert isinstance(g, OpenAICompatGenerator)
    assert isinstance(g, Generator)
    assert g.max_retries == 5
    assert "sk-secret-123" not in str(g.config())


def test_fake_backend_is_not_configurable() -> None:
    with pytest.raises(ConfigError, match="FakeGenerator"):
        make_generator(GenerateSettings(backend="fake"))


def test_llamacpp_backend_is_lazy(tmp_path: Path) -> None:
    g = make_generator(GenerateSettings(threads=1), cache_dir=tmp_path)
    assert isinstance(g, LlamaCppGenerator)
    assert g.threads == 1
    assert list(tmp_path.iterdir()) == []  # nothing assembled or loaded yet


def test_llamacpp_backend_takes_both_time_limits(tmp_path: Path) -> None:
    g = make_generator(GenerateSettings(timeout_s=30, stream_timeout_s=90), cache_dir=tmp_path)
    assert isinstance(g, LlamaCppGenerator)
    assert (g.timeout_s, g.stream_timeout_s) == (30, 90)
    assert g.config()["timeout_s"] == 30


def test_missing_xllamacpp_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    g = make_generator(GenerateSettings(), cache_dir=tmp_path)
    with pytest.raises(MissingDependencyError) as info:
        g.generate([Message(role="user", content="hi")])
    assert 'pip install "affidavit[llm]"' in str(info.value)
    assert list(tmp_path.iterdir()) == []  # failed before assembling the model
