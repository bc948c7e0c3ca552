#!/usr/bin/env python3
"""Seeds the fuzz corpora from the recorded traffic in tests/fixtures/recorded: every recorded
answer body becomes a seed of the `protocols` target (for the protocol that recorded it) and of
the `framing` target (in the framing it was sent in), with a selector byte in front (see the
targets); every tool and output schema the recorded requests sent becomes a seed of the `schema`
target (as JSON text, under the default budget and a small one), beside schemas that multiply
when their `$ref`s are followed and a few inputs for its generator; the retry headers get a few
typical values, and the tool arguments a few good and bad calls."""

import base64
import glob
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "..", "tests", "fixtures", "recorded")
PROTOCOLS = {
    "openai-responses": 0,
    "openai-chat": 1,
    "anthropic-messages": 2,
    "gemini": 3,
    "gemini-vertex": 3,
    "bedrock-converse": 4,
    "bedrock-converse-errors": 4,
    "cohere-v2": 5,
    "cohere-v2-errors": 5,
}


def write(target, data):
    folder = os.path.join(ROOT, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# Where a request body holds a schema (each protocol's name for it).
SCHEMA_KEYS = {"parameters", "input_schema", "parametersJsonSchema", "json", "schema",
               "responseJsonSchema", "responseSchema"}


def schemas_in(value, key=None, found=None):
    """Every object schema in a request body, under the keys protocols send schemas in."""
    found = [] if found is None else found
    if isinstance(value, dict):
        if key in SCHEMA_KEYS and value.get("type") in ("object", "OBJECT"):
            found.append(value)
        for k, child in value.items():
            schemas_in(child, k, found)
    elif isinstance(value, list):
        for child in value:
            schemas_in(child, key, found)
    return found


def multiplying(fan_out, levels, refers_back=False):
    """Definitions that name the one before (or themselves) `fan_out` times, a description
    beside each `$ref`."""
    defs = {"D0": {"type": "string"}}
    for level in range(1, levels + 1):
        target = f"#/$defs/D{level}" if refers_back else f"#/$defs/D{level - 1}"
        defs[f"D{level}"] = {"type": "object", "properties": {
            f"p{i}": {"$ref": target, "description": "again"} for i in range(fan_out)}}
    return {"type": "object", "properties": {"x": {"$ref": f"#/$defs/D{levels}", "description": "x"}},
            "$defs": defs}


def seed_schemas():
    """The `schema` target: a mode byte (bit 0: JSON text; bit 1: a small budget from the
    next three bytes), then the schema or the generator's bytes."""
    texts = set()
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*", "*.json"))):
        with open(path) as f:
            recording = json.load(f)
        for interaction in recording.get("interactions", []):
            body = interaction.get("request", {}).get("body")
            if isinstance(body, str):
                try:
                    body = json.loads(body)
                except ValueError:
                    continue
            for schema in schemas_in(body):
                texts.add(json.dumps(schema, sort_keys=True))
    for fan_out in (2, 3, 5, 8):
        texts.add(json.dumps(multiplying(fan_out, 12)))
        texts.add(json.dumps(multiplying(fan_out, 1, refers_back=True)))
    for text in sorted(texts):
        write("schema", bytes([1]) + text.encode())
        write("schema", bytes([3, 4, 16, 6]) + text.encode())
    for generated in [bytes([0, 3, 1]) + bytes(range(64)), bytes([0, 6, 1]) + bytes([2, 4, 5, 1, 2]) * 20,
                      bytes([2, 30, 40, 20, 5, 1]) + bytes([9, 2, 4, 1, 7]) * 16]:
        write("schema", generated)
    return len(texts)


def main():
    count = 0
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*", "*.json"))):
        folder = os.path.basename(os.path.dirname(path))
        protocol = PROTOCOLS.get(folder)
        if protocol is None:
            continue
        with open(path) as f:
            recording = json.load(f)
        for interaction in recording.get("interactions", []):
            response = interaction.get("response", {})
            if response.get("body_base64"):
                body = base64.b64decode(response["body_base64"])
                framing = 2
            else:
                body = response.get("body", "").encode()
                framing = 1 if body.lstrip().startswith(b"{") and b"\n{" in body else 0
            if not body:
                continue
            # Selector: the high nibble is how many chunk-size bytes follow, the low one the
            # protocol (or, for `framing`, the framing modulo 3).
            sizes = bytes([3, 17, 1, 40])
            write("protocols", bytes([(4 << 4) | protocol]) + sizes + body)
            write("framing", bytes([(4 << 4) | framing]) + sizes + body)
            count += 1
    for value in [b"2", b"0.5", b"120", b"Wed, 21 Oct 2015 07:28:00 GMT", b"1e300", b"-1"]:
        write("retry_after", value)
    place = {"lat": 52.52, "lon": 13.4, "aliases": ["Berlin"]}
    for args in [
        {"query": "cafe", "radius": 1.5, "limit": 3, "place": place, "range": "here", "tags": []},
        {"query": "bar", "radius": 2, "limit": 3.0, "offset": -4, "place": place,
         "range": {"within": {"km": 5}}, "tags": ["quiet", "open"]},
        {"query": "x", "radius": "far", "limit": 300, "place": {}, "range": "everywhere", "tags": [1]},
    ]:
        write("tool_args", json.dumps(args).encode())
    for raw in [b"", b"null", b"[]", b'{"query":', b'{"query":"a","query":"b"}']:
        write("tool_args", raw)
    schemas = seed_schemas()
    print(f"seeded {count} recorded answers and {schemas} schemas", file=sys.stderr)


if __name__ == "__main__":
    main()
