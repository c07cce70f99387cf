#!/usr/bin/env python3
"""An HTTP server of one file that misbehaves on purpose, for the HTTP page source's tests.

    http_fault_server.py FILE MODE PORT_FILE

Serves FILE at /FILE's name on 127.0.0.1 (a free port, written to PORT_FILE once listening),
answering "Range: bytes=A-B" requests with 206 as a correct server does, except as MODE says:

    drop-every-N      every Nth request (N >= 2) sends half of the body, then closes the connection
    error-every-N     every Nth request answers 503
    no-ranges         answers every request with 200 and the whole file
    other-bytes       answers each range with the bytes 1 further on (and says so in Content-Range)
    too-long          sends one byte more than the range asked for (after the first request)
    changed-after-N   after N requests, the ETag changes (the file was replaced on the server)
    resized-after-N   after N requests, the file's size reads one page longer
    stall-after-N     after N requests, sends the headers and then nothing (a hung server)
    correct           none of these

The request count and every (start, end) range served are appended to FILE.log, one line each.
"""

import http.server
import os
import sys
import threading
import time


def main():
    path, mode, port_file = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(path, "rb") as f:
        data = f.read()
    name = "/" + os.path.basename(path)
    lock = threading.Lock()
    count = [0]
    log = open(path + ".log", "a", buffering=1)

    def number_after(prefix):
        return int(mode[len(prefix):]) if mode.startswith(prefix) else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            with lock:
                count[0] += 1
                n = count[0]
            if self.path != name:
                self.send_error(404)
                return
            size = len(data)
            etag = '"original"'
            resized = number_after("resized-after-")
            if resized is not None and n > resized:
                size += 4096
            changed = number_after("changed-after-")
            if changed is not None and n > changed:
                etag = '"replaced"'
            error_every = number_after("error-every-")
            if error_every is not None and n % error_every == 0:
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            header = self.headers.get("Range", "")
            if mode == "no-ranges" or not header.startswith("bytes="):
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(data)
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
            body = data[start:end + 1]
            if len(body) < end + 1 - start:  # beyond the real file (resized): zeros
                body += bytes(end + 1 - start - len(body))
            if mode == "too-long" and n > 1:
                body += b"\0"
            log.write("%d %d %d\n" % (n, start, end))
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
            self.send_header("Content-Length", str(len(body)))
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

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
