#!/usr/bin/env python3
"""An HTTP server of one file that misbehaves on purpose, for the HTTP page source's tests.

    http_fault_server.py FILE MODE PORT_FILE [OTHER_FILE]

Serves FILE at /FILE's name on 127.0.0.1 (a free port, written to PORT_FILE once listening),
answering "Range: bytes=A-B" requests with 206 as a correct server does (an If-Match that is not
the current ETag gets 412), except as MODE says:

    drop-every-N      every Nth request (N >= 2) sends half of the body, then closes the connection
    error-every-N     every Nth request answers 503
    no-ranges         answers every request with 200 and the whole file
    other-bytes       answers each range with the bytes 1 further on (and says so in Content-Range)
    too-long          sends one byte more than the range asked for (after the first request)
    changed-after-N   after N requests, the ETag changes (the file was replaced on the server)
    resized-after-N   after N requests, the file's size reads one page longer
    stall-after-N     after N requests, sends the headers and then nothing (a hung server)
    silent            accepts connections and never answers
    trickle-after-N   after N requests, sends each answer (headers included) at 2 bytes/s
    swap-on-reopen    serves OTHER_FILE (ETag "replaced") from the second request for bytes=0-0
                      on (the file was replaced between two opens)
    basic-auth-U:P    answers 401 to every request that does not log in as user U, password P
    no-validators     sends neither an ETag nor a Last-Modified header (a version cannot be pinned)
    correct           none of these

The request count and every (start, end) range served are appended to FILE.log, one line each;
the user name and password of each request that sends them, to FILE.auth.
"""

import base64
import http.server
import os
import sys
import threading
import time


def main():
    path, mode, port_file = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path, "rb") as f:
        data = f.read()
    other = None
    if len(sys.argv) > 4:
        with open(sys.argv[4], "rb") as f:
            other = f.read()
    name = "/" + os.path.basename(path)
    lock = threading.Lock()
    count = [0]
    probes = [0]
    log = open(path + ".log", "a", buffering=1)
    auth_log = open(path + ".auth", "a", buffering=1)

    def number_after(prefix):
        return int(mode[len(prefix):]) if mode.startswith(prefix) else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            header = self.headers.get("Range", "")
            with lock:
                count[0] += 1
                n = count[0]
                if header == "bytes=0-0":
                    probes[0] += 1
                swapped = mode == "swap-on-reopen" and probes[0] > 1
            if mode == "silent":
                time.sleep(3600)
                return
            authorization = self.headers.get("Authorization", "")
            sent = ""
            if authorization.startswith("Basic "):
                sent = base64.b64decode(authorization[6:]).decode()
                auth_log.write(sent + "\n")
            if mode.startswith("basic-auth-") and sent != mode[len("basic-auth-"):]:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="data"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            trickle = number_after("trickle-after-")
            if trickle is not None and n > trickle:
                self.wfile = Trickle(self.wfile)
            if self.path != name:
                self.send_error(404)
                return
            body_source = other if swapped else data
            size = len(body_source)
            etag = '"replaced"' if swapped else '"original"'
            resized = number_after("resized-after-")
            if resized is not None and n > resized:
                size += 4096
            changed = number_after("changed-after-")
            if changed is not None and n > changed:
                etag = '"replaced"'
            if_match = self.headers.get("If-Match")
            if if_match is not None and if_match != etag:
                self.send_response(412)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            error_every = number_after("error-every-")
            if error_every is not None and n % error_every == 0:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "no-ranges" or not header.startswith("bytes="):
                self.send_response(200)
                self.send_header("Content-Length", str(len(body_source)))
                self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body_source)
                return
            start_text, end_text = header[len("bytes="):].split("-")
            start, end = int(start_text), int(end_text)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            end = min(end, size - 1)
            if mode == "other-bytes":
                start, end = start + 1, min(end + 1, size - 1)
            body = body_source[start:end + 1]
            if len(body) < end + 1 - start:  # beyond the real file (resized): zeros
                body += bytes(end + 1 - start - len(body))
            if mode == "too-long" and n > 1:
                body += b"\0"
            log.write("%d %d %d\n" % (n, start, end))
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            self.send_header("Content-Length", str(len(body)))
            if mode != "no-validators":
                self.send_header("ETag", etag)
            self.end_headers()
            stall = number_after("stall-after-")
            if stall is not None and n > stall:
                time.sleep(3600)
                return
            drop_every = number_after("drop-every-")
            if drop_every is not None and n % drop_every == 0:
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

    class Trickle:
        """A response stream that sends 2 bytes a second."""

        def __init__(self, stream):
            self.stream = stream

        def write(self, chunk):
            for i in range(0, len(chunk), 1):
                self.stream.write(chunk[i:i + 1])
                self.stream.flush()
                time.sleep(0.5)
            return len(chunk)

        def flush(self):
            self.stream.flush()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
