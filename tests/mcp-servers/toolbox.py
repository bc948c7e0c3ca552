"""An MCP server for the llm-tools tests, on the Python `mcp` SDK's low-level `Server`.

It speaks both lifecycles (2026-07-28 `server/discover` and the older `initialize`), over
stdio (`python toolbox.py`) or Streamable HTTP (`python toolbox.py http PORT`), and has what
the reference servers lack: a paged `tools/list` (3 tools a page), tool names models refuse,
a 2020-12 schema with `$defs`/`$ref`, a tool list that changes on request, a call that runs
until it is cancelled and a count of the cancellations the server saw, the HTTP headers of
the request that called a tool, a result too dense to parse (`dense`), and 10,000 input
requests at once (`many_urls`).
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

CANCELLED: list[str] = []
# 2026-07-28 sessions hear of list changes on `subscriptions/listen` streams, fed by this bus.
BUS = InMemorySubscriptionBus()
EXTRA_TOOLS: list[str] = []


def tool(name, description, properties=None, required=None, **schema):
    input_schema = {"type": "object", "properties": properties or {}}
    if required:
        input_schema["required"] = required
    input_schema.update(schema)
    return types.Tool(name=name, description=description, input_schema=input_schema)


def all_tools():
    tools = [
        tool("add", "Adds two integers", {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
        tool("wait_for_cancel", "Reports progress, then runs until cancelled"),
        tool("cancellations", "How many calls the server saw cancelled"),
        tool("add_tool", "Adds a tool named `name` and announces the change", {"name": {"type": "string"}}, ["name"]),
        tool("repos.list/all", "A tool whose name models refuse"),
        tool(
            "plan_trip",
            "A 2020-12 schema with $defs and $ref",
            {"from": {"$ref": "#/$defs/city"}, "to": {"$ref": "#/$defs/city"}},
            ["from", "to"],
            **{
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": {"city": {"type": "string", "minLength": 1}},
            },
        ),
        tool("headers", "The HTTP headers of this request"),
        tool("fail", "Always fails with isError"),
        tool("greet", "Asks the user's name (2026-07-28 input requests), then greets them"),
        tool("dense", "A result holding over a million JSON values in a few MiB"),
        tool("many_urls", "Asks for 10,000 URL visits at once (2026-07-28 input requests)"),
    ]
    tools += [tool(name, f"Added at run time: {name}") for name in EXTRA_TOOLS]
    return tools


PAGE = 3


async def list_tools(ctx, params):
    tools = all_tools()
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


def text(value):
    return types.CallToolResult(content=[types.TextContent(text=value)])


async def call_tool(ctx, params):
    args = params.arguments or {}
    name = params.name
    if name == "add":
        return text(str(args["a"] + args["b"]))
    if name == "wait_for_cancel":
        try:
            await ctx.session.report_progress(1, 2, "started")
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            CANCELLED.append(str(ctx.request_id))
            raise
    if name == "cancellations":
        return text(str(len(CANCELLED)))
    if name == "add_tool":
        EXTRA_TOOLS.append(args["name"])
        await BUS.publish(ToolsListChanged())
        try:
            # Sessions opened with `initialize` hear of it on the session itself.
            await ctx.session.send_tool_list_changed()
        except Exception:
            pass
        return text(f"added {args['name']}")
    if name == "repos.list/all":
        return text("all the repositories")
    if name == "plan_trip":
        return text(f"{args['from']} -> {args['to']}")
    if name == "headers":
        request = ctx.request
        headers = {k.lower(): v for k, v in request.headers.items()} if request is not None else {}
        return text(json.dumps(headers))
    if name == "fail":
        return types.CallToolResult(content=[types.TextContent(text="this tool always fails")], is_error=True)
    if name == "greet":
        answer = (params.input_responses or {}).get("name")
        if answer is None:
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="What is your name?",
                    requested_schema={
                        "type": "object",
                        "properties": {"name": {"type": "string", "description": "Your name"}},
                        "required": ["name"],
                    },
                )
            )
            return types.InputRequiredResult(input_requests={"name": ask}, request_state="asked-name")
        if params.request_state != "asked-name":
            return types.CallToolResult(content=[types.TextContent(text="the request state was lost")], is_error=True)
        result = answer if isinstance(answer, dict) else answer.model_dump()
        if result.get("action") != "accept":
            return text("no name given")
        return text(f"Hello, {result['content']['name']}!")
    if name == "many_urls":
        visit = lambda n: types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message=f"Visit {n}", url="javascript:alert(1)", elicitation_id=f"visit-{n}"
            )
        )
        return types.InputRequiredResult(input_requests={f"visit-{n}": visit(n) for n in range(10_000)})
    if name == "dense":
        return types.CallToolResult(
            content=[types.TextContent(text="dense")], structured_content={"items": [{}] * ((1 << 20) + 1)}
        )
    if name in EXTRA_TOOLS:
        return text(f"{name} ran")
    return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {name}")], is_error=True)


server = Server(
    "toolbox",
    version="1.0.0",
    instructions="Test tools: arithmetic, cancellation, changing lists.",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(BUS),
)


async def main():
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import uvicorn

        app = server.streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        await uvicorn.Server(config).serve()
    else:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            options = server.create_initialization_options(NotificationOptions(tools_changed=True))
            await server.run(read, write, options)


anyio.run(main)
