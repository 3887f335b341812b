#!/usr/bin/env python3
"""modelapi.py: a local TLS "model API" for the route tests (python3
standard library only): enough of the Anthropic Messages API and of the
OpenAI Chat Completions API for the official SDKs and curl, over HTTP/1.1
with keep-alive, behind a certificate the test's own CA signed.

  modelapi.py --addr A --port P --cert C --key K --log FILE [--plain]

Every request is logged to --log as one JSON line (method, path, the
headers as received, the body's length, the connection's number, over
TLS its version and whether the session was resumed), and
"cancelled PATH" / "reset PATH" lines say what happened to a stream.

Paths (any prefix is ignored only by the test's route, not here):
  POST /v1/messages              Messages: JSON, or SSE with "stream":true
  POST /v1/messages/count_tokens {"input_tokens": 812}
  POST /v1/chat/completions      Chat Completions: JSON, or SSE
  GET  /v1/models                a list
  ANY  /v1/echo                  the request as JSON
  ANY  /v1/status/NNN            answers NNN with a JSON error
  ANY  /v1/reset                 resets the connection without a word
  ANY  /v1/slow                  SSE: an event every 0.2 s for 30 s
  ANY  /v1/chunked               a chunked JSON body with usage
  ANY  /v1/tick                  SSE: 40 events 50 ms apart, each with
                                 its send time (time.time())
A query "delay=MS" (any path) waits MS milliseconds before answering.
Prints READY once it serves.
"""
import argparse
import http.server
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

A = None
log_lock = threading.Lock()
conn_count = [0]


