#!/usr/bin/env python3
"""Loopback HTTP server for the download tests (tests/test_pull.sh).

usage: http_server.py DIR PORT_FILE LOG_FILE [CERT KEY]

Serves the files of DIR on 127.0.0.1 only, on a free port that it writes
to PORT_FILE (atomically) once it listens; logs one line per request to
LOG_FILE ("METHOD PATH range=... if-range=... auth=..."). Ranges of the
form "bytes=N-" are honoured (206 with Content-Range; If-Range with a
different ETag gets the whole file, 200). Every file has a strong ETag.

Paths are /MODE/TAG/NAME: NAME is a file of DIR, TAG any word (requests are
counted per whole path, so tests keep their counters apart by TAG):
  plain       the file; ETag "v1-NAME" (not a sha256)
  sha         the file; ETag = its sha256 (as a hub's LFS file)
  badsha      the file; ETag = the sha256 of something else
  cut         the first request of this path sends the headers and half the
              bytes asked for, then closes the connection; later ones serve
  cutall      every request is cut like that (never completes in one go)
  stall       sends the headers and 1000 bytes, then nothing for 600 s
  hold        the first request of this path sends the headers and half
              the bytes asked for, then waits (up to 600 s) until a file
              TAG.go exists in DIR before it sends the rest; later ones
              serve at once (a download caught mid-way without timing)
  busy        the first request of this path answers 503, later ones serve
  changed     the first request serves NAME (cut, ETag = its sha256), later
              ones serve NAME.v2 (ETag = its sha256): a file replaced
              between a cut and the resume
  auth        401 unless "Authorization: Bearer sekrit"
  hf          /hf/ORG/REPO/resolve/REV/NAME: a Hugging Face resolve URL;
              302 to /plain/hf/NAME with X-Linked-Etag = NAME's sha256
              (the hub's LFS sha256 comes with the redirect, not the file)
  nothing     404
  forbidden   403
  models      /models/ORG/REPO/resolve/REV/NAME: a ModelScope URL; the file
  simple      /simple/PROJECT/: a PEP 503 index page, the file
              simple-PROJECT.html of DIR
With CERT and KEY it speaks HTTPS (TLS) with that certificate: a
self-signed one, which a client that checks certificates must refuse.
The server runs until killed (the test kills it on exit).
"""
import hashlib
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT, PORT_FILE, LOG_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
COUNTS = {}
LOCK = threading.Lock()


def sha_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the log file has what matters
        pass

    def count(self):
        with LOCK:
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            return COUNTS[self.path]

    def log(self):
        with LOCK, open(LOG_FILE, "a") as f:
            f.write("%s %s range=%s if-range=%s auth=%s\n" % (
                self.command, self.path, self.headers.get("Range", "-"),
                self.headers.get("If-Range", "-"), self.headers.get("Authorization", "-")))

    def status_only(self, code, extra=None):
        body = b"error\n"
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def serve(self, path, etag, cut=False, stall=False, gate=None):
        data = open(path, "rb").read()
        start = 0
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and (if_range is None or if_range == etag):
            start = int(rng.split("=")[1].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.end_headers()
        if stall:
            self.wfile.write(body[:1000])
            self.wfile.flush()
            time.sleep(600)
            return
        if gate:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            end = time.time() + 600
            while not os.path.exists(gate) and time.time() < end:
                time.sleep(0.05)
            self.wfile.write(body[len(body) // 2:])
            return
        if cut:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def do_GET(self):
        self.log()
        parts = self.path.split("?")[0].split("/")
        n = self.count()
        if len(parts) >= 4 and parts[1] == "hf":
            name = parts[-1]
            path = os.path.join(ROOT, name)
            if not os.path.isfile(path):
                return self.status_only(404)
            self.send_response(302)
            self.send_header("Location", "/plain/hf/" + name)
            self.send_header("X-Linked-Etag", '"%s"' % sha_of(path))
            self.send_header("X-Linked-Size", str(os.path.getsize(path)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if len(parts) == 4 and parts[1] == "simple" and parts[3] == "":
            path = os.path.join(ROOT, "simple-%s.html" % parts[2])
            if not os.path.isfile(path):
                return self.status_only(404)
            return self.serve(path, '"v1-simple-%s"' % parts[2])
        if len(parts) >= 4 and parts[1] == "models":
            path = os.path.join(ROOT, parts[-1])
            if not os.path.isfile(path):
                return self.status_only(404)
            return self.serve(path, '"v1-%s"' % parts[-1])
        if len(parts) != 4:
            return self.status_only(404)
        mode, tag, name = parts[1], parts[2], parts[3]
        path = os.path.join(ROOT, name)
        if mode == "nothing" or not os.path.isfile(path):
            return self.status_only(404)
        if mode == "forbidden":
            return self.status_only(403)
        if mode == "plain":
            return self.serve(path, '"v1-%s"' % name)
        if mode == "sha":
            return self.serve(path, '"%s"' % sha_of(path))
        if mode == "badsha":
            return self.serve(path, '"%s"' % hashlib.sha256(b"something else").hexdigest())
        if mode == "cut":
            return self.serve(path, '"v1-%s"' % name, cut=(n == 1))
        if mode == "cutall":
            return self.serve(path, '"v1-%s"' % name, cut=True)
        if mode == "hold":
            gate = os.path.join(ROOT, tag + ".go") if n == 1 else None
            return self.serve(path, '"v1-%s"' % name, gate=gate)
        if mode == "stall":
            return self.serve(path, '"v1-%s"' % name, stall=True)
        if mode == "busy":
            if n == 1:
                return self.status_only(503)
            return self.serve(path, '"v1-%s"' % name)
        if mode == "changed":
            if n == 1:
                return self.serve(path, '"%s"' % sha_of(path), cut=True)
            return self.serve(path + ".v2", '"%s"' % sha_of(path + ".v2"))
        if mode == "auth":
            if self.headers.get("Authorization") != "Bearer sekrit":
                return self.status_only(401)
            return self.serve(path, '"v1-%s"' % name)
        return self.status_only(404)


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a stalled handler must not keep the process alive


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    if len(sys.argv) == 6:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = PORT_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, PORT_FILE)
    srv.serve_forever()


if __name__ == "__main__":
    main()
