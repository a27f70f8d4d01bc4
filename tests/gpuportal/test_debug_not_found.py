"""The demo (DEBUG on) answered a missing page with Django's technical 404, listing every URL
pattern of the portal (#43 P3); now the portal's own page, with the reason a view gave."""
import pytest

from tests.support.factories import make_user

pytestmark = pytest.mark.django_db


def test_under_debug_a_missing_page_is_the_portals_not_found(client, settings):
    settings.DEBUG = True
    client.force_login(make_user("viewer", "viewer"))
    response = client.get("/no-such-page/")
    body = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing at this address" in body and "URLconf" not in body and "admin/" not in body
    # a view's reason is kept
    named = client.get("/explore/", {"cluster": "nope"})
    assert named.status_code == 404 and "no cluster named" in named.content.decode().replace("&#x27;", "'")
    # the API keeps its JSON
    api = client.get("/api/v1/nothing-here/")
    assert api.status_code == 404 and api.json()["detail"].startswith("no API endpoint")
