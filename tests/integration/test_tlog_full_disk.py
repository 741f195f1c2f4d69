"""A full disk under the transparency log (issue 30: "disk full ... no lost or duplicated entry,
the tree always verifies"): a writer appends until the disk refuses, then keeps trying.

The contract a caller relies on (``certify_answer`` issues a certificate only when its append
returned) is exact: an append that returned is in the log, one that raised added nothing. After
every attempt the log holds exactly the entries of the appends that returned, in order, and
verifies; once there is room again it goes on. Two real full disks, as for ingest: a file-size
limit (writes past it fail with EFBIG) and, where this machine lets an unprivileged user mount
one, a small tmpfs (ENOSPC).

Before, a disk that filled up while the checkpoint history was written, after the new checkpoint
was committed, made the append raise although its entries were in the log: a certificate
refused as unlogged was logged, and a retry could log it twice.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from affidavit.tlog.monitor import verify_log
from affidavit.tlog.store import FileLog

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ORIGIN = "example.com/full-disk"
REFUSALS = 25  # attempts the full disk refuses before the writer stops

# the writer: appends batches of 1 to 3 entries until the disk has refused REFUSALS of them,
# checking the contract after every attempt; prints what happened as JSON
WRITER = """
import hashlib, json, sys
from pathlib import Path
from cryptography.hazmat.primitives import serialization
from affidavit.core.errors import TransparencyLogError
from affidavit.tlog.monitor import verify_log
from affidavit.tlog.store import FileLog

folder, pem, wanted, origin = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
key = serialization.load_pem_private_key(pem.read_bytes(), password=None)
log = FileLog(folder)
returned, refused, reasons, n = [], 0, set(), 0
while refused < wanted and n < 200_000:
    batch = [hashlib.sha256(i.to_bytes(8, "big")).digest() for i in range(n, n + 1 + n % 3)]
    n += len(batch)
    try:
        log.append(batch, key, origin)
    except TransparencyLogError as exc:
        refused += 1
        reasons.add(exc.message.rsplit(": ", 1)[-1])
    else:
        returned.extend(batch)
    if log.size() != len(returned):
        sys.exit(f"after attempt {n}: the log holds {log.size()}, appends returned {len(returned)}")
    if any(log.entry(i) != e for i, e in enumerate(returned)):
        sys.exit(f"after attempt {n}: the log's entries are not those of the appends that returned")
    result = verify_log(log, [key.public_key()])
    if not result.valid:
        sys.exit(f"after attempt {n}: the log does not verify: {result.reasons}")
log.close()
print(json.dumps({"returned": len(returned), "refused": refused, "reasons": sorted(reasons)}))
"""


def _tmpfs_works(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    where.mkdir(exist_ok=True)
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs '{where}'"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


@pytest.mark.parametrize("disk", ["file_size_limit", "tmpfs"])
def test_a_full_disk_never_loses_or_adds_an_entry_and_the_log_goes_on(
    tmp_path: Path, disk: str
) -> None:
    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "log.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    kept = tmp_path / "kept"  # the log, once the full disk is gone
    if disk == "tmpfs":
        small = tmp_path / "small"
        if not _tmpfs_works(small):
            pytest.skip("no unprivileged mount namespace here (unshare -rm) for a small tmpfs")
        log_dir = small / "log"
        shell = (
            f"mount -t tmpfs -o size=96k tmpfs '{small}' || exit 99\n"
            f"'{sys.executable}' '{script}' '{log_dir}' '{pem}' {REFUSALS} '{ORIGIN}'\n"
            f"rc=$?\ncp -a '{log_dir}' '{kept}'\nexit $rc\n"
        )
        r = subprocess.run(
            ["unshare", "-rm", "sh", "-c", shell],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        reason = "No space left on device"
    else:
        limit = 16 * 1024

        def small_disk() -> None:
            # Python ignores SIGXFSZ: a write past the limit fails with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        r = subprocess.run(
            [sys.executable, str(script), str(kept), str(pem), str(REFUSALS), ORIGIN],
            capture_output=True,
            text=True,
            preexec_fn=small_disk,
            timeout=300,
            check=False,
        )
        reason = "File too large"
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    done = json.loads(r.stdout.strip().splitlines()[-1])
    assert done["refused"] == REFUSALS and done["returned"] > 0
    assert reason in done["reasons"], done

    # with room again: the log verifies, holds exactly the returned appends, and goes on
    log = FileLog(kept)
    assert verify_log(log, [key.public_key()]).valid
    size = log.size()
    assert size == done["returned"]
    log.append([bytes(32)], key, ORIGIN)
    result = verify_log(log, [key.public_key()])
    assert result.valid and result.tree_size == size + 1, result.reasons
    # the last checkpoint the full disk may have kept out of the history is back in it
    assert [int(note.split("\n")[1]) for note in log.history()][-2:] == [size, size + 1]
    log.close()
