#!/usr/bin/env python3
"""Seeds the fuzz corpora from the recorded traffic in tests/fixtures/recorded: every recorded
answer body becomes a seed of the `protocols` target (for the protocol that recorded it) and of
the `framing` target (in the framing it was sent in), with a selector byte in front (see the
targets); the retry headers get a few typical values, and the tool arguments a few good and
bad calls."""

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
    print(f"seeded {count} recorded answers", file=sys.stderr)


if __name__ == "__main__":
    main()
