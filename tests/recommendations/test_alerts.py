"""Budget and idle alerts: raised once, delivered by e-mail and webhook, failures retried and recorded."""
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.utils import timezone as dj_timezone

from apps.recommendations import alerts, tasks
from apps.recommendations.alerts import check_budgets, crossed_thresholds, month_start
from apps.recommendations.models import Alert, AlertDelivery, DeliveryAttempt, TeamBudget
from apps.teams.models import AuditEvent, Team

from tests.support import factories as f
from tests.support.webhook_receiver import Receiver, closed_port_url


def test_crossed_thresholds_by_hand():
    assert crossed_thresholds(Decimal("79.99"), Decimal("100")) == []
    assert crossed_thresholds(Decimal("80"), Decimal("100")) == [80]
    assert crossed_thresholds(Decimal("100.00"), Decimal("100")) == [80, 100]
    assert crossed_thresholds(Decimal("5"), Decimal("0")) == []


def test_month_start_in_the_billing_zone(settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    now = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)
    assert month_start(now) == datetime(2026, 10, 31, 23, tzinfo=timezone.utc)


@pytest.fixture
def budget(fleet):
    # ml (team vision) allocated 24 × 2 + 24 × 6 = 192 GPU-hours on 18 and 19 November.
    return TeamBudget.objects.create(team=fleet["vision"], unit=TeamBudget.Unit.GPU_HOURS,
                                     monthly_amount=Decimal("200"), email_to="lead@example.com")


NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)


def test_budget_alert_at_80_percent_once(budget, mailoutbox):
    raised = check_budgets(NOW)
    assert [(r.alert.key, r.created) for r in raised] == [("budget:vision:2026-11:80", True)]
    assert raised[0].alert.text == ("GPU budget: team vision has used 96 % of its 2026-11 budget "
                                   "(192.00 GPU-hours of 200.00 GPU-hours), past 80 %.")
    tasks.dispatch(raised[0].delivery_ids)
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["lead@example.com"]
    assert mail.subject.startswith("[gpuportal] GPU budget: team vision has used 96 %")
    assert "threshold_percent: 80" in mail.body
    # the next beat runs find the same threshold already raised
    assert [r.created for r in check_budgets(NOW)] == [False]
    assert Alert.objects.count() == 1 and len(mailoutbox) == 1
    assert AuditEvent.objects.filter(action="alert.budget", target="budget:vision:2026-11:80").count() == 1


def test_budget_alert_at_100_percent_and_next_month(budget):
    budget.monthly_amount = Decimal("150")
    budget.save()
    assert [r.alert.key for r in check_budgets(NOW)] == ["budget:vision:2026-11:80", "budget:vision:2026-11:100"]
    assert check_budgets(datetime(2026, 12, 2, tzinfo=timezone.utc)) == []  # nothing used in December yet


def test_money_budget_without_a_rate_card_raises_nothing(budget):
    # nothing of vision's usage is priced: the money cannot be compared with the budget
    budget.unit, budget.currency = TeamBudget.Unit.MONEY, "EUR"
    budget.save()
    assert check_budgets(NOW) == []


def test_money_budget_counts_the_statements_money(budget):
    # 192 GPU-hours at 2.00 EUR = 384.00 of a 400.00 budget = 96 %: the chargeback statement's figure
    from apps.accounting.models import Rate
    from apps.accounting.ledger.statements import statement
    from apps.reports.statement_rows import statement_payload
    Rate.objects.create(gpu_model="NVIDIA H100 80GB HBM3", mig_profile="", price_class="on_demand",
                        hourly_rate=Decimal("2.00"), currency="EUR", effective_from=datetime(2026, 1, 1).date())
    budget.unit, budget.currency, budget.monthly_amount = TeamBudget.Unit.MONEY, "EUR", Decimal("400")
    budget.save()
    raised = check_budgets(NOW)
    assert [r.alert.fields["spent"] for r in raised] == ["384.00"]
    assert raised[0].alert.text.endswith("has used 96 % of its 2026-11 budget (€384.00 of €400.00), past 80 %.")
    [vision] = [r for r in statement_payload(statement("2026-11"), "team", None)["results"] if r["key"] == "vision"]
    assert vision["cost"] == "384.00"


