#!/usr/bin/env python3
"""Serve a directory on 127.0.0.1 for the browser tests and benches.

Usage: serve.py PORT DIR [--isolated]

With --isolated every response carries Cross-Origin-Opener-Policy:
same-origin and Cross-Origin-Embedder-Policy: require-corp, so the page is
cross-origin isolated and its worker reads ahead through a
SharedArrayBuffer (src/web/worker/read_ahead.rs); without, the page is
served as `python3 -m http.server` serves it and the worker reads with
FileReaderSync alone.
"""
import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    isolated = False

    def end_headers(self):
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, format, *args):
        pass


def main() -> None:
    port, directory = int(sys.argv[1]), sys.argv[2]
    Handler.isolated = "--isolated" in sys.argv[3:]
    handler = functools.partial(Handler, directory=directory)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        httpd.serve_forever()


if __name__ == "__main__":
    main()
