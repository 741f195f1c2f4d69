"""The ``/v1/documents`` routes that read and delete stored documents (uploads are in ``app``).

``GET /v1/documents`` lists them, ``GET /v1/documents/{id}`` shows one (read scope),
``DELETE /v1/documents/{id}`` deletes one (write scope): its chunks leave the lexical index and
the vectors, after any running ingest job. Bodies are the library's contracts
(`DocumentList`, ``DocumentInfo``, ``DocumentDeletion``); an
unknown id is 404.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, FastAPI
from fastapi import Path as PathParam
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from affidavit.core.errors import DocumentNotFound
from affidavit.core.retrieval import DocumentDeletion, DocumentInfo, DocumentList
from affidavit.core.service import ApiError

if TYPE_CHECKING:
    from affidavit.server.services import Services

__all__ = ["document_routes"]

Caller = Callable[..., Awaitable[str]]
DocId = Annotated[
    str, PathParam(min_length=1, max_length=300, description="Document id (from the list).")
]
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ApiError, "description": "no such document"}
}


async def _call(work: Callable[[], Any]) -> Any:
    try:
        return await run_in_threadpool(work)
    except DocumentNotFound as exc:
        raise StarletteHTTPException(404, exc.message) from None


def document_routes(app: FastAPI, services: Services, reader: Caller, writer: Caller) -> None:
    """Add the list, show and delete routes (``reader``/``writer``: the scope dependencies)."""

    @app.get(
        "/v1/documents",
        tags=["store"],
        summary="The stored documents: id, names, title, chunks (as `affidavit documents list`).",
        response_model=DocumentList,
    )
    async def list_documents(caller: str = Depends(reader)) -> DocumentList:
        services.require()
        found: DocumentList = await _call(services.documents)
        return found

    @app.get(
        "/v1/documents/{doc_id}",
        tags=["store"],
        summary="One stored document (as `affidavit documents show ID`).",
        response_model=DocumentInfo,
        responses=_NOT_FOUND,
    )
    async def show_document(doc_id: DocId, caller: str = Depends(reader)) -> DocumentInfo:
        services.require()
        found: DocumentInfo = await _call(lambda: services.document(doc_id))
        return found

    @app.delete(
        "/v1/documents/{doc_id}",
        tags=["store"],
        summary="Delete a document: its chunks leave the lexical index and the vectors "
        "(as `affidavit documents delete ID`; write scope).",
        response_model=DocumentDeletion,
        responses=_NOT_FOUND,
    )
    async def delete_document(doc_id: DocId, caller: str = Depends(writer)) -> DocumentDeletion:
        services.require()
        done: DocumentDeletion = await _call(lambda: services.delete_document(doc_id))
        return done
