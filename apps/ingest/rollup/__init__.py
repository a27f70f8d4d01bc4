"""Sample-by-sample GPU accounting (docs/accounting.md), in plain Python.

Input: series as Prometheus returns them (labels + raw samples), already restricted to a
window of whole hours. Output: one record per (device, namespace, pod, hour), plus device
inventory, device health, queued demand and quota records. No Django here: the same code
serves ingestion from Prometheus and the demo that feeds simulator samples directly.
"""
from .devices import rollup_devices  # noqa: F401
from .hami import apply_hami  # noqa: F401
from .kube_state import cluster_queues, namespace_teams, pod_owners, rollup_queued, rollup_quota  # noqa: F401
from .labels import (canonical, detect_interval, detect_spelling, device_identity, device_key, gpu_fraction, is_gpu_resource, is_time_slice,  # noqa: F401
                     mig_max_slices, mig_resource_profile, profile_slices, resource_fraction, sanitize_label_key,
                     workload_of)
from .records import *  # noqa: F401,F403
from .records import _finite  # noqa: F401
from .copies import merge_copies  # noqa: F401
from .timeline import LOOKAROUND_SECONDS, durations, typical_spacing  # noqa: F401
