"""What the server runs: the library's own components, loaded once per process.

Every endpoint calls the same code the CLI calls (``AskPipeline.ask``, ``Auditor.audit``,
``check_one``, ``StoreRetriever.search``, ``verify_certificate``, ``Ingestor.ingest``); nothing
here re-implements a stage. Methods are blocking and run in the work queues' threads.
"""

from __future__ import annotations

import copy
import logging
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from affidavit.core.certificate import Certificate, CertificateVerification, EvidenceRecord
from affidavit.core.errors import AffidavitError, ConfigError, EnforcementError
from affidavit.core.report import AuditReport
from affidavit.core.retrieval import DocumentDeletion, DocumentInfo, DocumentList, IngestReport
from affidavit.core.service import (
    AskRequest,
    AskResponse,
    AuditInput,
    PipelineEvent,
    PublicKeyInfo,
    Readiness,
    ReadyCheck,
    SearchResponse,
)
from affidavit.core.settings import Settings
from affidavit.core.types import DisplayMode, EnforcementMode
from affidavit.core.verification import CheckInput, CheckOutput

if TYPE_CHECKING:
    from affidavit.tlog.store import FileLog

log = logging.getLogger(__name__)

__all__ = ["NotReady", "Services"]


class NotReady(AffidavitError):
    """The models are still loading, or failed to load (HTTP 503)."""

    stage = "serve"


_PATH_RE = re.compile(r"(?:(?<=[\s'\"(=])|^)(?:~|[A-Za-z]:)?[/\\][^\s'\",;:)]*")


def public_detail(detail: str) -> str:
    """``detail`` with every file-system path replaced by ``<path>``: ``/readyz`` is open
    without a key and must reveal nothing about the host (the log keeps the whole text).

    Examples:
        >>> public_detail("no signing key at /home/u/.config/affidavit/keys/signing.pem")
        'no signing key at <path>'
    """
    return _PATH_RE.sub("<path>", detail)


