"""The embedded default LLM: llama.cpp through ``xllamacpp``, no network, no server process.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M is assembled once from its registry packages (see
`affidavit.generate.model_cache`), sha256-checked, and loaded once per process: every
`LlamaCppGenerator` with the same file, context size and thread count shares one
``xllamacpp.Server``. JSON output is constrained by the schema (llama.cpp grammar sampling via
``response_format``). Every call, streamed or not, runs the blocking native call in a worker thread
that hands pieces over a queue, so one code path bounds its time: past its limit llama.cpp is
asked to stop and `GenerationError` is raised (``generate`` collects the pieces of the same
stream within ``timeout_s``; ``stream`` yields them within ``stream_timeout_s``).

``xllamacpp.Server`` also binds an HTTP listener on loopback with an ephemeral port; it is given
a random API key so nothing else on the machine can use it.

Examples:
    >>> from affidavit.core.types import Message
    >>> from pathlib import Path
    >>> llm = LlamaCppGenerator(cache_dir=Path.home() / ".config/affidavit/models", threads=2)
    >>> msg = Message(role="user", content="Capital of France? One word.")
    >>> llm.generate([msg])  # doctest: +SKIP
    'Paris'
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from affidavit.core.errors import (
    GenerationError,
    GenerationTruncatedError,
    MissingDependencyError,
    ModelError,
)
from affidavit.core.types import Message
from affidavit.generate._json import extract_json, schema_errors
from affidavit.generate.model_cache import MODEL_FILENAME, ensure_model_file

log = logging.getLogger(__name__)

_SERVERS: dict[tuple[str, int, int], Any] = {}
_SERVERS_LOCK = threading.Lock()
_DONE = object()
# finish reasons that mean the answer was cut short, not finished
_CUT = frozenset({"length", "content_filter"})


def _cut(reason: str) -> GenerationTruncatedError:
    return GenerationTruncatedError(
        "the answer was cut short: the token budget (max_tokens) or the context window "
        f"(context_size) ran out (finish_reason={reason})",
        reason=reason,
    )


def _import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise MissingDependencyError("xllamacpp", "llm", purpose="the embedded LLM") from exc
    return xllamacpp


def load_server(model_path: Path, *, context_size: int, threads: int) -> Any:
    """Return the process-wide ``xllamacpp.Server`` for this model file and shape (load once).

    Raises:
        MissingDependencyError: xllamacpp is not installed.
        ModelError: the model file is missing or llama.cpp could not load it.
    """
    key = (str(model_path.resolve()), context_size, threads)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None:
            return server
        xlc = _import_xllamacpp()
        if not model_path.is_file():
            raise ModelError(f"model file not found: {model_path}", source=str(model_path))
        params = xlc.CommonParams()
        params.model.path = str(model_path)
        params.n_ctx = context_size
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.n_threads_http = 1
        params.verbosity = -1  # llama.cpp logs to stderr otherwise; the CLI owns the terminal
        params.warmup = False
        params.api_keys = [secrets.token_hex(16)]
        log.info("loading %s (n_ctx=%d, threads=%d)", model_path, context_size, threads)
        try:
            server = xlc.Server(params)
        except Exception as exc:  # the native loader raises plain RuntimeError/ValueError
            raise ModelError(
                f"llama.cpp could not load {model_path}: {exc}", source=str(model_path)
            ) from exc
        _SERVERS[key] = server
        return server


class LlamaCppGenerator:
    """A `Generator` running a GGUF model in-process.

    Args:
        model_path: a GGUF file; default: the packaged Qwen2.5-Coder-1.5B-Instruct, assembled in
            ``cache_dir``.
        cache_dir: where the packaged model is assembled (normally ``<home>/models``).
        context_size: context window in tokens.
        threads: CPU threads for prompt processing and generation.
        temperature: sampling temperature (0: greedy).
        max_tokens: default completion budget.
        name: backend name for traces.
        timeout_s: the time a whole ``generate`` answer may take (prompt processing included,
            loading the model not); past it llama.cpp is asked to stop and `GenerationError`
            is raised.
        stream_timeout_s: the time a whole streamed answer may take; past it llama.cpp is asked
            to stop and `GenerationError` is raised.

    The model is loaded on first use, not in ``__init__``, so building a pipeline stays cheap.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        cache_dir: Path | None = None,
        context_size: int = 4096,
        threads: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 256,
        name: str = "qwen2.5-coder-1.5b-instruct-q4_k_m",
        timeout_s: float = 120.0,
        stream_timeout_s: float = 600.0,
    ) -> None:
        if model_path is None and cache_dir is None:
            raise ValueError("give model_path or cache_dir (where the packaged model is built)")
        if (
            threads < 1
            or context_size < 512
            or max_tokens < 1
            or not timeout_s > 0
            or not stream_timeout_s > 0
        ):
            raise ValueError(
                "threads must be >= 1, context_size >= 512, max_tokens >= 1, timeout_s and "
                "stream_timeout_s > 0"
            )
        self.model_path = model_path
        self.cache_dir = cache_dir
        self.context_size = context_size
        self.threads = threads
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.stream_timeout_s = stream_timeout_s
        self.name = f"llamacpp:{name}"

    def config(self) -> dict[str, Any]:
        """The effective configuration (for certificates)."""
        return {
            "backend": "llamacpp",
            "model_path": str(self.model_path) if self.model_path else None,
            "model_file": self.model_path.name if self.model_path else MODEL_FILENAME,
            "context_size": self.context_size,
            "threads": self.threads,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout_s": self.timeout_s,
            "stream_timeout_s": self.stream_timeout_s,
        }

    def load(self) -> None:
        """Assemble (first time only) and load the model now rather than on the first request.

        Raises:
            MissingDependencyError / ModelError: the backend or the model is unavailable.
        """
        self._server()

    def _server(self) -> Any:
        _import_xllamacpp()  # fail with the install hint before assembling a 1 GB file
        if self.model_path is None:
            assert self.cache_dir is not None  # checked in __init__
            self.model_path = ensure_model_file(self.cache_dir)
        return load_server(self.model_path, context_size=self.context_size, threads=self.threads)

    def _request(self, messages: Sequence[Message], max_tokens: int | None) -> dict[str, Any]:
        # always streamed: the callback is how a call past its time is asked to stop
        return {
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens or self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "cache_prompt": True,
        }

    @staticmethod
    def _raise_if_error(data: Any) -> None:
        if isinstance(data, dict) and "error" in data:
            err = data["error"]
            message = err.get("message", err) if isinstance(err, dict) else err
            raise GenerationError(f"llama.cpp error: {message}")

    def generate(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """Return the full completion; with ``json_schema``, grammar-constrained JSON.

        The answer is the pieces of the same bounded stream as `stream`, collected: one code
        path, one way to stop llama.cpp.

        Raises:
            GenerationTruncatedError: the token budget or the context window ran out.
            GenerationError: llama.cpp reported an error, returned malformed output, ended
                without saying the answer was complete, or did not finish within ``timeout_s``
                (then it is asked to stop).
            MissingDependencyError / ModelError: the backend or the model is unavailable.
        """
        request = self._request(messages, max_tokens)
        if json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"schema": json_schema},
            }
        text = "".join(self._pieces(request, self.timeout_s, "generate.timeout_s"))
        if json_schema is None:
            return text
        # the grammar guarantees the shape unless max_tokens cut it short; check anyway
        try:
            value = extract_json(text)
        except ValueError as exc:
            raise GenerationError(f"constrained output is not JSON (truncated?): {exc}") from exc
        problems = schema_errors(value, json_schema)
        if problems:
            raise GenerationError(f"output does not match the schema: {'; '.join(problems[:5])}")
        return json.dumps(value, ensure_ascii=False)

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Iterator[str]:
        """Yield text pieces as llama.cpp produces them.

        Closing the iterator early stops generation at the next token.

        Raises:
            GenerationTruncatedError: after the last piece, when the token budget or the context
                window ran out (``finish_reason`` ``length``).
            GenerationError: llama.cpp reported an error, ended the stream without saying the
                answer was complete (no finish reason: it was stopped), or did not finish
                within ``stream_timeout_s`` (then it is asked to stop).
        """
        request = self._request(messages, max_tokens)
        yield from self._pieces(request, self.stream_timeout_s, "generate.stream_timeout_s")

    def _pieces(self, request: dict[str, Any], limit_s: float, setting: str) -> Iterator[str]:
        """Run ``request`` streamed and yield its text pieces, all within ``limit_s`` from when
        the model is loaded (``setting`` names the limit in the error).

        Raises:
            GenerationTruncatedError / GenerationError: as `stream` says.
        """
        server = self._server()
        deadline = time.monotonic() + limit_s
        pieces: queue.Queue[object] = queue.Queue()
        stop = threading.Event()

        def on_chunk(chunk: Any) -> bool:
            pieces.put(chunk)
            return stop.is_set()  # True asks llama.cpp to stop

        def work() -> None:
            try:
                result = server.handle_chat_completions(request, on_chunk)
                if result is not None:
                    pieces.put(result)
            except Exception as exc:  # surfaced to the consumer as a GenerationError
                pieces.put(exc)
            finally:
                pieces.put(_DONE)

        worker = threading.Thread(target=work, name="llamacpp-stream", daemon=True)
        worker.start()
        finish: Any = None
        try:
            while True:
                try:
                    item = pieces.get(timeout=max(deadline - time.monotonic(), 0.0))
                except queue.Empty:
                    item = None
                if time.monotonic() > deadline:
                    raise GenerationError(
                        f"llama.cpp did not finish its answer within {setting} ({limit_s:g} s)"
                    )
                if item is _DONE:
                    break
                if isinstance(item, Exception):
                    raise GenerationError(f"llama.cpp failed: {item}") from item
                self._raise_if_error(item)
                if not isinstance(item, dict):
                    continue
                for choice in item.get("choices") or ():
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece
                    finish = choice.get("finish_reason") or finish
        finally:
            stop.set()
            worker.join(timeout=30)
        if finish is None:
            # llama.cpp ends every finished answer with a finish reason: this one was stopped
            raise GenerationError(
                "llama.cpp ended the stream before saying the answer was complete "
                "(no finish reason)"
            )
        if finish in _CUT:
            raise _cut(str(finish))
