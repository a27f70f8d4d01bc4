"""Hand-built series served through the pipeline's fetcher seam (no HTTP)."""
from datetime import datetime, timezone

from apps.ingest.pipeline import ChunkData
from apps.ingest.rollup import LOOKAROUND_SECONDS, Series

H = 3600
# A fixed whole hour in the past: 2026-10-05 10:00 UTC.
T0 = int(datetime(2026, 10, 5, 10, tzinfo=timezone.utc).timestamp())
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def dt(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def gpu_labels(uuid, host="node-1", index="0", model=H100, **extra):
    labels = {"gpu": index, "UUID": uuid, "Hostname": host, "modelName": model, "device": f"nvidia{index}",
              "pci_bus_id": f"0000:0{index}:00.0"}
    labels.update(extra)
    return labels


class StaticFetcher:
    """Serves fixed series, cut to each chunk's window and its lookaround as the ingest asks
    Prometheus for them."""

    def __init__(self, dcgm=None, kube_state=None):
        self.dcgm = dcgm or {}
        self.kube_state = kube_state or {}
        self.calls = 0

    @staticmethod
    def _cut(groups, window):
        out = {}
        for role, series in groups.items():
            cut = []
            for s in series:
                samples = [(t, v) for t, v in s.samples
                           if window.start - LOOKAROUND_SECONDS <= t < window.end + LOOKAROUND_SECONDS]
                if samples:
                    cut.append(Series(dict(s.labels), samples))
            out[role] = cut
        return out

    def __call__(self, window):
        self.calls += 1
        return ChunkData(dcgm=self._cut(self.dcgm, window), kube_state=self._cut(self.kube_state, window))


def small_cluster_fetcher():
    """Two hours at 60 s: one H100 held by ml/train (busy, then idle), one A100 1g.10gb MIG instance
    held by serve/emb at 40 %, one H100 nobody holds, and a pending pod asking for 2 GPUs."""
    busy_then_idle = Series(
        gpu_labels("GPU-A", namespace="ml", pod="train", container="c"),
        [(T0 + i * 60, 90.0 if i < 60 else 0.0) for i in range(120)],
    )
    mig = Series(
        gpu_labels("GPU-B", host="node-2", model=A100, GPU_I_PROFILE="1g.10gb", GPU_I_ID="3",
                   namespace="serve", pod="emb", container="s"),
        [(T0 + i * 60, 0.4) for i in range(120)],
    )
    free = Series(gpu_labels("GPU-C", index="1"), [(T0 + i * 60, 0.0) for i in range(120)])
    phase = Series({"namespace": "ml", "pod": "waiting", "uid": "u1", "phase": "Pending"},
                   [(T0 + i * 60, 1.0) for i in range(30)])
    request = Series({"namespace": "ml", "pod": "waiting", "uid": "u1", "container": "c", "node": "",
                      "resource": "nvidia_com_gpu", "unit": "integer"}, [(T0 + i * 60, 2.0) for i in range(30)])
    labels = [Series({"namespace": "ml", "label_team": "research"}, [(T0, 1.0)]),
              Series({"namespace": "serve", "label_team": "search"}, [(T0, 1.0)])]
    quota = [Series({"namespace": "ml", "resourcequota": "q", "resource": "requests.nvidia.com/gpu", "type": t},
                    [(T0 + i * 60, v) for i in range(120)]) for t, v in (("hard", 4.0), ("used", 1.0))]
    return StaticFetcher(
        dcgm={"whole_util": [busy_then_idle, free], "mig_util": [mig]},
        kube_state={"phase": [phase], "requests": [request], "namespace_labels": labels, "quota": quota},
    )
