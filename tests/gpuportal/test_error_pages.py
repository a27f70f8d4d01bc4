"""Branded error pages for every role (#14 P2): a way back, the portal's own look, nothing of
Django's debug pages or of the error's details."""
import pytest

ROLES = ["admin", "finance", "team_lead", "viewer"]


@pytest.mark.parametrize("role", ROLES)
def test_not_found(login, role):
    response = login(role).get("/no-such-page/")
    body = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Not found</h1>" in body and '<a href="/">Back to the overview</a>' in body
    assert 'class="menu-toggle"' in body and "Traceback" not in body and "URLconf" not in body


@pytest.mark.parametrize("role, url", [("viewer", "/chargeback/"), ("team_lead", "/teams/nlp/"),
                                       ("finance", "/admin-tools/ingest/"), ("team_lead", "/admin-tools/ingest/")])
def test_not_allowed(login, role, url):
    response = login(role).get(url)
    body = response.content.decode()
    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in body and '<a href="/">Back to the overview</a>' in body
    assert "Traceback" not in body


@pytest.mark.parametrize("role", ROLES + [None])
def test_server_error(client, seeded, settings, role):
    settings.ROOT_URLCONF = "tests.gpuportal.boom_urls"
    client.raise_request_exception = False
    if role:
        client.force_login(seeded["users"][role])
    response = client.get("/boom/")
    body = response.content.decode()
    assert response.status_code == 500
    assert "<h1>Something went wrong</h1>" in body and '<a href="/">Back to the overview</a>' in body
    assert "hunter2" not in body and "RuntimeError" not in body and "Traceback" not in body
    assert "/static/css/portal" in body
