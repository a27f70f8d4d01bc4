"""Deterministic scenario builders: a small hand-shaped cluster and a large random fleet.

Both work on sample indices (k in start + k*interval) so every arrival and departure falls
on a sample timestamp, then convert to unix seconds at the end.
"""
from __future__ import annotations

import random

from .exporter import DEFAULT_COUNTERS, DEFAULT_VERSION, ExporterProfile
from .scenario import (
    DeviceKey,
    PendingPod,
    Scenario,
    SimDevice,
    SimPod,
    _gpu_uuid,
    default_start,
    resource_name,
)

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
A30 = "NVIDIA A30"
L4 = "NVIDIA L4"      # no MIG: right-sizing can only share it (time-slicing)
A100_MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
A30_MIG_LAYOUT = ["2g.12gb", "1g.6gb", "1g.6gb"]
# GPU instance ids that the driver hands out for these profiles (cosmetic, but realistic).
_A100_GI_IDS = {"3g.40gb": [1, 2], "2g.20gb": [3, 4, 5], "1g.10gb": [9, 10, 11, 12, 13, 14]}
_A30_GI_IDS = {"2g.12gb": [1, 2], "1g.6gb": [3, 4, 5, 6]}

NAMESPACE_TEAMS = {
    "ml-research": "research",
    "search-serving": "search",
    "notebooks": "research",
    "batch": "platform",
    "sandbox": None,  # a namespace nobody labelled: reported as `unassigned`
}
QUOTAS = {"ml-research": 32, "search-serving": 8, "notebooks": 4, "batch": 8}
_RANDOM_WORKLOADS = [  # (namespace, pod prefix, container, patterns to draw from)
    ("ml-research", "finetune", "trainer", ["busy", "busy", "bursty", "mixed"]),
    ("search-serving", "embedder", "server", ["bursty", "mixed", "busy"]),
    ("notebooks", "jupyter", "notebook", ["idle", "mixed", "bursty"]),
    ("batch", "etl", "worker", ["busy", "bursty"]),
    ("sandbox", "scratch", "main", ["idle", "mixed"]),
]


class _Occupancy:
    """Which sample-index intervals each device is already held for."""

    def __init__(self):
        self.busy: dict[DeviceKey, list[tuple[int, int]]] = {}

    def is_free(self, key: DeviceKey, k0: int, k1: int) -> bool:
        return all(k1 <= a or k0 >= b for a, b in self.busy.get(key, []))

    def take(self, key: DeviceKey, k0: int, k1: int) -> None:
        self.busy.setdefault(key, []).append((k0, k1))

    def free_stretches(self, key: DeviceKey, n_samples: int) -> list[tuple[int, int]]:
        stretches, cursor = [], 0
        for a, b in sorted(self.busy.get(key, [])):
            if a > cursor:
                stretches.append((cursor, a))
            cursor = max(cursor, b)
        if cursor < n_samples:
            stretches.append((cursor, n_samples))
        return stretches


def _make_node(rng, host, gpus, model, mig_layout_for=None) -> list[SimDevice]:
    """Whole GPUs, or MIG instances when mig_layout_for(gpu_index) gives a (model, layout)."""
    devices = []
    bus = rng.randrange(0x07, 0x20)
    for gpu in range(gpus):
        uuid = _gpu_uuid(rng)
        pci = f"00000000:{bus + gpu * 0x10:02X}:00.0"
        if mig_layout_for is None:
            devices.append(SimDevice(host, gpu, uuid, model, pci))
            continue
        gpu_model, layout = mig_layout_for(gpu)
        id_pool = {p: list(ids) for p, ids in (_A30_GI_IDS if gpu_model == A30 else _A100_GI_IDS).items()}
        for profile in layout:
            gi_id = str(id_pool[profile].pop(0))
            devices.append(SimDevice(host, gpu, uuid, gpu_model, pci, profile, gi_id))
    return devices


def _pod_name(rng, prefix) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return f"{prefix}-{''.join(rng.choice(alphabet) for _ in range(5))}"