def log(obj):
    with log_lock:
        with open(A.log, "a") as f:
            f.write((json.dumps(obj) if not isinstance(obj, str) else obj)
                    + "\n")


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # one response is two writes (head, body): without this, Nagle
        # holds the second until the proxy's delayed ACK (40 ms)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with log_lock:
            conn_count[0] += 1
            self.conn_no = conn_count[0]

    def log_message(self, *a):
        pass

    def body(self):
        n = self.headers.get("Content-Length")
        if n is not None:
            return self.rfile.read(int(n))
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def send_json(self, code, obj, extra=()):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(b)
        self.wfile.flush()

    def sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def sse(self, event, obj):
        s = ("event: %s\n" % event if event else "") + \
            "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.chunk(s)

    def handle_any(self):
        raw = self.body()
        p = self.path
        tls = {}
        if isinstance(self.connection, ssl.SSLSocket):
            tls = {"tls": self.connection.version(),
                   "resumed": self.connection.session_reused}
        log(dict({"method": self.command, "path": p, "conn": self.conn_no,
                  "headers": [[k, v] for k, v in self.headers.items()],
                  "len": len(raw)}, **tls))
        try:
            req = json.loads(raw) if raw else {}
        except ValueError:
            req = {}
        if not isinstance(req, dict):
            req = {}
        path = p.split("?")[0]
        for kv in (p.split("?", 1)[1] if "?" in p else "").split("&"):
            if kv.startswith("delay="):
                time.sleep(int(kv[6:]) / 1000.0)
        if path == "/v1/messages" and self.command == "POST":
            model = req.get("model", "claude-test")
            if req.get("stream"):
                self.sse_start()
                self.sse("message_start", {"type": "message_start", "message": {
                    "id": "msg_test", "type": "message", "role": "assistant",
                    "model": model, "content": [], "stop_reason": None,
                    "stop_sequence": None, "usage": {
                        "input_tokens": 812, "output_tokens": 1,
                        "cache_read_input_tokens": 5}}})
                self.sse("content_block_start", {
                    "type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}})
                for w in ["Hello", " from", " the", " model"]:
                    self.sse("content_block_delta", {
                        "type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": w}})
                    time.sleep(0.05)
                self.sse("content_block_stop", {"type": "content_block_stop",
                                                "index": 0})
                self.sse("message_delta", {"type": "message_delta", "delta": {
                    "stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 96}})
                self.sse("message_stop", {"type": "message_stop"})
                self.chunk(b"")
                return
            self.send_json(200, {
                "id": "msg_test", "type": "message", "role": "assistant",
                "model": model, "stop_reason": "end_turn",
                "stop_sequence": None,
                "content": [{"type": "text", "text": "Hello from the model"}],
                "usage": {"input_tokens": 812, "output_tokens": 96,
                          "cache_read_input_tokens": 5}})
            return
        if path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": 812})
            return
        if path == "/v1/chat/completions" and self.command == "POST":
            model = req.get("model", "gpt-test")
            if req.get("stream"):
                self.sse_start()
                for i, w in enumerate(["Hello", " there"]):
                    self.sse(None, {"id": "c1", "object": "chat.completion.chunk",
                                    "created": 1, "model": model, "choices": [{
                                        "index": 0, "delta": {"content": w},
                                        "finish_reason": None}]})
                    time.sleep(0.05)
                self.sse(None, {"id": "c1", "object": "chat.completion.chunk",
                                "created": 1, "model": model, "choices": [{
                                    "index": 0, "delta": {},
                                    "finish_reason": "stop"}]})
                self.sse(None, {"id": "c1", "object": "chat.completion.chunk",
                                "created": 1, "model": model, "choices": [],
                                "usage": {"prompt_tokens": 11,
                                          "completion_tokens": 7,
                                          "total_tokens": 18,
                                          "prompt_tokens_details": {
                                              "cached_tokens": 3}}})
                self.sse(None, "[DONE]")
                self.chunk(b"")
                return
            self.send_json(200, {
                "id": "c1", "object": "chat.completion", "created": 1,
                "model": model, "choices": [{
                    "index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant",
                                "content": "Hello there"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7,
                          "total_tokens": 18,
                          "prompt_tokens_details": {"cached_tokens": 3}}})
            return
        if path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": "claude-test", "object": "model", "type": "model"}]})
            return
        if path == "/v1/echo":
            self.send_json(200, {"method": self.command, "path": p,
                                 "headers": [[k, v] for k, v in
                                             self.headers.items()],
                                 "len": len(raw)})
            return
        if path.startswith("/v1/status/"):
            code = int(path.rsplit("/", 1)[1])
            self.send_json(code, {"type": "error", "error": {
                "type": "test_error", "message": "status %d" % code}})
            return
        if path == "/v1/reset":
            log("reset " + path)
            s = self.connection
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         struct.pack("ii", 1, 0))
            if isinstance(s, ssl.SSLSocket):
                s = s.unwrap() if False else s
            s.close()
            self.close_connection = True
            return
        if path == "/v1/resetmid":
            # a close-delimited answer cut short by a reset
            log("resetmid " + path)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                             b"Content-Type: text/plain\r\n\r\n"
                             b"the first part of the answer\n")
            self.wfile.flush()
            time.sleep(0.3)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if path == "/v1/slow":
            self.sse_start()
            try:
                for i in range(150):
                    self.sse("ping", {"n": i})
                    time.sleep(0.2)
                self.chunk(b"")
            except OSError:
                log("cancelled " + path)
                self.close_connection = True
            return
        if path == "/v1/tick":
            # SSE events 50 ms apart, each with the time it was sent
            self.sse_start()
            for i in range(40):
                self.sse("tick", {"n": i, "t": time.time()})
                time.sleep(0.05)
            self.chunk(b"")
            return
        if path == "/v1/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            b = json.dumps({"usage": {"input_tokens": 7,
                                      "output_tokens": 9}}).encode()
            for i in range(0, len(b), 5):
                self.chunk(b[i:i + 5])
            self.chunk(b"")
            return
        self.send_json(404, {"type": "error", "error": {
            "type": "not_found_error", "message": "no " + path}})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default="127.0.0.3")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--log", required=True)
    ap.add_argument("--plain", action="store_true")
    A = ap.parse_args()
    srv = S((A.addr, A.port), H)
    if not A.plain:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(A.cert, A.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("READY", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
