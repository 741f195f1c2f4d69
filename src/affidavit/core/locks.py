"""One advisory file lock, shared by everything that assembles a model into a cache.

Examples:
    >>> from pathlib import Path
    >>> import tempfile
    >>> with exclusive(Path(tempfile.mkdtemp()) / ".x.lock"):
    ...     pass
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_path`` (created if needed) for the block, so two
    processes never assemble into the same place at once."""
    with lock_path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
