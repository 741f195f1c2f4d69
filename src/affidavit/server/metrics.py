"""Prometheus metrics of the server (``GET /metrics``): the one module importing prometheus_client.

Each app has its own registry, so several apps in one process (tests) do not collide. With
``--workers N`` each worker process counts for itself.
"""

from __future__ import annotations

from collections.abc import Callable

from affidavit.core.errors import MissingDependencyError

try:
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        generate_latest,
    )
except ImportError as exc:  # pragma: no cover - the server extra installs it
    raise MissingDependencyError("prometheus-client", "server", purpose="/metrics") from exc

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """Requests, latencies, queue depth, rejections and verdicts."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "affidavit_requests",
            "HTTP requests by route and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "affidavit_request_seconds",
            "Time to the response (for streams: to its last event), by route.",
            ["route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "affidavit_queue_depth",
            "Requests running or waiting, by queue (llm, verify, ingest).",
            ["queue"],
            registry=self.registry,
        )
        self.rejections = Counter(
            "affidavit_rejections",
            "Requests refused: queue_full, rate_limited, too_large, timeout, unauthorized, "
            "forbidden, auth_tarpit (delayed 429), auth_tarpit_full (429 at once, past the cap).",
            ["reason"],
            registry=self.registry,
        )
        self.verdicts = Counter(
            "affidavit_verdicts",
            "Claim outcomes: ask decisions, audit support, check labels.",
            ["endpoint", "outcome"],
            registry=self.registry,
        )

    def watch_queue(self, name: str, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as the queue's gauge at every scrape."""
        self.queue_depth.labels(queue=name).set_function(lambda: float(depth()))

    def render(self) -> bytes:
        """The text exposition format."""
        data: bytes = generate_latest(self.registry)
        return data
