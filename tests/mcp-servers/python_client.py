"""The Python `mcp` SDK's client against a server of ours: `python_client.py stdio COMMAND` or
`python_client.py http URL`. Lists the tools, calls several (with a progress callback and an
elicitation callback that answers for the user), and prints what it saw as one JSON object.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters


async def main():
    kind, target = sys.argv[1], sys.argv[2]
    server = StdioServerParameters(command=target) if kind == "stdio" else target
    progress = []
    asked = []

    async def on_progress(value, total, message):
        progress.append([value, total, message])

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Py"})

    async with Client(server, elicitation_callback=on_elicit) as client:
        listed = await client.list_tools()
        add = await client.call_tool("add", {"a": 40, "b": 2})
        forecast = await client.call_tool("forecast", {"city": "Lima"})
        imported = await client.call_tool("import", {"rows": 2}, progress_callback=on_progress)
        signup = await client.call_tool("signup", {})
        broken = await client.call_tool("broken", {})

        def texts(result):
            return [block.text for block in result.content if block.type == "text"]

        print(json.dumps({
            "tools": sorted(tool.name for tool in listed.tools),
            "add": texts(add),
            "forecast_structured": forecast.structured_content,
            "import": texts(imported),
            "progress": progress,
            "signup": texts(signup),
            "asked": asked,
            "broken": {"is_error": broken.is_error, "text": texts(broken)},
        }))


anyio.run(main)