@pytest.fixture
def idle_pod(fleet):
    """Pod ml/nb-0 holds two H100s, idle from 30 minutes into the hour three hours ago through
    the last ingested hour: one open episode of 90 minutes per device."""
    c = fleet["cluster"]
    top = dj_timezone.now().replace(minute=0, second=0, microsecond=0)
    for uuid in ("GPU-nb-a", "GPU-nb-b"):
        dev = f.make_device(c, uuid=uuid)
        f.make_usage_hours(dev, "ml", "nb-0", [top - timedelta(hours=3)], 1, efficiency=0.3,
                idle_suffix_seconds=1800, idle_max_run_seconds=1800)
        f.make_usage_hours(dev, "ml", "nb-0", [top - timedelta(hours=2)], 1, efficiency=0.0,
                idle_prefix_seconds=3600, idle_suffix_seconds=3600, idle_max_run_seconds=3600, idle_whole_hour=True)
    start = top - timedelta(hours=3) + timedelta(minutes=30)
    return {"cluster": c, "start": start}


def expected_idle_payload(alert, idle_pod, receiver_free=True):
    start = idle_pod["start"]
    text = (f"Idle GPUs: pod ml/nb-0 on prod has held 2 NVIDIA H100 80GB HBM3 GPUs idle for 1 hour 30 minutes "
            f"since {start:%Y-%m-%d %H:%M} UTC and still does (team vision).")
    return {
        "text": text,
        "alert": {
            "key": f"idle:{idle_pod['cluster'].pk}:ml/nb-0:{int(start.timestamp())}",
            "kind": "idle", "team": "vision",
            "created_at": alert.created_at.isoformat().replace("+00:00", "Z"),
            "url": "http://localhost:8000/advice/alerts/",
            "cluster": "prod", "namespace": "ml", "pod": "nb-0", "gpus": 2.0,
            "gpu_model": "NVIDIA H100 80GB HBM3", "idle_minutes": 90,
            "episode_start": start.isoformat().replace("+00:00", "Z"), "still_idle": True,
        },
    }


def test_idle_alert_reaches_the_webhook_once(idle_pod, settings):
    with Receiver([200]) as receiver:
        settings.ALERT_WEBHOOK_URL = receiver.url
        first = tasks.check_alerts()
        second = tasks.check_alerts()
    alert = Alert.objects.get(kind="idle")
    assert first == [alert.key] and second == []
    assert len(receiver.received) == 1
    got = receiver.received[0]
    assert got["path"] == "/hooks/gpu" and got["content_type"] == "application/json"
    assert got["json"] == expected_idle_payload(alert, idle_pod)
    delivery = AlertDelivery.objects.get(alert=alert)
    assert (delivery.status, delivery.attempts) == ("sent", 1)
    assert alert.episode_end - alert.episode_start == timedelta(minutes=90)


def test_idle_episode_cut_by_a_shorter_lookback_is_the_same_episode(idle_pod, settings):
    assert len(alerts.check_idle()) == 1
    settings.ALERT_LOOKBACK_HOURS = 2   # now only the whole idle hour is seen: a later "start"
    assert alerts.check_idle() == []
    assert Alert.objects.filter(kind="idle").count() == 1


def test_short_idle_stretches_raise_nothing(idle_pod, settings):
    settings.ALERT_IDLE_MINUTES = 91
    assert alerts.check_idle() == []


