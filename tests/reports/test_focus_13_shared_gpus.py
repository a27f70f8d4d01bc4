"""FOCUS 1.3: the rows whose cost is a part of a GPU split between pods (a HAMi share, a
time-sliced GPU) are allocated charges of a split cost (AllocatedMethodId
gpuportal/shared-gpu-by-gpu-seconds), their unallocated remainder the origin's unallocated portion;
hand-computed (docs/chargeback.md, "Split costs in FOCUS 1.3")."""
import json

import pytest

from tests.reports.test_focus_13 import check_focus_13
from tests.reports.test_focus_export import billed_by_currency, export, pick
from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, usage_row, utc
from apps.accounting.models import UsageHour

pytestmark = pytest.mark.django_db
SKU = "NVIDIA H100 80GB HBM3:gpu:on_demand@2.000000 USD/GPU-Hour"


def hours(device, namespace, pod, start, n, seconds, *, fraction=None):
    rows = [usage_row(device, namespace, utc(2026, 3, start[0], start[1] + i), pod=pod, gpu_seconds=seconds,
                      used_gpu_seconds=seconds / 2 if namespace else 0.0) for i in range(n)]
    for r in rows:
        if fraction is not None:
            r.gpu_fraction = fraction
    UsageHour.objects.bulk_create(rows)


@pytest.fixture
def split_fleet():
    """prod, H100 at 2.00 per GPU-hour. Mar 10 08:00-12:00: a HAMi pod of `search` holds 30 cores and
    20 000 MiB of an 80 GB H100 (max(0.30, 20 000/81 920 = 0.244) = 0.30): 1 080 GPU-seconds an hour,
    2 520 unallocated; `train` holds a whole GPU 08:00-11:00. Mar 11 08:00-10:00: `nb` and `train`
    time-slice one H100 (1 800 s each an hour), and `train` holds a whole GPU too."""
    prod = make_cluster(detected_interval_seconds=30.0)
    for ns, team in (("search", "S"), ("nb", "N"), ("train", "T")):
        make_namespace(prod, ns, team)
    make_rate(hourly_rate="2.00")
    hami, sliced, whole = (make_device(prod, host=f"node-{i}") for i in (1, 2, 3))
    hours(hami, "search", "embed-0", (10, 8), 4, 1080.0, fraction=0.3)
    hours(hami, "", "", (10, 8), 4, 2520.0)
    hours(whole, "train", "t-0", (10, 8), 3, 3600.0)
    hours(sliced, "nb", "nb-a", (11, 8), 2, 1800.0)
    hours(sliced, "train", "t-share", (11, 8), 2, 1800.0)
    hours(whole, "train", "t-1", (11, 8), 2, 3600.0)
    return prod


def cells(r):
    return (r["SubAccountId"], r["ChargePeriodStart"][:10], r["ResourceId"], r["PricingQuantity"], r["BilledCost"],
            r["ListCost"], r["AllocatedMethodId"], r["AllocatedResourceId"])


def details(r):
    return json.loads(r["AllocatedMethodDetails"])["Elements"][0]


def test_a_hami_share_and_its_remainder_are_a_split_cost(split_fleet, finance, api):
    """Mar 10's split GPUs: 4 h of the HAMi H100 = 4 GPU-hours. search 0.30 × 4 h = 1.2 GPU-h
    × 2.00 = 2.40, ratio 0.3; the remainder 0.70 × 4 h = 2.8 GPU-h = 5.60, ratio 0.7, with no
    allocated resource. train's whole GPU (3 h, 6.00) is not split. Mar 11: the time-sliced
    H100's 2 h split 1 h to nb (2.00) and 1 h to train (2.00), ratios 0.5 and 0.5; train's row
    that day is 3 h (6.00): its 2 h on a whole GPU (4.00) stay a row without Allocated columns."""
    _, rows = export(api(finance), period="2026-03", focus_version="1.3")
    ratios = check_focus_13(rows)
    assert billed_by_currency(rows) == {"USD": "22.00"}
    method = "gpuportal/shared-gpu-by-gpu-seconds"
    assert sorted(cells(r) for r in rows) == sorted([
        ("S", "2026-03-10", "prod", "1.200000", "2.40", "2.400000000000", method, "prod/search"),
        ("unallocated", "2026-03-10", "prod", "2.800000", "5.60", "5.600000000000", method, ""),
        ("T", "2026-03-10", "prod/train", "3.000000", "6.00", "6.000000000000", "", ""),
        ("N", "2026-03-11", "prod", "1.000000", "2.00", "2.000000000000", method, "prod/nb"),
        ("T", "2026-03-11", "prod/train", "2.000000", "4.00", "4.000000000000", "", ""),
        ("T", "2026-03-11", "prod", "1.000000", "2.00", "2.000000000000", method, "prod/train"),
    ])
    [search] = pick(rows, SubAccountId="S")
    assert details(search) == {"AllocatedRatio": 0.3, "UsageUnit": "GPU-Hours", "UsageQuantity": 1.2,
                               "x_SplitGpuHours": 4.0}
    assert (search["AllocatedResourceName"], json.loads(search["AllocatedTags"]), json.loads(search["Tags"])) == (
        "prod/search", {"gpuportal/namespace": "search", "gpuportal/team": "S"}, {"gpuportal/cluster": "prod"})
    assert (search["ResourceType"], search["SkuPriceId"], search["x_AllocatedGpuHours"], search["x_UsedGpuHours"]) == (
        "Kubernetes cluster", SKU, "1.200000", "0.600000")
    [rest] = pick(rows, SubAccountId="unallocated")
    assert details(rest) == {"AllocatedRatio": 0.7, "UsageUnit": "GPU-Hours", "UsageQuantity": 2.8,
                             "x_SplitGpuHours": 4.0}
    assert (rest["AllocatedResourceName"], rest["AllocatedTags"], rest["x_ChargeKind"]) == ("", "", "unallocated")
    assert {details(r)["AllocatedRatio"] for r in pick(rows, ChargePeriodStart="2026-03-11T00:00:00Z")
            if r["AllocatedMethodId"]} == {0.5}
    assert sorted(ratios.values()) == [1, 1]        # two origin charges: Mar 10's and Mar 11's split H100s


