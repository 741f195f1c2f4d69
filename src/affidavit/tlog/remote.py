"""A log served by ``affidavit serve``, read over HTTP: its checkpoint and consistency proofs.

Example (against a running server; not run here):
    >>> remote = RemoteLog("http://127.0.0.1:8000", api_key=None)  # doctest: +SKIP
    >>> remote.checkpoint().tree_size  # doctest: +SKIP
    42

The server is not trusted: an answer is read at most `MAX_RESPONSE_BYTES` bytes (an endless one
is cut off and refused), within ``timeout_s`` in all, and uncompressed only (``Accept-Encoding:
identity``; a compressed answer, which httpx would inflate whole before any cap applied, is
refused).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from pydantic import ValidationError

from affidavit.core.answers import AnswerTooSlow, UnsupportedEncoding, iter_answer
from affidavit.core.errors import InputError, TransparencyLogError
from affidavit.core.limits import loads_json
from affidavit.core.tlog import Checkpoint, ConsistencyProof

__all__ = ["MAX_RESPONSE_BYTES", "RemoteLog"]

MAX_RESPONSE_BYTES = 4 << 20
"""Most bytes read of one answer (a checkpoint note is at most 1 MiB, a consistency proof a few
KiB): a larger one is refused, and reading stops there."""


class RemoteLog:
    """The ``/v1/log/...`` routes of a server.

    Args:
        url: the server's base URL (``http://host:port``).
        api_key: a read key, sent as ``Authorization: Bearer``; None sends none.
        timeout_s: time allowed for each request, answer included.
        max_bytes: most bytes read of one answer (default `MAX_RESPONSE_BYTES`).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Accept-Encoding": "identity"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes

    def _read(self, path: str, params: dict[str, Any] | None) -> tuple[int, bytes, bool]:
        """The status, at most ``max_bytes`` of the body, and whether more was left unread."""
        deadline = time.monotonic() + self.timeout_s
        with httpx.stream(
            "GET", self.url + path, params=params, headers=self.headers, timeout=self.timeout_s
        ) as r:
            body = bytearray()
            try:
                # raw bytes, and no encoding but identity: httpx would inflate each read whole
                # before the cap could apply
                left = max(deadline - time.monotonic(), 0.0)
                for block in iter_answer(r, left, accept="identity"):
                    body += block
                    if len(body) > self.max_bytes:
                        return r.status_code, bytes(body[: self.max_bytes]), True
            except UnsupportedEncoding as exc:
                raise TransparencyLogError(
                    f"{self.url}{path} answered with content encoding {exc.encoding!r}, which "
                    "was not asked for (refused: a compressed answer can inflate past any cap)",
                    source=self.url,
                ) from None
            except AnswerTooSlow:  # an answer trickling in never times out a read
                raise TransparencyLogError(
                    f"{self.url}{path} took longer than {self.timeout_s:g}s to answer",
                    source=self.url,
                ) from None
            return r.status_code, bytes(body), False

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        try:
            status, body, cut = self._read(path, params)
        except httpx.HTTPError as exc:
            raise TransparencyLogError(f"cannot reach {self.url}: {exc}", source=self.url) from exc
        if status != 200:
            detail = body[:300].decode("utf-8", "replace").strip()
            raise TransparencyLogError(
                f"{self.url}{path} answered {status}: {detail}", source=self.url
            )
        if cut:
            raise TransparencyLogError(
                f"{self.url}{path}: the answer is larger than the "
                f"{self.max_bytes / (1 << 20):g} MiB limit for a log answer (refused, and not "
                "read further)",
                source=self.url,
            )
        try:
            return loads_json(body, f"{self.url}{path}")
        except (InputError, ValueError) as exc:
            raise TransparencyLogError(
                f"{self.url}{path} did not answer JSON", source=self.url
            ) from exc

    def checkpoint(self) -> Checkpoint:
        """The latest checkpoint, as served (not yet checked: the caller opens its note).

        Raises:
            TransparencyLogError: unreachable, an error status, or not a checkpoint.
        """
        try:
            return Checkpoint.model_validate(self._get("/v1/log/checkpoint"))
        except ValidationError as exc:
            raise TransparencyLogError(
                f"{self.url} did not answer a checkpoint: {exc.errors()[0]['msg']}", source=self.url
            ) from exc

    def prove_consistency(self, old_size: int, new_size: int) -> ConsistencyProof:
        """The consistency proof from ``old_size`` to ``new_size``.

        Raises:
            TransparencyLogError: unreachable, an error status, or not a proof.
        """
        body = self._get("/v1/log/proof/consistency", {"from": old_size, "to": new_size})
        try:
            return ConsistencyProof.model_validate(body)
        except ValidationError as exc:
            raise TransparencyLogError(
                f"{self.url} did not answer a consistency proof: {exc.errors()[0]['msg']}",
                source=self.url,
            ) from exc
