"""Embedders: the fake one, and the OpenAI-compatible client against a loopback server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import numpy as np
import pytest

from affidavit.core.errors import ConfigError, MissingDependencyError, RetrievalError
from affidavit.core.settings import EmbedSettings
from affidavit.retrieve.base import Embedder
from affidavit.retrieve.embedders import OpenAIEmbedder, make_embedder
from affidavit.testing.embedder import FakeEmbedder


def test_fake_embedder_deterministic_and_normalised() -> None:
    e = FakeEmbedder(dim=48)
    assert isinstance(e, Embedder)
    v = e.embed(["red apple pie", "red apple pie", "quantum chromodynamics"])
    assert v.shape == (3, 48) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[1])
    assert float(v[0] @ FakeEmbedder(dim=48).embed(["apple pie"])[0]) > float(v[0] @ v[2])


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, object]]] = []
    dim = 4
    broken = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if _Handler.broken:
            out = {"data": [{"index": 0, "embedding": [1.0]}]}
        else:
            # reversed order on purpose: the client must sort by index
            out = {
                "data": [
                    {"index": i, "embedding": [float(len(t)), 1.0, 0.0, 0.0]}
                    for i, t in reversed(list(enumerate(body["input"])))
                ]
            }
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    srv = HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Handler.requests.clear()
    _Handler.broken = False
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_openai_embedder(server: str) -> None:
    e = OpenAIEmbedder(server, "mini", dim=4, api_key="sk-test", batch_size=2)
    v = e.embed(["a", "bbb", "cc"])
    assert v.shape == (3, 4)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0)
    # order kept although the server answered in reverse: first component grows with length
    assert v[1, 0] > v[2, 0] > v[0, 0]
    assert len(_Handler.requests) == 2
    assert _Handler.requests[0]["path"] == "/v1/embeddings"
    assert _Handler.requests[0]["auth"] == "Bearer sk-test"
    assert _Handler.requests[0]["body"] == {"model": "mini", "input": ["a", "bbb"]}


def test_openai_embedder_bad_answer(server: str) -> None:
    _Handler.broken = True
    with pytest.raises(RetrievalError, match="shape"):
        OpenAIEmbedder(server, "mini", dim=4).embed(["a"])


def test_openai_embedder_unreachable() -> None:
    e = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dim=4, timeout_s=2)
    with pytest.raises(RetrievalError, match="endpoint failed"):
        e.embed(["a"])


def test_factory() -> None:
    assert isinstance(make_embedder(EmbedSettings(backend="fake")), FakeEmbedder)
    with pytest.raises(ConfigError):
        make_embedder(EmbedSettings(backend="openai"))
    with pytest.raises(ConfigError):
        make_embedder(EmbedSettings(backend="sentence_transformers"))


def test_sentence_transformers_missing(tmp_path: object) -> None:
    pytest.importorskip("numpy")
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="pip install"):
            make_embedder(EmbedSettings(backend="sentence_transformers", model_path="/x"))
    else:
        pytest.skip("sentence-transformers is installed here")
