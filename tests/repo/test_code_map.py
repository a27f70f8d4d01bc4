"""The code map in docs/architecture.md ("Every module") is the tree's: a module added, moved or
renamed without `python scripts/code_map.py` fails here, and so does a module with no docstring."""
from scripts import code_map


def test_the_code_map_names_every_module_as_the_tree_has_it():
    doc = code_map.DOC.read_text()
    assert doc == code_map.rendered(doc), "docs/architecture.md's code map is stale: run python scripts/code_map.py"


def test_every_module_says_what_it_holds():
    assert code_map.table()[1] == []


def test_an_unnamed_module_is_caught(tmp_path, monkeypatch):
    """On a tree of its own: a new module changes the map, one with no docstring is named."""
    (tmp_path / "apps" / "web").mkdir(parents=True)
    (tmp_path / "gpuportal").mkdir()
    (tmp_path / "apps" / "web" / "said.py").write_text('"""Says what it holds. More words."""\n')
    (tmp_path / "apps" / "web" / "admin.py").write_text("")
    (tmp_path / "apps" / "web" / "silent.py").write_text("x = 1\n")
    monkeypatch.setattr(code_map, "ROOT", tmp_path)
    rows, missing = code_map.table()
    assert "| `apps/web/said.py` | Says what it holds |" in rows
    assert "| `apps/web/admin.py` | the Django admin's pages for this app's models |" in rows
    assert missing == ["apps/web/silent.py"]
    doc = f"before\n{code_map.START}\n| old |\n{code_map.END}\nafter\n"
    assert code_map.rendered(doc) == f"before\n{code_map.START}\n{rows}\n{code_map.END}\nafter\n"
