"""Issue 27.6: production code never imports the testing fakes (the import goes one way)."""

from __future__ import annotations

import ast
from pathlib import Path

import affidavit

PACKAGE = Path(affidavit.__file__).parent


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def test_no_production_module_imports_affidavit_testing() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line} imports {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "testing" not in path.relative_to(PACKAGE).parts
        for line, name in _imports(ast.parse(path.read_text(encoding="utf-8")))
        if name == "affidavit.testing" or name.startswith("affidavit.testing.")
    ]
    assert offenders == []


def test_the_fake_embed_backend_is_the_testing_fake() -> None:
    from affidavit.core.settings import EmbedSettings
    from affidavit.retrieve.embedders import make_embedder
    from affidavit.testing.embedder import FakeEmbedder

    made = make_embedder(EmbedSettings(backend="fake"))
    text = ["the tower is 330 metres tall"]
    assert made.name == FakeEmbedder().name == "fake-hash-64"
    assert (made.embed(text) == FakeEmbedder().embed(text)).all()
