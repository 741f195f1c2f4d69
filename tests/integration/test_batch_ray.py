"""Batch jobs on a real (local) Ray: the same output as one process, and resume after an
interruption. One Ray is started for the module (20-40 s) and joined by every test."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from affidavit.cli.main import app
from affidavit.core.settings import load_settings
from affidavit.verify.fakes import build_tiny_model

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

runner = CliRunner()


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    # Ray waits 30 s for its raylet; on an overloaded machine that can pass: try twice, then
    # skip with the reason (an environment failure, not a failure of the code under test)
    error: Exception | None = None
    for _ in range(2):
        try:
            ray.init(
                num_cpus=2,
                object_store_memory=100 * 1024 * 1024,
                include_dashboard=False,
                log_to_driver=False,
            )
            break
        except Exception as exc:  # ray raises a bare Exception on a startup timeout
            error = exc
            ray.shutdown()
    else:
        pytest.skip(f"Ray did not start on this machine: {error}")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("m"), max_len=64)


@pytest.fixture
def env(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_VERIFY__MODEL_PATH", str(model))
    monkeypatch.setenv("AFFIDAVIT_VERIFY__THREADS", "1")


def pairs(n: int) -> str:
    return (
        "\n".join(
            json.dumps(
                {
                    "id": f"p{i}",
                    "claim": f"Item {i} was made in {1900 + i % 90} in city {i % 7}.",
                    "evidence": [
                        f"Item {i} was made in {1900 + i % 90 + i % 3}.",
                        f"City {i % 5} is where item {i} comes from.",
                    ],
                }
            )
            for i in range(n)
        )
        + "\n"
    )


def test_check_on_ray_interrupted_and_resumed_equals_one_process(
    ray_cluster: None, env: None, tmp_path: Path
) -> None:
    from affidavit.batch.runner import run_batch
    from affidavit.cli.verify import check_lines
    from affidavit.verify.calibration import effective_policy
    from affidavit.verify.cascade import ClaimCascade

    text = pairs(400)
    settings = load_settings(overrides={"batch": {"engine": "ray", "workers": 2, "shard_size": 20}})
    settings = settings.model_copy(update={"policy": effective_policy(settings)})
    single = io.StringIO()
    check_lines(text, ClaimCascade(settings.verify, settings.policy), single)

    out = tmp_path / "out.jsonl"

    def stop_halfway(done: int, total: int) -> None:
        if done >= total // 2:
            raise KeyboardInterrupt  # the job is killed halfway

    with pytest.raises(KeyboardInterrupt):
        run_batch("check", text, out, settings, progress=stop_halfway)
    assert not out.exists()
    report = run_batch("check", text, out, settings)
    assert 10 <= report.resumed_shards < 20 and report.engine == "ray"
    got = [json.loads(x) for x in out.read_text().splitlines()]
    want = [json.loads(x) for x in single.getvalue().splitlines()]
    assert [g["id"] for g in got] == [w["id"] for w in want]
    assert [g["label"] for g in got] == [w["label"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert abs(g["p_entail"] - w["p_entail"]) <= 1e-6
        assert abs(g["p_contradict"] - w["p_contradict"]) <= 1e-6
        assert g["evidence_used"] == w["evidence_used"]


def test_audit_batch_on_ray_equals_local(ray_cluster: None, tmp_path: Path) -> None:
    line = {
        "query": "Eiffel",
        "chunks": [{"text": "The Eiffel Tower was completed in 1889.", "url": "https://a.org/"}],
        "response": "The Eiffel Tower was completed in 1889.",
    }
    bad = {**line, "response": "The Eiffel Tower was completed in 1925."}
    src = tmp_path / "a.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [line, bad] * 5) + "\n")
    outs = {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.jsonl"
        res = runner.invoke(
            app,
            ["audit", str(src), "--batch", "-o", str(out), "--engine", engine, "--shard-size", "3"],
        )
        assert res.exit_code == 1, res.output  # the bad lines fail trust
        outs[engine] = [json.loads(x) for x in out.read_text().splitlines()]
        for row in outs[engine]:
            row["report"].pop("elapsed_ms")
    assert outs["ray"] == outs["local"]


def test_ingest_on_ray_stores_the_same_vectors(
    ray_cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from affidavit.store.local import LocalStore

    monkeypatch.setenv("AFFIDAVIT_EMBED__BACKEND", "fake")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"id": f"d{i}", "text": f"Document {i} talks about topic {i % 4}. " * 8})
            for i in range(30)
        )
        + "\n"
    )
    stores: dict[str, Any] = {}
    for engine in ("local", "ray"):
        where = tmp_path / engine
        res = runner.invoke(
            app, ["ingest", str(corpus), "--store", str(where), "--engine", engine, "--json"]
        )
        assert res.exit_code == 0, res.output
        stores[engine] = LocalStore(where)
    a, b = stores["local"], stores["ray"]
    assert a.count() == b.count() == (30, b.count()[1])
    q = np.ones(a._current_index().vectors.shape[1], dtype=np.float32)
    ids_a = [h.chunk.id for h in a.search_dense(q, 20)]
    ids_b = [h.chunk.id for h in b.search_dense(q, 20)]
    assert ids_a == ids_b
    assert np.array_equal(a._current_index().vectors, b._current_index().vectors)
    a.close()
    b.close()
