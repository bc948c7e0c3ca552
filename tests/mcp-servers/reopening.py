"""A hand-written MCP server over Streamable HTTP (no SDK) whose event stream never stays open:
each GET is answered with an SSE stream that says `retry: 0` and ends at once, so a client that
follows it reconnects without pause. It speaks 2025-11-25 (`initialize`, `tools/list`,
`tools/call`); its one tool, `gets`, answers how many GETs it has had.

Run as `python reopening.py http PORT`.
"""

import http.server
import json
import sys
import threading

GETS = 0
LOCK = threading.Lock()
SESSION = "reopening-session-1"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send_json(self, message, status=200):
        body = json.dumps(message).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        global GETS
        with LOCK:
            GETS += 1
        body = b"retry: 0\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        method = request.get("method")
        rid = request.get("id")
        if rid is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "initialize":
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "reopening", "version": "0"}}})
        elif method == "tools/list":
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "gets", "description": "How many GETs the server had", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call":
            with LOCK:
                gets = GETS
            self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": str(gets)}]}})
        else:
            self.send_json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
