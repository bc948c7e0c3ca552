"""The Python `mcp` SDK's client driving a server of ours step by step, for the serving tests:
`python_serving_client.py PLAN`, where PLAN is a JSON object:

    {"url": "http://127.0.0.1:PORT/mcp",   # Streamable HTTP
     "mode": "legacy" | "auto",            # initialize, or 2026-07-28 first
     "token": "…",                         # optional: sent as `Authorization: Bearer …`
     "headers": {"Mcp-Session-Id": "…"},   # optional: sent with every request
     "elicit": "none" | "approve" | "deny" | "accept_empty",
     "tasks": true,                        # optional: declares the tasks extension
     "steps": [{"op": "list"},
               {"op": "call", "tool": "wipe", "args": {…}},
               {"op": "raw", "method": "tasks/get", "params": {…}},
               {"op": "replay"}]}

`elicit` is how the user answers a question: `none` declares no elicitation capability,
`approve` / `deny` accept with `{"approve": true|false}` (and fill other fields from their
defaults), `accept_empty` accepts with no content. `replay` sends again, as it was sent, the
last `tools/call` that carried a `requestState` (a 2026-07-28 call's answered round), as a
client replaying an approved round would. Prints one JSON object: what each step gave
(`result` or `error`) and the messages of the questions asked, or `connect_error` when the
client could not connect.
"""

import json
import sys

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client

TASKS = "io.modelcontextprotocol/tasks"


def dump(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return value


async def main():
    plan = json.loads(sys.argv[1])
    asked = []
    elicit = plan.get("elicit", "none")

    async def on_elicit(context, params):
        asked.append(params.message)
        if elicit == "accept_empty":
            return types.ElicitResult(action="accept", content={})
        content = {}
        schema = dump(getattr(params, "requested_schema", None)) or {}
        for name, field in (schema.get("properties") or {}).items():
            if "default" in field:
                content[name] = field["default"]
        if "approve" in (schema.get("properties") or {}):
            content["approve"] = elicit == "approve"
        return types.ElicitResult(action="accept", content=content)

    headers = dict(plan.get("headers") or {})
    if plan.get("token"):
        headers["Authorization"] = "Bearer " + plan["token"]
    sent = []

    async def record(request):
        # Every `tools/call` this client sends, for `replay`.
        try:
            body = json.loads(await request.aread())
        except Exception:  # not JSON: no call
            return
        if isinstance(body, dict) and body.get("method") == "tools/call":
            sent.append(body)

    http = httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"request": [record]})
    plan["sent"] = sent
    transport = streamable_http_client(plan["url"], http_client=http)
    extensions = [advertise(TASKS)] if plan.get("tasks") else None
    options = {"mode": plan.get("mode", "auto"), "extensions": extensions}
    if elicit != "none":
        options["elicitation_callback"] = on_elicit
    seen = []
    try:
        await run(plan, http, transport, options, seen)
    except Exception as error:  # a refused connection is the test's to judge
        print(json.dumps({"connect_error": f"{type(error).__name__}: {error!r}", "steps": seen, "asked": asked}))
        return
    print(json.dumps({"steps": seen, "asked": asked, "protocol": plan.get("protocol")}))


async def run(plan, http, transport, options, seen):
    async with http, Client(transport, **options) as client:
        plan["protocol"] = client.protocol_version
        for step in plan["steps"]:
            try:
                if step["op"] == "list":
                    listed = await client.list_tools()
                    seen.append({"result": [dump(tool) for tool in listed.tools]})
                elif step["op"] == "call":
                    result = await client.call_tool(step["tool"], step.get("args", {}))
                    seen.append({"result": dump(result)})
                else:
                    if step["op"] == "replay":
                        answered = [c for c in plan["sent"] if "requestState" in (c.get("params") or {})]
                        if not answered:
                            raise RuntimeError("no tools/call with a requestState was sent")
                        step = {"method": "tools/call", "params": answered[-1]["params"]}
                    data = {"method": step["method"], "params": step.get("params", {})}
                    opts = {}
                    client.session._stamp(data, opts)
                    # Tasks requests name their task in `Mcp-Name` as well (SEP-2243).
                    if "taskId" in data.get("params", {}):
                        opts.setdefault("headers", {})["mcp-name"] = data["params"]["taskId"]
                    raw = await client.session._dispatcher.send_raw_request(
                        step["method"], data.get("params"), opts
                    )
                    seen.append({"result": dump(raw)})
            except Exception as error:  # what the client saw is the test's to judge
                seen.append({"error": f"{type(error).__name__}: {error}"})


anyio.run(main)
