"""Guessing passwords is throttled per user name and address, and per address (django-axes), admins see and
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


def test_five_failures_lock_the_user_name_at_that_address(people, settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(4):
        assert attempt("alice", "guess", "10.0.0.1").status_code == 200     # the form again, with an error
    assert attempt("alice", "guess", "10.0.0.1").status_code == 429         # the fifth failure locks
    locked = attempt("alice", "alice-correct-horse", "10.0.0.1")
    assert locked.status_code == 429 and b"Sign-in locked for now" in locked.content
    # alice at her own address is not locked out by someone else's guesses elsewhere
    assert attempt("alice", "alice-correct-horse", "10.0.0.2").status_code == 302
    # the guessing address may still sign in as another name, up to the per-address limit
    assert attempt("bob", "bob-correct-horse", "10.0.0.1").status_code == 302


def test_twenty_failures_from_one_address_lock_it_for_every_name(people, settings):
    assert settings.SIGNIN_ADDRESS_FAILURE_LIMIT == 20
    for i in range(19):                      # 4 guesses each at many names: no pair reaches 5
        assert attempt(f"name{i // 4}", "guess", "10.0.0.1").status_code == 200
    assert attempt("name9", "guess", "10.0.0.1").status_code == 429       # the twentieth
    assert attempt("bob", "bob-correct-horse", "10.0.0.1").status_code == 429
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
    for i in range(20):
        Client(REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").post(
            LOGIN, {"username": f"nobody{i}", "password": "guess"})
    assert attempt("bob", "bob-correct-horse", "10.0.0.9").status_code == 429


# --- behind the shipped Kubernetes ingress (TRUSTED_PROXY_COUNT=1): REMOTE_ADDR is the ingress pod
INGRESS = "10.42.0.7"


def via_ingress(user, password, forwarded):
    return Client(REMOTE_ADDR=INGRESS, HTTP_X_FORWARDED_FOR=forwarded).post(
        LOGIN, {"username": user, "password": password})


def test_an_ingress_that_replaces_the_header_gives_each_client_its_own_count(people, settings):
    """The ingress writes only the address it saw: one entry. Each client is that entry, so one
    attacker's failures lock neither other clients nor the victim at their own address."""
    settings.TRUSTED_PROXY_COUNT = 1
    for _ in range(5):
        via_ingress("alice", "guess", "198.51.100.7")
    assert via_ingress("alice", "alice-correct-horse", "198.51.100.7").status_code == 429
    assert via_ingress("alice", "alice-correct-horse", "203.0.113.5").status_code == 302
    assert via_ingress("bob", "bob-correct-horse", "203.0.113.6").status_code == 302
    from axes.models import AccessAttempt
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}


def test_an_ingress_that_appends_counts_the_entry_it_wrote_not_the_clients(people, settings):
    """The client sends its own X-Forwarded-For (a new made-up address each time); the ingress
    appends the real one. Only that last entry counts, so the made-up ones dodge nothing."""
    settings.TRUSTED_PROXY_COUNT = 1
    for i in range(20):
        via_ingress(f"name{i // 4}", "guess", f"192.0.2.{i}, 198.51.100.7")
    assert via_ingress("bob", "bob-correct-horse", "192.0.2.99, 198.51.100.7").status_code == 429
    assert via_ingress("bob", "bob-correct-horse", "203.0.113.5").status_code == 302
    from axes.models import AccessAttempt
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}


def test_a_known_user_cannot_be_locked_out_from_anywhere(people, settings):
    """Someone who knows finance's user name guesses from their address: finance, elsewhere, signs in."""
    settings.TRUSTED_PROXY_COUNT = 1
    User.objects.create_user("finance", password="finance-correct-horse")
    for _ in range(10):
        via_ingress("finance", "guess", "198.51.100.7")
    assert via_ingress("finance", "finance-correct-horse", "203.0.113.5").status_code == 302


@pytest.mark.parametrize("count, forwarded, remote, expected", [
    (1, "203.0.113.5", INGRESS, "203.0.113.5"),                       # replaced by the ingress
    (1, "192.0.2.1, 203.0.113.5", INGRESS, "203.0.113.5"),            # appended by the ingress
    (2, "192.0.2.1, 203.0.113.5, 10.42.0.9", INGRESS, "203.0.113.5"),  # two proxies, both appended
    (2, "203.0.113.5", INGRESS, INGRESS),                             # passed only one proxy: the connection
    (1, "", INGRESS, INGRESS),                                        # no header: the connection
    (1, "not-an-address", INGRESS, INGRESS),
    (0, "192.0.2.1", "10.0.0.9", "10.0.0.9"),                         # no trusted proxy: the header is ignored
])
def test_the_client_is_the_entry_the_trusted_proxy_wrote(settings, rf, count, forwarded, remote, expected):
    from gpuportal.signin import client_address
    settings.TRUSTED_PROXY_COUNT = count
    request = rf.post(LOGIN, REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


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
