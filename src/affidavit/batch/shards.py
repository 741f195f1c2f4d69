"""Shards beside the output file: planned from the input, written atomically, joined at the end.

``OUT`` gets a folder ``OUT.shards/`` holding ``manifest.json`` (what the run is: input sha256,
shard size, the settings that decide the output) and, per finished shard, ``NNNNNN.jsonl`` then
``NNNNNN.json`` (its counts; written last, so its presence means the shard is whole). A run killed
at any point and started again with the same input, settings and ``OUT`` skips the finished
shards; the joined ``OUT`` is the same as one uninterrupted run's. A different input or settings
is refused rather than mixed in, and so are shards made by other models (each shard's counts
record the models that made it: a model file replaced at the same path changes no setting). A
damaged manifest or counts file is an `InputError` naming it.

What a kill can leave behind is removed by the next run on the same ``OUT`` (`sweep`, under
the run lock): temporary files (``.NAME.PID.tmp``) and a shard folder set aside for removal
(``.OUT.shards.PID.del``). The run lock ``.OUT.lock`` stays.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from affidavit.batch.jobs import Row
from affidavit.core.batch import ShardResult
from affidavit.core.errors import InputError
from affidavit.core.text import jsonl_lines


def plan(text: str, shard_size: int) -> list[list[Row]]:
    """Split the non-blank lines of ``text`` into shards of ``shard_size`` lines, in order."""
    rows = [(n, raw) for n, raw in enumerate(jsonl_lines(text), start=1) if raw.strip()]
    return [rows[i : i + shard_size] for i in range(0, len(rows), shard_size)]


def _atomic_write(path: Path, data: str) -> None:
    # a name of this process's own: two processes never write (or truncate) the same temp file
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class ShardFolder:
    """The shard folder of one output file.

    Args:
        output: the final output file.
        manifest: what decides the output (input hash, shard size, job settings).

    Raises:
        InputError: the folder holds shards of another input or other settings, or its
            manifest is damaged.
    """

    def __init__(self, output: Path, manifest: dict[str, Any]) -> None:
        self.output = output
        self.folder = output.with_name(output.name + ".shards")
        self.manifest = manifest
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / "manifest.json"
        if path.exists():
            fresh = f"remove {self.folder} (its finished shards are then redone)"
            old = _read_json(path, fresh)
            if not isinstance(old, dict):
                raise _damaged(path, "not a JSON object", fresh)
            if old != json.loads(json.dumps(manifest)):
                diff = sorted(k for k in {*old, *manifest} if old.get(k) != manifest.get(k))
                raise InputError(
                    f"{self.folder} holds shards of another run (different {', '.join(diff)}); "
                    "remove it or choose another --output",
                    source=str(self.folder),
                )
        else:
            _atomic_write(path, json.dumps(manifest, sort_keys=True))

    def _paths(self, index: int) -> tuple[Path, Path]:
        return self.folder / f"{index:06d}.jsonl", self.folder / f"{index:06d}.json"

    def done(self, index: int) -> bool:
        """Whether shard ``index`` was finished (by this run or an earlier one).

        Its completion mark counts only beside its lines: a mark alone is redone, not joined.
        """
        lines, stats = self._paths(index)
        return stats.exists() and lines.exists()

    def write(self, result: ShardResult) -> None:
        """Store a finished shard: lines first, then its counts (the completion mark)."""
        lines, stats = self._paths(result.index)
        _atomic_write(lines, "".join(line + "\n" for line in result.lines))
        meta = result.model_dump(mode="json", exclude={"lines"})
        _atomic_write(stats, json.dumps(meta, sort_keys=True))

    def read_stats(self, index: int) -> ShardResult:
        """Counts, warnings and models of a finished shard (without its lines).

        Raises:
            InputError: the file is damaged (its name, and that removing it redoes the shard).
        """
        path = self._paths(index)[1]
        redo = "remove it (its shard is then redone)"
        data = _read_json(path, redo)
        if not isinstance(data, dict):
            raise _damaged(path, "not a JSON object", redo)
        try:
            stats = ShardResult.model_validate({**data, "lines": ()})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "counts"
            raise _damaged(path, f"{where}: {first['msg']}", redo) from None
        if stats.index != index:
            raise _damaged(path, f"it holds the counts of shard {stats.index}", redo)
        return stats

    def join(self, n_shards: int, expected_rows: int | None = None) -> None:
        """Concatenate the shards in order into the output (atomically), then remove them.

        Raises:
            InputError: the shards hold another number of lines than the input has rows (the
                output is left as it was, the shards kept).
        """
        tmp = self.output.with_name(f".{self.output.name}.{os.getpid()}.tmp")
        lines = 0
        try:
            with tmp.open("wb") as out:
                for i in range(n_shards):
                    with self._paths(i)[0].open("rb") as fh:
                        for line in fh:
                            out.write(line)
                            lines += 1
                out.flush()
                os.fsync(out.fileno())
            if expected_rows is not None and lines != expected_rows:
                raise InputError(
                    f"the shards in {self.folder} hold {lines} lines for {expected_rows} input "
                    "rows; the output was not replaced (remove the folder and run again)",
                    source=str(self.folder),
                )
            os.replace(tmp, self.output)
        finally:
            tmp.unlink(missing_ok=True)
        # set aside in one rename before removing: rmtree goes file by file in no set order, and a
        # kill partway left completion marks without their lines under the live name (the next
        # run crashed joining them). A kill now leaves either the whole folder (joined again to
        # the same output) or a set-aside one that the next run's sweep removes.
        retired = self.folder.with_name(f".{self.folder.name}.{os.getpid()}.del")
        os.replace(self.folder, retired)
        shutil.rmtree(retired)


def _damaged(path: Path, why: str, advice: str) -> InputError:
    return InputError(f"{path} is damaged ({why}); {advice}", source=str(path))


def _read_json(path: Path, advice: str) -> Any:
    """The JSON in ``path``; a file that is not UTF-8 JSON is damaged (an `InputError` naming
    it, and ``advice``)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise _damaged(path, "not UTF-8 text", advice) from None
    except json.JSONDecodeError as exc:
        raise _damaged(path, f"not JSON: {exc.msg}", advice) from None
    except RecursionError:
        raise _damaged(path, "JSON nested too deeply", advice) from None


