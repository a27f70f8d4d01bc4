"""docs/configuration.md lists every environment variable the portal reads (docs/conventions.md,
"Settings are read once"): a deployer must not have to read the settings to learn a knob exists.

The names are found in the code itself (every part of gpuportal/settings/ and the
gunicorn config, through envtyped's helpers, django-environ's `env.*` or `os.environ`), so a
setting added without its line in the docs fails here."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "gpuportal" / "settings").glob("*.py")) + [ROOT / "gpuportal" / "gunicorn.conf.py"]
READERS = {"env_int", "env_float", "_env_int", "_env_float", "getenv"}
ENV_METHODS = {"str", "bool", "int", "float", "list", "tuple", "dict", "json", "url", "db", "db_url", "cache",
               "cache_url", "email", "email_url", "path", "get_value", "get"}


def _is_reader(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in READERS
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "env" and func.attr in ENV_METHODS:
            return True                                                    # env.str("X")
        if func.attr in ("get", "getenv") and isinstance(owner, (ast.Attribute, ast.Name)):
            return getattr(owner, "attr", getattr(owner, "id", "")) in ("environ", "ENVIRON", "os")
    return False


def variables_read(source: str) -> set[str]:
    """Every environment variable name a settings module reads. A name given through a loop
    variable (`for name in OIDC_ENV: env.str(name)`) is resolved to the tuple it runs over."""
    tree = ast.parse(source)
    tuples = {t.id: [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
              for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List))
              for t in node.targets if isinstance(t, ast.Name)}
    loops = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, ast.Name):
            loops[node.target.id] = tuples.get(node.iter.id, [])
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _is_reader(node.func):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
            elif isinstance(arg, ast.Name):
                names.update(loops.get(arg.id, []))
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr in ("environ", "ENVIRON") and isinstance(node.slice, ast.Constant):
            names.add(node.slice.value)                                    # os.environ["X"]
    return names


def documented() -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))


def test_every_variable_the_settings_read_is_in_configuration_md():
    read = set().union(*(variables_read(p.read_text()) for p in SOURCES))
    missing = sorted(read - documented())
    assert not missing, f"read by the settings but not in docs/configuration.md: {', '.join(missing)}"


def test_the_parser_finds_each_way_of_reading_a_variable():
    source = '''
import os
from .envtyped import env, env_int as _env_int
NAMES = ("A_ONE", "A_TWO")
DEBUG = env.bool("X_BOOL", default=True)
CHUNK = _env_int("X_INT", 2)
BIND = os.environ.get("X_OS", "0.0.0.0:8000")
KEY = os.environ["X_ITEM"]
HERE = "X_IN" in env.ENVIRON
for name in NAMES:
    globals()[name] = env.str(name)
NOT_READ = "X_CONSTANT"
'''
    assert variables_read(source) == {"X_BOOL", "X_INT", "X_OS", "X_ITEM", "A_ONE", "A_TWO"}
    # and on the real settings, a few of each kind
    read = set().union(*(variables_read(p.read_text()) for p in SOURCES))
    assert {"DATABASE_URL", "ADVICE_WINDOW_DAYS", "OIDC_RP_CLIENT_ID", "WEB_CONCURRENCY"} <= read
