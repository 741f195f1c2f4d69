"""Framework integrations, one module per framework, each behind its own extra.

Importing `affidavit` never imports a framework: each module here imports its framework at
the top and raises `MissingDependencyError` naming the
``pip install`` when it is absent.

- `affidavit.integrations.langchain` (``affidavit[langchain]``): a retriever over the store,
  an audit Runnable and an audit callback handler.
- `affidavit.integrations.llamaindex` (``affidavit[llamaindex]``): a retriever, an
  evaluator, a verifying query-engine wrapper and a source-policy node postprocessor.
- `affidavit.integrations.haystack` (``affidavit[haystack]``): audit and verification
  components for a ``Pipeline``.
- `affidavit.integrations.mcp` (``affidavit[mcp]``): the ``affidavit mcp`` server.
"""
