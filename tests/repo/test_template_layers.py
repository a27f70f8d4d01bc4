"""The layers hold for templates too (pyproject.toml's layers contract; docs/architecture.md): a
template may load an app's tag library only if every app that renders it is at that app's layer
or above. import-linter cannot see a `{% load %}`: before this test templates/base.html loaded
`portal_nav` from apps/reports, so the token page of apps/teams, which extends it, depended on
reports through its template.

Who renders a template: the modules whose code names it (a view, an inclusion tag), and, through
`{% extends %}` and `{% include %}`, whoever renders a template that uses it. A template no code
names (the error pages Django renders itself) is the project's. The project's own libraries
(settings TEMPLATES OPTIONS "libraries", e.g. `portal_nav`: the nav links every app's pages) are
the page frame's and may be loaded anywhere; Django's and other packages' libraries are below
every app."""
import re
import tomllib
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
LOAD = re.compile(r"{%\s*load\s+(.+?)\s*%}")
USES = re.compile(r"""{%\s*(?:extends|include)\s+["']([^"']+)["']""")


def layer_of_module() -> dict[str, int]:
    """Top-level package -> its layer, 0 the top, from the project's layers contract (the one
    over the apps themselves; others layer the modules inside one app, in a `containers`)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers" and not c.get("containers")]
    return {name.strip(): depth for depth, layer in enumerate(contract["layers"])
            for name in re.split(r"[|:]", layer)}


LAYERS = layer_of_module()


def package_of(path: Path) -> str | None:
    """apps/reports/views/team.py -> apps.reports; gpuportal/navigation.py -> gpuportal."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    for n in (2, 1):
        name = ".".join(parts[:n])
        if name in LAYERS:
            return name
    return None


def libraries() -> dict[str, str]:
    """Tag library name -> the package defining it (apps' templatetags, the project's settings)."""
    libs = {path.stem: package_of(path) for path in ROOT.glob("apps/*/templatetags/*.py") if path.stem != "__init__"}
    for name, module in settings.TEMPLATES[0]["OPTIONS"].get("libraries", {}).items():
        libs[name] = "gpuportal" if module.startswith("gpuportal.") else package_of(ROOT / module.replace(".", "/"))
    return libs


def templates() -> dict[str, Path]:
    found = {str(p.relative_to(ROOT / "templates")): p for p in (ROOT / "templates").rglob("*.html")}
    for app_dir in ROOT.glob("apps/*/templates"):
        found.update({str(p.relative_to(app_dir)): p for p in app_dir.rglob("*.html")})
    return found


def renderers(names) -> dict[str, set[str]]:
    """Template name -> the packages that render it, directly or through extends/include."""
    by = {name: set() for name in names}
    for path in [*ROOT.glob("apps/**/*.py"), *ROOT.glob("gpuportal/**/*.py")]:
        if "migrations" in path.parts:
            continue
        text = path.read_text()
        for name in names:
            if f'"{name}"' in text or f"'{name}'" in text:
                by[name].add(package_of(path))
    uses = {name: set(USES.findall(path.read_text())) for name, path in templates().items()}
    changed = True
    while changed:       # a template's users render what it extends or includes
        changed = False
        for name, used in uses.items():
            for other in used & set(by):
                if not by[name] <= by[other]:
                    by[other] |= by[name]
                    changed = True
    return {name: who or {"gpuportal"} for name, who in by.items()}


def loads(path: Path) -> set[str]:
    return {lib for line in LOAD.findall(path.read_text()) for lib in line.split() if lib != "from"}


def test_no_template_loads_a_tag_library_of_a_higher_app():
    found, libs = templates(), libraries()
    who = renderers(set(found))
    wrong = []
    for name, path in sorted(found.items()):
        for lib in sorted(loads(path)):
            home = libs.get(lib)
            if home is None or home == "gpuportal":        # Django's or a package's; the page frame's
                continue
            for renderer in sorted(who[name]):
                if LAYERS[home] < LAYERS[renderer]:
                    wrong.append(f"{name} (rendered by {renderer}) loads {lib} of {home}")
    assert wrong == []


def test_the_check_sees_what_it_should():
    found, libs = templates(), libraries()
    who = renderers(set(found))
    assert libs["report_format"] == "apps.reports" and libs["rightsizing"] == "apps.recommendations"
    assert libs["portal_nav"] == "gpuportal"
    assert "portal_nav" in loads(found["base.html"])
    # base.html is rendered by every app whose pages extend it, the lowest included
    assert {"apps.teams", "apps.reports", "apps.recommendations", "apps.web"} <= who["base.html"]
    assert who["account/tokens.html"] == {"apps.teams"}
    assert who["reports/_chart.html"] == {"apps.reports"}
    assert LAYERS["apps.reports"] < LAYERS["apps.teams"] < LAYERS["apps.clusters"]
