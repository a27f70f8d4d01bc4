"""Every document the code and the docs cite is in the repo (docs/conventions.md, "Names and
modules"): a reader must be able to follow a citation. A comment that points at a style guide,
a spec or a shared folder kept somewhere else, at a file that moved, or at a section of a docs
page that was renamed, is a dead end for the next maintainer."""
import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("apps", "gpuportal", "tests", "docs", "scripts", "templates", "deploy", ".ci")
TOP = ("README.md", "Makefile", "pyproject.toml", "Dockerfile", "docker-compose.yml")
SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".yml", ".yaml", ".cfg", ".sh", ".json", ""}

# Documents that live outside the repo, however they are spelled: "STYLE §3", "SPEC 4.2",
# "../shared/samples/x.txt", "/work/shared/...".
OUTSIDE = re.compile(r"\b(?:SPEC|STYLE)\b|(?<![\w-])(?:\.\./)*(?:/[\w.-]+)*/?shared/[\w./-]+")
# A file of the repo named by its path: "apps/accounting/usage/cells.py", "docs/figures.md".
REPO_PATH = re.compile(r"(?<![\w/.-])((?:apps|tests|gpuportal|scripts|docs|deploy|templates)/[\w/.-]*"
                       r"\.(?:py|md|html|ya?ml|toml|txt|json|sh))\b")
# A section of a docs page: docs/figures.md, "Closing a month".
SECTION = re.compile(r'(docs/[\w-]+\.md)[,;:]?\s+"([^"\n]+)"')


def prose(source: str) -> str:
    """What a Python file says to its reader: its comments and docstrings (string literals in
    the code are data, e.g. a test's made-up path, not citations)."""
    parts = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(ast.get_docstring(node, clean=False) or "")
    return "\n".join(parts)


def texts():
    paths = [ROOT / name for name in TOP if (ROOT / name).exists()]
    for folder in FOLDERS:
        paths += [p for p in (ROOT / folder).rglob("*")
                  if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    for path in sorted(paths):
        if path != Path(__file__).resolve():
            text = path.read_text(errors="replace")
            yield path, prose(text) if path.suffix == ".py" else text


def lead_words(doc: Path) -> list[str]:
    """A page's headings and the bold words that open its paragraphs, as one cites them."""
    heads = []
    for line in doc.read_text().splitlines():
        if line.startswith("#"):
            heads.append(line.lstrip("#").strip())
        elif line.startswith("**") or line.startswith("- **"):
            heads.append(line.split("**")[1])
    return [h.replace("`", "").rstrip(".").lower() for h in heads]


def dead_citations(path: Path, text: str) -> list[str]:
    where = path.relative_to(ROOT)
    dead = [f"{where}: {m.group(0)!r} is not in the repo" for m in OUTSIDE.finditer(text)]
    for m in REPO_PATH.finditer(text):
        if not (ROOT / m.group(1)).exists():
            dead.append(f"{where}: {m.group(1)} does not exist")
    for m in SECTION.finditer(text):
        doc, section = ROOT / m.group(1), m.group(2).replace("`", "").rstrip(".").lower()
        if doc.exists() and not any(head.startswith(section) for head in lead_words(doc)):
            dead.append(f"{where}: {m.group(1)} has no section {m.group(2)!r}")
    return dead


def test_every_citation_points_into_the_repo():
    dead = [line for path, text in texts() for line in dead_citations(path, text)]
    assert not dead, "\n".join(dead)


def test_the_check_finds_each_kind_of_dead_citation():
    path = ROOT / "apps" / "example.py"
    text = '''"""Atomic and audited (STYLE §3), as SPEC 4.2 says; labels as in ../shared/samples/x.txt
    and /work/shared/samples/y.txt; see docs/nowhere.md and apps/accounting/gone.py, and
    docs/figures.md, "A section that is not there"."""'''
    dead = "\n".join(dead_citations(path, text))
    for needle in ("'STYLE'", "'SPEC'", "../shared/samples/x.txt", "/work/shared/samples/y.txt",
                   "docs/nowhere.md does not exist", "apps/accounting/gone.py does not exist",
                   "no section 'A section that is not there'"):
        assert needle in dead, dead
    # in Python, only comments and docstrings cite; a string in the code is data
    code = 'PATH = "docs/made-up.md"  # as in docs/gone.md\n'
    assert dead_citations(path, prose(code)) == ["apps/example.py: docs/gone.md does not exist"]
    fine = 'See docs/figures.md, "Efficiency", docs/security.md, "API tokens", apps/accounting/core/lines.py.'
    assert dead_citations(path, fine) == []
