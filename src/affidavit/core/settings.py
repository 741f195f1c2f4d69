"""One settings object for the whole project.

Precedence: defaults < ``affidavit.toml`` < environment (``AFFIDAVIT_*``, nested with ``__``,
e.g. ``AFFIDAVIT_POLICY__TAU_ENTAIL=0.8``) < explicit arguments. The TOML file is the one given
with ``--config``, else ``affidavit.toml`` beside the input file, else in the working directory.
The CRAG names of the original design (``AFFIDAVIT_UPPER_THRESHOLD``, ``AFFIDAVIT_TOP_K_DOCUMENTS``
...) are accepted as aliases of the ``correct`` section.

Each stage reads only its own section, passed to it explicitly; nothing reads a global.

Examples:
    >>> s = load_settings(overrides={"policy": {"tau_entail": 0.8}})
    >>> s.policy.tau_entail
    0.8
"""

from __future__ import annotations

import contextvars
import errno
import json
import os
import tomllib
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from affidavit.core.errors import ConfigError
from affidavit.core.types import DisplayMode, EnforcementMode

CONFIG_FILENAME = "affidavit.toml"
ENV_PREFIX = "AFFIDAVIT_"
# AFFIDAVIT_* names that are not settings: the server's config file handed to its workers, the
# model cache of the accurate verifier (affidavit.verify.accurate.default_cache), and a client's
# API key for a server's routes (`log witness URL`; a credential, never recorded in a certificate)
PROCESS_ENV = frozenset({"SERVE_CONFIG", "MODEL_CACHE", "API_KEY", "MAX_WORKERS"})
# A config file is a few kB; anything far larger is a mistake (or /dev/zero), refused unread.
MAX_CONFIG_BYTES = 1024 * 1024

CascadeStage = Literal["checks", "cross_encoder", "embed_head", "external", "llm_judge"]
#: The most inference threads a setting takes: onnxruntime refused a count past a C int with a
#: TypeError (exit 3), and thousands of threads only thrash.
MAX_THREADS = 1024
#: Where hybrid search fuses its BM25 and dense rankings (see affidavit.retrieve.retriever).
Granularity = Literal["passage", "document", "chunk"]
#: How hybrid search fuses its BM25 and dense results (see affidavit.retrieve.fusion).
Fusion = Literal["convex", "rrf"]


def _no_nul_in_paths(value: Any) -> Any:
    """``value`` unchanged; ValueError for a path (or list of paths) holding a NUL character,
    which TOML can spell ("\\u0000") and no file system accepts (``embedded null byte``)."""
    if any(isinstance(p, Path) and "\x00" in str(p) for p in _as_list(value)):
        raise ValueError("a path cannot hold a NUL character (\\u0000)")
    return value


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


