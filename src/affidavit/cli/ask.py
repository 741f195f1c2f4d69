"""CLI commands of the ask group (placeholder until the stage lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this group's commands to the app."""
    del app
