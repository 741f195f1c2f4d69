"""Recursive input discovery with symlink-loop protection."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Found:
    """A file to ingest, or a path that could not be walked (``error`` set)."""

    path: Path
    error: str | None = None
    root: Path | None = None
    """The path given to `walk` that this file was found under (itself for a file)."""


def walk(paths: Sequence[Path | str], *, skip: Sequence[Path] = ()) -> Iterator[Found]:
    """Yield every file under ``paths`` once (by real path), depth-first, sorted by name.

    Hidden entries (names starting with ``.``) are skipped; so are the ``skip`` folders (the
    store itself). A directory reached again through a symlink is reported as a loop; a broken
    symlink or an unreadable directory is reported too. A symlink inside a folder that leads out
    of it is reported and not followed: whoever can write to the folder must not make the
    ingesting user's other files (``~/.ssh``, ``/etc``) searchable. A path given itself, link
    or not, is read.

    Examples:
        >>> [f.path.name for f in walk([tmp_path])]  # doctest: +SKIP
        ['a.txt', 'b.pdf']
    """
    seen_dirs: set[str] = set()
    seen_files: set[str] = set()
    skip_real = {os.path.realpath(s) for s in skip}

    def visit(p: Path, top: bool, root: Path, inside: str) -> Iterator[Found]:
        if not top and p.name.startswith("."):
            return
        try:
            link = p.is_symlink()
            exists = p.exists()
            broken = os.readlink(p) if link and not exists else None
            real = os.path.realpath(p)
            is_dir, is_file = p.is_dir(), p.is_file()
        except OSError as exc:
            # listed but not readable (an entry of a folder of mode r--, EIO): that entry fails,
            # the walk goes on, and --prune keeps what is stored from it (issue 26.2)
            yield Found(p, f"cannot read: {exc.strerror or exc}", root)
            return
        if broken is not None:
            yield Found(p, f"broken symlink (points to {broken})", root)
            return
        if real in skip_real:
            return
        if link and not top and os.path.commonpath([real, inside]) != inside:
            yield Found(
                p,
                f"symlink to {real}, outside the folder being ingested: not followed "
                "(give that path itself to ingest it)",
                root,
            )
            return
        if is_dir:
            if real in seen_dirs:
                yield Found(
                    p, f"symlink loop or repeated folder ({p} -> {real}); not walked again", root
                )
                return
            seen_dirs.add(real)
            try:
                entries = sorted(os.scandir(p), key=lambda e: e.name)
            except OSError as exc:
                yield Found(p, f"cannot list folder: {exc.strerror or exc}", root)
                return
            for e in entries:
                yield from visit(Path(e.path), False, root, inside)
        elif is_file:
            if real in seen_files:
                return  # the same file reached twice (e.g. through a symlink): ingest it once
            seen_files.add(real)
            yield Found(p, None, root)
        elif not exists:
            yield Found(p, "no such file or folder", root)
        else:
            yield Found(p, "not a regular file (device, socket or pipe)", root)

    for raw in paths:
        yield from visit(Path(raw), True, Path(raw), os.path.realpath(raw))