@contextlib.contextmanager
def exclusive_output(output: Path) -> Iterator[None]:
    """Hold ``output``'s run lock for the length of a run (``.OUT.lock`` beside it).

    Raises:
        InputError: another process holds it (its pid in the message): two runs never write
            the same shards (issue 26.3: they truncated each other's files).
    """
    lock = output.with_name(f".{output.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise InputError(
                f"{output} is being written by another run (pid {holder}); wait for it to end, "
                "or choose another --output",
                source=str(output),
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def sweep(output: Path) -> list[Path]:
    """Remove what killed runs on ``output`` left: temporary files beside it and in its shard
    folder, and shard folders set aside for removal. Call it holding `exclusive_output`
    (then no other run is writing these names).

    Returns:
        The paths removed.
    """
    folder = output.with_name(output.name + ".shards")
    beside = re.compile(
        rf"\.{re.escape(output.name)}\.\d+\.tmp|\.{re.escape(folder.name)}\.\d+\.del"
    )
    found = [p for p in output.parent.iterdir() if beside.fullmatch(p.name)]
    if folder.is_dir():
        found += [p for p in folder.iterdir() if re.fullmatch(r"\..+\.\d+\.tmp", p.name)]
    for path in found:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return found


def manifest_for(text: str, shard_size: int, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The manifest of a run over ``text``."""
    return {
        "input_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "shard_size": shard_size,
        "job": fingerprint,
    }
