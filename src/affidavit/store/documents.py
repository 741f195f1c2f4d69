"""The documents a user owns: list, show and delete them (one definition for the library, the
``affidavit documents`` commands and the ``/v1/documents`` routes).

A document is shown by the names it was ingested under (paths relative to the ingested folder,
uploaded file names, record URLs), never by a path on the machine that stores it. Deleting one
removes its chunks from the lexical index and the vectors and remembers each removed chunk, so a
certificate that cites one says on replay that it was deleted.

Examples:
    >>> from affidavit.store.local import LocalStore
    >>> store = LocalStore(tmp_path / "store")  # doctest: +SKIP
    >>> list_documents(store).documents  # doctest: +SKIP
    ()
"""

from __future__ import annotations

import logging

from affidavit.core.errors import DocumentNotFound
from affidavit.core.retrieval import DocumentDeletion, DocumentInfo, DocumentList
from affidavit.store.base import DocRecord, Store

logger = logging.getLogger(__name__)

__all__ = ["delete_document", "list_documents", "show_document"]


def _info(rec: DocRecord) -> DocumentInfo:
    shown = rec.source or rec.doc_id
    names = tuple(dict.fromkeys([shown, *(a.source for a in rec.aliases)]))
    return DocumentInfo(
        id=rec.doc_id,
        source=shown,
        names=names,
        title=rec.title,
        mime=rec.mime,
        chunks=rec.chunks,
        content_hash=rec.content_hash,
    )


def list_documents(store: Store) -> DocumentList:
    """Every stored document, sorted by the name it is shown under."""
    docs = sorted((_info(r) for r in store.records().values()), key=lambda d: (d.source, d.id))
    return DocumentList(documents=tuple(docs), chunks_total=sum(d.chunks for d in docs))


def _record(store: Store, doc_id: str) -> DocRecord:
    rec = store.records().get(doc_id)
    if rec is None:
        raise DocumentNotFound(
            f"no document {doc_id!r} in the store (`affidavit documents list` shows the ids)",
            doc_id=doc_id,
        )
    return rec


def show_document(store: Store, doc_id: str) -> DocumentInfo:
    """One stored document.

    Raises:
        DocumentNotFound: no document has this id.
    """
    return _info(_record(store, doc_id))


def delete_document(store: Store, doc_id: str) -> DocumentDeletion:
    """Delete a document: its names, its chunks from the lexical index and the vectors.

    Raises:
        DocumentNotFound: no document has this id.
        StoreError: the store cannot be written.
    """
    rec = _record(store, doc_id)
    removed = store.delete([doc_id])
    store.refresh()
    if not removed:  # deleted by another writer meanwhile: gone all the same
        logger.info("document %s was already deleted", doc_id)
    return DocumentDeletion(id=doc_id, source=rec.source or doc_id, chunks_removed=rec.chunks)
