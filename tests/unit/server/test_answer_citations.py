"""The HTTP API (JSON and SSE) shows a citation only where the verifier found support.

The app is the real one (`create_app`) over the real ask pipeline on the shipped fakes: in mixed
mode the unverified sentence is shown, marked, without the model's "[2]", in the JSON answer,
its per-sentence rendering (what the page draws), its citations and the stream's result event.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from affidavit.claims.extractor import RuleBasedExtractor
from affidavit.core.settings import Settings, StoreSettings
from affidavit.core.types import Chunk, Hit
from affidavit.pipeline import AskPipeline
from affidavit.server.app import create_app
from affidavit.server.services import Services
from affidavit.testing.fake_llm import FakeGenerator
from affidavit.testing.verifiers import KeywordVerifier

ARMSTRONG = Chunk(text="Neil Armstrong was the first person on the Moon.")
ALDRIN = Chunk(text="Buzz Aldrin flew on Apollo 11.")
DRAFT = (
    "Neil Armstrong was the first person on the Moon [1]. "
    "Buzz Aldrin was the first person on the Moon [2]."
)


class _Retriever:
    def search(self, query: str, k: int = 10, mode: str = "hybrid", filters: object = None):  # type: ignore[no-untyped-def]
        return [
            Hit(chunk=c, score=1.0, rank=i + 1, mode="bm25")
            for i, c in enumerate([ARMSTRONG, ALDRIN])
        ]


def _client(tmp_path: Path) -> TestClient:
    settings = Settings(home=tmp_path / "home", store=StoreSettings(path=tmp_path / "store"))
    settings = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"quote_retry": False})}
    )
    services = Services(settings)
    services.ready = True
    pipe = AskPipeline(
        retriever=_Retriever(),
        generator=FakeGenerator([DRAFT], repeat_last=True),
        extractor=RuleBasedExtractor(settings.claims),
        verifier=KeywordVerifier(),
        settings=settings,
    )
    services.pipe, services.plain = pipe, pipe
    return TestClient(create_app(settings, services=services))


def _check(result: dict[str, Any]) -> None:
    answer = result["answer"].split("\n--- debug ---")[0]
    assert "[unverified] Buzz Aldrin was the first person on the Moon." in answer
    assert "[2]" not in answer
    assert [(c["sentence_index"], c["number"]) for c in result["citations"]] == [(0, 1)]
    shown = [(s["decision"], s["text"], s["citations"]) for s in result["sentences"]]
    assert shown == [
        ("verified", "Neil Armstrong was the first person on the Moon [1].", [1]),
        ("unverified", "Buzz Aldrin was the first person on the Moon.", []),
    ]


@pytest.mark.parametrize("mode", ["mixed", "debug"])
def test_json_answer_shows_no_citation_on_an_unverified_sentence(tmp_path: Path, mode: str) -> None:
    r = _client(tmp_path).post("/v1/ask", json={"question": "Who was first?", "mode": mode})
    assert r.status_code == 200, r.text
    _check(r.json()["result"])


def test_the_stream_result_shows_no_citation_on_an_unverified_sentence(tmp_path: Path) -> None:
    r = _client(tmp_path).post(
        "/v1/ask",
        json={"question": "Who was first?", "mode": "mixed"},
        headers={"Accept": "text/event-stream"},
    )
    assert r.status_code == 200, r.text
    events = []
    for block in r.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    [result] = [data["response"]["result"] for kind, data in events if kind == "result"]
    _check(result)