def test_pods_that_follow_each_other_on_a_gpu_do_not_split_it(split_fleet, finance, api):
    """Mar 12 10:00: `nb`'s pod holds a GPU for 20 min (40 samples at 30 s, 1 200 s), then `train`'s
    for 40 (80 samples, 2 400 s): 120 samples cover 3 600 s, what the hour holds, so no two pods
    held it at once and neither row is a split. The time-sliced pods of Mar 11 each have 120
    samples in an hour holding 3 600 s: 7 200 s covered, held at once."""
    gpu = make_device(split_fleet, host="node-9")
    first = usage_row(gpu, "nb", utc(2026, 3, 12, 10), pod="nb-b", gpu_seconds=1200.0)
    first.sample_count = 40
    second = usage_row(gpu, "train", utc(2026, 3, 12, 10), pod="t-2", gpu_seconds=2400.0)
    second.sample_count = 80
    UsageHour.objects.bulk_create([first, second])
    _, rows = export(api(finance), period="2026-03", focus_version="1.3")
    check_focus_13(rows)
    assert sorted((r["SubAccountId"], r["PricingQuantity"], r["AllocatedMethodId"])
                  for r in rows if r["ChargePeriodStart"].startswith("2026-03-12")) == [
        ("N", "0.333333", ""), ("T", "0.666667", "")]
    assert len([r for r in rows if r["AllocatedMethodId"]]) == 4       # Mar 10's two, Mar 11's two


def test_10_rows_are_not_split(split_fleet, finance, api):
    _, rows = export(api(finance), period="2026-03")
    assert "AllocatedMethodId" not in rows[0]
    assert sorted((r["SubAccountId"], r["ChargePeriodStart"][:10], r["BilledCost"]) for r in rows) == [
        ("N", "2026-03-11", "2.00"), ("S", "2026-03-10", "2.40"), ("T", "2026-03-10", "6.00"),
        ("T", "2026-03-11", "6.00"), ("unallocated", "2026-03-10", "5.60")]


def test_a_team_lead_sees_their_share_with_the_ratio_of_the_whole(split_fleet, team_lead, api):
    from tests.support.factories import make_team
    make_team("S", lead=team_lead)
    _, rows = export(api(team_lead), period="2026-03", focus_version="1.3")
    assert [(r["SubAccountId"], r["BilledCost"], details(r)["AllocatedRatio"]) for r in rows] == [("S", "2.40", 0.3)]


def test_with_shared_idle_spread_the_split_is_of_what_pods_held(split_fleet, finance, api):
    """Spread, the remainder (5.60) goes to the teams by allocated cost on prod's H100s (S 2.40,
    N 2.00, T 12.00 of 16.40) as shared idle; the HAMi GPU's split is then of what its pods
    held: search alone, ratio 1 of 1.2 GPU-hours."""
    _, rows = export(api(finance), period="2026-03", focus_version="1.3", shared_idle="spread")
    check_focus_13(rows)
    assert billed_by_currency(rows) == {"USD": "22.00"}
    assert not pick(rows, SubAccountId="unallocated")
    [search] = pick(rows, SubAccountId="S", AllocatedMethodId="gpuportal/shared-gpu-by-gpu-seconds")
    assert (search["BilledCost"], details(search)) == ("2.40", {
        "AllocatedRatio": 1.0, "UsageUnit": "GPU-Hours", "UsageQuantity": 1.2, "x_SplitGpuHours": 1.2})
    spread = pick(rows, x_ChargeKind="shared_idle")
    # 5.60 × 2.40/16.40 = 0.8195 → 0.82; × 2.00/16.40 = 0.6829 → 0.68; × 12.00/16.40 = 4.0976 → 4.10
    assert sorted((r["SubAccountId"], r["BilledCost"]) for r in spread) == [("N", "0.68"), ("S", "0.82"), ("T", "4.10")]
