"""The generate stage: chat LLM backends behind the `Generator` Protocol.

Backends: `LlamaCppGenerator` (embedded default, needs
``affidavit[llm]``), `OpenAICompatGenerator` (any
OpenAI-compatible server), and `affidavit.testing.fake_llm.FakeGenerator` (scripted, for
tests). `make_generator` builds the configured one. Heavy imports stay in the backend modules.
"""

from affidavit.generate.base import Generator
from affidavit.generate.factory import make_generator

__all__ = ["Generator", "make_generator"]
