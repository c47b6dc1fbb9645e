"""``acp view FILE --follow``: the page of a cassette that is still being written,
served on the loopback interface and kept up to date.

The page (:func:`~.viewer.render_html` with ``follow_size``) asks ``rows?size=N`` every
second: the answer is ``204`` while the file still has ``N`` bytes, else the rows of the
whole cassette as it is now (a request recorded before has its answer by now) and the
new size. Only whole lines are read, so a record being written is picked up next time.

Rules it keeps, since the page shows a recording (redacted, but a conversation with
its files and commands):

* it listens on 127.0.0.1 only, and every path starts with a random token printed
  once on stderr, so another local user or a web page cannot guess the address;
* it answers only requests whose ``Host`` is the loopback address it listens on (a
  site that rebinds its DNS name to 127.0.0.1 gets ``403``);
* nothing but ``GET`` of the page and of its rows.
"""

from __future__ import annotations

import os
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import msgspec

from .cassette import CassetteError, read_cassette
from .viewer import render_html, view_rows

__all__ = ["ViewServer"]


class ViewServer:
    """Serve the page of ``path`` (see the module docstring) until :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str], host: str = "127.0.0.1", port: int = 0):
        self.path = Path(path)
        self.token = secrets.token_urlsafe(16)
        read_cassette(self.path)  # raises CassetteError now rather than on the first visit
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                try:
                    server._answer(self)
                except (CassetteError, OSError) as exc:  # the file went away or was replaced
                    text = f"acp view: {exc}\n".encode()
                    server._send(self, HTTPStatus.INTERNAL_SERVER_ERROR, text, "text/plain")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/{self.token}/"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        host = request.headers.get("Host", "")
        if host not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            self._send(request, HTTPStatus.FORBIDDEN, b"wrong Host\n", "text/plain")
            return
        url = urlsplit(request.path)
        prefix = f"/{self.token}/"
        if not url.path.startswith(prefix):
            self._send(request, HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
            return
        rest = url.path[len(prefix) :]
        size = self.path.stat().st_size  # before reading: a later line is read next time
        if rest == "":
            page = render_html(read_cassette(self.path), follow_size=size)
            self._send(request, HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
        elif rest == "rows":
            known = parse_qs(url.query).get("size", [""])[0]
            if known == str(size):
                self._send(request, HTTPStatus.NO_CONTENT, b"", None)
                return
            rows = view_rows(read_cassette(self.path))
            body = msgspec.json.encode({"size": size, "rows": rows})
            self._send(request, HTTPStatus.OK, body, "application/json")
        else:
            self._send(request, HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    @staticmethod
    def _send(
        request: BaseHTTPRequestHandler, status: HTTPStatus, body: bytes, kind: str | None
    ) -> None:
        request.send_response(status)
        if kind is not None:
            request.send_header("Content-Type", kind)
            request.send_header("Content-Length", str(len(body)))
        request.send_header("Cache-Control", "no-store")
        request.send_header("X-Content-Type-Options", "nosniff")
        request.end_headers()
        if body:
            request.wfile.write(body)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()