class Section(BaseModel):
    """Base of a settings section: unknown keys are errors, values are checked on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @field_validator("*")
    @classmethod
    def _paths_without_nul(cls, value: Any) -> Any:
        return _no_nul_in_paths(value)


class AuditSettings(Section):
    """The runtime provenance audit (``affidavit audit``)."""

    mode: EnforcementMode = Field(
        default="audit",
        description="audit: report only; guardrail: withhold failing claims; enforce: raise.",
    )
    allowlist: list[str] | None = Field(
        default=None,
        description="Allowed source domains (suffix match). Not set (None): every well-formed URL "
        "is allowed. Set but empty ([]): no web source is allowed; an allowlist that comes out "
        "empty by mistake closes the policy, it never opens it.",
    )
    require_url: bool = Field(
        default=False, description="Block chunks without a source URL when an allowlist is set."
    )
    min_compliance: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Compliance rate needed for trust to pass."
    )
    support_threshold: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Minimum match confidence for a claim."
    )
    max_age_days: int | None = Field(
        default=None, ge=0, description="Freshness: maximum source age in days (None: off)."
    )
    date_key: str | None = Field(
        default=None, description="Metadata key holding the source date (besides the defaults)."
    )
    stale_action: Literal["warn", "fail"] = Field(
        default="warn", description="What a stale source does to the verdict."
    )
    use_verifier: bool = Field(
        default=False, description="Also run the entailment verifier (needs affidavit[models])."
    )
    max_response_chars: int = Field(
        default=200_000,
        ge=1,
        description="Longer answers are audited up to here; the rest counts as unsupported.",
    )


class ClaimsSettings(Section):
    """Claim extraction from an answer (rule-based, optionally LLM decomposition)."""

    extractor: Literal["rules", "llm"] = Field(
        default="rules",
        description="rules: deterministic and model-free; llm: decomposition by the generator "
        "(falls back to rules on any failure).",
    )
    select: bool = Field(
        default=True,
        description="Keep only checkworthy sentences (False: every sentence becomes a claim).",
    )
    answer_form: bool = Field(
        default=False,
        description="ask: a claim that restates the question and that the verifier does not "
        "support as written is checked again as '<question> <what it adds>' (the question-and-"
        "answer form the verifier was trained on); shown when that is supported, and recorded "
        "with that text. A contradiction is never checked again. Off by default: on the ask "
        "benchmark's drafts it raised accuracy from 0.57 to 0.60 but let 0.33 of fed "
        "hallucinated answers through instead of 0.23 (benchmarks/results/"
        "ask_halueval_answer_form_replay.json).",
    )
    decompose: bool = Field(
        default=True, description="Split conjunctions and list items into atomic claims."
    )
    resolve_pronouns: bool = Field(
        default=True, description="Replace a leading He/She/It/They by the previous subject."
    )
    deduplicate: bool = Field(default=True, description="Drop claims repeating an earlier one.")
    skip_hedged_filler: bool = Field(
        default=True, description="Skip hedged sentences with no checkable content."
    )
    min_words: int = Field(default=3, ge=1, description="Shorter sentences are not claims.")
    max_claims: int = Field(
        default=10000, ge=1, description="At most this many claims per answer (rest recorded)."
    )


class IngestSettings(Section):
    """Document loading and chunking."""

    chunk_size: int = Field(default=500, ge=50, description="Target chunk size in characters.")
    chunk_overlap: int = Field(default=50, ge=0, description="Overlap between chunks (chars).")
    max_file_mb: float = Field(default=50.0, gt=0, description="Larger files are refused.")
    url_prefix: str | None = Field(
        default=None,
        description="Where users reach ingested files (e.g. 'file:///srv/docs' or "
        "'https://intranet.example.org/docs'): a chunk's url is this plus the file's path "
        "relative to the ingested folder. Not set: the relative path alone. A file's absolute "
        "path on this machine is never shown.",
    )


class StoreSettings(Section):
    """Where documents, chunks, indexes and vectors live."""

    backend: Literal["local", "qdrant"] = Field(default="local", description="Store backend.")
    path: Path = Field(default=Path(".affidavit"), description="Folder of the local store.")
    qdrant_url: str | None = Field(
        default=None, description="Qdrant server URL; None uses Qdrant's local (embedded) mode."
    )
    qdrant_api_key: SecretStr | None = Field(default=None, description="Qdrant API key.")
    collection: str = Field(default="affidavit", description="Qdrant collection name.")


class BatchSettings(Section):
    """Batch jobs (``check``, ``audit --batch``, ``ingest``) on one process or on Ray."""

    engine: Literal["local", "ray"] = Field(
        default="local", description="local: this process; ray: Ray workers (the ray extra)."
    )
    address: str | None = Field(
        default=None,
        description="Ray cluster to join (ray://host:10001 or auto); None starts Ray locally.",
    )
    workers: int = Field(
        default=2, ge=1, description="Workers (Ray actors), each loading its models once."
    )
    worker_threads: int = Field(
        default=1, ge=1, le=MAX_THREADS, description="Inference threads inside each worker."
    )
    shard_size: int = Field(
        default=50, ge=1, description="Input lines per shard (the unit of work and of resume)."
    )
    object_store_mb: int = Field(
        default=256, ge=100, description="Object store of a locally started Ray (MB)."
    )


class EmbedSettings(Section):
    """Dense embeddings."""

    backend: Literal["minilm", "sentence_transformers", "openai", "fake"] = Field(
        default="minilm", description="Embedder backend (fake: deterministic, for tests)."
    )
    model_path: Path | None = Field(
        default=None, description="Model folder (sentence_transformers backend)."
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible /v1 base URL.")
    api_key: SecretStr | None = Field(default=None, description="API key for base_url.")
    model: str = Field(default="all-MiniLM-L6-v2", description="Model name for the endpoint.")
    batch_size: int = Field(default=32, ge=1, description="Embedding batch size.")
    threads: int = Field(default=2, ge=1, le=MAX_THREADS, description="Inference threads.")


class RetrieveSettings(Section):
    """Search over the store."""

    mode: Literal["bm25", "dense", "hybrid"] = Field(default="hybrid", description="Ranking.")
    top_k: int = Field(default=10, ge=1, description="Hits returned.")
    fusion: Fusion = Field(
        default="convex",
        description="How hybrid search fuses BM25 and dense at the passage and chunk "
        "granularities: 'convex' adds the two lists' min-max normalised scores (half each), so a "
        "passage scoring far above the rest in one list keeps its lead; 'rrf' adds reciprocal "
        "ranks. Convex measured better on one-part and two-part questions and on scientific "
        "claims (benchmarks/passage_retrieval.py, benchmarks/retrieval_quality.py).",
    )
    rrf_k: int = Field(default=60, ge=1, description="Reciprocal rank fusion constant.")
    candidates: int = Field(default=50, ge=1, description="Candidates per retriever before fusion.")
    rerank: bool = Field(
        default=False,
        description="Reorder the best rerank_depth hits with the packaged cross-encoder reranker "
        "(reads question and chunk together; see the passage benchmark for what it changes).",
    )
    rerank_fusion: Literal["rrf", "replace"] = Field(
        default="rrf",
        description="How the reranker's order meets the retriever's: 'rrf' fuses the two ranks "
        "(1/(rrf_k + r1) + 1/(rrf_k + r2)); 'replace' orders by the reranker alone.",
    )
    rerank_depth: int = Field(
        default=20, ge=1, le=200, description="Hits the reranker reads (the rest keep their order)."
    )
    rerank_model_path: Path | None = Field(
        default=None,
        description="Reranker ONNX folder (config.json, tokenizer, model; default: the packaged "
        "reranker).",
    )
    threads: int = Field(default=2, ge=1, le=MAX_THREADS, description="Reranker inference threads.")
    granularity: Granularity = Field(
        default="passage",
        description="Hybrid fusion: 'passage' fuses chunk rankings and keeps at most "
        "per_document chunks of a document (a question needing two passages of one document "
        "gets both); 'document' ranks whole documents and shows each by its best chunk first; "
        "'chunk' fuses chunk rankings uncapped.",
    )
    per_document: int = Field(
        default=3, ge=1, description="passage granularity: most chunks of one document in a result."
    )
    merge_neighbours: bool = Field(
        default=False,
        description="passage granularity: neighbouring hit chunks of one document become one "
        "passage (its text spans both; a passage the store does not hold, so a certificate that "
        "cites it cannot be replayed from the store).",
    )
    document_prior: bool = Field(
        default=True,
        description="passage granularity: the parent-document ranking joins the chunk fusion as "
        "a third ranking shared by each document's chunks (measured better on passages and on "
        "whole documents; see the benchmarks).",
    )
    question_parts: bool = Field(
        default=False,
        description="Hybrid search of a question with several parts ('When was it built, and "
        "who designed it?') searches each part and takes each part's ranking in turn, so each "
        "part's passage can reach the top (a one-part question is searched as before). Off by "
        "default: on the passage benchmark it lowers two-part recall@5 under convex fusion "
        "(93.1 to 89.7; under rrf it raised it, 78.2 to 82.8) and one-part recall@1 (85.3 to "
        "83.7: questions split that read better whole).",
    )


class VerifySettings(Section):
    """Claim verification (the cascade)."""

    cascade: list[CascadeStage] = Field(
        default_factory=lambda: list[CascadeStage](["checks", "cross_encoder"]),
        description="Stages in order; later stages run only for the uncertain band.",
    )
    tier: Literal["fast", "cascade", "accurate"] = Field(
        default="fast",
        description="Which verifier model decides: 'fast' (the packaged MiniLM), 'accurate' (the "
        "MPNet cross-encoder of the accurate extra, on every claim) or 'cascade' (the fast model "
        "first; a claim whose p(supported) falls in accurate_band gets the accurate stage's "
        "verdict instead). Where the accurate stage is needed and cannot run, the claim is not "
        "verified.",
    )
    accurate_band: tuple[float, float] = Field(
        default=(0.15, 0.85),
        description="cascade tier: the fast verdict's p(supported) range sent to the accurate "
        "stage (a typed check's contradiction is never sent).",
    )
    accurate_model_path: Path | None = Field(
        default=None,
        description="Assembled accurate verifier folder (default: assembled once from the "
        "accurate extra's packages into ~/.cache/affidavit/models/verifier-accurate, or "
        "$AFFIDAVIT_MODEL_CACHE).",
    )
    model_path: Path | None = Field(
        default=None, description="Verifier model folder (default: the packaged model)."
    )
    external_model_path: Path | None = Field(
        default=None, description="A user's HF/ONNX cross-encoder folder (MiniCheck, HHEM...)."
    )
    external_labels: list[str] = Field(
        default_factory=lambda: ["entailment", "neutral", "contradiction"],
        description="Label order of the external model's logits.",
    )
    max_len: int = Field(
        default=256, ge=32, le=2048, description="Most tokens per window (claim + evidence)."
    )
    window_len: int | None = Field(
        default=None,
        ge=32,
        le=2048,
        description="Preferred tokens per window; default: the length the model was trained at "
        "(its config's train_max_len). A claim too long for it gets windows up to max_len.",
    )
    window_stride: int = Field(default=128, ge=16, description="Stride between evidence windows.")
    uncertain_low: float = Field(
        default=0.2, ge=0.0, le=1.0, description="Below this p_entail the cascade stops (no)."
    )
    uncertain_high: float = Field(
        default=0.9, ge=0.0, le=1.0, description="Above this p_entail the cascade stops (yes)."
    )
    threads: int = Field(default=2, ge=1, le=MAX_THREADS, description="Inference threads.")
    batch_size: int = Field(default=32, ge=1, description="Pairs per model call.")
    timeout_s: float = Field(default=60.0, gt=0, description="Per-claim budget; then unverified.")
    top_evidence: int = Field(default=5, ge=1, description="Evidence candidates per claim.")
    contradict_confidence: float = Field(
        default=0.8, ge=0.0, le=1.0, description="A window contradicts only at or above this."
    )
    max_combination: int = Field(
        default=3, ge=1, le=4, description="Largest span set tried for minimal evidence (1: off)."
    )
    combiner: bool = Field(
        default=True,
        description="Decide with the model's fitted combiner (combiner.json in its folder) when "
        "it ships one: p(supported) from p_entail, p_contradict, coverage, the typed checks and "
        "evidence length, instead of the hand-set cascade rules.",
    )
    date_order_average: bool = Field(
        default=False,
        description="Score a sentence with one time adverbial also with it moved ('X did Y in "
        "1898.' <-> 'In 1898, X did Y.') and average the two, so that where the date stands "
        "cannot change the verdict (one more model call per such sentence). Off by default: the "
        "model also reads a *fronted* date as support whatever its value, and the average let "
        "'The Eiffel Tower was completed in 1887.' (the date of its start) through.",
    )
    compressed_support: bool = Field(
        default=True,
        description="Support a claim an evidence sentence states word for word but for a "
        "description of its subject ('The Fatima Mansions was formed in 1988.' against 'The "
        "Fatima Mansions were an art rock group formed in 1988 by ...'), as a verbatim "
        "statement is (verify.lexical.compressed_support: one narrow sentence shape, nothing "
        "denied, hedged or reported); a typed check's conflict still wins.",
    )
    dated_support: bool = Field(
        default=True,
        description="Support a claim with one date adverbial ('... in 1898.') when the claim "
        "without it is supported by one evidence sentence on its own and that sentence dates all "
        "it says by the same date ('In 1898, ... she announced the discovery of ...'): the model "
        "reads a trailing date as a sign of contradiction. The date is compared as a value "
        "(one year in the sentence, no word placing its events at another time, the same year "
        "and no other month or day); a typed check's failure still wins.",
    )
    lifespan_support: bool = Field(
        default=True,
        description="Support '<Name> was born [on|in] <date>.' and '<Name> died [on|in] <date>.' "
        "when an evidence sentence opens with that name and gives the date in a parenthesis "
        "('Elspeth Mary Campbell (born January 1940) is ...', 'James Doolittle (December 14, "
        "1896 – September 27, 1993) was ...'), a shape the model does not read "
        "(verify.lifespan.lifespan_support: that claim shape only); a typed check's conflict "
        "still wins.",
    )
    subject_focus: bool = Field(
        default=True,
        description="Who did what: a supported claim that opens with a name is judged again "
        "against the evidence without the sentences about someone else, and withheld unless that "
        "also supports it ('Michael Collins walked on the Moon with Armstrong.' against a passage "
        "where Armstrong and Aldrin walked and Collins stayed in orbit). One more judgement per "
        "such claim; it can only withhold, never support.",
    )
    distributive: bool = Field(
        default=True,
        description="A supported claim about both of two members ('Both Yellowcard and For "
        "Against are American pop punk bands.', or 'Both bands are ...' against evidence that "
        "describes exactly two names as a band) is judged again for each member on its own and "
        "withheld unless each is supported: the model reads the pair as a whole and supports it "
        "from the one member the evidence describes so. Can only withhold, never support.",
    )
    substituted_words: bool = Field(
        default=False,
        description="A supported claim that copies an evidence sentence word for word but "
        "puts an ordinary word the evidence never uses in place of a few of its words ('... "
        "developed the theory of evolution.' against '... developed the theory of relativity.') "
        "is withheld unless the two are close in meaning (MiniLM embeddings, cosine >= "
        "substitution_min_similarity: 'movie' for 'film'). Can only withhold, never support. "
        "Off by default: held out it withheld faithful summary sentences (HaluEval "
        "summarization 0.816 -> 0.798, SummEval 0.582 -> 0.550; mean 0.686 -> 0.681; "
        "docs/benchmarks.md).",
    )
    substitution_min_similarity: float = Field(
        default=0.4,
        ge=-1.0,
        le=1.0,
        description="substituted_words: the cosine similarity (all-MiniLM-L6-v2) at or above "
        "which a replaced word says the same thing ('film' / 'movie' 0.84, 'a city' / "
        "'Edinburgh' 0.43) rather than another ('relativity' / 'evolution' 0.25). Chosen on "
        "dev rows (docs/benchmarks.md).",
    )
    subject_in_support: bool = Field(
        default=False,
        description="Withhold a supported one-sentence claim that opens with a name when the "
        "sentences supporting it never name that subject, do not open with a pronoun, and name "
        "someone else by full name ('Norway was mentioned in the inscription of the disc.' "
        "against 'The Danish Viking king, Harald Bluetooth, is mentioned in the inscription "
        "...'). Off by default: held out it moved Citation-Integrity 0.58 -> 0.62 but HaluEval "
        "dialogue 0.77 -> 0.71 (mean 0.649 -> 0.647, four kinds 0.698 -> 0.707; "
        "docs/benchmarks.md).",
    )
    split_sentences: bool = Field(
        default=True,
        description="Judge a claim of several sentences sentence by sentence (each against its "
        "own best evidence) and combine (needs the combiner; without it the text is judged whole).",
    )
    calibration_path: Path | None = Field(
        default=None,
        description="Isotonic map of p_entail fitted on dev data (python -m "
        "affidavit.verify.calibration); None: the model's temperature only.",
    )

    @field_validator("cascade")
    @classmethod
    def _some_stage(cls, v: list[CascadeStage]) -> list[CascadeStage]:
        # no stage judges nothing, yet the word-for-word rule would still support a claim
        if not v:
            stages = ", ".join(typing.get_args(CascadeStage))
            raise ValueError(f"verify.cascade needs at least one stage ({stages})")
        return v

    @model_validator(mode="after")
    def _uncertain_band_in_order(self) -> VerifySettings:
        # refused here, at config time, on every path (the cascade's own check came only once
        # the verifier was built: a batch run reported it as exit 1)
        if self.uncertain_low > self.uncertain_high:
            raise ValueError(
                f"verify.uncertain_low {self.uncertain_low} > verify.uncertain_high "
                f"{self.uncertain_high}"
            )
        return self

    @model_validator(mode="after")
    def _accurate_runs_as_the_model_stage(self) -> VerifySettings:
        # the accurate model is what the cross_encoder stage loads under these tiers: without
        # that stage it never ran, and the checks or a weaker model decided in its place
        if self.tier != "fast" and "cross_encoder" not in self.cascade:
            raise ValueError(
                f"verify.tier = {self.tier!r} runs the accurate model as the cross_encoder stage: "
                "add cross_encoder to verify.cascade, or set verify.tier = 'fast'"
            )
        return self

    @field_validator("accurate_band", mode="before")
    @classmethod
    def _band_from_text(cls, v: Any) -> Any:
        # the environment gives text: "0.15,0.85" or "[0.15, 0.85]"
        if isinstance(v, str):
            parts = [x for x in v.strip().strip("[]()").replace(" ", "").split(",") if x]
            return tuple(parts)
        return v

    @field_validator("accurate_band")
    @classmethod
    def _band_in_order(cls, v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"accurate_band must satisfy 0 <= low <= high <= 1, got {list(v)}")
        return v


class PolicySettings(Section):
    """The fail-closed render decision."""

    preset: Literal["default", "strict", "mixed"] = Field(
        default="default", description="Named preset the thresholds came from."
    )
    display: DisplayMode = Field(default="strict", description="strict / mixed / debug.")
    tau_entail: float = Field(default=0.5, ge=0.0, le=1.0, description="VERIFIED needs >= this.")
    tau_contradict: float = Field(
        default=0.5, ge=0.0, le=1.0, description="VERIFIED needs p_contradict < this."
    )


class CertifySettings(Section):
    """Signed certificates."""

    key_path: Path | None = Field(
        default=None, description="Ed25519 private key (PEM); default: <home>/keys/signing.pem."
    )
    trusted_keys: list[Path] = Field(
        default_factory=list, description="Public keys (PEM) trusted when verifying."
    )
    key_passphrase: SecretStr | None = Field(
        default=None,
        description="Passphrase of an encrypted key (env AFFIDAVIT_CERTIFY__KEY_PASSPHRASE).",
    )


class TlogSettings(Section):
    """The transparency log every signed certificate is appended to (``affidavit log``)."""

    enabled: bool = Field(
        default=True,
        description="Append every certificate affidavit signs to the log (a certificate that "
        "cannot be logged is not issued).",
    )
    path: Path | None = Field(
        default=None, description="Log folder; default: tlog/ beside the signing key."
    )
    origin: str | None = Field(
        default=None,
        description="The log's name on its checkpoints' origin line; default affidavit/<key id>.",
    )
    witness_path: Path | None = Field(
        default=None,
        description="Where `log witness` keeps the last checkpoint of each log; default "
        "<home>/witness.",
    )

    @field_validator("origin")
    @classmethod
    def _one_word(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(c.isspace() or c == "+" for c in value)):
            raise ValueError("the origin must be non-empty, with no space, newline or '+'")
        return value


class GenerateSettings(Section):
    """The LLM backend."""

    backend: Literal["llamacpp", "openai", "fake"] = Field(
        default="llamacpp", description="Embedded llama.cpp, any OpenAI-compatible server, or fake."
    )
    model: str = Field(default="qwen2.5-coder-1.5b-instruct-q4_k_m", description="Model name.")
    model_path: Path | None = Field(default=None, description="GGUF file (llamacpp backend).")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (/v1).")
    api_key: SecretStr | None = Field(default=None, description="API key for base_url.")
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Time one LLM call that is not streamed may take: for openai each request, "
        "its whole answer read; for llamacpp the whole answer, prompt processing included "
        "(loading the model is not), then llama.cpp is asked to stop. Past it: a "
        "GenerationError, and the caller fails closed.",
    )
    stream_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="Time a whole streamed answer may take once it opens (both backends; for "
        "openai each read is still bounded by timeout_s, and a stream is also cut past 32 MiB): "
        "a server that keeps sending keep-alives or empty events is cut with a GenerationError, "
        "never taken as a complete answer. Generous for a slow local model.",
    )
    max_retries: int = Field(default=2, ge=0, description="Retries with backoff.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(default=256, ge=1, description="Maximum generated tokens.")
    context_size: int = Field(default=4096, ge=512, description="Context window (llamacpp).")
    threads: int = Field(default=2, ge=1, le=MAX_THREADS, description="Threads (llamacpp).")
    quote_retry: bool = Field(
        default=True,
        description="Strict display only: when none of the draft's claims is verified (and the "
        "model did not say the passages lack the answer), the model is asked once more, to "
        "answer by copying the passages' sentences word for word. That draft is verified like "
        "the first and replaces it only when at least one of its claims is verified; both are "
        "in the trace (benchmarks/ask_halueval.py).",
    )


class CorrectSettings(Section):
    """Corrective retrieval (CRAG)."""

    evaluator: Literal["model", "llm"] = Field(default="model", description="Relevance evaluator.")
    upper_threshold: float = Field(default=8.0, ge=0, le=10, description="Correct at or above.")
    lower_threshold: float = Field(default=3.0, ge=0, le=10, description="Incorrect below.")
    strip_threshold: float = Field(default=5.0, ge=0, le=10, description="Keep sentences >= this.")
    top_k_documents: int = Field(default=5, ge=1, description="Chunks graded per question.")
    grade_parts: bool = Field(
        default=True,
        description="A question with several parts ('when was it built, and how tall is it?') "
        "is also graded part by part with the model evaluator, each passage keeping its best "
        "grade (never lower than for the whole question).",
    )
    grade_with_title: bool = Field(
        default=True,
        description="A chunk is graded with its document's title in front when it does not "
        "name it (the text given to the generator is unchanged).",
    )
    top_k_web_results: int = Field(default=3, ge=0, description="Web results kept.")
    web_provider: Literal["none", "tavily", "brave", "searxng", "store"] = Field(
        default="none", description="Web fallback provider (none: offline)."
    )
    tavily_api_key: SecretStr | None = Field(default=None, description="Tavily key.")
    brave_api_key: SecretStr | None = Field(default=None, description="Brave Search key.")
    searxng_url: str | None = Field(default=None, description="SearXNG base URL.")
    fallback_store: Path | None = Field(default=None, description="Offline fallback store.")
    web_allowlist: list[str] | None = Field(
        default=None,
        description="Allowed web domains (suffix match). Not set: any public host (the SSRF "
        "guard still applies); set but empty: none (a guard never opens by itself).",
    )
    allow_private_addresses: bool = Field(
        default=False, description="Let the fetcher reach private/loopback addresses (SSRF guard)."
    )
    rewrite_query: bool = Field(default=True, description="Rewrite the web query with the LLM.")
    web_timeout_s: float = Field(
        default=15.0, gt=0, description="Timeout of each web search request and page fetch."
    )
    llm_budget_s: float = Field(
        default=120.0,
        gt=0,
        description="evaluator = 'llm' only: the time its grading (one LLM call per passage) "
        "may take for one question, web results included. Passages left when it runs out are "
        "not graded: a failed grade, never counted as relevant, recorded in the trace. A call "
        "already running finishes (it has generate.timeout_s).",
    )
    keep_whole_threshold: float | None = Field(
        default=5.0,
        ge=0,
        le=10,
        description="A chunk graded at or above this (default: the strip threshold) is given to "
        "the LLM whole; a chunk graded below it is refined to its passing sentences (None, or "
        "'off' in TOML / the environment: every chunk is refined, as in CRAG). Refining "
        "relevant chunks dropped the answer's sentence too often (benchmarks/evaluator_quality.py "
        "--crag, benchmarks/ask_halueval.py; "
        "docs/benchmarks.md).",
    )
    sentence_window: int = Field(
        default=2,
        ge=0,
        le=3,
        description="Refinement also scores each sentence joined with up to this many preceding "
        "ones and keeps the higher score (0: sentences alone, as in CRAG; measured in "
        "benchmarks/evaluator_quality.py --crag).",
    )

    keep_best_when_empty: bool = Field(
        default=True,
        description="When refinement leaves no context at all (no sentence passes the strip "
        "threshold and the web brought nothing) but a chunk was graded at or above the class "
        "floor (Ambiguous: the lower threshold), the best-graded such chunk is kept whole "
        "instead of answering from nothing; the verifier still checks every claim against it. "
        "False: the paper's behaviour (the question is abstained from).",
    )

    @field_validator("keep_whole_threshold", mode="before")
    @classmethod
    def _off_is_none(cls, v: Any) -> Any:
        # TOML and environment variables have no null: "off" (or "none") switches it off
        if isinstance(v, str) and v.strip().lower() in {"off", "none", "null"}:
            return None
        return v

    @model_validator(mode="after")
    def _lower_below_upper(self) -> CorrectSettings:
        # after the fields, defaults included: a field validator on lower_threshold never ran
        # when only upper_threshold was set (upper 2 under the default lower 3 passed)
        if self.lower_threshold > self.upper_threshold:
            raise ValueError(
                f"correct.lower_threshold ({self.lower_threshold}) must not exceed "
                f"correct.upper_threshold ({self.upper_threshold})"
            )
        return self


class ServeSettings(Section):
    """``affidavit serve``: the HTTP API and the web page (see docs/server.md)."""

    host: str = Field(
        default="127.0.0.1",
        description="Address to bind; anything but loopback needs an API key configured.",
    )
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port (0: any free port).")
    workers: int = Field(
        default=1, ge=1, le=64, description="Worker processes (each loads its own models)."
    )
    keys_path: Path | None = Field(
        default=None, description="API key file (keyed HMACs; default <home>/api_keys.json)."
    )
    max_body_mb: float = Field(
        default=4.0, gt=0, description="Largest JSON request body (413 above it)."
    )
    max_upload_mb: float = Field(
        default=20.0, gt=0, description="Largest POST /v1/documents upload (413 above it)."
    )
    request_timeout_s: float = Field(
        default=120.0, gt=0, description="Per-request budget, queue wait included (504 after)."
    )
    llm_concurrency: int = Field(
        default=1, ge=1, description="Questions answered at once (each holds the LLM)."
    )
    llm_queue: int = Field(
        default=4, ge=0, description="Questions allowed to wait for the LLM; more get 503."
    )
    verify_concurrency: int = Field(
        default=2, ge=1, description="Audits and checks run at once (verifier threads)."
    )
    verify_queue: int = Field(
        default=32, ge=0, description="Audits and checks allowed to wait; more get 503."
    )
    ingest_queue: int = Field(
        default=8, ge=1, description="Ingest jobs allowed to wait; more get 503."
    )
    keep_uploads_s: float = Field(
        default=0.0,
        ge=0,
        description="Seconds an uploaded file is kept after its ingest job ends, ingested or "
        "failed (0: removed as soon as the job ends). The job's record, with each file's "
        "outcome, is kept either way; the store keeps the text and chunks it needs.",
    )
    retry_after_s: int = Field(
        default=2, ge=1, description="Retry-After sent with 503 when a queue is full."
    )
    access_log: bool = Field(
        default=True,
        description="One line per request on stderr (logger affidavit.access): client, method, "
        "route, status, milliseconds and the request id (X-Request-ID, taken from the request "
        "when it sends a short safe one, else made here, and returned on every response). "
        "Never the query string, a body or a key.",
    )
    rate_limit_per_minute: float = Field(
        default=600.0, ge=0, description="Requests per minute per key (or client); 0: no limit."
    )
    rate_limit_burst: int = Field(
        default=60, ge=1, description="Requests a key may send at once before the rate applies."
    )
    auth_attempts_per_minute: float = Field(
        default=60.0,
        gt=0,
        description="Failed checks of a bearer token per minute per client address (a check is "
        "reserved before any hashing and given back when the key is good); more get 429.",
    )
    auth_attempts_burst: int = Field(
        default=20, ge=1, description="Failed token checks a client address may make at once."
    )
    auth_tarpit_s: float = Field(
        default=1.0,
        ge=0,
        le=30,
        description="Longest delay (at least half of it, at random) before the 429 of an "
        "address over its failed token checks, for its requests without a key already checked "
        "(/healthz and known keys are never delayed).",
    )
    auth_tarpit_max_held: int = Field(
        default=64,
        ge=0,
        description="Requests of one address held in that delay at once; more get 429 at once "
        "and their connection closed.",
    )
    max_check_pairs: int = Field(
        default=64, ge=1, description="Most claim/evidence pairs in one POST /v1/check."
    )
    certify: bool = Field(
        default=True,
        description="Sign a certificate for every answer when a signing key is configured.",
    )


# CRAG names of the original design, accepted as flat environment variables.
LEGACY_ENV = {
    "UPPER_THRESHOLD": ("correct", "upper_threshold"),
    "LOWER_THRESHOLD": ("correct", "lower_threshold"),
    "STRIP_THRESHOLD": ("correct", "strip_threshold"),
    "TOP_K_DOCUMENTS": ("correct", "top_k_documents"),
    "TOP_K_WEB_RESULTS": ("correct", "top_k_web_results"),
    "MODEL_NAME": ("generate", "model"),
    "EMBEDDING_MODEL": ("embed", "model"),
    "TAVILY_API_KEY": ("correct", "tavily_api_key"),
}

# Short names users expect, accepted as flat environment variables (``--store`` reads it too).
ENV_ALIASES = {"STORE": ("store", "path")}

_toml_data: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "affidavit_toml", default=None
)


class _TomlSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_toml_data.get() or {})


class _LegacyEnvSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        out: dict[str, dict[str, Any]] = {}
        for name, (section, key) in {**LEGACY_ENV, **ENV_ALIASES}.items():
            value = _env_lookup(f"{ENV_PREFIX}{name}")
            if value is not None:
                out.setdefault(section, {})[key] = _env_value(section, key, value, name)
        return out


def _env_lookup(name: str) -> str | None:
    for k, v in os.environ.items():
        if k.upper() == name:
            return v
    return None


def _section_fields(section: str) -> dict[str, FieldInfo]:
    annotation = Settings.model_fields[section].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return dict(annotation.model_fields)
    return {}


def _is_list(annotation: Any) -> bool:
    if typing.get_origin(annotation) is list:
        return True
    return any(_is_list(a) for a in typing.get_args(annotation) if a is not type(None))


def _env_value(section: str, key: str, value: str, name: str) -> Any:
    """A list setting takes JSON (``["a", "b"]``) or a comma-separated list (``a,b``)."""
    field = _section_fields(section).get(key)
    if field is None or not _is_list(field.annotation):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ConfigError(
                f"environment variable {ENV_PREFIX}{name}: malformed JSON list ({exc}); "
                'give ["a", "b"] or a,b',
                source=f"{ENV_PREFIX}{name}",
            ) from None
        if not isinstance(parsed, list):
            raise ConfigError(
                f"environment variable {ENV_PREFIX}{name}: expected a list",
                source=f"{ENV_PREFIX}{name}",
            )
        return parsed
    return [part.strip() for part in text.split(",") if part.strip()]


class _EnvSource(PydanticBaseSettingsSource):
    """``AFFIDAVIT_<SECTION>__<KEY>`` and ``AFFIDAVIT_HOME``, strictly.

    Replaces pydantic-settings' environment source, which raised a traceback for a value it could
    not parse as JSON (``AFFIDAVIT_STORE=/x`` read as the whole ``store`` section, a list given as
    ``a,b``) and silently ignored a misspelt section while an unknown key was an error. Here every
    ``AFFIDAVIT_*`` name must be a known setting (or a legacy name or alias); anything else is a
    `ConfigError` naming the variable.
    """

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        sections = [n for n in Settings.model_fields if n != "home"]
        flat = {*LEGACY_ENV, *ENV_ALIASES}
        for env_name in sorted(os.environ):
            name = env_name.upper()
            if not name.startswith(ENV_PREFIX):
                continue
            value = os.environ[env_name]
            rest = name[len(ENV_PREFIX) :]
            if rest in flat:
                continue  # read by _LegacyEnvSource
            if rest in PROCESS_ENV:
                continue  # read by the code that needs it, not a setting
            parts = rest.lower().split("__")
            if parts == ["home"]:
                out["home"] = value
                continue
            if len(parts) == 1:
                hint = (
                    f"; set one key with {ENV_PREFIX}{rest}__KEY"
                    if parts[0] in sections
                    else f"; settings are {ENV_PREFIX}<SECTION>__<KEY> with sections "
                    f"{', '.join(sections)}, or {ENV_PREFIX}HOME"
                )
                raise ConfigError(f"unknown environment variable {env_name}{hint}", source=env_name)
            section, key = parts[0], "__".join(parts[1:])
            if section not in sections:
                raise ConfigError(
                    f"unknown environment variable {env_name}: no settings section {section!r} "
                    f"(valid: {', '.join(sections)})",
                    source=env_name,
                )
            known = _section_fields(section)
            if key not in known:
                raise ConfigError(
                    f"unknown environment variable {env_name}: section {section!r} has no "
                    f"setting {key!r} (valid: {', '.join(known)})",
                    source=env_name,
                )
            out.setdefault(section, {})[key] = _env_value(section, key, value, rest)
        return out


class Settings(BaseSettings):
    """Every setting of affidavit, by stage."""

    model_config = SettingsConfigDict(
        env_prefix="AFFIDAVIT_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    home: Path | None = Field(
        default=None,
        description="Keys and caches folder (default ~/.config/affidavit; env AFFIDAVIT_HOME).",
    )
    audit: AuditSettings = Field(default_factory=AuditSettings)
    claims: ClaimsSettings = Field(default_factory=ClaimsSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    batch: BatchSettings = Field(default_factory=BatchSettings)
    retrieve: RetrieveSettings = Field(default_factory=RetrieveSettings)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    certify: CertifySettings = Field(default_factory=CertifySettings)
    tlog: TlogSettings = Field(default_factory=TlogSettings)
    generate: GenerateSettings = Field(default_factory=GenerateSettings)
    correct: CorrectSettings = Field(default_factory=CorrectSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @field_validator("home")
    @classmethod
    def _home_without_nul(cls, value: Path | None) -> Path | None:
        _no_nul_in_paths(value)
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # first wins: arguments > env > legacy env names > TOML > defaults
        return (
            init_settings,
            _EnvSource(settings_cls),
            _LegacyEnvSource(settings_cls),
            _TomlSource(settings_cls),
        )

    def resolved_home(self) -> Path:
        """The affidavit home folder (keys, model cache)."""
        if self.home is not None:
            return self.home.expanduser()
        xdg = os.environ.get("XDG_CONFIG_HOME")
        base = Path(xdg) if xdg else Path.home() / ".config"
        return base / "affidavit"

    def effective(self) -> dict[str, Any]:
        """The effective configuration as JSON-safe data, secrets masked (for certificates)."""
        return self.model_dump(mode="json")


def _is(path: Path, kind: Literal["file", "dir"]) -> bool:
    # Python 3.11's is_file/is_dir raise on a name the OS refuses (ENAMETOOLONG, EACCES...):
    # such a path is no config file and no folder, which the caller then reports
    try:
        return path.is_file() if kind == "file" else path.is_dir()
    except OSError:
        return False


def find_config(explicit: Path | None = None, beside: Path | None = None) -> Path | None:
    """Locate the TOML file: explicit path, else beside ``beside``, else the working directory."""
    if explicit is not None:
        if not _is(explicit, "file"):
            raise ConfigError(f"config file not found: {explicit}", source=str(explicit))
        return explicit
    candidates: list[Path] = []
    if beside is not None:
        base = beside if _is(beside, "dir") else beside.parent
        candidates.append(base / CONFIG_FILENAME)
    candidates.append(Path.cwd() / CONFIG_FILENAME)
    for c in candidates:
        if _is(c, "file"):
            return c
        if _present(c):
            # fail closed: a config that is there but cannot be read (a dangling link, a
            # folder, no permission) holds settings (an allowlist, a mode) the run must not
            # quietly go without
            raise ConfigError(
                f"cannot read config {c}: it is there but not a readable file", source=str(c)
            )
    return None


def _present(path: Path) -> bool:
    """Whether something (even a dangling link) is at ``path``; a name the OS refuses
    (ENAMETOOLONG) or one under a non-folder is nothing."""
    try:
        path.lstat()
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in it
        return False
    except OSError as exc:
        return exc.errno != errno.ENAMETOOLONG
    return True


def _format_validation_error(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "settings"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown setting"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def load_settings(
    config: Path | str | None = None,
    *,
    beside: Path | str | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Load settings: defaults < TOML < environment < ``overrides``.

    Args:
        config: explicit TOML path (``--config``).
        beside: an input file; an ``affidavit.toml`` next to it is used if present.
        overrides: nested dict of explicit values, e.g. ``{"audit": {"mode": "enforce"}}``.

    Raises:
        ConfigError: unreadable TOML, unknown keys or invalid values (message lists valid ones).
    """
    path = find_config(
        Path(config) if config is not None else None,
        Path(beside) if beside is not None else None,
    )
    data: dict[str, Any] = {}
    if path is not None:
        try:
            with path.open("rb") as fh:
                raw = fh.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ConfigError(
                    f"config {path} is larger than {MAX_CONFIG_BYTES // 1024} kB; refused",
                    source=str(path),
                )
            data = tomllib.loads(raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}", source=str(path)) from exc
    token = _toml_data.set(data)
    try:
        return Settings(**(overrides or {}))
    except ValidationError as exc:
        where = f" (from {path})" if path else ""
        env = _env_names_in(exc)
        if env:
            where += f" (environment: {', '.join(env)})"
        raise ConfigError(
            f"invalid settings{where}: {_format_validation_error(exc)}",
            source=str(path) if path else None,
        ) from exc
    except SettingsError as exc:  # a source failed to parse a value: still one clear line
        raise ConfigError(f"invalid settings: {exc}", source=str(path) if path else None) from exc
    finally:
        _toml_data.reset(token)


def _env_names_in(err: ValidationError) -> list[str]:
    """The ``AFFIDAVIT_*`` variables set for the settings an error is about."""
    names: list[str] = []
    for e in err.errors():
        loc = [str(x).upper() for x in e["loc"][:2]]
        if not loc:
            continue
        wanted = ENV_PREFIX + "__".join(loc)
        legacy = [
            ENV_PREFIX + n
            for n, where in {**LEGACY_ENV, **ENV_ALIASES}.items()
            if [w.upper() for w in where] == loc
        ]
        for cand in [wanted, *legacy]:
            if _env_lookup(cand) is not None and cand not in names:
                names.append(cand)
    return names
