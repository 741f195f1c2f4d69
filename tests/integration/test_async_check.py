"""``affidavit.acheck`` with the shipped verifier cascade, concurrently, off the event loop."""

from __future__ import annotations

import asyncio

import pytest

import affidavit
from affidavit.core.types import Verdict

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.integration


def test_acheck_runs_the_cascade_concurrently() -> None:
    evidence = ["The Eiffel Tower is 330 metres tall. It was completed in 1889."]

    async def main() -> list[Verdict]:
        return list(
            await asyncio.gather(
                affidavit.acheck("The Eiffel Tower was completed in 1925.", evidence),
                affidavit.acheck("The Eiffel Tower was completed in 1889.", evidence),
            )
        )

    wrong, right = asyncio.run(main())
    assert wrong.label != "supported"
    assert any(c.status == "fail" for c in wrong.checks)  # the date check caught it
    assert right.stages  # the model stage ran (or its absence is recorded below)
    assert right.label == "supported" or right.errors
