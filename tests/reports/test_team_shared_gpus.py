"""The team page's "GPUs held in parts": a team's HAMi shares and GPUs shared by pods with their
allocated and used GPU-hours, cost where the user sees money, and the unallocated rest of those
GPUs; the same split hours and figures as the FOCUS 1.3 export's shared-GPU rows (docs/pages.md)."""
from decimal import Decimal as D

import pytest

from scripts.demo_pages import Tables
from tests.reports.test_focus_13_shared_gpus import split_fleet  # noqa: F401
from tests.reports.test_focus_export import export, pick
from tests.support.factories import make_team

pytestmark = pytest.mark.django_db
MARCH = {"start": "2026-03-01", "end": "2026-04-01"}


def shared_table(client, team):
    response = client.get(f"/teams/{team}/", MARCH)
    assert response.status_code == 200
    tables = Tables(response.content.decode())
    return tables.headers.get("shared-gpu-rows"), tables.tables.get("shared-gpu-rows")


def test_a_hami_share_on_the_team_page_with_its_money(split_fleet, finance, client, api):  # noqa: F811
    """search's pod held 0.30 of an H100 for 4 h: 1.2 GPU-h allocated, 0.6 used (50 %), at 2.00 =
    $2.40; the rest of that GPU in those hours, 2.8 GPU-h, $5.60, is unallocated capacity. The
    FOCUS 1.3 export's rows of that share carry the same figures."""
    client.force_login(finance)
    headers, rows = shared_table(client, "S")
    assert headers == ["Namespace", "GPU", "How", "Allocated GPU-h", "Used GPU-h", "Efficiency", "Cost",
                       "Unallocated rest GPU-h", "Rest's cost"]
    assert rows == [["search prod", "NVIDIA H100 80GB HBM3", "HAMi share", "1.20", "0.60", "50.0 %", "$2.40",
                     "2.80", "$5.60"]]
    _, focus = export(api(finance), period="2026-03", focus_version="1.3")
    [share] = pick(focus, SubAccountId="S", AllocatedMethodId="gpuportal/shared-gpu-by-gpu-seconds")
    [rest] = pick(focus, SubAccountId="unallocated", AllocatedMethodId="gpuportal/shared-gpu-by-gpu-seconds")
    assert (share["PricingQuantity"], share["x_UsedGpuHours"], share["BilledCost"]) == ("1.200000", "0.600000", "2.40")
    assert (D(rest["PricingQuantity"]), rest["BilledCost"]) == (D("2.8"), "5.60")


def test_a_time_sliced_gpu_and_a_team_without_parts(split_fleet, finance, client):  # noqa: F811
    """train and nb time-sliced an H100 for 2 h on Mar 11: 1 GPU-h each, nothing left over;
    train's whole GPU (5 h) is not a part."""
    client.force_login(finance)
    _, rows = shared_table(client, "T")
    assert rows == [["train prod", "NVIDIA H100 80GB HBM3", "shared by pods", "1.00", "0.50", "50.0 %", "$2.00",
                     "0.00", "$0.00"]]


def test_no_money_for_a_viewer(split_fleet, viewer, client):  # noqa: F811
    client.force_login(viewer)
    headers, rows = shared_table(client, "S")
    assert headers == ["Namespace", "GPU", "How", "Allocated GPU-h", "Used GPU-h", "Efficiency",
                       "Unallocated rest GPU-h"]
    assert rows == [["search prod", "NVIDIA H100 80GB HBM3", "HAMi share", "1.20", "0.60", "50.0 %", "2.80"]]


def test_a_team_with_none_says_so(split_fleet, team_lead, client):  # noqa: F811
    make_team("X", lead=team_lead)
    client.force_login(team_lead)
    response = client.get("/teams/X/", MARCH)
    assert "No GPU held in parts in this window." in response.content.decode()


def test_gpus_held_through_dra_claims(split_fleet, finance, viewer, client):  # noqa: F811
    """Mar 12: `train` holds an H100 through a ResourceClaim for 3 h (used half: 1.5 GPU-h), 3 h ×
    2.00 = $6.00, and a 3g.40gb MIG device of an H100 for 2 h (3/7 of the GPU, no rate of its own:
    6/7 GPU-h × 2.00 = 1.714… → $1.71). Rows not held through a claim are not listed."""
    from apps.accounting.models import UsageHour
    from tests.support.factories import make_device, usage_row, utc
    whole = make_device(split_fleet, host="node-d")
    mig = make_device(split_fleet, host="node-m", mig_profile="3g.40gb", fraction=3 / 7)
    rows = [usage_row(whole, "train", utc(2026, 3, 12, h), pod="dra-0", gpu_seconds=3600.0, used_gpu_seconds=1800.0,
                      dra_claim=True) for h in (8, 9, 10)]
    rows += [usage_row(mig, "train", utc(2026, 3, 12, h), pod="dra-1", gpu_seconds=3600 * 3 / 7,
                       used_gpu_seconds=3600 * 3 / 14, mig_seconds=3600.0, dra_claim=True) for h in (8, 9)]
    UsageHour.objects.bulk_create(rows)
    client.force_login(finance)
    response = client.get("/teams/T/", MARCH)
    tables = Tables(response.content.decode())
    assert tables.headers["dra-gpu-rows"] == ["Namespace", "GPU", "Allocated GPU-h", "Used GPU-h", "Efficiency", "Cost"]
    assert tables.tables["dra-gpu-rows"] == [
        ["train prod", "NVIDIA H100 80GB HBM3", "3.00", "1.50", "50.0 %", "$6.00"],
        ["train prod", "NVIDIA H100 80GB HBM3 3g.40gb", "0.86", "0.43", "50.0 %", "$1.71"]]
    client.force_login(viewer)
    tables = Tables(client.get("/teams/T/", MARCH).content.decode())
    assert tables.tables["dra-gpu-rows"][0] == ["train prod", "NVIDIA H100 80GB HBM3", "3.00", "1.50", "50.0 %"]
    client.force_login(finance)
    assert "No GPU held through a DRA claim in this window." in client.get("/teams/S/", MARCH).content.decode()