def _fill_randomly(rng, devices, occupancy, n_samples, samples_per_hour, add_pod, leave_idle=()):
    """Fill free stretches with single-device pods, leaving random unallocated gaps."""
    for device in devices:
        if device.key in leave_idle:
            continue
        for s0, s1 in occupancy.free_stretches(device.key, n_samples):
            k = s0
            while k < s1:
                gap = rng.randrange(0, max(2, samples_per_hour))  # up to an hour unallocated
                k0 = k + gap
                if k0 >= s1:
                    break
                length = rng.randrange(max(2, samples_per_hour // 2), max(3, 3 * samples_per_hour))
                k1 = min(s1, k0 + length)
                ns, prefix, container, patterns = rng.choice(_RANDOM_WORKLOADS)
                add_pod(ns, _pod_name(rng, prefix), container, [device.key], k0, k1, rng.choice(patterns))
                k = k1


class _Builder:
    def __init__(self, name, start, hours, interval_seconds, seed):
        self.rng = random.Random(seed)
        self.start = default_start() if start is None else int(start)
        self.interval_seconds = interval_seconds
        self.n_samples = int(hours * 3600) // interval_seconds
        self.samples_per_hour = max(1, 3600 // interval_seconds)
        self.occupancy = _Occupancy()
        self.pods: list[SimPod] = []
        self.pending: list[PendingPod] = []
        self.name = name

    def ts(self, k: int) -> int:
        return self.start + min(max(k, 0), self.n_samples) * self.interval_seconds

    def k(self, fraction: float) -> int:
        return int(self.n_samples * fraction)

    def add_pod(self, ns, name, container, keys, k0, k1, pattern, shared=False):
        if k1 <= k0:
            return None
        if not shared:
            if not all(self.occupancy.is_free(key, k0, k1) for key in keys):
                return None
            for key in keys:
                self.occupancy.take(key, k0, k1)
        pod = SimPod(ns, name, container, list(keys), self.ts(k0), self.ts(k1), pattern)
        self.pods.append(pod)
        return pod

    def add_pending(self, ns, name, container, resource, count, k0, k1):
        self.pending.append(PendingPod(ns, name, container, resource, count, self.ts(k0), self.ts(k1)))

    @property
    def end(self) -> int:
        return self.start + self.n_samples * self.interval_seconds


def build_scenario(name="sim", start=None, hours=6, interval_seconds=30, spelling="plain",
                   hostname_label=None, seed=1, nodes=3, gpus_per_node=4, mig_nodes=1,
                   time_slicing=False, replicas=(), idle_notebook_hours=0, counters=DEFAULT_COUNTERS,
                   exporter_version=DEFAULT_VERSION, dra_claim=False, hami=False, right_sizable=False) -> Scenario:
    """A small cluster with a hand-shaped story (see the comments below) plus random fill.

    `dra_claim`: one GPU handed out through ResourceClaims (DRA) instead of device-plugin requests.
    `hami`: one GPU shared by three pods through HAMi (gpucores / gpumem).
    `idle_notebook_hours`: a notebook left idle on a whole GPU for the last so many hours,
    still running at the end (the demo's "forgotten notebook" for a team lead to chase).
    `right_sizable`: two light servers that right-sizing can shrink (docs/demo.md): one on a whole
    H100 for the history's last 40 % (fits a MIG 1g.10gb), one on the first GPU of an extra node of
    two L4s, which have no MIG, for its last half (fits a time-sliced quarter of the GPU).
    `counters`, `exporter_version`: the dcgm-exporter imitated (docs/demo.md, "The simulated exporter");
    `hostname_label` None follows the version."""
    b = _Builder(name, start, hours, interval_seconds, seed)
    rng = b.rng
    whole_nodes = max(1, nodes - mig_nodes)
    devices: list[SimDevice] = []
    node_devices: list[list[SimDevice]] = []
    for n in range(whole_nodes):
        model = H100 if n % 2 == 0 else A100
        host = f"gpu-node-{n:02d}"
        node_devices.append(_make_node(rng, host, gpus_per_node, model))
    mig_node_devices: list[list[SimDevice]] = []
    for n in range(mig_nodes):
        def layout(gpu, gpus=gpus_per_node):
            # the last GPU of a MIG node is an A30, so both slice denominators (7 and 4) occur
            return (A30, A30_MIG_LAYOUT) if gpus > 1 and gpu == gpus - 1 else (A100, A100_MIG_LAYOUT)
        mig_node_devices.append(_make_node(rng, f"mig-node-{n:02d}", gpus_per_node, None, layout))
    share_node: list[SimDevice] = []
    if right_sizable:
        # its own generator: the other nodes' GPUs keep their UUIDs
        share_node = _make_node(random.Random(f"{seed}|share-node"), f"gpu-node-{whole_nodes:02d}", 2, L4)
    for group in node_devices + mig_node_devices + [share_node]:
        devices.extend(group)

    time_sliced: set[DeviceKey] = set()
    leave_idle: set[DeviceKey] = set()
    # A multi-GPU training job on the whole first node for most of the window.
    first = node_devices[0]
    b.add_pod("ml-research", "llm-pretrain-worker-0", "trainer", [d.key for d in first], b.k(0.05), b.k(0.6), "busy")
    if idle_notebook_hours:
        k0 = max(b.k(0.6), b.n_samples - int(idle_notebook_hours * 3600) // interval_seconds)
        b.add_pod("notebooks", "jupyter-erin", "notebook", [first[0].key], k0, b.n_samples, "idle")
    if len(node_devices) > 1:
        second = node_devices[1]
        # The same notebook, re-created on another GPU: same name, new uid, new device.
        b.add_pod("notebooks", "jupyter-alice", "notebook", [second[0].key], b.k(0.1), b.k(0.4), "idle")
        if len(second) > 1:
            b.add_pod("notebooks", "jupyter-alice", "notebook", [second[1].key], b.k(0.45), b.k(0.8), "mixed")
        if len(second) > 2:
            b.add_pod("batch", "etl-nightly-7f9c2", "worker", [second[2].key], b.k(0.0), b.k(0.5), "bursty")
            b.add_pod("sandbox", "scratch-h2k4d", "main", [second[2].key], b.k(0.55), b.k(0.9), "mixed")
        if len(second) > 3:
            last = second[3].key
            if time_slicing:
                # Three notebooks share one GPU through time-slicing, with staggered arrivals.
                time_sliced.add(last)
                b.add_pod("notebooks", "jupyter-bob", "notebook", [last], b.k(0.1), b.k(0.5), "bursty", shared=True)
                b.add_pod("notebooks", "jupyter-carol", "notebook", [last], b.k(0.2), b.k(0.7), "busy", shared=True)
                b.add_pod("ml-research", "eval-small", "eval", [last], b.k(0.3), b.k(0.4), "idle", shared=True)
            # Unallocated for the first half either way (time-sliced or not).
            leave_idle.add(last)
            if not time_slicing:
                b.add_pod("ml-research", "finetune-late", "trainer", [last], b.k(0.5), b.k(0.95), "busy")
    if right_sizable:
        if len(first) > 1:
            b.add_pod("search-serving", "reranker-small-7xk2q", "server", [first[1].key], b.k(0.6), b.n_samples, "light")
        b.add_pod("search-serving", "embedder-small-4bq9z", "server", [share_node[0].key], b.k(0.5), b.n_samples,
                  "light")
    hami_shares: dict[str, tuple[int, int]] = {}
    if hami and len(node_devices) > 2:
        # The search team's embedders share one GPU through HAMi, with staggered arrivals; the
        # three together ask for 1.29 GPUs (docs/accounting.md, "HAMi fractional GPUs").
        key = node_devices[2][0].key
        leave_idle.add(key)
        for name, pattern, k0, k1, ask in (("embedder-hami-a", "busy", 0.1, 0.6, (30, 20000)),
                                           ("reranker-hami", "bursty", 0.3, 0.8, (20, 40000)),
                                           ("embedder-hami-b", "mixed", 0.5, 0.9, (50, 10000))):
            pod = b.add_pod("search-serving", name, "server", [key], b.k(k0), b.k(k1), pattern, shared=True)
            if pod is not None:
                hami_shares[pod.uid] = ask
    for group in mig_node_devices:
        for i, device in enumerate(group):
            if device.mig_profile == "1g.10gb" and i == 2:
                # A forgotten notebook on a MIG slice: idle all along.
                b.add_pod("notebooks", "jupyter-dave", "notebook", [device.key], b.k(0.0), b.k(0.85), "idle")
            elif device.mig_profile in ("3g.40gb", "2g.12gb"):
                b.add_pod("search-serving", _pod_name(rng, "embedder"), "server", [device.key],
                          b.k(0.02), b.k(0.7), "bursty")
    _fill_randomly(rng, devices, b.occupancy, b.n_samples, b.samples_per_hour, b.add_pod,
                   leave_idle=leave_idle | time_sliced)

    # Demand that never gets a GPU: a big job over quota and a MIG request on a full node.
    b.add_pending("ml-research", "llm-pretrain-worker-1", "trainer", "nvidia_com_gpu", 8, b.k(0.2), b.n_samples)
    b.add_pending("search-serving", "embedder-queued", "server", resource_name("1g.10gb"), 1, b.k(0.5), b.k(0.75))

    # A GPU handed out through ResourceClaims (docs/accounting.md, "DRA-allocated GPUs"): the
    # second node's first GPU, whoever holds it (jupyter-alice first).
    dra_claims = {node_devices[1][0].key: "gpu"} if dra_claim and len(node_devices) > 1 else {}
    scenario = Scenario(name=name, start=b.start, end=b.end, interval_seconds=interval_seconds,
                        spelling=spelling, hostname_label=hostname_label, devices=devices,
                        pods=sorted(b.pods, key=lambda p: (p.start, p.namespace, p.name)),
                        pending=b.pending, namespace_teams=dict(NAMESPACE_TEAMS), quotas=dict(QUOTAS),
                        time_sliced=time_sliced, dra_claims=dra_claims, hami_shares=hami_shares, seed=seed,
                        replicas=tuple(replicas),
                        exporter=ExporterProfile(exporter_version, counters))
    scenario.validate()
    return scenario


def build_fleet(gpus=1000, mig_share=0.15, hours=6, interval_seconds=30, seed=1, name="fleet",
                start=None, spelling="plain", hostname_label=None, gpus_per_node=8, counters=DEFAULT_COUNTERS,
                exporter_version=DEFAULT_VERSION) -> Scenario:
    """A large cluster for benchmarks: 8-GPU nodes, about `mig_share` of GPUs partitioned."""
    b = _Builder(name, start, hours, interval_seconds, seed)
    rng = b.rng
    node_count = max(1, -(-gpus // gpus_per_node))
    mig_node_count = round(node_count * mig_share)
    devices: list[SimDevice] = []
    for n in range(node_count):
        count = min(gpus_per_node, gpus - n * gpus_per_node)
        if n < mig_node_count:
            layout = (lambda gpu: (A30, A30_MIG_LAYOUT)) if n % 4 == 3 else (lambda gpu: (A100, A100_MIG_LAYOUT))
            devices.extend(_make_node(rng, f"mig-node-{n:04d}", count, None, layout))
        else:
            devices.extend(_make_node(rng, f"gpu-node-{n:04d}", count, H100 if n % 2 else A100))
    _fill_randomly(rng, devices, b.occupancy, b.n_samples, b.samples_per_hour, b.add_pod)
    for i in range(max(1, gpus // 100)):
        ns = rng.choice(list(QUOTAS))
        k0 = rng.randrange(0, max(1, b.n_samples // 2))
        b.add_pending(ns, _pod_name(rng, "queued"), "main", "nvidia_com_gpu", rng.choice([1, 2, 4, 8]),
                      k0, b.n_samples)
    scenario = Scenario(name=name, start=b.start, end=b.end, interval_seconds=interval_seconds,
                        spelling=spelling, hostname_label=hostname_label, devices=devices,
                        pods=sorted(b.pods, key=lambda p: (p.start, p.namespace, p.name)),
                        pending=b.pending, namespace_teams=dict(NAMESPACE_TEAMS), quotas=dict(QUOTAS),
                        seed=seed, exporter=ExporterProfile(exporter_version, counters))
    scenario.validate()
    return scenario
