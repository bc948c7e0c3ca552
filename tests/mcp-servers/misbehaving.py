"""A hand-written MCP server (no SDK) that misbehaves in the way its first argument names, for
the client's bad-input tests. It speaks just enough of 2025-11-25 over stdio: `server/discover`
is refused (so clients fall back to `initialize`), `initialize`, `tools/list`, `tools/call`.

Modes: exit_on_call, hang_on_call, hang_on_list, garbage_before_result, odd_tools, huge_result,
endless_tool_pages (a new `nextCursor` on every page of tools), slow_resource_pages (ten pages
of resources, each 0.3 s late);
stderr_flood (20 MiB on stderr without a newline, then the usual session), stderr_flood_exit
(a line, 20 MiB without a newline, then exit status 7 before any answer), url_elicitation <url>
(each call asks the client to visit <url> and answers with the action it got back),
sampling_cancelled (a call of `ask` sends a sampling request, a call of `cancel` cancels it),
dense_result (a call of `echo` with the text "dense" gets a log notification and then a result
that each hold over a million JSON values in a few MiB; other calls are echoed),
double_elicitation (each call asks the user two questions at once and answers with the action
of the first answer it gets back), cancelled_elicitation (each call asks question 1, cancels
it, then asks question 2 until an answer other than `cancel` comes, at most 50 times, and
answers with that action), resource_updates (subscriptions are offered and answered; each call
sends updates of three resources nobody subscribed to, then of `demo://subscribed`, before its
result), many_images (each call gets a text block, an image of 6 MiB and ten images of 1 KiB:
past a client's limits on a result's attachments, in bytes and in number; the prompt `charts`
is the same as user messages, with an image that is not base64 under a 5,000-character media
type after the large one, and an assistant message holding an image that is not base64),
hang_on_relist <path> (each call announces a change of the tools; every `tools/list` after the
first goes unanswered; each is noted as a line in <path>), hang_on_second_list <path> (the
same, but only the second `tools/list` goes unanswered; each answered one adds a tool
`t<n>`), growing_drift (listings 1 to 3 name a new 7 MiB tool each beside a small `grow`; later ones
list `grow` 12 MiB long), rotating_tools (each `tools/list` names a new tool with a 6 MiB description, `big_<n>`, beside
`echo`, and two tools whose names of over 1 MiB map to one local name).
"""

