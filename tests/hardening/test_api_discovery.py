"""A consumer can find the API by itself (docs/api.md, "Finding your way"): /api/v1/ lists every
endpoint, the OpenAPI document describes every one without a generator warning, and Swagger UI
and ReDoc answer signed-in users from our own static files, with nothing from outside."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from .urlwalk import routes

ROOT = Path(__file__).resolve().parents[2]
API = "api/v1/"
# Pages about the API, not operations of it: the document itself and its two readers.
META = {"api/v1/", "api/v1/schema/", "api/v1/docs/", "api/v1/redoc/"}
EXTERNAL = re.compile(r"(?:https?:)?//[\w-]+(?:\.[\w-]+)+")


def api_routes():
    return sorted(r for r in routes() if r.startswith(API))


def shape(route: str) -> str:
    """'/api/v1/rates/<int:pk>/' and '/api/v1/rates/{id}/' alike: parameters blanked."""
    return re.sub(r"<[^>]+>|\{[^}]+\}", "{}", "/" + route.lstrip("/"))


@pytest.mark.slow   # runs manage.py in a child process
def test_schema_generates_and_validates_with_no_warning(tmp_path):
    out = tmp_path / "schema.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn",
                             "--file", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Warning" not in result.stderr and "Error" not in result.stderr, result.stderr[-3000:]
    text = out.read_text()
    assert "tokenAuth:" in text and "name: Authorization" in text      # token auth is described


def test_every_api_url_is_in_the_schema(as_role, world):
    schema = as_role("admin").get("/api/v1/schema/?format=json").json()
    documented = {shape(p) for p in schema["paths"]}
    operations = [r for r in api_routes() if r not in META]
    assert len(operations) >= 9
    missing = [r for r in operations if shape(r) not in documented]
    assert not missing, f"not in the schema: {missing}"
    assert not documented - {shape(r) for r in operations}, "the schema names a path that is no route"


def test_query_parameters_are_described(as_role, world):
    paths = as_role("viewer").get("/api/v1/schema/?format=json").json()["paths"]
    params = {p["name"]: p for p in paths["/api/v1/usage/"]["get"]["parameters"]}
    assert {"start", "end", "group_by", "cluster", "format"} <= set(params)
    assert params["group_by"]["schema"]["enum"] == ["cluster", "gpu_model", "namespace", "team"]
    assert params["group_by"]["schema"]["default"] == "namespace" and not params["group_by"].get("required")
    chargeback = {p["name"]: p for p in paths["/api/v1/chargeback/"]["get"]["parameters"]}
    assert chargeback["group_by"]["schema"]["default"] == "team"
    assert chargeback["period"]["description"].startswith("YYYY-MM")
    rates = {p["name"] for p in paths["/api/v1/rates/"]["get"]["parameters"]}
    assert {"gpu_model", "price_class", "currency"} <= rates


@pytest.mark.parametrize("url", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_docs_pages_load_nothing_from_outside(as_role, world, url):
    response = as_role("viewer").get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert not EXTERNAL.findall(html), EXTERNAL.findall(html)
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, "the page loads its UI from somewhere"
    for asset in assets:
        if asset in ("/", "/account/tokens/", "/api/v1/redoc/"):    # the bar that leads back to the portal
            continue
        if asset == f"{url}?script=":        # Swagger UI's start-up script, served apart (no inline script)
            script = as_role("viewer").get(asset)
            assert script.status_code == 200 and "/api/v1/schema/" in script.content.decode()
            continue
        if asset == "/api-docs-assets/redoc.standalone.js":
            # ReDoc's bundle, its footer logo pointed at our favicon instead of cdn.redoc.ly (#26:
            # blocked by the CSP, and the portal works offline)
            bundle = as_role("viewer").get(asset).content.decode()
            assert "Redoc" in bundle and "cdn.redoc.ly" not in bundle and "/static/favicon.svg" in bundle
            continue
        assert asset.startswith("/static/drf_spectacular_sidecar/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not a static file we serve"
    assert "/api/v1/schema/" in html or "?script=" in html


@pytest.mark.parametrize("url", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_docs_pages_send_a_browser_without_session_to_sign_in(db, url):
    response = Client().get(url)
    assert response.status_code == 302 and response["Location"] == f"/accounts/login/?next={url}"
    assert Client().get(url, HTTP_AUTHORIZATION="Token nosuchkey").status_code == 401


def test_the_menu_links_the_docs_for_every_signed_in_role(as_role, world):
    for role in ("viewer", "team_lead", "finance", "admin"):
        assert 'href="/api/v1/docs/"' in as_role(role).get("/").content.decode(), role


def test_api_root_lists_every_endpoint_and_each_answers_a_token(db, world):
    client = Client(HTTP_AUTHORIZATION=f"Token {world.tokens['admin']}")
    response = client.get("/api/v1/")
    assert response.status_code == 200
    listing = response.json()
    assert all(url.startswith("http://testserver/api/v1/") for url in listing.values()), listing
    listed = {url.removeprefix("http://testserver") for url in listing.values()}
    expected = {"/" + r for r in api_routes() if "<" not in r and r != API}
    assert listed == expected
    assert listing["usage"] == "http://testserver/api/v1/usage/"
    assert listing["docs"] == "http://testserver/api/v1/docs/"
    for name, url in listing.items():
        status = client.get(url).status_code
        # chargeback/close/ and reopen/ are POST only: 405 says the URL is right
        assert status == (405 if name in ("chargeback-close", "chargeback-reopen") else 200), f"{url}: {status}"