def test_failing_webhook_is_retried_and_every_attempt_recorded(idle_pod, settings, monkeypatch):
    monkeypatch.setattr(tasks.deliver_alert, "max_retries", 2)
    with Receiver([500]) as receiver:
        settings.ALERT_WEBHOOK_URL = receiver.url
        assert len(tasks.check_alerts()) == 1   # the beat run itself does not fail
    assert len(receiver.received) == 3
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert list(DeliveryAttempt.objects.values_list("ok", "status_code")) == [(False, 500)] * 3
    assert delivery.last_error.startswith("HTTP 500")


def test_webhook_that_recovers_is_sent_on_retry(idle_pod, settings, monkeypatch):
    monkeypatch.setattr(tasks.deliver_alert, "max_retries", 4)
    with Receiver([500, 503, 200]) as receiver:
        settings.ALERT_WEBHOOK_URL = receiver.url
        tasks.check_alerts()
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("sent", 3)
    assert list(DeliveryAttempt.objects.values_list("status_code", flat=True)) == [500, 503, 200]
    assert receiver.received[0]["json"] == receiver.received[2]["json"]


def test_closed_port_is_retried_and_recorded(idle_pod, settings, monkeypatch):
    monkeypatch.setattr(tasks.deliver_alert, "max_retries", 1)
    settings.ALERT_WEBHOOK_URL = closed_port_url()
    tasks.check_alerts()
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 2)
    assert all(a.status_code is None and "ConnectionError" in a.error for a in DeliveryAttempt.objects.all())


def test_idle_alert_by_email_and_webhook_from_the_team_budget(idle_pod, budget, mailoutbox, settings):
    settings.ALERT_WEBHOOK_URL = "http://127.0.0.1:9/never-used"
    with Receiver([200]) as receiver:
        budget.webhook_url = receiver.url
        budget.monthly_amount = Decimal("100000")
        budget.save()
        tasks.check_alerts()
        tasks.check_alerts()
    assert len(receiver.received) == 1
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["lead@example.com"]
    assert "Idle GPUs: pod ml/nb-0" in mailoutbox[0].subject


def test_alerts_page_scoped_to_the_team_lead(idle_pod, client, settings):
    alerts.check_idle()
    Alert.objects.create(key="budget:search:2026-11:80", kind="budget", team="search", text="search over budget",
                         fields={"unit": "gpu_hours"})
    lead = f.make_user("team_lead", "team_lead", teams=[Team.objects.get(name="vision")])
    client.force_login(lead)
    page = client.get("/advice/alerts/")
    assert page.status_code == 200
    assert [a.team for a in page.context["alerts"]] == ["vision"]
    admin = f.make_user("admin", "admin")
    client.force_login(admin)
    assert {a.team for a in client.get("/advice/alerts/").context["alerts"]} == {"vision", "search"}


def test_setting_a_budget_is_audited(fleet):
    from django.core.exceptions import ValidationError

    from apps.recommendations.budgets import do_set_team_budget

    admin = f.make_user("admin", "admin")
    do_set_team_budget(admin, fleet["vision"], unit="gpu_hours", monthly_amount=Decimal("100"))
    do_set_team_budget(admin, fleet["vision"], monthly_amount=Decimal("250"))
    events = list(AuditEvent.objects.filter(action="budget.set").order_by("at", "id"))
    assert [e.old_value and e.old_value["monthly_amount"] for e in events] == [None, "100.00"]
    assert events[1].new_value["monthly_amount"] == "250.00" and events[1].actor == admin
    with pytest.raises(ValidationError):
        do_set_team_budget(admin, fleet["vision"], unit="money", currency="")
    assert TeamBudget.objects.get().monthly_amount == Decimal("250")


