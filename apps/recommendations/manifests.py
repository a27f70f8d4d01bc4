"""YAML snippets to apply: a ResourceQuota or a Kueue ClusterQueue (plain Python + PyYAML)."""
from __future__ import annotations

from typing import Mapping, Sequence

import yaml

GPU_QUOTA_RESOURCE = "requests.nvidia.com/gpu"
MIG_QUOTA_PREFIX = "requests.nvidia.com/mig-"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta1"


def resourcequota_yaml(name: str, namespace: str, hard: Mapping[str, int]) -> str:
    """spec.hard holds quantities as strings, as `kubectl get -o yaml` shows them."""
    doc = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": {resource: str(int(value)) for resource, value in sorted(hard.items())}},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _quantity(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def clusterqueue_yaml(name: str, cohort: str, flavors: Sequence[Mapping]) -> str:
    """`flavors`: [{"name", "resources": [{"name", "nominalQuota", "borrowingLimit"?,
    "lendingLimit"?}]}]. Flavors that cover the same resources share a resource group (Kueue
    requires every flavor of a group to list all of the group's coveredResources)."""
    groups: dict[tuple[str, ...], list] = {}
    for flavor in flavors:
        covered = tuple(sorted(r["name"] for r in flavor["resources"]))
        resources = []
        for r in sorted(flavor["resources"], key=lambda r: r["name"]):
            item = {"name": r["name"], "nominalQuota": _quantity(r["nominalQuota"])}
            for limit in ("borrowingLimit", "lendingLimit"):
                if r.get(limit) is not None:
                    item[limit] = _quantity(r[limit])
            resources.append(item)
        groups.setdefault(covered, []).append({"name": flavor["name"], "resources": resources})
    spec = {}
    if cohort:
        spec["cohort"] = cohort
    spec["resourceGroups"] = [
        {"coveredResources": list(covered), "flavors": fl} for covered, fl in groups.items()
    ]
    doc = {"apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}
    return yaml.safe_dump(doc, sort_keys=False)


def quota_resource_for(mig_profile: str) -> str:
    """The ResourceQuota resource that counts a pod's GPUs: whole GPUs or one MIG profile."""
    return f"{MIG_QUOTA_PREFIX}{mig_profile}" if mig_profile else GPU_QUOTA_RESOURCE


def quota_resource_from_request(resource: str) -> str | None:
    """kube-state-metrics' `nvidia_com_gpu` / `nvidia_com_mig_1g_10gb` → the quota resource."""
    if resource == "nvidia_com_gpu":
        return GPU_QUOTA_RESOURCE
    prefix = "nvidia_com_mig_"
    if resource.startswith(prefix):
        parts = resource[len(prefix):].split("_")
        if len(parts) >= 2:
            return f"{MIG_QUOTA_PREFIX}{parts[0]}.{'.'.join(parts[1:])}"
    return None


def kueue_resource(quota_resource: str) -> str:
    """`requests.nvidia.com/gpu` → `nvidia.com/gpu` (Kueue names resources without the prefix)."""
    return quota_resource.removeprefix("requests.")


def mig_profile_of(quota_resource: str) -> str:
    name = quota_resource.removeprefix("requests.")
    return name.removeprefix("nvidia.com/mig-") if name.startswith("nvidia.com/mig-") else ""


def is_gpu_quota_resource(resource: str) -> bool:
    return resource == GPU_QUOTA_RESOURCE or resource.startswith(MIG_QUOTA_PREFIX)
