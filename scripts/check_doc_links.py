"""Check the relative links of the Markdown documents: every target file exists, and every
``#anchor`` names a heading of its target (GitHub's slug rule). Prints each broken link and exits
1 if there is one.

    python3 scripts/check_doc_links.py [FILE.md ...]   # default: README.md, ARCHITECTURE.md, benchmarks/README.md
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["README.md", "ARCHITECTURE.md", "benchmarks/README.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # GitHub drops punctuation but keeps _ and -
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def main() -> int:
    files = sys.argv[1:] or DEFAULT
    bad = 0
    for name in files:
        doc = ROOT / name
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)  # links in code blocks are not links
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            if not dest.exists():
                print(f"{name}: {target}: no such file")
                bad += 1
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                print(f"{name}: {target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
                bad += 1
    print(f"{len(files)} documents checked, {bad} broken links")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
