"""The code map of docs/architecture.md ("Every module"), made from the tree: every module of
`apps/` and `gpuportal/` with the first sentence of its docstring (Django's conventional modules
say what they are by their name). `python scripts/code_map.py` rewrites the map in place;
`tests/repo/test_code_map.py` fails while the map and the tree differ, or a module has no docstring.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
START, END = "<!-- code-map:start -->", "<!-- code-map:end -->"
CONVENTIONS = {   # Django's and Celery's own places, the same in every app
    "admin.py": "the Django admin's pages for this app's models",
    "apps.py": "the app's configuration (`AppConfig`: what it connects when Django starts)",
    "urls.py": "the app's URL routes",
    "wsgi.py": "the WSGI entry point gunicorn serves",
    "celery.py": "the Celery application, configured from Django's settings",
}


def modules() -> list[Path]:
    found = []
    for top in ("apps", "gpuportal"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts or "__pycache__" in rel.parts:
                continue
            if path.name == "__init__.py" and not (path.parent / "__init__.py").read_text().strip():
                continue      # an empty package marker says nothing
            found.append(rel)
    return found


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?\.)(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence.rstrip(".").replace("|", "\\|")


def what(rel: Path) -> str | None:
    tree = ast.parse((ROOT / rel).read_text())
    doc = ast.get_docstring(tree)
    if doc:
        return first_sentence(doc)
    if rel.name in CONVENTIONS:
        return CONVENTIONS[rel.name]
    if "commands" in rel.parts:   # a management command says what it does in its `help`
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "help" for t in node.targets):
                if isinstance(node.value, ast.Constant):
                    return first_sentence(node.value.value)
    return None


def table() -> tuple[str, list[str]]:
    rows, missing = ["| module | what it holds |", "| --- | --- |"], []
    for rel in modules():
        said = what(rel)
        if said is None:
            missing.append(str(rel))
            said = "—"
        name = str(rel.parent) + "/" if rel.name == "__init__.py" else str(rel)
        rows.append(f"| `{name}` | {said} |")
    return "\n".join(rows), missing


def rendered(doc: str) -> str:
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()[0]}\n{END}{tail}"


if __name__ == "__main__":
    text = DOC.read_text()
    DOC.write_text(rendered(text))
    missing = table()[1]
    if missing:
        sys.exit("no docstring: " + ", ".join(missing))
