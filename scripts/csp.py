#!/usr/bin/env python3
"""Put the page's Content-Security-Policy into the built index.html.

Run by Trunk after each build (a post_build hook in Trunk.toml) on the
staged index.html. Trunk writes one inline module script that loads the
page's wasm; the policy allows exactly that script by its SHA-256 hash and
nothing else inline: no inline styles, no other origin, no plugins, no
framing, no forms. 'wasm-unsafe-eval' lets the page compile its own wasm.
"""
import base64
import hashlib
import re
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        html = f.read()
    html = re.sub(r'\s*<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    hashes = []
    for m in re.finditer(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", html, re.S):
        digest = hashlib.sha256(m.group(1).encode("utf-8")).digest()
        hashes.append("'sha256-%s'" % base64.b64encode(digest).decode())
    policy = "; ".join([
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval' " + " ".join(hashes),
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "worker-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]).strip()
    meta = '<meta http-equiv="Content-Security-Policy" content="%s" />' % policy
    html, n = re.subn(r'(<meta charset="utf-8" />)', r"\1\n    " + meta.replace("\\", "\\\\"), html, count=1)
    if n != 1:
        sys.exit("csp.py: no <meta charset> in %s" % path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)


if __name__ == "__main__":
    main(sys.argv[1])
