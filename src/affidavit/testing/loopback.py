"""A real HTTP server on 127.0.0.1 for tests of HTTP clients (a free port, stopped on exit).

Examples:
    >>> import httpx
    >>> class Hello(QuietHandler):
    ...     def do_GET(self) -> None:
    ...         self.send_response(200)
    ...         self.send_header("Content-Length", "5")
    ...         self.end_headers()
    ...         self.wfile.write(b"hello")
    >>> with loopback_server(Hello) as url:
    ...     httpx.get(url + "/", trust_env=False).text
    'hello'
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["QuietHandler", "loopback_server"]


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing (subclass it with ``do_GET`` / ``do_POST``)."""

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a free port in a thread; yields the base URL
    (``http://127.0.0.1:<port>``, no trailing slash) and shuts the server down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
