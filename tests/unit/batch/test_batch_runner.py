"""Batch jobs on the local engine: shards, resume after an interruption, identical output to
today's single-process ``check``, ``audit --batch``, and no Ray import unless asked for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from affidavit.batch import jobs
from affidavit.batch.runner import run_batch
from affidavit.batch.shards import plan
from affidavit.cli.main import app
from affidavit.core.errors import InputError, ModelError
from affidavit.core.settings import load_settings
from affidavit.verify.fakes import build_tiny_model

runner = CliRunner()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("m"), max_len=64)


@pytest.fixture
def env(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_VERIFY__MODEL_PATH", str(model))
    monkeypatch.setenv("AFFIDAVIT_VERIFY__THREADS", "1")


def pairs(n: int) -> str:
    rows = [
        json.dumps(
            {
                "id": i,
                "claim": f"Item {i} was made in {1900 + i % 90}.",
                "evidence": [f"Item {i} was made in {1900 + i % 90 + i % 3}.", "Other text."],
            }
        )
        for i in range(n)
    ]
    rows.insert(7, "{not json")
    rows.insert(3, "")
    return "\n".join(rows) + "\n"


def test_plan_keeps_line_numbers_and_skips_blank_lines() -> None:
    shards = plan("a\n\nb\nc\n  \nd\n", 2)
    assert shards == [[(1, "a"), (3, "b")], [(4, "c"), (6, "d")]]
    assert plan("", 3) == []


def test_sharded_check_equals_the_single_process_run(env: None, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(40))
    single, sharded = tmp_path / "single.jsonl", tmp_path / "sharded.jsonl"
    a = runner.invoke(app, ["check", str(src), "-o", str(single)])
    b = runner.invoke(
        app, ["check", str(src), "-o", str(sharded), "--engine", "local", "--shard-size", "6"]
    )
    assert a.exit_code == b.exit_code == 2  # the malformed line
    assert sharded.read_bytes() == single.read_bytes()
    assert not (tmp_path / "sharded.jsonl.shards").exists()  # joined and cleaned up


def test_interrupted_run_resumes_with_identical_output(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = pairs(30)
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    whole = tmp_path / "whole.jsonl"
    run_batch("check", text, whole, settings)

    out = tmp_path / "out.jsonl"
    real_run = jobs.CheckJob.run

    def dies_on_shard_3(self: Any, index: int, rows: Any) -> Any:
        if index == 3:
            raise KeyboardInterrupt  # the job is killed halfway
        return real_run(self, index, rows)

    monkeypatch.setattr(jobs.CheckJob, "run", dies_on_shard_3)
    with pytest.raises(KeyboardInterrupt):
        run_batch("check", text, out, settings)
    assert not out.exists()
    assert sorted(p.name for p in (tmp_path / "out.jsonl.shards").glob("0*.json")) == [
        "000000.json",
        "000001.json",
        "000002.json",
    ]
    monkeypatch.setattr(jobs.CheckJob, "run", real_run)
    report = run_batch("check", text, out, settings)
    assert report.resumed_shards == 3
    assert report.rows == 31 and report.counts == {"malformed": 1, "incomplete": 0}
    assert out.read_bytes() == whole.read_bytes()


def test_a_half_written_shard_is_redone(env: None, tmp_path: Path) -> None:
    text = pairs(10)
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    whole = tmp_path / "whole.jsonl"
    run_batch("check", text, whole, settings)
    out = tmp_path / "out.jsonl"
    folder = tmp_path / "out.jsonl.shards"
    folder.mkdir()
    from affidavit.batch.shards import ShardFolder, manifest_for

    ShardFolder(out, manifest_for(text, 4, jobs.job_fingerprint("check", settings)))
    (folder / "000000.jsonl").write_text('{"partial": ')  # killed before its completion mark
    report = run_batch("check", text, out, settings)
    assert report.resumed_shards == 0
    assert out.read_bytes() == whole.read_bytes()


def test_shards_of_another_input_are_refused(env: None, tmp_path: Path) -> None:
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.shards").mkdir()
    from affidavit.batch.shards import ShardFolder, manifest_for

    ShardFolder(out, manifest_for("other", 4, jobs.job_fingerprint("check", settings)))
    with pytest.raises(InputError, match="input_sha256"):
        run_batch("check", pairs(5), out, settings)


def test_engine_needs_an_output_file(env: None, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(2))
    res = runner.invoke(app, ["check", str(src), "--engine", "local"])
    assert res.exit_code == 2 and "--output" in res.output
    res = runner.invoke(app, ["check", str(src), "-o", str(tmp_path / "o"), "--engine", "spark"])
    assert res.exit_code == 2 and "ray" in res.output


def test_ray_engine_without_ray_names_the_extra(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(2))
    res = runner.invoke(app, ["check", str(src), "-o", str(tmp_path / "o"), "--engine", "ray"])
    assert res.exit_code == 2
    assert 'pip install "affidavit[ray]"' in res.output


def test_a_batch_error_is_printed_escaped(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an error message can carry untrusted text (a file name, a worker's output): it must not
    # drive the terminal
    from affidavit.batch import runner as batch_runner

    def fail(*args: object, **kwargs: object) -> None:
        raise ModelError("worker lost \x1b[31mPASSED\x1b[0m \u202eevil")

    monkeypatch.setattr(batch_runner, "run_batch", fail)
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(2))
    res = runner.invoke(app, ["check", str(src), "-o", str(tmp_path / "o"), "--engine", "local"])
    assert res.exit_code == 1
    assert "error: worker lost \\x1b[31mPASSED\\x1b[0m \\u202eevil" in res.output
    assert "\x1b" not in res.output and "\u202e" not in res.output


def test_without_engine_ray_is_never_imported(model: Path, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(3))
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from affidavit.cli.main import app\n"
        f"r = CliRunner().invoke(app, ['check', {str(src)!r}, '-o', {str(tmp_path / 'o')!r}])\n"
        "assert r.exit_code == 2, r.output\n"
        "assert 'ray' not in sys.modules\n"
    )
    env = {"AFFIDAVIT_VERIFY__MODEL_PATH": str(model), "AFFIDAVIT_VERIFY__THREADS": "1"}
    import os

    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, **env})


AUDIT_LINE = {
    "query": "Eiffel Tower",
    "chunks": [
        {"text": "The Eiffel Tower in Paris was completed in 1889.", "url": "https://a.org/"}
    ],
    "response": "The Eiffel Tower was completed in 1889.",
}


def test_audit_batch_writes_one_report_a_line(tmp_path: Path) -> None:
    bad = {**AUDIT_LINE, "response": "The Eiffel Tower was completed in 1925."}
    lines = [json.dumps(AUDIT_LINE), json.dumps(bad), '{"chunks": 3}', json.dumps(AUDIT_LINE)]
    src = tmp_path / "audits.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "reports.jsonl"
    res = runner.invoke(app, ["audit", str(src), "--batch", "-o", str(out), "--shard-size", "2"])
    assert res.exit_code == 2, res.output  # one malformed line
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["report"]["trust_passed"] is True
    assert rows[1]["report"]["trust_passed"] is False
    assert rows[2]["error"] == "line 3: missing field 'response'"

    def timeless(report: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in report.items() if k != "elapsed_ms"}

    assert timeless(rows[3]["report"]) == timeless(rows[0]["report"])
    # the same as auditing each input on its own
    single = runner.invoke(app, ["audit", "-", "--json"], input=json.dumps(AUDIT_LINE))
    assert timeless(json.loads(single.stdout)) == timeless(rows[0]["report"])


def test_audit_batch_needs_output(tmp_path: Path) -> None:
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(AUDIT_LINE) + "\n")
    res = runner.invoke(app, ["audit", str(src), "--batch"])
    assert res.exit_code == 2 and "--output" in res.output
    res = runner.invoke(app, ["audit", str(src), "--engine", "local"])
    assert res.exit_code == 2 and "--batch" in res.output


def test_an_output_that_cannot_be_written_is_a_usage_error(tmp_path: Path) -> None:
    """A batch run whose output cannot be written (its folder is a file) ended in exit 3,
    "internal error ... this is a bug in affidavit", where the streaming form says why (exit 2)."""
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps(AUDIT_LINE) + "\n")
    out = src / "reports.jsonl"  # below a file
    res = runner.invoke(app, ["audit", str(src), "--batch", "-o", str(out)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "error:" in res.output and str(src) in res.output


def test_a_second_run_on_the_same_output_is_refused_while_one_holds_it(
    env: None, tmp_path: Path
) -> None:
    """Issue 26.3: two runs on one --output raced on the same temporary names; one lost its
    output to the other's truncation (500 of 12,000 lines, exit 0)."""
    import fcntl
    import os

    out = tmp_path / "out.jsonl"
    lock = tmp_path / ".out.jsonl.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"424242", 0)
    try:
        with pytest.raises(InputError, match="another run \\(pid 424242\\)"):
            run_batch("check", pairs(5), out, load_settings())
    finally:
        os.close(fd)
    assert not out.exists()
    run_batch("check", pairs(5), out, load_settings())  # free again
    assert out.exists()