def test_admin_pages_for_budgets_and_alerts(idle_pod, client):
    alerts.check_idle()
    admin = f.make_user("admin", "admin")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    client.force_login(admin)
    for url in ("/admin/recommendations/alert/", "/admin/recommendations/teambudget/",
                "/admin/recommendations/deliveryattempt/", "/admin/recommendations/recommendationsnapshot/",
                f"/admin/recommendations/alert/{Alert.objects.get().pk}/change/"):
        assert client.get(url).status_code == 200, url
    team = Team.objects.get(name="vision")
    r = client.post("/admin/recommendations/teambudget/add/", {
        "team": team.pk, "unit": "gpu_hours", "monthly_amount": "120", "currency": "", "email_to": "",
        "webhook_url": "", "active": "on"})
    assert r.status_code == 302
    assert TeamBudget.objects.get().monthly_amount == Decimal("120")
    assert AuditEvent.objects.filter(action="budget.set", actor=admin).count() == 1


def test_urls_typed_without_a_scheme_get_the_one_the_admin_says(rf, admin_user):
    """Prometheus URLs default to http:// (in-cluster, rarely TLS), webhook URLs to https://."""
    from django.contrib.admin.sites import site

    from apps.clusters.models import Cluster

    request = rf.get("/")
    request.user = admin_user
    cluster_field = site._registry[Cluster].get_form(request)().fields["prometheus_url"]
    assert cluster_field.clean("prometheus.example.com") == "http://prometheus.example.com"
    budget_field = site._registry[TeamBudget].get_form(request)().fields["webhook_url"]
    assert budget_field.clean("hooks.example.com/x") == "https://hooks.example.com/x"


# An upstream error page that echoes what it was sent, a token included, and some markup.
LEAKY_BODY = b"<html><script>alert(1)</script>upstream error; Authorization: Bearer sk-SECRET-0042</html>"


def test_a_failed_webhook_reply_goes_to_the_log_and_pages_show_its_status(idle_pod, settings, monkeypatch, client,
                                                                           caplog):
    """The reply of whatever answers at a webhook URL is never stored or shown, to admins either
    (docs/security.md, "Outbound requests"): the URL could point at an internal page."""
    monkeypatch.setattr(tasks.deliver_alert, "max_retries", 0)
    with Receiver([500], error_body=LEAKY_BODY) as receiver:
        settings.ALERT_WEBHOOK_URL = receiver.url
        tasks.check_alerts()
    assert AlertDelivery.objects.get().status == "failed"
    assert AlertDelivery.objects.get().last_error == "HTTP 500"
    assert "sk-SECRET-0042" in caplog.text          # for the operator, in the worker's log

    client.force_login(f.make_user("fin", "finance"))
    page = client.get("/advice/alerts/").content.decode()
    assert "delivery failed (HTTP 500)" in page
    assert "SECRET" not in page and "upstream error" not in page

    client.force_login(f.make_user("root", "admin"))
    page = client.get("/advice/alerts/").content.decode()
    assert "HTTP 500" in page and "SECRET" not in page and "alert(1)" not in page


def test_public_error_of_a_delivery_by_hand():
    d = AlertDelivery(last_error="ConnectionError: HTTPConnectionPool(host='hooks.internal', port=80): token=abc")
    assert d.public_error() == "delivery failed (ConnectionError)"
    assert AlertDelivery(last_error="HTTP 502: <html>bad gateway</html>").public_error() == "delivery failed (HTTP 502)"
    assert AlertDelivery(last_error="").public_error() == ""


def test_hostile_labels_stay_text_in_the_slack_message(fleet):
    """A model, namespace or pod label put `<!channel>` and a `<https://…|…>` link into the Slack
    text unescaped (issue 42): Slack reads &, < and > as its own markup."""
    from apps.recommendations.notify import webhook_payload
    text = "Idle GPUs: pod <!channel>/<https://evil.example/login|sign in> & co on prod"
    alert = Alert.objects.create(key="idle:x", kind="idle", team="vision", text=text,
                                 fields={"pod": "<!channel>"})
    payload = webhook_payload(alert)
    assert payload["text"] == ("Idle GPUs: pod &lt;!channel&gt;/&lt;https://evil.example/login|sign in&gt; "
                               "&amp; co on prod")
    assert payload["alert"]["pod"] == "<!channel>"       # the structured value stays the value
