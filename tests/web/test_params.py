"""apps/web/params.py and pages.py: a refused query string is a 400 page naming each parameter."""
from django.test import RequestFactory

from apps.web.pages import bad_request
from apps.web.params import BadParameters, UnknownName
from tests.support.factories import make_user


def test_bad_parameters_keep_each_reason_by_name():
    exc = BadParameters({"start": "start=2026-13-01 is not a date", "page": "page=9 is past the last page (2)"})
    assert exc.detail["page"] == "page=9 is past the last page (2)"
    assert isinstance(exc, ValueError)


def test_an_unknown_name_is_a_404_for_django_and_drf():
    from django.http import Http404
    assert issubclass(UnknownName, Http404)


def test_the_400_page_names_the_parameter_and_its_reason(db):
    request = RequestFactory().get("/explore/", {"start": "2026-13-01"})
    request.user = make_user("u1")
    response = bad_request(request, {"start": "start=2026-13-01 is not a date"})
    body = response.content.decode()
    assert response.status_code == 400
    assert "start" in body and "start=2026-13-01 is not a date" in body
