"""A log served by ``affidavit serve``, read over HTTP: its checkpoint and consistency proofs.

Example (against a running server; not run here):
    >>> remote = RemoteLog("http://127.0.0.1:8000", api_key=None)  # doctest: +SKIP
    >>> remote.checkpoint().tree_size  # doctest: +SKIP
    42
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import ValidationError

from affidavit.core.errors import TransparencyLogError
from affidavit.core.tlog import Checkpoint, ConsistencyProof

__all__ = ["RemoteLog"]


class RemoteLog:
    """The ``/v1/log/...`` routes of a server.

    Args:
        url: the server's base URL (``http://host:port``).
        api_key: a read key, sent as ``Authorization: Bearer``; None sends none.
        timeout_s: per-request timeout.
    """

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        try:
            r = httpx.get(
                self.url + path, params=params, headers=self.headers, timeout=self.timeout_s
            )
        except httpx.HTTPError as exc:
            raise TransparencyLogError(f"cannot reach {self.url}: {exc}", source=self.url) from exc
        if r.status_code != 200:
            detail = r.text[:300].strip()
            raise TransparencyLogError(
                f"{self.url}{path} answered {r.status_code}: {detail}", source=self.url
            )
        try:
            return r.json()
        except ValueError as exc:
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
