"""Model assets shipped inside the package (tokenizers; weights come from registry packages)."""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).parent


def asset(*parts: str) -> Path:
    """Path of a packaged model asset, e.g. ``asset("minilm", "tokenizer.json")``."""
    return MODELS_DIR.joinpath(*parts)
