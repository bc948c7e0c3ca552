"""A hand-written MCP server (no SDK) for the client's reconnect tests, speaking 2025-11-25 over
stdio (`server/discover` is refused, so clients fall back to `initialize`).

Its one argument is a state file: at start it appends a line to `<state>.starts` (so a test
counts how often it was started) and reads its tools from `<state>`, a JSON list of
`{"name", "description"}` objects; so a test changes the tools a restarted server offers by
rewriting the file. A call answers `ran <name> <arguments as JSON>`.
"""

import json
import sys

STATE = sys.argv[1]

with open(STATE + ".starts", "a") as starts:
    starts.write("start\n")

with open(STATE) as state:
    TOOLS = [
        {"name": t["name"], "description": t["description"], "inputSchema": {"type": "object"}}
        for t in json.load(state)
    ]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    method = request.get("method")
    rid = request.get("id")
    if rid is None:
        continue
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "restartable", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        params = request.get("params", {})
        text = "ran %s %s" % (params.get("name"), json.dumps(params.get("arguments", {}), sort_keys=True))
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
