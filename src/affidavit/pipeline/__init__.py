"""The ``ask`` orchestration: retrieve -> correct -> generate -> verify -> render -> certify."""

from affidavit.pipeline.ask import AskPipeline, Corrector

__all__ = ["AskPipeline", "Corrector"]
