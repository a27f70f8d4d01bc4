"""Writes one chunk's rollups: the hours it covers are replaced whole, devices and namespaces upserted."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from django.db import connection

from apps.accounting.db.bulk import insert_rows, upsert_rows
from apps.accounting.models import DeviceHealthHour, PodOwner, QueuedDemandHour, QuotaHour, UsageHour
from apps.clusters.models import Cluster, ClusterQueueQuota, Device
from apps.teams.labels import LabelsSeen, ensure_label_teams, label_team_names, record_labels_seen
from apps.teams.models import Namespace

from . import rollup
from .models import IngestRun

BULK = 2000


@dataclass
class ChunkData:
    """Everything Prometheus (or the simulator) gives for one chunk of whole hours."""
    dcgm: dict[str, list[rollup.Series]]
    kube_state: dict[str, list[rollup.Series]]


def from_unix(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def rollup_config(cluster: Cluster, spelling: str, interval: float, gpu_pods=None) -> rollup.RollupConfig:
    return rollup.RollupConfig(
        spelling=spelling,
        interval_seconds=interval,
        pinned_interval_seconds=cluster.pinned_interval_seconds or None,
        replica_labels=cluster.replica_label_names,
        time_slicing=cluster.time_slicing,
        gpu_pods=gpu_pods,
        idle_threshold=cluster.effective_idle_threshold,
        util_scale=cluster.metric("gpu_util")[1],
        mig_util_scale=cluster.metric("gr_engine_active")[1],
        fb_scale=cluster.metric("fb_used")[1],
        power_scale=cluster.metric("power")[1],
        temperature_scale=cluster.metric("temperature")[1],
        mig_slices_overrides=cluster.mig_slices_overrides or {},
    )


USAGE_FIELDS = (
    "cluster_id", "device_id", "namespace", "pod", "hour_start", "node", "gpu_model", "mig_profile", "gpu_fraction",
    "sample_count", "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds", "unknown_util_samples",
    "idle_prefix_seconds", "idle_suffix_seconds", "idle_max_run_seconds", "idle_whole_hour", "fb_used_mib_avg",
    "fb_used_mib_max", "power_watts_avg", "energy_joules", "dra_claim",
)
HEALTH_FIELDS = ("cluster_id", "device_id", "hour_start", "temperature_c_avg", "temperature_c_max",
                 "seconds_above_83c", "power_watts_avg", "energy_joules", "xid_codes", "xid_samples")


def first_sample(data: ChunkData) -> float | None:
    """The earliest time at which any series of the cluster has a sample in the chunk's data,
    its look-around before the chunk included (a sample there shows Prometheus holds the
    chunk's first hour whole), or None: Prometheus gave nothing for the chunk."""
    first = None
    for series in (*data.dcgm.values(), *data.kube_state.values()):
        for s in series:
            if isinstance(s, rollup.HourlySeries):
                t = next((h for h, _sum, count, _max in s.hours if count), None)
            else:
                t = s.samples[0][0] if s.samples else None      # samples are time-ordered
            if t is not None and (first is None or t < first):
                first = t
    return first


class _Writer:
    def __init__(self, cluster: Cluster, run: IngestRun, holds_from: float | None = None):
        """`holds_from`: the oldest sample Prometheus holds (unix seconds), None when it does not
        say; then the run's first sample for the cluster stands in for it (`_kept_hours`)."""
        self.cluster = cluster
        self.run = run
        self.holds_from = holds_from
        self.first_sample: float | None = None
        self.kept: set[int] = set()           # stored hours kept: older than anything Prometheus holds
        self.devices = {(d.uuid, d.mig_instance_id): d for d in Device.objects.filter(cluster=cluster)}
        self.namespaces = {n.name: n for n in Namespace.objects.filter(cluster=cluster)}
        self.warnings: list[str] = []
        self.spans_changed: set[tuple] = set()
        self.duplicates = 0
        self.labels_seen: dict[str, rollup.NamespaceLabelRecord] = {}   # the run's, merged at its end
        # the run's pods' workloads, upserted at its end: (namespace, pod) -> (owner kind, owner name,
        # workload kind, workload name, last seen), tuples rather than model instances, since a
        # 3-day run at 1,000 GPUs sees ~46,000 pods (docs/performance.md, "Peak memory of ingest")
        self.owners: dict[tuple[str, str], tuple] = {}

    def _interval(self, data: ChunkData) -> float:
        """The chunk's typical scrape interval: shown to admins, and the duration of a sample
        only when its series has no other sample to measure against (docs/accounting.md)."""
        c = self.cluster
        series = data.dcgm.get("whole_util", []) + data.dcgm.get("mig_util", [])
        detected = rollup.detect_interval(series)
        if detected and detected != c.detected_interval_seconds:
            c.detected_interval_seconds = detected
            c.save(update_fields=["detected_interval_seconds"])
        return detected or c.detected_interval_seconds or 30.0

    def _ksm_interval(self, data: ChunkData, fallback: float) -> float:
        return rollup.detect_interval(data.kube_state.get("phase", []) + data.kube_state.get("requests", [])) or fallback

    def _gpu_pods(self, data: ChunkData):
        """Pods kube-state-metrics shows requesting a GPU near the chunk, or None when it shows
        none (then only the exporter's own pods are recognised): docs/accounting.md."""
        if not self.cluster.verify_workloads:
            return None
        k = data.kube_state
        series = k.get("gpu_pods")
        if series is None:
            series = [s for s in k.get("requests", []) if rollup.is_gpu_resource(s.labels.get("resource", ""))]
        pods = set()
        for s in series:
            lb = s.labels
            ns = lb.get("exported_namespace") or lb.get("namespace", "")
            pod = lb.get("exported_pod") or lb.get("pod", "")
            if ns and pod:
                pods.add((ns, pod))
        if not pods:
            if any(data.dcgm.get(r) for r in ("whole_util", "mig_util")) and \
                    "kube-state-metrics shows no GPU requests" not in " ".join(self.warnings):
                self.warnings.append("kube-state-metrics shows no GPU requests in this window: workloads named by "
                                     "DCGM labels could not be verified (only dcgm-exporter's own pods were excluded)")
            return None
        return frozenset(pods)
    def _spelling(self, data: ChunkData) -> str:
        """The cluster's workload spelling; `exported` and `old`, once seen, stay (sticky): a
        window without workloads must not fall back to `plain` and bill the exporter's pod."""
        c = self.cluster
        if c.label_spelling != "auto":
            return c.label_spelling
        if c.detected_label_spelling in ("exported", "old"):
            return c.detected_label_spelling
        names = set()
        for series in data.dcgm.values():
            for s in series:
                names.update(s.labels)
        detected = rollup.detect_spelling(names)
        if detected != c.detected_label_spelling:
            c.detected_label_spelling = detected
            c.save(update_fields=["detected_label_spelling"])
        return detected

    def write_chunk(self, window: rollup.Window, data: ChunkData) -> None:
        interval = self._interval(data)
        cfg = rollup_config(self.cluster, self._spelling(data), interval, self._gpu_pods(data))
        d = data.dcgm
        result = rollup.rollup_devices(
            cfg, window, d.get("whole_util", []), d.get("mig_util", []), d.get("fb_used", []),
            d.get("power", []), d.get("temperature", []), d.get("xid", []),
        )
        k = data.kube_state
        rollup.apply_hami(cfg, window, result, k)      # GPUs HAMi shares: split among their pods
        ksm_interval = self._ksm_interval(data, interval)
        queued = rollup.rollup_queued(window, ksm_interval, k.get("phase", []), k.get("requests", []),
                                      cfg.replica_labels, cfg.pinned_interval_seconds)
        quotas = rollup.rollup_quota(window, ksm_interval, k.get("quota", []), cfg.replica_labels,
                                     cfg.pinned_interval_seconds)
        labels_in_window = [rollup.Series(s.labels, [(t, v) for t, v in s.samples if window.contains(t)])
                            for s in k.get("namespace_labels", [])]
        teams = rollup.namespace_teams([s for s in labels_in_window if s.samples], self.cluster.team_label_key)
        self.duplicates += result.duplicates
        for w in result.warnings:
            if w not in self.warnings:
                self.warnings.append(w)

        self._upsert_devices(result.devices)
        namespaces = {u.namespace for u in result.usage if u.namespace} | {q.namespace for q in queued} | set(teams)
        self._upsert_namespaces(namespaces)
        self._keep_labels(teams)

        cluster = self.cluster
        kept = self._kept_hours(window, data)
        hours = [from_unix(h) for h in window.hours() if h not in kept]
        for model in (UsageHour, DeviceHealthHour, QueuedDemandHour, QuotaHour):
            model.objects.filter(cluster=cluster, hour_start__in=hours).delete()
        if kept:
            result.usage = [u for u in result.usage if u.hour_start not in kept]
            result.health = [h for h in result.health if h.hour_start not in kept]
            queued = [q for q in queued if q.hour_start not in kept]
            quotas = [q for q in quotas if q.hour_start not in kept]
        cid = cluster.pk
        rows = [
            (cid, self.devices[u.device_key].pk, u.namespace, u.pod, from_unix(u.hour_start), u.node, u.gpu_model,
             u.mig_profile, u.gpu_fraction, u.sample_count, u.gpu_seconds, u.used_gpu_seconds, u.idle_gpu_seconds,
             u.mig_seconds, u.unknown_util_samples, u.idle_prefix_seconds, u.idle_suffix_seconds,
             u.idle_max_run_seconds, u.idle_whole_hour, u.fb_used_mib_avg, u.fb_used_mib_max, u.power_watts_avg,
             u.energy_joules, u.dra_claim)
            for u in result.usage
        ]
        insert_rows(UsageHour, USAGE_FIELDS, rows)
        health = [
            (cid, self.devices[h.device_key].pk, from_unix(h.hour_start), h.temperature_c_avg, h.temperature_c_max,
             h.seconds_above_83c, h.power_watts_avg, h.energy_joules, h.xid_codes, h.xid_samples)
            for h in result.health
        ]
        insert_rows(DeviceHealthHour, HEALTH_FIELDS, health)
        QueuedDemandHour.objects.bulk_create([
            QueuedDemandHour(cluster=cluster, namespace=q.namespace, pod=q.pod, resource=q.resource,
                             hour_start=from_unix(q.hour_start), requested=q.requested,
                             pending_seconds=q.pending_seconds, queued_gpu_seconds=q.queued_gpu_seconds)
            for q in queued
        ], batch_size=BULK)
        QuotaHour.objects.bulk_create([
            QuotaHour(cluster=cluster, namespace=q.namespace, resource=q.resource,
                      hour_start=from_unix(q.hour_start), hard=q.hard, used_max=q.used_max,
                      seconds_at_hard=q.seconds_at_hard)
            for q in quotas
        ], batch_size=BULK)
        queues = rollup.cluster_queues(k.get("kueue_nominal", []), k.get("kueue_borrowing", []),
                                       k.get("kueue_lending", []), k.get("kueue_pending", []))
        self._upsert_cluster_queues(queues)
        self._collect_owners(window, k, {(u.namespace, u.pod) for u in result.usage if u.namespace})
        self.run.rows_written += len(rows) + len(health) + len(queued) + len(quotas) + len(queues)
        self.run.samples_read += result.samples_read

    def _kept_hours(self, window: rollup.Window, data: ChunkData) -> set[int]:
        """The chunk's hours that keep their stored rows: those that start before the oldest
        sample Prometheus holds for the cluster and have rows stored. Prometheus no longer knows
        them (retention), so rewriting them from it would delete them (docs/ingest.md,
        "Re-ingest and Prometheus' retention"). Without the server's own figure, the first sample
        of the run stands in; a chunk before any sample keeps all its stored hours."""
        oldest = self.holds_from
        if oldest is None:
            if self.first_sample is None:
                self.first_sample = first_sample(data)
            oldest = self.first_sample if self.first_sample is not None else window.end
        older = [from_unix(h) for h in window.hours() if h < oldest]
        if not older:
            return set()
        stored = set()
        for model in (UsageHour, DeviceHealthHour, QueuedDemandHour, QuotaHour):
            stored.update(model.objects.filter(cluster=self.cluster, hour_start__in=older)
                          .values_list("hour_start", flat=True).distinct())
        kept = {int(h.timestamp()) for h in stored}
        self.kept |= kept
        return kept

    def _kept_note(self) -> str | None:
        """The run log's line on the hours kept, or None when none were."""
        if not self.kept:
            return None
        oldest = self.holds_from if self.holds_from is not None else self.first_sample
        n = len(self.kept)
        hours = f"kept {n} stored hour{'s' if n != 1 else ''}"
        if oldest is None or oldest >= self.run.window_end.timestamp():
            return f"Prometheus holds nothing for {self.cluster.name} in this window: {hours}"
        return f"Prometheus holds nothing before {from_unix(oldest):%Y-%m-%d %H:%M} UTC: {hours}"

    def _upsert_devices(self, infos: dict) -> None:
        """New devices now; seen-spans widened in memory and written once in finish()."""
        new, changed = [], []
        for key, info in infos.items():
            first, last = from_unix(info.first_seen), from_unix(info.last_seen)
            dev = self.devices.get(key)
            if dev is None:
                dev = Device(cluster=self.cluster, uuid=info.uuid, mig_instance_id=info.mig_instance_id,
                             gpu_index=info.gpu_index, host=info.host, model_name=info.model_name,
                             mig_profile=info.mig_profile, pci_bus_id=info.pci_bus_id,
                             gpu_fraction=info.gpu_fraction, first_seen=first, last_seen=last)
                new.append(dev)
                self.devices[key] = dev
                continue
            if dev.host != info.host or dev.model_name != info.model_name or dev.gpu_fraction != info.gpu_fraction:
                dev.host, dev.model_name, dev.gpu_fraction = info.host, info.model_name, info.gpu_fraction
                changed.append(dev)
            if first < dev.first_seen or last > dev.last_seen:
                dev.first_seen, dev.last_seen = min(first, dev.first_seen), max(last, dev.last_seen)
                self.spans_changed.add(key)
        if new:
            # Ingests of other days of this cluster may create the same devices concurrently:
            # skip conflicts, then read back whichever row won (it is committed by then).
            Device.objects.bulk_create(sorted(new, key=lambda d: (d.uuid, d.mig_instance_id)), batch_size=BULK,
                                       ignore_conflicts=True)
            stored = {(d.uuid, d.mig_instance_id): d
                      for d in Device.objects.filter(cluster=self.cluster, uuid__in={d.uuid for d in new})}
            for d in new:
                key = (d.uuid, d.mig_instance_id)
                if stored[key].first_seen > d.first_seen or stored[key].last_seen < d.last_seen:
                    stored[key].first_seen = min(stored[key].first_seen, d.first_seen)
                    stored[key].last_seen = max(stored[key].last_seen, d.last_seen)
                    self.spans_changed.add(key)
                self.devices[key] = stored[key]
        if changed:
            Device.objects.bulk_update(changed, ["host", "model_name", "gpu_fraction"], batch_size=BULK)

    def _write_device_spans(self) -> None:
        """first_seen / last_seen of every device whose span grew, in one statement per batch.

        (bulk_update builds a CASE per row and field in the ORM: seconds per chunk for a
        thousand GPUs; widening with LEAST/GREATEST also keeps a concurrent day's wider span.)
        """
        devices = [self.devices[k] for k in sorted(self.spans_changed)]
        self.spans_changed.clear()
        if not devices:
            return
        if connection.vendor != "postgresql":
            Device.objects.bulk_update(devices, ["first_seen", "last_seen"], batch_size=BULK)
            return
        table = Device._meta.db_table
        with connection.cursor() as cur:
            for i in range(0, len(devices), BULK):
                batch = devices[i:i + BULK]
                values = ", ".join(["(%s, %s::timestamptz, %s::timestamptz)"] * len(batch))
                params = [x for d in batch for x in (d.pk, d.first_seen, d.last_seen)]
                cur.execute(
                    f"UPDATE {table} AS d SET first_seen = LEAST(d.first_seen, v.f), last_seen = GREATEST(d.last_seen, v.l) "
                    f"FROM (VALUES {values}) AS v(id, f, l) WHERE d.id = v.id", params)

    def _upsert_namespaces(self, names: set[str]) -> None:
        """New namespaces now; their labels are history, written once by record_labels()."""
        new = [Namespace(cluster=self.cluster, name=name) for name in names if name not in self.namespaces]
        if new:
            Namespace.objects.bulk_create(sorted(new, key=lambda n: n.name), ignore_conflicts=True)
            stored = {n.name: n for n in Namespace.objects.filter(cluster=self.cluster, name__in={n.name for n in new})}
            for n in new:
                self.namespaces[n.name] = stored[n.name]

    def _keep_labels(self, teams: dict[str, rollup.NamespaceLabelRecord]) -> None:
        for name, record in teams.items():
            kept = self.labels_seen.get(name)
            if kept is None:
                self.labels_seen[name] = record
            else:
                kept.hours.update(record.hours)
                kept.last_seen = max(kept.last_seen, record.last_seen)

    def record_labels(self) -> None:
        """Every label change the run saw, at its hour (apps/teams/labels.py). Last in the
        run's transaction: it locks the cluster's label history until the commit."""
        seen = {name: LabelsSeen(hours=[(from_unix(h), label) for h, label in sorted(r.hours.items())],
                                 last_seen=from_unix(r.last_seen))
                for name, r in self.labels_seen.items()}
        self.run.rows_written += record_labels_seen(self.cluster, seen)
        ensure_label_teams(label_team_names(seen), self.cluster)
        self.labels_seen.clear()

    def _collect_owners(self, window: rollup.Window, k: dict, pods: set[tuple[str, str]]) -> None:
        """The workload of every pod that held a GPU in the chunk (docs/advice-and-alerts.md,
        "Right-sizing"), kept for the run's end: the latest chunk that saw a pod gives its row."""
        found = rollup.pod_owners(k.get("pod_owner", []), k.get("replicaset_owner", []), k.get("job_owner", []),
                                  k.get("notebook_labels", []))
        seen = from_unix(window.end)
        for key, o in found.items():
            if key in pods and (key not in self.owners or self.owners[key][4] <= seen):
                self.owners[key] = (o.owner_kind, o.owner_name, o.workload_kind, o.workload_name, seen)

    def _upsert_owners(self) -> None:
        """The run's owners in one upsert (once per run, not per chunk: a pod seen in every chunk
        was rewritten each time); a pod keeps its owner for life, so a re-run writes the same."""
        owners, self.owners = self.owners, {}
        self.run.rows_written += upsert_rows(
            PodOwner, ("cluster_id", "namespace", "pod", "owner_kind", "owner_name", "workload_kind", "workload_name",
                       "last_seen"),
            [(self.cluster.pk, namespace, pod, *owners[(namespace, pod)]) for namespace, pod in sorted(owners)],
            unique=("cluster_id", "namespace", "pod"))

    def _upsert_cluster_queues(self, queues) -> None:
        for q in queues:
            observed = from_unix(q.observed_at)
            obj = ClusterQueueQuota.objects.filter(cluster=self.cluster, cluster_queue=q.cluster_queue,
                                                   flavor=q.flavor, resource=q.resource).first()
            if obj is not None and obj.observed_at > observed:
                continue  # an older window re-ingested: keep the newer state
            values = dict(cohort=q.cohort, nominal_quota=q.nominal_quota, borrowing_limit=q.borrowing_limit,
                          lending_limit=q.lending_limit, pending_workloads=q.pending_workloads,
                          observed_at=observed)
            if obj is None:
                ClusterQueueQuota.objects.create(cluster=self.cluster, cluster_queue=q.cluster_queue,
                                                 flavor=q.flavor, resource=q.resource, **values)
            else:
                for name, value in values.items():
                    setattr(obj, name, value)
                obj.save()

    def finish(self) -> None:
        self._write_device_spans()
        self._upsert_owners()
        if self.duplicates:
            self.warnings.insert(0, f"{self.duplicates} duplicate utilization sample(s) (copies of a device's series "
                                    "from a Prometheus HA pair, several scrape jobs or an exporter restart) were "
                                    "counted once")
        note = self._kept_note()
        if note:
            self.warnings.insert(0, note)
        self.run.warnings = self.warnings
