#!/usr/bin/env python3
"""A loopback HTTP proxy in front of a WebDAV server that injects faults, for Tidemark's tests.

Usage: webdav-fault-proxy.py UPSTREAM_PORT
Prints the port it listens on (127.0.0.1) as its first line, then serves until killed.

Requests are forwarded to 127.0.0.1:UPSTREAM_PORT unchanged. The test sets faults with
POST /__faults and a JSON list of rules; each rule applies to the next `times` requests whose
method is `method` ("*" for any) and whose path contains `path`:
  {"action": "status", "status": 503}      answer with that status, without forwarding
  {"action": "drop-request"}               read part of the request body, then close the connection
  {"action": "drop-response", "after": N}  forward, send the head and N body bytes, then close
  {"action": "lose-answer"}                forward, then close without answering (the server acted)
  {"action": "delay", "seconds": S}        wait S seconds, then forward
  {"action": "trickle", "seconds": S, "after": N}  forward, send the head, then N body bytes (all
                                           by default) one every S seconds, then close
  {"action": "refuse"}                     close the connection at once, without reading
GET /__log returns what was forwarded: method, path, Range header, status, body bytes sent.
DELETE /__log clears it.
"""
import http.client
import http.server
import json
import sys
import threading
import time

UPSTREAM = int(sys.argv[1])
lock = threading.Lock()
rules = []
log = []


def take_rule(method, path):
    with lock:
        for rule in rules:
            if rule.get("times", 1) <= 0:
                continue
            if rule.get("method", "*") not in ("*", method):
                continue
            if rule.get("path", "") not in path:
                continue
            rule["times"] = rule.get("times", 1) - 1
            return dict(rule)
    return None


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def control(self):
        global rules
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/__faults" and self.command == "POST":
            with lock:
                rules = json.loads(body or b"[]")
            out = b"ok"
        elif self.path == "/__log" and self.command == "GET":
            with lock:
                out = json.dumps(log).encode()
        elif self.path == "/__log" and self.command == "DELETE":
            with lock:
                log.clear()
            out = b"ok"
        else:
            out = b"unknown"
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def forward(self):
        if self.path.startswith("/__"):
            return self.control()
        rule = take_rule(self.command, self.path)
        length = int(self.headers.get("Content-Length") or 0)
        action = rule["action"] if rule else None
        if action == "refuse":
            self.close_connection = True
            return
        if action == "drop-request":
            self.rfile.read(min(length, max(1, length // 2)))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else None
        if action == "status":
            out = b"injected fault"
            self.send_response(rule["status"])
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        if action == "delay":
            time.sleep(rule["seconds"])
        upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        if action == "lose-answer":
            with lock:
                log.append({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                            "status": response.status, "bytes": 0})
            upstream.close()
            self.close_connection = True
            return
        self.send_response(response.status, response.reason)
        for k, v in response.getheaders():
            if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        sent = data
        if action == "drop-response":
            sent = data[: rule.get("after", 0)]
        if action == "trickle":
            sent = data[: rule.get("after", len(data))]
        try:
            if action == "trickle":
                for i in range(len(sent)):
                    self.wfile.write(sent[i : i + 1])
                    self.wfile.flush()
                    time.sleep(rule["seconds"])
            else:
                self.wfile.write(sent)
                self.wfile.flush()
        except OSError:
            pass
        with lock:
            log.append({"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                        "status": response.status, "bytes": len(sent)})
        upstream.close()
        if action in ("drop-response", "trickle"):
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_OPTIONS = forward
    do_PROPFIND = do_MKCOL = do_MOVE = do_COPY = forward


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
