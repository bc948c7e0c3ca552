#!/usr/bin/env bash
# Builds the guide (guide/, an mdBook) into target/guide/ and checks its links: every link
# between chapters reaches a page and, with a #fragment, a heading of that page; the README's
# and ARCHITECTURE.md's links into the repository and the guide too. No internet links are
# followed. Installs the pinned mdBook into target/tools/ when it is missing: the release binary
# from GitHub when its checksum is pinned below, else `cargo install --locked`.
#
#   scripts/check-guide.sh
#
# The guide's Rust code is compiled and run elsewhere: `cargo test -p llm-tools-tests --doc`.
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
# sha256 of mdbook-v$MDBOOK_VERSION-x86_64-unknown-linux-gnu.tar.gz from the GitHub release.
# Empty: not pinned yet (set it, or the MDBOOK_SHA256 variable, to use the download).
MDBOOK_SHA256="${MDBOOK_SHA256:-}"
TOOLS="target/tools/mdbook-$MDBOOK_VERSION"

find_mdbook() {
    if command -v mdbook >/dev/null 2>&1 && [[ "$(mdbook --version)" == "mdbook v$MDBOOK_VERSION" ]]; then
        command -v mdbook
    elif [[ -x "$TOOLS/bin/mdbook" ]]; then
        echo "$TOOLS/bin/mdbook"
    fi
}

download_mdbook() {
    [[ -n "$MDBOOK_SHA256" ]] || { echo "no pinned sha256 for the mdBook release binary: building it instead"; return 1; }
    [[ "$(uname -sm)" == "Linux x86_64" ]] || return 1
    local url="https://github.com/rust-lang/mdBook/releases/download/v$MDBOOK_VERSION/mdbook-v$MDBOOK_VERSION-x86_64-unknown-linux-gnu.tar.gz"
    local tmp
    tmp="$(mktemp -d)"
    if curl -fsSL --max-time 120 -o "$tmp/mdbook.tar.gz" "$url" &&
        echo "$MDBOOK_SHA256  $tmp/mdbook.tar.gz" | sha256sum --check --quiet &&
        tar -xzf "$tmp/mdbook.tar.gz" -C "$tmp"; then
        mkdir -p "$TOOLS/bin"
        mv "$tmp/mdbook" "$TOOLS/bin/mdbook"
        rm -rf "$tmp"
    else
        echo "downloading mdBook $MDBOOK_VERSION failed: building it instead"
        rm -rf "$tmp"
        return 1
    fi
}

MDBOOK="$(find_mdbook)"
if [[ -z "$MDBOOK" ]]; then
    echo "installing mdBook $MDBOOK_VERSION into $TOOLS"
    download_mdbook ||
        cargo install --locked mdbook --version "$MDBOOK_VERSION" \
            --no-default-features --features search --root "$TOOLS"
    MDBOOK="$TOOLS/bin/mdbook"
fi

# mdBook reports a missing include or anchor as a warning: any warning fails the check.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$MDBOOK" build guide 2>&1 | tee "$log"
if grep -E ' (WARN|ERROR) ' "$log" >/dev/null; then
    echo "mdbook build warned: fix the guide" >&2
    exit 1
fi

python3 - target/guide <<'PY'
"""Checks the built guide's links, the guide's sources, and the links of the root documents."""
import html.parser, pathlib, re, sys, urllib.parse

book = pathlib.Path(sys.argv[1])
src = pathlib.Path("guide/src")
errors = []

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])

pages = {}
for path in sorted(book.rglob("*.html")):
    page = Page()
    text = path.read_text(encoding="utf-8")
    page.feed(text)
    pages[path.resolve()] = page
    if "{{#" in text:
        errors.append(f"{path}: an mdBook directive left unexpanded")

def ids_of(path):
    page = pages.get(path.resolve())
    return page.ids if page else set()

# Links between the pages of the built book (print.html repeats every chapter: its links are
# rewritten by mdBook and checked through the chapters themselves).
for path, page in pages.items():
    if path.name in ("print.html", "toc.html", "404.html"):
        continue
    for link in page.links:
        parts = urllib.parse.urlsplit(link)
        if parts.scheme or link.startswith("//"):
            continue
        target = (path.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else path
        if not target.exists():
            errors.append(f"{path.relative_to(book.resolve())}: {link}: no such page")
        elif parts.fragment and target.suffix == ".html" and parts.fragment not in ids_of(target):
            errors.append(f"{path.relative_to(book.resolve())}: {link}: no such heading")

# The sources: every chapter in SUMMARY.md and compiled by the doctests, fences closed.
summary = (src / "SUMMARY.md").read_text(encoding="utf-8")
lib = pathlib.Path("tests/src/lib.rs").read_text(encoding="utf-8")
for chapter in sorted(src.glob("*.md")):
    if chapter.name == "SUMMARY.md":
        continue
    if f"({chapter.name})" not in summary:
        errors.append(f"{chapter}: not in SUMMARY.md")
    if f'"../../guide/src/{chapter.name}"' not in lib:
        errors.append(f"{chapter}: its code is not compiled (no include_str! in tests/src/lib.rs)")

# mdBook includes an anchor it does not find as nothing, silently: check each one.
include_re = re.compile(r"\{\{#include ([^}:\s]+)(?::(\w[\w-]*))?\}\}")
for chapter in sorted(src.glob("*.md")):
    for path, anchor in include_re.findall(chapter.read_text(encoding="utf-8")):
        included = chapter.parent / path
        if not included.exists():
            errors.append(f"{chapter}: includes {path}: no such file")
        elif anchor and not re.search(rf"ANCHOR:\s*{re.escape(anchor)}\b", included.read_text(encoding="utf-8")):
            errors.append(f"{chapter}: includes {path}:{anchor}: no such anchor")

def slug(heading):
    # GitHub's anchors: lower case, punctuation dropped, spaces as hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

def headings(path):
    out, fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out

link_re = re.compile(r"\]\(([^)\s]+)\)")
for doc in [pathlib.Path("README.md"), pathlib.Path("ARCHITECTURE.md"), *sorted(src.glob("*.md"))]:
    if not doc.exists():
        continue
    text = doc.read_text(encoding="utf-8")
    fences = [l for l in text.splitlines() if l.lstrip().startswith("```")]
    if len(fences) % 2:
        errors.append(f"{doc}: a code fence is not closed")
    if doc.parent == src:
        continue  # the chapters' links are checked in the built book
    for link in link_re.findall(text):
        parts = urllib.parse.urlsplit(link)
        if parts.scheme:
            continue
        target = (doc.parent / parts.path) if parts.path else doc
        if not target.exists():
            errors.append(f"{doc}: {link}: no such file")
            continue
        if not parts.fragment:
            continue
        if target.resolve().parent == src.resolve():
            known = ids_of(book / target.with_suffix(".html").name)
        else:
            known = headings(target)
        if parts.fragment not in known:
            errors.append(f"{doc}: {link}: no such heading")

checked = sum(len(p.links) for p in pages.values())
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(f"check-guide: {len(errors)} broken link(s) or source problem(s)")
print(f"check-guide: {len(pages)} pages, {checked} links and references checked, none broken")
PY
