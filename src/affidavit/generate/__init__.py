"""The generate stage: chat LLM backends behind the :class:`Generator` Protocol.

Backends: :class:`~affidavit.generate.llamacpp.LlamaCppGenerator` (embedded default, needs
``affidavit[llm]``), :class:`~affidavit.generate.openai_compat.OpenAICompatGenerator` (any
OpenAI-compatible server), and :class:`affidavit.testing.fake_llm.FakeGenerator` (scripted, for
tests). :func:`make_generator` builds the configured one. Heavy imports stay in the backend modules.
"""

from affidavit.generate.base import Generator
from affidavit.generate.factory import make_generator

__all__ = ["Generator", "make_generator"]
