"""Build the configured generator from ``settings.generate``.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> s = load_settings(overrides={"generate": {"backend": "openai",
    ...                                           "base_url": "http://127.0.0.1:8000/v1"}})
    >>> make_generator(s.generate).name
    'openai:qwen2.5-coder-1.5b-instruct-q4_k_m'
"""

from __future__ import annotations

from pathlib import Path

from affidavit.core.errors import ConfigError
from affidavit.core.settings import GenerateSettings
from affidavit.generate.base import Generator


def make_generator(settings: GenerateSettings, *, cache_dir: str | Path | None = None) -> Generator:
    """Return the backend ``settings.backend`` names, configured from ``settings``.

    Args:
        settings: the ``generate`` section.
        cache_dir: where the packaged model is assembled (``<home>/models``); needed for the
            ``llamacpp`` backend when ``settings.model_path`` is not set.

    Raises:
        ConfigError: the backend's required settings are missing (``base_url`` for ``openai``),
            or ``fake`` was asked for (a fake is built in code with a script, not configured).
    """
    if settings.backend == "llamacpp":
        from affidavit.generate.llamacpp import LlamaCppGenerator

        if settings.model_path is None and cache_dir is None:
            raise ConfigError("generate.model_path is not set and no model cache folder given")
        return LlamaCppGenerator(
            settings.model_path,
            cache_dir=Path(cache_dir) if cache_dir is not None else None,
            context_size=settings.context_size,
            threads=settings.threads,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            name=settings.model,
            timeout_s=settings.timeout_s,
            stream_timeout_s=settings.stream_timeout_s,
        )
    if settings.backend == "openai":
        from affidavit.generate.openai_compat import OpenAICompatGenerator

        if not settings.base_url:
            raise ConfigError(
                "generate.base_url is required for the openai backend "
                "(e.g. AFFIDAVIT_GENERATE__BASE_URL=http://localhost:11434/v1)"
            )
        return OpenAICompatGenerator(
            settings.base_url,
            model=settings.model,
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            timeout_s=settings.timeout_s,
            stream_timeout_s=settings.stream_timeout_s,
            max_retries=settings.max_retries,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
        )
    raise ConfigError(
        "generate.backend 'fake' is for tests: build affidavit.testing.fake_llm.FakeGenerator "
        "with a script and pass it to the pipeline"
    )
