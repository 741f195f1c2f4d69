"""Embedders: the fake one, and the OpenAI-compatible client against a loopback server."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import numpy as np
import pytest

from affidavit.core.errors import ConfigError, MissingDependencyError, RetrievalError
from affidavit.core.settings import EmbedSettings
from affidavit.retrieve.base import Embedder
from affidavit.retrieve.embedders import OpenAIEmbedder, make_embedder
from affidavit.testing.embedder import FakeEmbedder
from affidavit.testing.loopback import QuietHandler, loopback_server


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


# -- secrets and hostile endpoints ---------------------------------------------------------------

SECRET_URL = "https://svc:pw-SECRET1@emb.test/v1?api-key=qs-SECRET2&v=7"


@contextlib.contextmanager
def serving(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A loopback server whose every POST is answered by ``answer``; yields its address."""

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer(self)

    with loopback_server(Handler) as base:
        yield base.removeprefix("http://")


def test_a_secret_in_the_base_url_is_left_out_of_the_embedder_configuration() -> None:
    """``config()`` goes into certificates and traces: it named the password and the key."""
    e = OpenAIEmbedder(SECRET_URL, "mini", dim=4)
    assert "SECRET" not in json.dumps(e.config()) + e.base_url + e.name
    assert e.config()["base_url"].endswith("emb.test/v1?api-key=%2A%2A%2A&v=7")
    with pytest.raises(ConfigError) as caught:
        OpenAIEmbedder("ftp://svc:pw-SECRET1@emb.test/v1", "mini")
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize("status", [401, 503])
def test_no_secret_reaches_an_embedder_error_or_the_log(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, str | None]] = []

    def echo(h: BaseHTTPRequestHandler) -> None:
        # a server (or proxy) that echoes what it was sent in its error body
        seen.append((h.path, h.headers.get("Authorization")))
        body = f"refused {h.path} {dict(h.headers)}".encode()
        h.send_response(status)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    with serving(echo) as host:
        url = f"http://svc:pw-SECRET1@{host}/v1?api-key=qs-SECRET2&v=7"
        e = OpenAIEmbedder(url, "mini", dim=4, timeout_s=5)
        assert "SECRET" not in json.dumps(e.config())
        with caplog.at_level("DEBUG"), pytest.raises(RetrievalError) as caught:
            e.embed(["a"])
    err = caught.value
    for text in (str(err), repr(err.context), str(err.source), caplog.text):
        assert "SECRET" not in text
    assert str(status) in str(err)
    # the secrets still reach the server: the password as Basic auth, the key in the query
    path, auth = seen[0]
    assert path == "/v1/embeddings?api-key=qs-SECRET2&v=7"
    assert auth == "Basic " + base64.b64encode(b"svc:pw-SECRET1").decode()


MIB = 1 << 20


@pytest.mark.parametrize("status", [200, 500])
def test_an_endless_embedding_answer_is_not_read_whole(status: int) -> None:
    sent = [0]

    def endless(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        try:
            while sent[0] < 64 * MIB:
                h.wfile.write(b" " * (1 << 16))
                sent[0] += 1 << 16
        except OSError:
            pass  # the client hung up

    with serving(endless) as host:
        e = OpenAIEmbedder(f"http://{host}/v1", "mini", dim=4, timeout_s=20)
        with pytest.raises(RetrievalError, match="MiB" if status == 200 else "500"):
            e.embed(["a"])
    assert sent[0] < 32 * MIB  # it hung up near its cap, not after reading everything


def test_an_embedding_answer_trickling_in_is_bounded_by_the_timeout() -> None:
    """httpx's timeout is per read: a byte every 0.05 s kept the client waiting for ever."""

    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        try:
            for _ in range(60):
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass

    with serving(trickle) as host:
        e = OpenAIEmbedder(f"http://{host}/v1", "mini", dim=4, timeout_s=0.3)
        started = time.perf_counter()
        with pytest.raises(RetrievalError, match="timeout_s"):
            e.embed(["a"])
        assert time.perf_counter() - started < 2.0


# -- compressed answers (gzip bombs) -------------------------------------------------------------

#: 16 MiB of spaces in about 16 KB: httpx inflated each read whole before any size check
BOMB = __import__("gzip").compress(b" " * (16 * MIB), 9)


def _sending(body: bytes, status: int = 200, encoding: str = "gzip") -> Callable[..., None]:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", encoding)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with contextlib.suppress(OSError):
            h.wfile.write(body)

    return answer


def _peak(fn: Callable[[], object]) -> int:
    """The most memory allocated while ``fn`` ran (its RetrievalError suppressed)."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RetrievalError):
            fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("status", [200, 500])
def test_a_gzip_bomb_embedding_answer_is_never_inflated_past_the_cap(
    status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from affidavit.retrieve import embedders

    monkeypatch.setattr(embedders, "MAX_ANSWER_BYTES", 64 << 10)
    with serving(_sending(BOMB, status)) as host:
        e = OpenAIEmbedder(f"http://{host}/v1", "mini", dim=4, timeout_s=20)
        with pytest.raises(RetrievalError, match="MiB" if status == 200 else "500"):
            e.embed(["a"])
        assert _peak(lambda: e.embed(["a"])) < 4 * MIB


def test_a_gzipped_embedding_answer_is_read() -> None:
    import gzip

    answer = {"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}]}
    raw = json.dumps(answer).encode()
    asked: list[str | None] = []

    def gzipped(h: BaseHTTPRequestHandler) -> None:
        asked.append(h.headers.get("Accept-Encoding"))
        _sending(gzip.compress(raw[:20]) + gzip.compress(raw[20:]))(h)

    with serving(gzipped) as host:
        vecs = OpenAIEmbedder(f"http://{host}/v1", "mini", dim=4, timeout_s=5).embed(["a"])
    assert vecs.shape == (1, 4) and vecs[0][0] == pytest.approx(1.0)
    assert asked == ["gzip, deflate"]  # not zstd or br, which httpx would inflate whole


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip, gzip"])
def test_an_embedding_answer_in_an_encoding_not_asked_for_is_refused(encoding: str) -> None:
    with serving(_sending(b'{"data": []}', encoding=encoding)) as host:
        e = OpenAIEmbedder(f"http://{host}/v1", "mini", dim=4, timeout_s=5)
        with pytest.raises(RetrievalError, match="encoding"):
            e.embed(["a"])
