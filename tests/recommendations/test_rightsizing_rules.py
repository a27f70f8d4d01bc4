"""Right-sizing rules and money, by hand (apps/recommendations/rightsizing/rules.py; no database)."""
from decimal import Decimal

import pytest

from apps.recommendations.rightsizing import rules as rs
from apps.recommendations.mig_profiles import MIB_PER_GB, board_memory_gb, mig_model

H100 = "NVIDIA H100 80GB HBM3"
H100_NVL = "NVIDIA H100 NVL"
H200 = "NVIDIA H200"
A100_40 = "NVIDIA A100-SXM4-40GB"
A100_80 = "NVIDIA A100-SXM4-80GB"
A30 = "NVIDIA A30"
GIB = 1024.0


def obs(model=H100, **kw):
    base = dict(gpu_model=model, hours=200, used_gpu_seconds=1000.0, activity_p95=0.10, fb_peak_mib=8 * GIB)
    base.update(kw)
    return rs.Observed(**base)


def test_the_issue_example_an_h100_at_8_gib_and_10_percent_fits_1g_10gb():
    # 8 GiB × 1.15 = 9,420.8 MiB ≤ 10 GB = 9,536.7 MiB; 10 % × 1.15 = 0.115 ≤ 1/7 = 0.143
    a = rs.advise(obs())
    assert (a.action, a.profile, a.resource_now, a.resource_advised) == (
        rs.MIG, "1g.10gb", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    assert a.fraction_advised == pytest.approx(1 / 7)
    assert a.confidence == rs.HIGH


def test_profile_memory_is_the_fraction_of_the_board_in_decimal_gigabytes():
    h100 = mig_model(H100)
    assert [p.name for p in h100.profiles] == ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"]
    assert h100.profiles[0].memory_mib(h100) == pytest.approx(10 * 10**9 / 2**20)      # 9,536.74 MiB
    assert MIB_PER_GB == pytest.approx(953.674, abs=1e-3)
    a30 = mig_model(A30)
    assert [(p.name, round(p.memory_mib(a30), 1)) for p in a30.profiles] == [("1g.6gb", 5722.0), ("2g.12gb", 11444.1)]


@pytest.mark.parametrize("model, label, smallest", [
    (H100, "H100 80 GB", "1g.10gb"), (H100_NVL, "H100 NVL 94 GB", "1g.12gb"), (H200, "H200 141 GB", "1g.18gb"),
    (A100_40, "A100 40 GB", "1g.5gb"), (A100_80, "A100 80 GB", "1g.10gb"), ("NVIDIA A100 80GB PCIe", "A100 80 GB", "1g.10gb"),
    (A30, "A30 24 GB", "1g.6gb"),
])
def test_model_names_find_their_table(model, label, smallest):
    m = mig_model(model)
    assert m.label == label and m.profiles[0].name == smallest


@pytest.mark.parametrize("model", ["NVIDIA L4", "NVIDIA L40S", "NVIDIA L40", "Tesla T4", "NVIDIA A10G"])
def test_gpus_without_mig_have_no_table(model):
    assert mig_model(model) is None and board_memory_gb(model) is not None


def test_never_a_profile_below_the_peak_even_without_headroom():
    # 10,000 MiB peaked above 1g.10gb's 9,536.7 MiB: the next is 1g.20gb, whatever the headroom
    for headroom in (0.0, 0.15):
        a = rs.advise(obs(fb_peak_mib=10_000.0), rs.Params(headroom=headroom))
        assert a.profile == "1g.20gb"
    # 9,000 MiB fits 1g.10gb bare, but not with 15 % room (10,350 MiB)
    assert rs.advise(obs(fb_peak_mib=9000.0), rs.Params(headroom=0.0)).profile == "1g.10gb"
    assert rs.advise(obs(fb_peak_mib=9000.0)).profile == "1g.20gb"


@pytest.mark.parametrize("peak_gib, activity, profile", [
    (1, 0.10, "1g.10gb"), (15, 0.10, "1g.20gb"),   # 1 slice, double memory beats 2 slices
    (15, 0.20, "2g.20gb"),                         # 0.20 × 1.15 = 0.23 > 1/7: two slices
    (30, 0.30, "3g.40gb"),                         # 0.345 ≤ 3/7 = 0.4286
    (30, 0.40, "4g.40gb"),                         # 0.46 > 3/7, ≤ 4/7
    (30, 0.50, None),                              # 0.575 > 4/7: the whole GPU
    (40, 0.10, None),                              # 46 GiB > 40 GB: the whole GPU
])
def test_smallest_profile_by_slices_then_memory(peak_gib, activity, profile):
    a = rs.advise(obs(fb_peak_mib=peak_gib * GIB, activity_p95=activity))
    assert a.profile == profile
    assert a.action == (rs.MIG if profile else rs.KEEP)


def test_already_on_mig_sizes_activity_by_its_slice():
    # 20 % of a 3g.40gb slice = 0.2 × 3/7 × 1.15 = 0.0986 of the GPU ≤ 1/7: down to 1g.10gb
    a = rs.advise(obs(A100_80, mig_profile="3g.40gb", gpu_fraction=3 / 7, activity_p95=0.2, fb_peak_mib=5000.0))
    assert (a.profile, a.resource_now, a.resource_advised) == ("1g.10gb", "nvidia.com/mig-3g.40gb",
                                                               "nvidia.com/mig-1g.10gb")
    # 40 % of it = 0.197 > 1/7: 2g.20gb, still fewer slices than 3
    assert rs.advise(obs(A100_80, mig_profile="3g.40gb", gpu_fraction=3 / 7, activity_p95=0.4,
                         fb_peak_mib=5000.0)).profile == "2g.20gb"
    # already on the smallest that fits: keep, never a larger slice
    a = rs.advise(obs(A100_80, mig_profile="1g.10gb", gpu_fraction=1 / 7, activity_p95=0.9, fb_peak_mib=9000.0))
    assert a.action == rs.KEEP and a.profile is None and "already on the smallest" in a.reason
    # an A30 2g.12gb at 10,872 MiB: × 1.15 is more than 2g.12gb's 11,444 MiB, yet it ran there (the
    # instance is a little larger than the table says): kept on it, never told to take the whole GPU
    a = rs.advise(obs(A30, mig_profile="2g.12gb", gpu_fraction=2 / 4, activity_p95=0.9, fb_peak_mib=10872.0))
    assert a.action == rs.KEEP and "already on the smallest A30 24 GB profile that fits (2g.12gb)" in a.reason


def test_release_when_never_used_whatever_the_memory():
    a = rs.advise(obs(used_gpu_seconds=0.0, fb_peak_mib=30 * GIB, hours=12))
    assert (a.action, a.resource_advised, a.fraction_advised, a.confidence) == (rs.RELEASE, None, 0.0, rs.LOW)
    assert "12 hours" in a.reason


def test_release_when_idle_every_second_it_held_a_gpu():
    # 2 % activity, all of it under the idle threshold: idle = allocated
    a = rs.advise(obs(used_gpu_seconds=72.0, gpu_seconds=3600.0, idle_gpu_seconds=3600.0, fb_peak_mib=60 * GIB))
    assert a.action == rs.RELEASE and "idle threshold" in a.reason
    # one busy minute in the hour: not never used (and 60 GiB needs the whole H100)
    assert rs.advise(obs(used_gpu_seconds=130.0, gpu_seconds=3600.0, idle_gpu_seconds=3540.0,
                         fb_peak_mib=60 * GIB)).action == rs.KEEP


def test_gpus_without_mig_get_a_share_or_nothing():
    # L4, 24 GB: a quarter is 5,722 MiB; 3,000 × 1.15 = 3,450 fits, 10 % × 1.15 ≤ 1/4
    a = rs.advise(obs("NVIDIA L4", fb_peak_mib=3000.0))
    assert (a.action, a.profile, a.resource_advised) == (rs.SHARE, None, "nvidia.com/gpu.shared")
    assert a.fraction_advised == 0.25
    # L40S at 60 %: keep, and never a MIG profile
    a = rs.advise(obs("NVIDIA L40S", activity_p95=0.6, fb_peak_mib=20 * GIB))
    assert (a.action, a.profile) == (rs.KEEP, None) and "has no MIG" in a.reason
    # L4 at 5,000 MiB: 5,750 > 5,722 — too much memory for a quarter
    assert rs.advise(obs("NVIDIA L4", fb_peak_mib=5000.0)).action == rs.KEEP
    # an unknown model: no memory to size a share by
    assert rs.advise(obs("NVIDIA Quadro X", fb_peak_mib=100.0)).action == rs.KEEP


def test_multi_gpu_pods_and_missing_readings_keep():
    assert rs.advise(obs(devices_per_pod=8.0)).action == rs.KEEP
    a = rs.advise(obs(fb_peak_mib=None))
    assert a.action == rs.KEEP and "DCGM_FI_DEV_FB_USED" in a.reason


@pytest.mark.parametrize("hours, level", [(0, "low"), (23, "low"), (24, "medium"), (167, "medium"), (168, "high")])
def test_confidence_is_hours_observed(hours, level):
    assert rs.confidence(hours) == level


def test_monthly_money_by_hand():
    # measured over the window, never extrapolated (docs/advice-and-alerts.md, "What a saving is"):
    # (4.00 − 0.60) × 48 instance-hours in a 48-hour window = 163.20, what the window shows
    assert rs.monthly_saving(Decimal("4.00"), Decimal("0.60"), 48.0, 48.0, "EUR") == Decimal("163.20")
    # a window longer than a month is scaled down to 730 hours: 4.00 × 1,460 held of 1,460 × 730 ÷ 1,460 = 2,920.00
    assert rs.monthly(Decimal("4.00"), 1460.0, 1460.0, "EUR") == Decimal("2920.00")
    # 2.80 × 12 held in 48 hours = 33.60 (never × 730 ÷ 48); in yen, whole units: 300 × 12 = 3,600
    assert rs.monthly(Decimal("2.80"), 12.0, 48.0, "EUR") == Decimal("33.60")
    assert rs.monthly(Decimal("300"), 12.0, 48.0, "JPY") == Decimal("3600")
    # half-up at the cent: 0.01 × 1 × 730 ÷ 1,000 = 0.0073 → 0.01
    assert rs.monthly(Decimal("0.01"), 1.0, 1000.0, "USD") == Decimal("0.01")
    assert rs.monthly(Decimal("4.00"), 1.0, 0.0, "USD") == Decimal("0.00")


# ---------------------------------------------------------------- HAMi shares (docs/advice-and-alerts.md)

H100_MIB = 80 * 10**9 / 2**20          # the board's 80 GB in MiB: 76,293.9


def test_a_whole_h100_gets_a_hami_share_smaller_than_its_smallest_mig_slice():
    # cores ⌈0.10 × 1 × 1.15 × 100⌉ = ⌈11.5⌉ = 12; memory ⌈8,192 × 1.15⌉ = ⌈9,420.8⌉ = 9,421 MiB = 0.12348
    # of the board; share max(0.12, 0.12348) = 0.12348, below 1g.10gb's 1/7 = 0.14286
    a = rs.advise(obs(), rs.Params(hami=True))
    assert (a.action, a.hami.cores, a.hami.memory_mib) == (rs.HAMI, 12, 9421)
    assert a.fraction_advised == pytest.approx(9421 / H100_MIB) == pytest.approx(0.1234829, abs=1e-7)
    assert a.resource_advised == "nvidia.com/gpu, nvidia.com/gpucores, nvidia.com/gpumem"
    assert "1g.10gb would hold 14%" in a.reason and a.text.startswith("use a HAMi share: gpucores 12, gpumem 9421")
    # Without HAMi on the cluster: the MIG slice, as before.
    assert rs.advise(obs()).action == rs.MIG


def test_the_mig_slice_wins_when_the_hami_share_rounds_above_it_and_the_share_is_offered():
    # 12.4 % × 1.15 = 14.26 %: 15 cores (0.15) > 1/7 = 0.142857, which 1g.10gb holds (0.1426 ≤ 1/7)
    a = rs.advise(obs(activity_p95=0.124, fb_peak_mib=2000.0), rs.Params(hami=True))
    assert (a.action, a.profile, a.hami.cores, a.hami.memory_mib) == (rs.MIG, "1g.10gb", 15, 2300)
    assert a.reason.endswith("; or a HAMi share: gpucores 15, gpumem 2300 MiB (15% of the GPU)")


def test_a_workload_on_a_hami_share_is_sized_in_shares_and_priced_by_them():
    # holds half an H100; P95 20 % of its share: ⌈0.20 × 0.5 × 1.15 × 100⌉ = ⌈11.5⌉ = 12 cores;
    # memory ⌈10,000 × 1.15⌉ = 11,500 MiB = 0.150733 of the board: 15.07 % instead of 50 %
    o = obs(gpu_fraction=0.5, activity_p95=0.20, fb_peak_mib=10_000.0)
    a = rs.advise(o)                                     # no setting needed: it is on HAMi already
    assert (a.action, a.resource_now, a.hami.cores, a.hami.memory_mib) == (
        rs.HAMI, "nvidia.com/gpu, nvidia.com/gpucores, nvidia.com/gpumem", 12, 11500)
    assert a.fraction_advised == pytest.approx(11500 / H100_MIB)
    # 48 GPU-hours held (its share's: 96 h of half a GPU) at 4.00 per GPU-hour, in a 48-hour window
    # (measured, never extrapolated): now 4.00 × 48 = 192.00; advised 4.00 × 0.150733 ÷ 0.5 =
    # 1.205863 per GPU-hour held → 57.88; saving (4.00 − 1.205863) × 48 = 134.118… → 134.12
    advised_rate = Decimal("4.00") * Decimal(str(a.fraction_advised)) / Decimal("0.5")
    assert rs.monthly(Decimal("4.00"), 48, 48, "EUR") == Decimal("192.00")
    assert rs.monthly(advised_rate, 48, 48, "EUR") == Decimal("57.88")
    assert rs.monthly_saving(Decimal("4.00"), advised_rate, 48, 48, "EUR") == Decimal("134.12")


def test_a_hami_share_already_as_small_as_fits_is_kept():
    # 15 % of an H100; P95 50 % of it: 9 cores, but memory ⌈11,000 × 1.15⌉ = 12,650 MiB = 0.1658 > 0.15
    a = rs.advise(obs(gpu_fraction=0.15, activity_p95=0.50, fb_peak_mib=11_000.0))
    assert a.action == rs.KEEP and "already the smallest HAMi share that fits" in a.reason
    assert a.hami is not None and a.hami.share == pytest.approx(12650 / H100_MIB)


def test_an_l4_gets_a_hami_share_before_a_time_slice():
    # 24 GB L4: 3,000 MiB × 1.15 = 3,450 MiB = 0.15073 of 22,888.2 MiB; 12 cores: 15.07 % < 1/4
    a = rs.advise(obs("NVIDIA L4", fb_peak_mib=3000.0), rs.Params(hami=True))
    assert (a.action, a.hami.cores, a.hami.memory_mib) == (rs.HAMI, 12, 3450)
    assert a.fraction_advised == pytest.approx(3450 / (24 * MIB_PER_GB))
    assert rs.advise(obs("NVIDIA L4", fb_peak_mib=3000.0)).action == rs.SHARE


def test_the_yaml_of_a_hami_share():
    from datetime import datetime, timezone

    from apps.accounting.usage.workloads import WorkloadUsage
    from apps.recommendations.rightsizing.rows import workload_yaml

    u = WorkloadUsage(cluster_id=1, namespace="ml", workload_kind="Deployment", workload_name="infer", gpu_model=H100,
                      mig_profile="", gpu_fraction=1.0, pods=1, first_hour=datetime(2026, 11, 1, tzinfo=timezone.utc),
                      hours=48, pod_hours=48, device_hours=48, gpu_seconds=48 * 3600.0, used_gpu_seconds=1000.0,
                      idle_gpu_seconds=0.0, mig_seconds=0.0, activity_p95=0.10, fb_hours=48, fb_peak_mib=8 * GIB,
                      fb_p95_mib=8 * GIB)
    assert workload_yaml(u, rs.advise(obs(), rs.Params(hami=True))) == (
        "# Deployment infer in namespace ml: in each container that asks for a GPU (HAMi)\n"
        "resources:\n  limits:\n    nvidia.com/gpu: 1\n    nvidia.com/gpucores: 12\n"
        "    nvidia.com/gpumem: 9421   # instead of nvidia.com/gpu\n")
