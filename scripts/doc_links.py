#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves: its file exists, and its
#anchor names a heading of the page it points to, as GitHub makes anchors of headings. Prints each
broken link as FILE:LINE: LINK: why, and exits 1 when there is one.

Usage: scripts/doc_links.py [FILE.md ...] (default: README.md and docs/*.md, from the repository root)
"""

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# [text](target) or [text](target "title"), not an image's ![alt](src) only by the leading "!",
# which is checked the same way.
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def prose_lines(text: str):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = None
    for number, line in enumerate(text.splitlines(), start=1):
        fence = FENCE.match(line)
        if fence:
            if fenced is None:
                fenced = fence.group(1)
            elif fence.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield number, line


def heading_text(markdown: str) -> str:
    """A heading's text as GitHub renders it: code spans and links reduced to their text."""
    text = INLINE_CODE.sub(lambda m: m.group(2), markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"(\*\*|__|\*)", "", text)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings (lower case, punctuation but '-' and '_'
    dropped, spaces made '-', and a repeated one numbered -1, -2, ...), and those of its
    <a id="..."> tags."""
    seen: dict[str, int] = {}
    result = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        result.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading_text(heading.group(2)).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def broken_links(page: Path):
    """Each broken relative link of the page: (line number, link, why)."""
    cache: dict[Path, set[str]] = {}
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in LINK.finditer(INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)):
            link = match.group(1)
            if SCHEME.match(link):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.exists():
                yield number, link, f"no file {target.relative_to(REPO) if target.is_relative_to(REPO) else target}"
                continue
            if anchor and target.suffix == ".md":
                if target not in cache:
                    cache[target] = anchors(target)
                if anchor not in cache[target]:
                    yield number, link, f"no heading of {target.name} has the anchor #{anchor}"


def main(argv: list[str]) -> int:
    pages = [Path(a).resolve() for a in argv] or [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = 0
    for page in pages:
        for number, link, why in broken_links(page):
            print(f"{page.relative_to(REPO)}:{number}: {link}: {why}")
            broken += 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