def test_a_join_that_does_not_add_up_leaves_the_output_alone(env: None, tmp_path: Path) -> None:
    from affidavit.batch.shards import ShardFolder

    out = tmp_path / "out.jsonl"
    out.write_text("the previous output\n")
    folder = ShardFolder(out, {"x": 1})
    (folder.folder / "000000.jsonl").write_text('{"a": 1}\n')
    with pytest.raises(InputError, match="1 lines for 3 input rows"):
        folder.join(1, expected_rows=3)
    assert out.read_text() == "the previous output\n"
    assert folder.folder.exists() and not list(tmp_path.glob(".out.jsonl.*.tmp"))


def test_a_kill_while_the_shards_are_removed_resumes(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found by tests/integration/test_check_crash_loop.py: a kill -9 partway through removing
    # the joined shards left a completion mark without its lines; the resumed run counted the
    # shard as done and crashed opening the lines (FileNotFoundError, exit 1)
    from affidavit.batch import shards

    text = pairs(10)
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    whole = tmp_path / "whole.jsonl"
    run_batch("check", text, whole, settings)
    out = tmp_path / "run" / "out.jsonl"

    def killed_while_removing(path: Path) -> None:
        (Path(path) / "000001.jsonl").unlink()  # rmtree removes in no promised order
        raise KeyboardInterrupt

    monkeypatch.setattr(shards.shutil, "rmtree", killed_while_removing)
    with pytest.raises(KeyboardInterrupt):
        run_batch("check", text, out, settings)
    monkeypatch.undo()
    run_batch("check", text, out, settings)
    assert out.read_bytes() == whole.read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == [".out.jsonl.lock", "out.jsonl"]


def test_a_run_removes_what_killed_runs_on_its_output_left(env: None, tmp_path: Path) -> None:
    text = pairs(10)
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    out = tmp_path / "out.jsonl"
    run_batch("check", text, out, settings)
    expected = out.read_bytes()
    (tmp_path / ".out.jsonl.4242.tmp").write_text("a join killed before its rename")
    (tmp_path / ".out.jsonl.shards.4242.del").mkdir()  # shards killed while being removed
    (tmp_path / "out.jsonl.shards").mkdir()
    (tmp_path / "out.jsonl.shards" / ".000000.jsonl.4242.tmp").write_text('{"partial": ')
    # another output's files are not this run's to remove
    (tmp_path / ".out.jsonl.b.jsonl.4242.tmp").write_text("keep")
    run_batch("check", text, out, settings)
    assert out.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".out.jsonl.b.jsonl.4242.tmp",
        ".out.jsonl.lock",
        "out.jsonl",
    ]


