"""affidavit: answers questions from your documents and proves every sentence it shows."""

from __future__ import annotations

__version__ = "0.1.0"