class Services:
    """The loaded components of one server process.

    Args:
        settings: the effective settings (store, models, policy, serve).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ready = False
        self.load_error: str | None = None
        self.loaded_at: float | None = None
        self._lock = threading.Lock()
        # one writer at a time in this process: an ingest job, or a delete
        self._store_writes = threading.Lock()
        self._auditors: dict[tuple[str | None, bool], Any] = {}
        self.store: Any = None
        self.embedder: Any = None
        self.pipe: Any = None
        self.plain: Any = None
        self.check_verifier: Any = None
        self.signing_key: Any = None
        self.signing_note = ""
        self._cert_dir = Path(tempfile.mkdtemp(prefix="affidavit-serve-"))

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> None:
        """Open the store and load every model; records the failure instead of raising."""
        try:
            self._load()
        except AffidavitError as exc:
            self.load_error = exc.message
            log.error("server components failed to load: %s", exc.message)
        except Exception as exc:  # a broken install must show on /readyz, not kill the process
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("server components failed to load")
        else:
            self.ready = True
            self.loaded_at = time.time()

    def _load(self) -> None:
        from affidavit.pipeline.build import SignedCertificateWriter, build_pipeline
        from affidavit.retrieve.embedders import make_embedder
        from affidavit.store.factory import make_store
        from affidavit.verify.calibration import effective_policy
        from affidavit.verify.cascade import ClaimCascade

        s = self.settings
        self.store = make_store(s.store, path=s.store.path)  # an empty store is created
        self.embedder = make_embedder(s.embed)
        pipe = build_pipeline(s, store=self.store, embedder=self.embedder, corrector=True)
        load = getattr(pipe.generator, "load", None)
        if callable(load):
            load()  # the embedded LLM loads now, not on the first question
        try:
            writer = SignedCertificateWriter(s)
        except AffidavitError as exc:
            self.signing_note = f"answers are not signed: {exc.message}"
        else:
            from affidavit.pipeline.build import model_identities

            writer.models = model_identities(pipe)
            pipe.certificate_writer = writer
            self.signing_key = writer._key
        plain = copy.copy(pipe)
        plain.corrector = None
        self.pipe, self.plain = pipe, plain
        # ``affidavit check`` verifies with the model's dev-tuned thresholds; so does /v1/check
        self.check_verifier = ClaimCascade(s.verify, effective_policy(s))

    def require(self) -> None:
        """Raise NotReady unless every component is loaded."""
        if not self.ready:
            raise NotReady(
                f"the server could not load its models: {self.load_error}"
                if self.load_error
                else "the models are still loading; retry after the Retry-After seconds"
            )

    def readiness(self) -> Readiness:
        """``GET /readyz``: models loaded, store readable."""
        checks = [
            ReadyCheck(
                name="models",
                ok=self.ready,
                detail=self.load_error or ("loaded" if self.ready else "loading"),
            )
        ]
        if self.ready:
            try:
                _, chunks = self.store.count()
                checks.append(ReadyCheck(name="store", ok=True, detail=f"{chunks} chunks"))
            except AffidavitError as exc:
                checks.append(ReadyCheck(name="store", ok=False, detail=exc.message))
            problems = "; ".join(self.pipe.verifier.stage_errors.values())
            checks.append(ReadyCheck(name="verifier", ok=not problems, detail=problems or "ok"))
            checks.append(
                ReadyCheck(
                    name="signing_key",
                    ok=True,  # optional: without it answers are simply not signed
                    detail=self.signing_note or "answers are signed",
                )
            )
        for c in checks:
            if c.detail != public_detail(c.detail):
                log.info("readiness %s: %s", c.name, c.detail)  # the whole text stays in the log
        return Readiness(
            ready=all(c.ok for c in checks),
            checks=tuple(c.model_copy(update={"detail": public_detail(c.detail)}) for c in checks),
        )

    # -- the endpoints' work -------------------------------------------------------------------

    def display_mode(self, request: AskRequest) -> DisplayMode:
        """The display mode ``ask`` will render ``request`` in: the request's own mode, else the
        default of the pipeline that answers it (its settings may differ from the app's when an
        embedder passes services built from other settings)."""
        if request.mode is not None:
            return request.mode
        pipe = self.pipe if request.correct else self.plain
        settings = getattr(pipe, "settings", None)
        policy = getattr(settings, "policy", None)
        display = getattr(policy, "display", None)
        return display if display in ("strict", "mixed", "debug") else self.settings.policy.display

    def ask(
        self,
        request: AskRequest,
        *,
        on_token: Callable[[str], None] | None = None,
        on_event: Callable[[PipelineEvent], None] | None = None,
    ) -> AskResponse:
        """Answer a question with the library's ask pipeline (and sign it when possible)."""
        from affidavit.certify.certificate import load_certificate

        pipe = self.pipe if request.correct else self.plain
        sign = request.certify and self.settings.serve.certify and self.signing_key is not None
        path = self._cert_dir / f"{uuid.uuid4().hex}.json" if sign else None
        result = pipe.ask(
            request.question,
            mode=request.mode,
            on_token=on_token,
            on_event=on_event,
            certify=path,
        )
        cert: Certificate | None = None
        if path is not None:
            try:
                cert = load_certificate(path)
            finally:
                path.unlink(missing_ok=True)
        return AskResponse(
            result=result.model_copy(update={"certificate_path": None}), certificate=cert
        )

    def _auditor(self, mode: EnforcementMode | None, verify: bool) -> Any:
        from affidavit.audit import Auditor

        key = (mode, verify)
        with self._lock:
            auditor = self._auditors.get(key)
            if auditor is None:
                over: dict[str, Any] = {}
                if mode is not None:
                    over["mode"] = mode
                if verify:
                    over["use_verifier"] = True
                s = self.settings
                if over:
                    s = s.model_copy(update={"audit": s.audit.model_copy(update=over)})
                verifier = self.pipe.verifier if verify else None
                auditor = Auditor(s, verifier=verifier)
                self._auditors[key] = auditor
        return auditor

    def audit(
        self, data: AuditInput, *, mode: EnforcementMode | None = None, verify: bool = False
    ) -> AuditReport:
        """The provenance audit ``affidavit audit`` runs; enforce mode returns the report too."""
        auditor = self._auditor(mode, verify)
        try:
            report: AuditReport = auditor.audit(data.query or "", list(data.chunks), data.response)
        except EnforcementError as exc:
            report = exc.report
        return report

    def check(self, items: list[CheckInput]) -> list[CheckOutput]:
        """``affidavit check`` on each pair."""
        from affidavit.batch.jobs import check_one

        return [check_one(item, self.check_verifier)[0] for item in items]

    def search(self, query: str, k: int, mode: str) -> SearchResponse:
        """``affidavit search``."""
        if not query.strip():
            raise ConfigError("the query is empty")
        hits = self.pipe.retriever.search(query, k=k, mode=mode)
        return SearchResponse(query=query, mode=mode, hits=tuple(hits))

    def verify_certificate(self, tree: dict[str, Any]) -> CertificateVerification:
        """``affidavit certificate verify --store``: schema, signature, trust, evidence hashes,
        and the log entry the certificate carries, if any (offline, as the CLI checks it)."""
        from affidavit.certify.keys import trusted_keys
        from affidavit.certify.replay import store_lookup
        from affidavit.certify.verify import verify_certificate

        trusted = trusted_keys(self.settings, [])
        if self.signing_key is not None:
            from affidavit.certify.keys import key_id

            trusted = {
                **trusted,
                key_id(self.signing_key.public_key()): self.signing_key.public_key(),
            }

        def nowhere(ev: EvidenceRecord) -> str | None:
            return None  # no store: every span is reported as not found, never passed

        lookup = store_lookup(self.store) if self.store is not None else nowhere
        result = verify_certificate(tree, trusted, lookup)
        if result.valid and tree.get("log_entry") is not None:
            # as `certificate verify` does: the log entry is outside the signature, so an edited
            # one is checked (its checkpoint signed by the certificate's key, the proof)
            from affidavit.core.certificate import Certificate
            from affidavit.tlog.certificates import check_log_entry

            model = Certificate.model_validate(tree)
            log_reasons = tuple(f"log: {r}" for r in check_log_entry(model, trusted.values()))
            if log_reasons:
                result = result.model_copy(
                    update={"valid": False, "reasons": (*result.reasons, *log_reasons)}
                )
        return result

    def public_key(self) -> PublicKeyInfo | None:
        """The key answers are signed with, or None."""
        if self.signing_key is None:
            return None
        from cryptography.hazmat.primitives import serialization

        from affidavit.certify.keys import key_id

        pub = self.signing_key.public_key()
        pem = pub.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")
        return PublicKeyInfo(key_id=key_id(pub), public_key_pem=pem)

    def transparency_log(self) -> FileLog | None:
        """The transparency log of the signing key, or None (no key, or the log is off)."""
        if self.signing_key is None or not self.settings.tlog.enabled:
            return None
        from affidavit.tlog.certificates import default_log_path
        from affidavit.tlog.store import FileLog

        return FileLog(default_log_path(self.settings, self.signing_key.public_key()))

    def ingest(self, folder: Path) -> IngestReport:
        """``affidavit ingest FOLDER`` into the served store.

        An uploaded file is known to the store by its name (``upload:NAME``), not by the folder
        of its job, so a new upload of an edited file replaces the old version, and the same
        content uploaded under another name is one document with two names.
        """
        from affidavit.ingest.pipeline import Ingestor, relative_path

        def origin(path: Path, root: Path | None) -> str:
            return "upload:" + relative_path(path, root)

        with self._store_writes:
            ingestor = Ingestor(self.store, self.embedder, self.settings.ingest, origin=origin)
            report: IngestReport = ingestor.ingest([folder])
        return report

    def documents(self) -> DocumentList:
        """``affidavit documents list``."""
        from affidavit.store.documents import list_documents

        return list_documents(self.store)

    def document(self, doc_id: str) -> DocumentInfo:
        """``affidavit documents show ID``.

        Raises:
            DocumentNotFound: no such document.
        """
        from affidavit.store.documents import show_document

        return show_document(self.store, doc_id)

    def delete_document(self, doc_id: str) -> DocumentDeletion:
        """``affidavit documents delete ID`` (after the running ingest job, never during it).

        Raises:
            DocumentNotFound: no such document.
        """
        from affidavit.store.documents import delete_document

        with self._store_writes:
            return delete_document(self.store, doc_id)
