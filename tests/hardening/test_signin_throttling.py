"""Guessing passwords is throttled per user name and per address (django-axes), admins see and
clear the lockouts, and passwords follow Django's full validators with a 12-character minimum."""
import pytest
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client

LOGIN = "/accounts/login/"


@pytest.fixture
def people(db):
    return {name: User.objects.create_user(name, password=f"{name}-correct-horse") for name in ("alice", "bob")}


def attempt(user, password, address):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": user, "password": password})


def test_five_failures_lock_the_user_name_and_the_address(people, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        assert attempt("alice", "guess", "10.0.0.1").status_code == 200     # the form again, with an error
    assert attempt("alice", "guess", "10.0.0.1").status_code == 429         # the fifth failure locks
    locked = attempt("alice", "alice-correct-horse", "10.0.0.1")
    assert locked.status_code == 429 and b"Sign-in locked for now" in locked.content
    # the user name is locked from any address, and the address for any user name
    assert attempt("alice", "alice-correct-horse", "10.0.0.2").status_code == 429
    assert attempt("bob", "bob-correct-horse", "10.0.0.1").status_code == 429
    # someone else, elsewhere, signs in as usual
    assert attempt("bob", "bob-correct-horse", "10.0.0.3").status_code == 302


def test_a_success_clears_the_count(people):
    for _ in range(4):
        attempt("alice", "guess", "10.0.0.1")
    assert attempt("alice", "alice-correct-horse", "10.0.0.1").status_code == 302
    for _ in range(4):
        assert attempt("alice", "guess", "10.0.0.1").status_code == 200
    assert attempt("alice", "alice-correct-horse", "10.0.0.1").status_code == 302


def test_a_forwarded_for_header_is_ignored_without_a_trusted_proxy(people):
    """Without TRUSTED_PROXY_COUNT the client cannot pick its own address to dodge the lock."""
    for i in range(5):
        Client(REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").post(
            LOGIN, {"username": f"nobody{i}", "password": "guess"})
    assert attempt("bob", "bob-correct-horse", "10.0.0.9").status_code == 429


def test_admins_see_and_clear_lockouts(people, client):
    for _ in range(5):
        attempt("alice", "guess", "10.0.0.1")
    client.force_login(User.objects.create_superuser("root", password="root-correct-horse"))
    page = client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and b"alice" in page.content
    from axes.models import AccessAttempt
    AccessAttempt.objects.all().delete()         # what the admin's delete action does
    assert attempt("alice", "alice-correct-horse", "10.0.0.1").status_code == 302


@pytest.mark.parametrize("password, reason", [
    ("short-1x", "too short"),
    ("123456789012", "entirely numeric"),
    ("password1234", "too common"),
])
def test_weak_passwords_are_refused(db, password, reason):
    with pytest.raises(ValidationError, match=reason):
        validate_password(password, User(username="carol"))


def test_a_long_unusual_password_is_accepted(db):
    validate_password("amber-tractor-91-lantern", User(username="carol"))