def _interrupted(
    text: str, out: Path, settings: Any, monkeypatch: pytest.MonkeyPatch, at: int = 1
) -> None:
    """A run on ``out`` killed when it reaches shard ``at`` (shards before it are finished)."""
    real_run = jobs.CheckJob.run

    def dies(self: Any, index: int, rows: Any) -> Any:
        if index == at:
            raise KeyboardInterrupt
        return real_run(self, index, rows)

    with monkeypatch.context() as m:
        m.setattr(jobs.CheckJob, "run", dies)
        with pytest.raises(KeyboardInterrupt):
            run_batch("check", text, out, settings)


def test_resuming_with_another_model_at_the_same_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model file at verify.model_path was replaced between two sittings: the settings (and
    so the manifest) were the same, and the resumed run joined verdicts of both models into one
    output. Each shard records the models that made it; another one is refused."""
    import shutil

    from affidavit.verify import crossencoder
    from affidavit.verify.fakes import build_tiny_model

    def replace_model(seed: int) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        build_tiny_model(folder, max_len=64, seed=seed)
        # a new sitting is a new process: nothing loaded by the last one is kept
        monkeypatch.setattr(crossencoder, "_CACHE", {})

    folder = tmp_path / "model"
    replace_model(0)
    settings = load_settings(
        overrides={"batch": {"shard_size": 4}, "verify": {"model_path": str(folder)}}
    )
    text = pairs(12)
    out = tmp_path / "out.jsonl"
    _interrupted(text, out, settings, monkeypatch, at=2)
    replace_model(1)  # another model, at the same path, under the same settings
    with pytest.raises(InputError, match="other models"):
        run_batch("check", text, out, settings)
    assert not out.exists()  # (an InputError: exit 2 at the CLI)
    # the first model back: the run resumes and ends as one uninterrupted run with it would
    replace_model(0)
    whole = tmp_path / "whole.jsonl"
    run_batch("check", text, whole, settings)
    assert run_batch("check", text, out, settings).resumed_shards == 2
    assert out.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize(
    "damage", [b"{not json", b"\xff\xfe", b"[1, 2]"], ids=["not-json", "not-utf8", "not-object"]
)
def test_a_damaged_manifest_is_a_clear_input_error(
    env: None, tmp_path: Path, damage: bytes
) -> None:
    """A damaged OUT.shards/manifest.json ended in "internal error" (exit 3); it is named and
    the run stops with exit 2 before any shard is run."""
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(6))
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.shards").mkdir()
    manifest = tmp_path / "out.jsonl.shards" / "manifest.json"
    manifest.write_bytes(damage)
    args = ["check", str(src), "-o", str(out), "--engine", "local", "--shard-size", "4"]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.output, res.exception)
    assert "manifest.json is damaged" in res.output
    assert not out.exists() and manifest.read_bytes() == damage


@pytest.mark.parametrize(
    "damage",
    [b'{"index": 0, "counts"', b"\xff\xfe", b'{"index": -1}', b"[]", b'{"index": 3}'],
    ids=["not-json", "not-utf8", "bad-field", "not-object", "another-shard"],
)
def test_a_damaged_shard_completion_mark_is_a_clear_input_error(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    """A damaged shard counts file (NNNNNN.json) ended in "internal error" (exit 3), and only
    after every other shard had run; it is named at the start (exit 2), and once removed its
    shard is redone."""
    text = pairs(10)
    settings = load_settings(overrides={"batch": {"shard_size": 4}})
    out = tmp_path / "out.jsonl"
    _interrupted(text, out, settings, monkeypatch, at=2)
    mark = tmp_path / "out.jsonl.shards" / "000000.json"
    mark.write_bytes(damage)
    ran: list[int] = []
    real_run = jobs.CheckJob.run

    def counted(self: Any, index: int, rows: Any) -> Any:
        ran.append(index)
        return real_run(self, index, rows)

    monkeypatch.setattr(jobs.CheckJob, "run", counted)
    src = tmp_path / "in.jsonl"
    src.write_text(text)
    args = ["check", str(src), "-o", str(out), "--engine", "local", "--shard-size", "4"]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (res.output, res.exception)
    assert "000000.json is damaged" in res.output and ran == []
    assert not out.exists()
    mark.unlink()
    assert run_batch("check", text, out, settings).resumed_shards == 1
    assert ran == [0, 2]
    whole = tmp_path / "whole.jsonl"
    run_batch("check", text, whole, settings)
    assert out.read_bytes() == whole.read_bytes()


def test_audit_batch_verifies_with_the_thresholds_a_single_audit_uses(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `audit --batch --verify` built its verifier on the raw policy settings (tau_entail 0.5),
    # not on the preset's and the model's thresholds every other command uses: under
    # preset "strict" a claim the single audit withholds passed the batch one
    from affidavit.verify import cascade
    from affidavit.verify.calibration import effective_policy

    monkeypatch.setenv("AFFIDAVIT_POLICY__PRESET", "strict")
    wanted = effective_policy(load_settings()).tau_entail
    assert wanted > load_settings().policy.tau_entail
    seen: list[float] = []

    class Spy(cascade.ClaimCascade):
        def __init__(self, verify: Any, policy: Any, *args: Any, **kwargs: Any) -> None:
            seen.append(policy.tau_entail)
            super().__init__(verify, policy, *args, **kwargs)

    monkeypatch.setattr(cascade, "ClaimCascade", Spy)
    src = tmp_path / "audits.jsonl"
    src.write_text(json.dumps(AUDIT_LINE) + "\n")
    single = runner.invoke(app, ["audit", str(src), "--verify", "--json"])
    assert single.exit_code in (0, 1), single.output
    batch = runner.invoke(
        app, ["audit", str(src), "--verify", "--batch", "-o", str(tmp_path / "out.jsonl")]
    )
    assert batch.exit_code in (0, 1), batch.output
    assert len(seen) >= 2 and set(seen) == {wanted}, seen


def test_an_uncertain_band_out_of_order_is_a_usage_error_on_every_path(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # refused only when the verifier was built: exit 2 without --engine, exit 1 (the code of
    # "some claims could not be verified") with it, the workers' error printed
    monkeypatch.setenv("AFFIDAVIT_VERIFY__UNCERTAIN_LOW", "0.95")
    src = tmp_path / "in.jsonl"
    src.write_text(pairs(2))
    for engine in ([], ["--engine", "local"]):
        res = runner.invoke(app, ["check", str(src), "-o", str(tmp_path / "o"), *engine])
        assert res.exit_code == 2, res.output
        assert "uncertain_low" in res.output
