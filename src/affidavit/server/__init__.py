"""``affidavit serve``: the HTTP API and the web page, over the same library the CLI uses.

The app lives in `affidavit.server.app` (needs ``pip install "affidavit[server]"``); this
package imports without it so ``affidavit --help`` and the key commands' help work everywhere.

Examples:
    >>> from affidavit.server import create_app  # doctest: +SKIP
    >>> app = create_app()  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from affidavit.core.settings import Settings

__all__ = ["create_app", "export_openapi", "is_loopback", "serve"]


def create_app(settings: Settings | None = None, **kwargs: Any) -> Any:
    """The FastAPI app (see `affidavit.server.app.create_app`).

    Raises:
        MissingDependencyError: the ``server`` extra is not installed.
    """
    from affidavit.server.app import create_app as _create

    return _create(settings, **kwargs)


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost).

    Examples:
        >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0"), is_loopback("localhost")
        (True, False, True)
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(settings: Settings, *, config: str | None = None) -> None:
    """Run uvicorn on ``serve.host:serve.port`` with ``serve.workers`` processes.

    Raises:
        ConfigError: a non-loopback address without any API key configured.
        MissingDependencyError: the ``server`` extra is not installed.
    """
    import os

    from affidavit.core.errors import ConfigError, MissingDependencyError
    from affidavit.server.apikeys import ApiKeyStore, default_keys_path

    s = settings.serve
    if not is_loopback(s.host) and not ApiKeyStore(default_keys_path(settings)).active():
        raise ConfigError(
            f"refusing to bind {s.host}: no API key is configured, so anyone who can reach it "
            "could use it. Create one with `affidavit keys api create --name NAME`, or bind "
            "127.0.0.1"
        )
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError("uvicorn", "server", purpose="affidavit serve") from exc
    from affidavit.server.app import create_app as _create  # fails early when fastapi is missing

    del _create
    if config:
        os.environ["AFFIDAVIT_SERVE_CONFIG"] = config
    # each worker builds its app (and loads its models) from the same settings sources
    for key, value in (("HOST", s.host), ("PORT", str(s.port)), ("WORKERS", str(s.workers))):
        os.environ[f"AFFIDAVIT_SERVE__{key}"] = value
    # ... and the store the command line named (issue 25.11: --store was ignored by the app)
    os.environ["AFFIDAVIT_STORE__PATH"] = str(Path(settings.store.path).expanduser().resolve())
    import inspect

    extra: dict[str, Any] = {}
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:
        # a worker loading its models answers the supervisor's ping slowly: not a dead worker
        extra["timeout_worker_healthcheck"] = 60
    uvicorn.run(
        "affidavit.server.app:app_from_environment",
        factory=True,
        host=s.host,
        port=s.port,
        workers=s.workers,
        log_level="info",
        access_log=False,  # an access log line holds no key, but keep the terminal quiet
        # the client address is the connection's: uvicorn would take X-Forwarded-For from any
        # client on 127.0.0.1, which could then name a new address with every request (past
        # the per-address limits of failed key checks and requests). Behind a proxy, name it
        # in uvicorn's FORWARDED_ALLOW_IPS
        proxy_headers="FORWARDED_ALLOW_IPS" in os.environ,
        **extra,
    )


def export_openapi(directory: Path | str) -> Path | None:
    """Write the HTTP API's ``openapi.json`` into ``directory`` (``affidavit export-schemas``).

    Returns None, writing nothing, when the ``server`` extra is not installed.
    """
    import json

    from affidavit.core.errors import MissingDependencyError

    try:
        from affidavit.server.app import create_app as _create
    except (ImportError, MissingDependencyError):
        return None  # the contracts' schemas need no server extra; only this file does
    schema = _create(Settings()).openapi()
    path = Path(directory) / "openapi.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return path
