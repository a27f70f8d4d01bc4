from decimal import Decimal

import pytest

from tests.support import factories as f


def injected_rate(gpu_model, mig_profile, price_class, day):
    """A stand-in for apps.accounting.pricing.rates.rate_for: 2.00 EUR per GPU-hour, 0.50 per MIG instance-hour."""
    assert price_class == "on_demand"
    if gpu_model not in (f.H100, f.A100):
        return None
    return (Decimal("0.50"), "EUR") if mig_profile else (Decimal("2.00"), "EUR")


@pytest.fixture
def fleet(db):
    """Two days of hand-chosen history on cluster prod, ending at factories.END.

    ml      24 h × 2 GPUs then 24 h × 6, efficiency 25 %, hard 16     -> over-provisioned, target 7
    infer   48 h × 2 GPUs, efficiency 90 %, hard 2, 1 GPU-hour queued -> under-provisioned, 3
    scratch 48 h × 1 GPU, no quota                                    -> no quota, target 2
    empty   no usage at all, hard 8                                    -> over-provisioned, 0
    mig     48 h × 3 × 1g.10gb, hard 3 and at it all the time          -> under-provisioned, 4
    short   the last 12 h × 3 GPUs, no quota                           -> half a day of history
    """
    c = f.make_cluster(ingested_until=f.END)
    hours = f.hours_before(f.END, 48)
    f.make_usage_hours(f.make_device(c, uuid="GPU-ml"), "ml", "train-0", hours[:24], 2, efficiency=0.25)
    f.make_usage_hours(c.devices.get(uuid="GPU-ml"), "ml", "train-1", hours[24:], 6, efficiency=0.25)
    f.make_quota(c, "ml", hours, 16, used=6)
    f.make_usage_hours(f.make_device(c, uuid="GPU-infer"), "infer", "serve-0", hours, 2, efficiency=0.9)
    f.make_quota(c, "infer", hours, 2, used=2)
    f.make_queued(c, "infer", hours[30], 1.0)
    f.make_usage_hours(f.make_device(c, uuid="GPU-scratch"), "scratch", "nb-0", hours, 1)
    f.make_quota(c, "empty", hours, 8, used=0)
    mig = f.make_device(c, uuid="GPU-mig", model=f.A100, mig_profile="1g.10gb", fraction=1 / 7, instance="7")
    f.make_usage_hours(mig, "mig", "tiny-0", hours, 3 / 7)
    f.make_quota(c, "mig", hours, 3, used=3, resource="requests.nvidia.com/mig-1g.10gb", seconds_at_hard=3600.0)
    f.make_usage_hours(f.make_device(c, uuid="GPU-short"), "short", "new-0", hours[-12:], 3)
    vision = f.assign(c, "ml", "vision")
    search = f.assign(c, "infer", "search")
    return {"cluster": c, "vision": vision, "search": search}
