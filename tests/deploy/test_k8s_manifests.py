"""deploy/k8s: every overlay renders with `kubectl kustomize`, every object is valid against the
Kubernetes 1.30 schema (offline, strict: an unknown or misspelt field fails), and the things a
schema cannot know hold: non-root pods, probes on paths the portal serves, one beat, a
ServiceMonitor that finds the web Service, and no setting the portal does not read
(docs/deploy.md)."""
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from django.urls import resolve

from gpuportal import health, health_listener, metrics
from tests.deploy.dockerfile import image_cmd, image_user

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").exists())
KUBERNETES_VERSION = "1.30"
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl")
SECRET_NAME = "gpuportal-secrets"
REQUIRED_SECRET_KEYS = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"}
# The web pods also need the token /metrics answers (the ServiceMonitor scrapes with it).
WEB_SECRET_KEYS = REQUIRED_SECRET_KEYS | {"METRICS_TOKEN"}

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (`make setup` installs Debian's "
                                                        "kubernetes-client); the manifests cannot be rendered")


@functools.cache
def rendered(overlay: str) -> tuple[dict, ...]:
    result = subprocess.run([KUBECTL, "kustomize", str(K8S / "overlays" / overlay)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, f"kubectl kustomize {overlay} failed:\n{result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def of_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind, name):
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_specs(objects):
    """(workload name, pod spec) of every Deployment and Job."""
    return [(o["metadata"]["name"], o["spec"]["template"]["spec"]) for o in objects if o["kind"] in ("Deployment", "Job")]


def all_containers(spec):
    return [*spec.get("initContainers", []), *spec["containers"]]


def settings_reads() -> set[str]:
    """The environment variables the settings read, from their source (every part of
    gpuportal/settings/)."""
    source = "\n".join(path.read_text() for path in sorted((ROOT / "gpuportal" / "settings").glob("*.py")))
    names = set(re.findall(r'(?:\benv\.\w+|\b_env_\w+)\(\s*"([A-Z][A-Z0-9_]*)"', source))
    oidc = re.search(r"OIDC_ENV = \(([^)]*)\)", source)
    names |= set(re.findall(r'"([A-Z][A-Z0-9_]*)"', oidc.group(1)))
    return names


def gunicorn_reads() -> set[str]:
    return set(re.findall(r'os\.environ\.get\("([A-Z][A-Z0-9_]*)"', (ROOT / "gpuportal" / "gunicorn.conf.py").read_text()))


def test_there_is_an_overlay_to_render():
    assert "example" in OVERLAYS


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_kubernetes(overlay):
    objects = rendered(overlay)
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == sorted(["Namespace", "ServiceAccount", "ConfigMap", "Service", "Deployment", "Deployment",
                            "Deployment", "PodDisruptionBudget", "Job", "Ingress", "ServiceMonitor"])
    for obj in objects:
        if obj["apiVersion"].startswith("monitoring.coreos.com/"):
            continue   # a CRD: no schema in kubernetes-validate; checked field by field below
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} at {'.'.join(map(str, exc.path))}")
    namespace = named(objects, "Namespace", "gpuportal")["metadata"]["name"]
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"} == {namespace}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_servicemonitor_scrapes_the_web_service_metrics(overlay):
    objects = rendered(overlay)
    (monitor,) = of_kind(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    selector = monitor["spec"]["selector"]["matchLabels"]
    endpoints = monitor["spec"]["endpoints"]
    assert selector and endpoints
    services = [s for s in of_kind(objects, "Service") if selector.items() <= s["metadata"]["labels"].items()]
    assert [s["metadata"]["name"] for s in services] == ["gpuportal-web"]
    service = services[0]
    assert "namespaceSelector" not in monitor["spec"] and monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    port_names = {p["name"] for p in service["spec"]["ports"]}
    web_env = {e["name"]: e for e in named(objects, "Deployment", "gpuportal-web")["spec"]["template"]["spec"]
               ["containers"][0]["env"]}
    for endpoint in endpoints:
        assert endpoint["port"] in port_names
        assert resolve(endpoint["path"]).func is metrics.metrics
        # /metrics answers only the bearer token the web pods hold: the scrape sends that one
        assert endpoint["authorization"]["type"] == "Bearer"
        assert endpoint["authorization"]["credentials"] == web_env["METRICS_TOKEN"]["valueFrom"]["secretKeyRef"]
    # The Service reaches the web pods on the port gunicorn listens on.
    web = named(objects, "Deployment", "gpuportal-web")
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    (http,) = [p for p in service["spec"]["ports"] if p["name"] == endpoints[0]["port"]]
    container_ports = {p["name"]: p["containerPort"] for p in web["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert container_ports[http["targetPort"]] == 8000


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_is_non_root_locked_down_and_sized(overlay):
    uid = image_user()
    assert uid.isdigit() and int(uid) != 0, f"USER {uid}: numeric and not root, so runAsNonRoot can verify it"
    for workload, spec in pod_specs(rendered(overlay)):
        pod = spec.get("securityContext", {})
        assert pod.get("seccompProfile", {}).get("type") == "RuntimeDefault", workload
        assert spec.get("automountServiceAccountToken") is False, workload
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in all_containers(spec):
            where = f"{workload}/{c['name']}"
            ctx = c.get("securityContext", {})
            assert ctx.get("runAsNonRoot", pod.get("runAsNonRoot")) is True, where
            assert str(ctx.get("runAsUser", pod.get("runAsUser"))) == uid, where
            assert ctx.get("allowPrivilegeEscalation") is False, where
            assert ctx.get("capabilities", {}).get("drop") == ["ALL"], where
            assert ctx.get("readOnlyRootFilesystem") is True, where
            requests, limits = c["resources"]["requests"], c["resources"]["limits"]
            assert {"cpu", "memory"} <= requests.keys() and "memory" in limits, where
            # Whatever must be written goes to an emptyDir: /tmp, and the metrics directory.
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            writable = ["/tmp"] + ([env["PROMETHEUS_MULTIPROC_DIR"]] if "PROMETHEUS_MULTIPROC_DIR" in env else [])
            for path in writable:
                assert path in mounts and "emptyDir" in volumes[mounts[path]], f"{where}: {path} is not an emptyDir"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_probes_ask_the_portal_what_they_claim(overlay):
    web = named(rendered(overlay), "Deployment", "gpuportal-web")["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in web["ports"]}
    # Ready: the database and Redis answer. Alive: the process answers (no restarts in a database
    # outage). Both on the health listener's port, which HEALTH_BIND opens: answered while long
    # requests hold every gunicorn worker (tests/deploy/test_health_listener.py).
    expected = {"readinessProbe": "/healthz", "livenessProbe": "/livez", "startupProbe": "/livez"}
    for probe, path in expected.items():
        get = web[probe]["httpGet"]
        assert get["path"] == path and path in health_listener.PATHS, probe
        assert get["port"] == "health", probe
    bind = next(e["value"] for e in web["env"] if e["name"] == "HEALTH_BIND")
    assert bind.rsplit(":", 1)[1] == str(ports["health"]) and ports["http"] != ports["health"]
    service = named(rendered(overlay), "Service", "gpuportal-web")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]      # the listener stays in the pod
    # The request port's own /healthz and /livez stay, for monitors outside the cluster.
    assert resolve("/healthz").func is health.healthz and resolve("/livez").func is health.livez
    # Probes and scrapes address the pod by IP: ALLOWED_HOSTS takes the pod's IP on top of the
    # ConfigMap's names, and POD_IP comes first so that the kubelet can expand it.
    env = [e["name"] for e in web["env"]]
    allowed = next(e for e in web["env"] if e["name"] == "ALLOWED_HOSTS")
    assert allowed["value"] == "$(ALLOWED_HOSTS),$(POD_IP)" and env.index("POD_IP") < env.index("ALLOWED_HOSTS")
    assert next(e for e in web["env"] if e["name"] == "POD_IP")["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_beat_runs_alone(overlay):
    beat = named(rendered(overlay), "Deployment", "gpuportal-beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert beat["spec"]["template"]["spec"]["containers"][0]["command"][3] == "beat"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_setting_given_is_one_the_portal_reads(overlay):
    objects = rendered(overlay)
    (config,) = of_kind(objects, "ConfigMap")
    reads = settings_reads()
    assert set(config["data"]) - reads == set(), "the ConfigMap sets variables gpuportal/settings/ never reads"
    assert not of_kind(objects, "Secret"), "no Secret is committed: the user creates gpuportal-secrets"
    for workload, spec in pod_specs(objects):
        for c in all_containers(spec):
            where = f"{workload}/{c['name']}"
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] == config["metadata"]["name"], where
                else:
                    assert source["secretRef"]["name"] == SECRET_NAME, where
            defined = set(config["data"])
            for e in c.get("env", []):
                assert e["name"] in reads | gunicorn_reads() | {"POD_IP"}, f"{where}: {e['name']} is read by nothing"
                secret = e.get("valueFrom", {}).get("secretKeyRef")
                if secret:
                    assert secret["name"] == SECRET_NAME and secret["key"] in WEB_SECRET_KEYS, where
                for ref in re.findall(r"\$\((\w+)\)", e.get("value", "")):
                    assert ref in defined, f"{where}: $({ref}) is not defined before {e['name']}"
                defined.add(e["name"])
            if c["name"] in ("web", "worker", "beat"):
                given = {e["valueFrom"]["secretKeyRef"]["key"] for e in c["env"] if "secretKeyRef" in e.get("valueFrom", {})}
                assert given == (WEB_SECRET_KEYS if c["name"] == "web" else REQUIRED_SECRET_KEYS), where


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_runs_the_overlays_image(overlay):
    images = {c["image"] for _, spec in pod_specs(rendered(overlay)) for c in all_containers(spec)}
    assert len(images) == 1
    (image,) = images
    assert image != "gpuportal" and re.fullmatch(r"[\w.\-/:]+:[\w.\-]+", image), image


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_production_settings_are_given_explicitly(overlay):
    """The settings default to safe, and the manifests say so too: DEBUG off, no legacy keys,
    /metrics not public (docs/security.md, "Production settings")."""
    (config,) = of_kind(rendered(overlay), "ConfigMap")
    assert config["data"]["DEBUG"] == "false"
    assert config["data"].get("API_LEGACY_TOKENS", "false") == "false"
    assert config["data"].get("METRICS_PUBLIC", "false") == "false"


def test_web_runs_the_images_command():
    web = named(rendered("example"), "Deployment", "gpuportal-web")["spec"]["template"]["spec"]["containers"][0]
    assert web["command"] == image_cmd()
