"""Stored answers carry a code version derived from what shapes them, never bumped by hand
(docs/performance.md, "Stored month answers")."""
from apps.accounting.stored.versions import CODE_VERSION, code_version


def tree(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_any_change_to_code_or_templates_changes_the_version(tmp_path):
    tree(tmp_path, {"apps/accounting/core/calc.py": "RATE = 1\n", "templates/x.html": "<p>{{ a }}</p>\n",
                    "docs/notes.md": "hello\n", "apps/accounting/migrations/0001_x.py": "ops = []\n"})
    first = code_version(tmp_path)
    assert code_version(tmp_path) == first                       # stable
    (tmp_path / "docs/notes.md").write_text("changed\n")        # docs shape no answer
    (tmp_path / "apps/accounting/migrations/0001_x.py").write_text("ops = [1]\n")
    assert code_version(tmp_path) == first
    (tmp_path / "apps/accounting/core/calc.py").write_text("RATE = 2\n")
    second = code_version(tmp_path)
    assert second != first
    (tmp_path / "templates/x.html").write_text("<p>{{ b }}</p>\n")
    assert code_version(tmp_path) not in (first, second)


def test_the_running_version_is_this_checkouts():
    assert CODE_VERSION == code_version() and CODE_VERSION.startswith("code-")
