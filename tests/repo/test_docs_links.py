"""Every relative link in the README and docs/ points at a file that exists (and, for a
`#fragment` into a Markdown file, at one of its headings): docs moved between files must not
leave dead links behind."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")
IMG_SRC = re.compile(r'<img [^>]*src="([^"]+)"')
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    dead = []
    for target in LINK.findall(doc.read_text()) + IMG_SRC.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path_part, _, fragment = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            dead.append(target)
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            dead.append(target)
    assert not dead, f"{doc.name}: dead links {dead}"


def test_the_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 160


def test_every_screenshot_in_docs_is_shown_somewhere():
    """A PNG under docs/ that no page shows is a stale one nobody refreshes."""
    shown = set()
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()) + IMG_SRC.findall(doc.read_text()):
            shown.add((doc.parent / target.partition("#")[0]).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.png")) if p.resolve() not in shown]
    assert not orphans, f"not shown by any page: {orphans}"
