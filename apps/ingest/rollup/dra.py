"""GPUs allocated through Dynamic Resource Allocation (ResourceClaims), as dcgm-exporter labels
them with `KUBERNETES_ENABLE_DRA` (4.4.0 on): docs/accounting.md, "DRA-allocated GPUs".

dcgm-exporter copies every series of a GPU once per pod container holding a device of it through
a claim, adding `dra_claim_name`, `dra_claim_namespace`, `dra_driver_name`, `dra_pool_name`,
`dra_device_name` and, for a MIG device, `dra_mig_profile` and `dra_mig_device_uuid`; it never adds
`pod_uid` there. A MIG device is keyed by its parent GPU, so each of the GPU's series (every MIG
instance's, and the board's) comes once per pod holding any MIG device of that GPU, each copy naming
that pod's device. `mig_copies` keeps the copies that are the pod's own instance.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Mapping

DRA_CLAIM_NAME = "dra_claim_name"
DRA_CLAIM_NAMESPACE = "dra_claim_namespace"
DRA_MIG_PROFILE = "dra_mig_profile"
DRA_MIG_DEVICE = "dra_mig_device_uuid"
DRA_LABELS = (DRA_CLAIM_NAME, DRA_CLAIM_NAMESPACE, "dra_driver_name", "dra_pool_name", "dra_device_name",
              DRA_MIG_PROFILE, DRA_MIG_DEVICE)
CLAIM_POD_PREFIX = "claim:"     # the pod of a claim whose series name no pod (docs/accounting.md)


def is_dra(labels: Mapping[str, str]) -> bool:
    return bool(labels.get(DRA_CLAIM_NAME) or labels.get(DRA_CLAIM_NAMESPACE))


def claim_workload(labels: Mapping[str, str], pod: str) -> tuple[str, str]:
    """(namespace, pod) of a DRA series whose workload labels are missing: the claim's namespace,
    and the pod label if there is one, else the claim itself (`claim:<name>`)."""
    namespace = labels.get(DRA_CLAIM_NAMESPACE, "")
    if not namespace:
        return "", ""
    return namespace, pod or f"{CLAIM_POD_PREFIX}{labels.get(DRA_CLAIM_NAME, '')}"


def without_workload(labels: Mapping[str, str], workload_names) -> dict:
    return {k: v for k, v in labels.items() if k not in workload_names and k not in DRA_LABELS}


def mig_copies(chosen: list[tuple], workload_names, workload_of) -> list[tuple]:
    """The chosen (labels, series, scale) with the DRA copies of MIG-mode GPUs sorted out: a MIG
    device handed out by DRA counts as its profile, once.

    - A board series (no `GPU_I_PROFILE`) copied for a MIG device names the GPU, not the pod's
      device: it keeps no workload (outside MIG mode it is the GPU's own capacity).
    - A MIG instance's copies: per GPU and profile, the instances (`GPU_I_ID`) and the devices
      held (distinct `dra_mig_device_uuid`, in the copies whose `dra_mig_profile` is the
      instance's) are paired in order, lowest id with the first device by (namespace, pod,
      device): each instance keeps the copy of its device's pod, an instance no device pairs
      with keeps no workload (unallocated), and every other copy is dropped. The series do not
      say which instance a device is (dcgm-exporter keys it by the parent), so where one GPU has
      several instances of one profile, two pods' utilization can be swapped; their hours are not.
    """
    if not any(labels.get(DRA_MIG_PROFILE) for labels, _s, _scale in chosen):
        return chosen
    out, instances = [], defaultdict(lambda: defaultdict(list))   # (uuid, profile) -> instance id -> copies
    for member in chosen:
        labels = member[0]
        if not labels.get(DRA_MIG_PROFILE):
            out.append(member)
        elif not labels.get("GPU_I_PROFILE"):
            out.append((without_workload(labels, workload_names), *member[1:]))
        else:
            key = (labels.get("UUID") or labels.get("uuid") or "", labels["GPU_I_PROFILE"])
            instances[key][labels.get("GPU_I_ID", "")].append(member)
    for (_uuid, profile), by_id in instances.items():
        held = sorted({(*workload_of(m[0]), m[0].get(DRA_MIG_DEVICE, ""))
                       for copies in by_id.values() for m in copies if m[0].get(DRA_MIG_PROFILE) == profile})
        ids = sorted(by_id, key=lambda i: (len(i), i))
        for n, instance in enumerate(ids):
            copies = by_id[instance]
            holder = held[n] if n < len(held) else None
            mine = [m for m in copies if holder is not None and m[0].get(DRA_MIG_PROFILE) == profile
                    and (*workload_of(m[0]), m[0].get(DRA_MIG_DEVICE, "")) == holder]
            if mine:
                out += mine
            else:       # no device of this profile for it: the instance's own time, unallocated
                m = copies[0]
                out.append((without_workload(m[0], workload_names), *m[1:]))
    return out