import base64
import json
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
LISTINGS = [0]
FLOOD = 20 * 1024 * 1024


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def png(size):
    data = b"\x89PNG\r\n\x1a\n" + b"\0" * (size - 8)
    return {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": "image/png"}


def tools():
    echo = {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
    if MODE == "sampling_cancelled":
        return [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in ("ask", "cancel")]
    if MODE != "odd_tools":
        return [echo]
    return [
        echo,
        {"name": "not_an_object", "description": "A string schema", "inputSchema": {"type": "string"}},
        {"name": "a.b", "description": "Maps to a_b", "inputSchema": {"type": "object"}},
        {"name": "a/b", "description": "Also maps to a_b", "inputSchema": {"type": "object"}},
        {"name": "no_type", "description": "No type at the root", "inputSchema": {"properties": {}}},
        {"name": "n" * 200, "description": "A name past 128 bytes", "inputSchema": {"type": "object"}},
        {"name": "verbose", "description": "v" * (1024 * 1024), "inputSchema": {"type": "object"}},
        {"name": "wide_schema", "description": "A schema of 200 KB, in its property descriptions", "inputSchema": {
            "type": "object",
            "properties": {f"p{i}": {"type": "string", "description": "d" * 1000} for i in range(200)}}},
        {"name": "fair_schema", "description": "A schema of 40 KB", "inputSchema": {
            "type": "object",
            "properties": {f"p{i}": {"type": "string", "description": "d" * 1000} for i in range(40)}}},
    ]


def flood_stderr():
    chunk = "x" * (1024 * 1024)
    for _ in range(FLOOD // len(chunk)):
        sys.stderr.write(chunk)
    sys.stderr.flush()


def ask_to_visit(url):
    """Sends a URL-mode elicitation and waits for its answer: the action the client chose."""
    send({"jsonrpc": "2.0", "id": "visit-1", "method": "elicitation/create", "params": {
        "mode": "url", "message": "Open this page", "url": url, "elicitationId": "e-1"}})
    for answer in sys.stdin:
        try:
            message = json.loads(answer)
        except ValueError:
            continue
        if message.get("id") == "visit-1" and "method" not in message:
            return message.get("result", {}).get("action", "error")
    return "closed"


if MODE == "stderr_flood":
    flood_stderr()
elif MODE == "stderr_flood_exit":
    sys.stderr.write("starting the flood\n")
    flood_stderr()
    sys.exit(7)

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
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "resources": {"subscribe": True}} if MODE == "resource_updates"
            else {"tools": {}, "prompts": {}} if MODE == "many_images" else {"tools": {}},
            "serverInfo": {"name": "misbehaving", "version": "0"}}})
    elif method in ("resources/subscribe", "resources/unsubscribe") and MODE == "resource_updates":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "resources/list" and MODE == "slow_resource_pages":
        # Each page just within a short timeout, ten of them.
        time.sleep(0.3)
        page = int((request.get("params") or {}).get("cursor") or "0")
        result = {"resources": [{"uri": f"file:///r{page}", "name": f"r{page}"}]}
        if page < 9:
            result["nextCursor"] = str(page + 1)
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "prompts/get" and MODE == "many_images":
        blocks = [{"type": "text", "text": "the charts"}, png(6 * 1024 * 1024),
                  {"type": "image", "data": "not base64!", "mimeType": "image/" + "x" * 5000}]
        blocks += [png(1024) for _ in range(10)]
        messages = [{"role": "user", "content": block} for block in blocks]
        # An assistant's image, which the client never decodes (so never finds it is not base64).
        messages += [{"role": "assistant", "content": {"type": "image", "data": "not base64!", "mimeType": "image/png"}},
                     {"role": "assistant", "content": {"type": "text", "text": "Seen."}}]
        send({"jsonrpc": "2.0", "id": rid, "result": {"messages": messages}})
    elif method == "tools/list":
        if MODE == "hang_on_list":
            continue
        if MODE == "heavy_tool_pages":
            # Pages of 10 MiB each (one tool with a long description), five of them: each
            # message within the client's limits, together past what a listing may hold.
            page = int((request.get("params") or {}).get("cursor") or "0")
            heavy = [{"name": f"heavy_{page}", "description": "d" * (10 * 1024 * 1024),
                      "inputSchema": {"type": "object"}}]
            result = {"tools": heavy}
            if page < 4:
                result["nextCursor"] = str(page + 1)
            send({"jsonrpc": "2.0", "id": rid, "result": result})
            continue
        if MODE in ("hang_on_relist", "hang_on_second_list"):
            with open(sys.argv[2], "a") as seen:
                seen.write("tools/list\n")
            LISTINGS[0] += 1
            if MODE == "hang_on_relist" and LISTINGS[0] > 1:
                continue
            if MODE == "hang_on_second_list":
                if LISTINGS[0] == 2:
                    continue
                listed = [{"name": f"t{LISTINGS[0]}", "description": "t", "inputSchema": {"type": "object"}}]
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools() + listed}})
                continue
        if MODE == "growing_drift":
            # Listings 1 to 3 each name a new tool of 7 MiB beside `grow`; from the 4th on,
            # `grow` comes back 12 MiB long.
            LISTINGS[0] += 1
            n = LISTINGS[0]
            if n <= 3:
                listed = [{"name": "grow", "description": "Grows", "inputSchema": {"type": "object"}},
                          {"name": f"a{n}", "description": "d" * (7 * 1024 * 1024),
                           "inputSchema": {"type": "object"}}]
            else:
                listed = [{"name": "grow", "description": "g" * (12 * 1024 * 1024),
                           "inputSchema": {"type": "object"}}]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools() + listed}})
            continue
        if MODE == "rotating_tools":
            # Each listing names a new tool with a 6 MiB description beside `echo`, and two
            # tools whose 1 MiB names map to one local name.
            LISTINGS[0] += 1
            big = {"name": f"big_{LISTINGS[0]}", "description": "d" * (6 * 1024 * 1024),
                   "inputSchema": {"type": "object"}}
            long_names = [{"name": "n" * (1024 * 1024) + suffix, "description": "long",
                           "inputSchema": {"type": "object"}} for suffix in (".x", "/x")]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools() + [big] + long_names}})
            continue
        if MODE == "endless_tool_pages":
            # A new cursor on every page, and a day to cache each one for.
            page = int((request.get("params") or {}).get("cursor") or "0")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "tools": tools(), "nextCursor": str(page + 1), "ttlMs": 86400000}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call":
        if MODE == "exit_on_call":
            sys.exit(3)
        if MODE == "hang_on_call":
            continue
        if MODE in ("hang_on_relist", "hang_on_second_list"):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if MODE == "sampling_cancelled":
            name = (request.get("params") or {}).get("name")
            if name == "ask":
                # Asked while the call is open, as a server asks on behalf of a call.
                send({"jsonrpc": "2.0", "id": "sample-1", "method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Name a colour"}}],
                    "maxTokens": 16}})
            else:
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                    "requestId": "sample-1", "reason": "no longer needed"}})
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": name}]}})
            continue
        if MODE == "double_elicitation":
            for n in (1, 2):
                send({"jsonrpc": "2.0", "id": f"ask-{n}", "method": "elicitation/create", "params": {
                    "mode": "form", "message": f"Question {n}",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
            action = "closed"
            for answer in sys.stdin:
                try:
                    message = json.loads(answer)
                except ValueError:
                    continue
                if str(message.get("id", "")).startswith("ask-") and "method" not in message:
                    action = message.get("result", {}).get("action", "error")
                    break
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "first answer: " + action}]}})
            continue
        if MODE == "cancelled_elicitation":
            def ask(qid, n):
                send({"jsonrpc": "2.0", "id": qid, "method": "elicitation/create", "params": {
                    "mode": "form", "message": f"Question {n}",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
            ask("q-1", 1)
            send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "q-1"}})
            action = "closed"
            for attempt in range(50):
                qid = f"q-2-{attempt}"
                ask(qid, 2)
                for answer in sys.stdin:
                    try:
                        message = json.loads(answer)
                    except ValueError:
                        continue
                    if message.get("id") == qid and "method" not in message:
                        action = message.get("result", {}).get("action", "error")
                        break
                if action != "cancel":
                    break
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "second answer: " + action}]}})
            continue
        if MODE == "url_elicitation":
            action = ask_to_visit(sys.argv[2])
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "action: " + action}]}})
            continue
        if MODE == "dense_result" and ((request.get("params") or {}).get("arguments") or {}).get("text") == "dense":
            dense = "[" + "{}," * (1 << 20) + "{}]"
            sys.stdout.write('{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": ' + dense + '}}\n')
            sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(rid) + ', "result": {"content": [{"type": "text", "text": "dense"}], "structuredContent": {"items": ' + dense + '}}}\n')
            sys.stdout.flush()
            continue
        if MODE == "many_images":
            content = [{"type": "text", "text": "the charts"}, png(6 * 1024 * 1024)]
            content += [png(1024) for _ in range(10)]
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": content}})
            continue
        if MODE == "resource_updates":
            # Updates of resources nobody subscribed to, of schemes a user must never be sent
            # to, then one of the resource the test subscribes to.
            for uri in ("javascript:alert(1)", "file:///etc/passwd", "demo://" + "x" * 5000, "demo://subscribed"):
                send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        if MODE == "garbage_before_result":
            sys.stdout.write("this is not JSON\n")
            sys.stdout.write('{"jsonrpc": "2.0", "method": 42}\n')
            sys.stdout.write('{"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}\n')
            sys.stdout.flush()
        text = "x" * (5 * 1024 * 1024) if MODE == "huge_result" else "echoed"
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
