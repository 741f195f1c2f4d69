"""Real ``affidavit serve`` processes on loopback over the sample corpus, with a scripted LLM.

``served``: API keys configured, no rate limit, a scripted answer (a piece every 30 ms).
``tight``: one LLM slot and no waiting place, a 3 s request budget, a 16 KB body limit, a slow
scripted answer (a piece every 0.15 s) and a per-key rate limit (bursts of 5, then one a second).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.certify.keys import generate_key
from affidavit.cli.main import app
from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply
from affidavit.testing.server import ServedApi as Server
from affidavit.testing.server import ServedProcess, create_api_key

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "sample_corpus" / "docs"
OUTPUT = ROOT / "tests" / "output" / "server"

# the first sentence is one the shipped verifier confirms against the sample corpus (release 6
# leaves the looser "discovered polonium and radium in 1898" unverified: see docs/limitations.md)
ANSWER = (
    "In 1898 Marie Curie announced the discovery of two new elements, polonium and radium [1]. "
    "Marie Curie was born on the Moon in 1990 [1]."
)


_create_key = create_api_key


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("served") / "store"
    result = CliRunner().invoke(app, ["ingest", str(SAMPLE), "--store", str(where)])
    assert result.exit_code == 0, result.output
    return where


@pytest.fixture(scope="session")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("home")
    generate_key(home / "keys" / "signing.pem")
    keys = {
        "read": _create_key(home, "reader", "read"),
        "write": _create_key(home, "writer", "write"),
        "revoked": _create_key(home, "gone", "read"),
        "limited": _create_key(home, "rate-limited", "read"),
    }
    revoked_id = keys["revoked"].split("_")[1]
    result = CliRunner().invoke(
        app, ["keys", "api", "revoke", revoked_id], env={"AFFIDAVIT_HOME": str(home)}
    )
    assert result.exit_code == 0, result.output
    return home, keys


def _env(home: Path, store: Path, llm_url: str, **serve: str) -> dict[str, str]:
    env = {
        "AFFIDAVIT_HOME": str(home),
        "AFFIDAVIT_STORE__PATH": str(store),
        "AFFIDAVIT_GENERATE__BACKEND": "openai",
        "AFFIDAVIT_GENERATE__BASE_URL": llm_url,
        "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
        "AFFIDAVIT_VERIFY__THREADS": "1",
        "AFFIDAVIT_EMBED__THREADS": "1",
    }
    env.update({f"AFFIDAVIT_SERVE__{k.upper()}": v for k, v in serve.items()})
    return env


@contextmanager
def scripted_server(
    corpus: Path,
    home: tuple[Path, dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
    answer: str | Sequence[str],
    name: str,
) -> Iterator[Server]:
    """A real server over a copy of the sample corpus store whose LLM writes ``answer`` (a
    piece every 30 ms; several answers: one per request, in order, the last repeating), keys
    configured, no rate limit; its log in ``OUTPUT/<name>.log``."""
    home_dir, keys = home
    store = tmp_path_factory.mktemp(name) / "store"
    shutil.copytree(corpus, store)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with (
        FakeOpenAIServer(
            [
                FakeReply(content=a, delay_s=0.03)
                for a in ([answer] if isinstance(answer, str) else answer)
            ]
        ) as llm,
        ServedProcess(
            _env(home_dir, store, llm.url, rate_limit_per_minute="0"),
            log_path=OUTPUT / f"{name}.log",
        ) as srv,
    ):
        yield Server(url=srv.url, keys=keys, home=home_dir, store=store)


@pytest.fixture(scope="session")
def served(
    corpus: Path, home: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with scripted_server(corpus, home, tmp_path_factory, ANSWER, "served") as srv:
        yield srv


@pytest.fixture(scope="module")
def serve_answer(
    corpus: Path, home: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str | Sequence[str], str], Server]]:
    """``serve_answer(answer, name)``: a server like ``served`` whose LLM writes ``answer``
    (several: one per request, in order; stopped at the end of the test module)."""
    with ExitStack() as stack:

        def start(answer: str | Sequence[str], name: str) -> Server:
            return stack.enter_context(
                scripted_server(corpus, home, tmp_path_factory, answer, name)
            )

        yield start


@pytest.fixture(scope="session")
def tight(
    corpus: Path, home: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    home_dir, keys = home
    store = tmp_path_factory.mktemp("tight") / "store"
    shutil.copytree(corpus, store)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    slow = FakeReply(content=" ".join(["Marie Curie discovered polonium [1]."] * 10), delay_s=0.15)
    env = _env(
        home_dir,
        store,
        "",
        llm_concurrency="1",
        llm_queue="0",
        request_timeout_s="3",
        max_body_mb=str(16 / 1024),
        rate_limit_per_minute="60",
        rate_limit_burst="5",
        retry_after_s="7",
    )
    with FakeOpenAIServer([slow]) as llm:
        env["AFFIDAVIT_GENERATE__BASE_URL"] = llm.url
        with ServedProcess(env, log_path=OUTPUT / "tight.log") as srv:
            yield Server(url=srv.url, keys=keys, home=home_dir, store=store)
