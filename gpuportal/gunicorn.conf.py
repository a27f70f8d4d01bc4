"""gunicorn's settings for the portal: `gunicorn -c gpuportal/gunicorn.conf.py gpuportal.wsgi`.

Flags on the command line win over these (the tests bind a loopback port that way). The
request metrics' multiprocess directory is looked after here (docs/deploy.md "/metrics"): emptied
when gunicorn starts, so a restarted container does not add the previous run's counts to its
own, and told when a worker exits.

The health listener (`gpuportal/health_listener.py`) is started here once the master is ready
and stopped with it: `/healthz` and `/livez` on `HEALTH_BIND` (default 0.0.0.0:8001; empty: no
listener), answered by a process of its own, so a probe is answered while long requests hold
every worker (docs/deploy.md, "Probes").
"""
import glob
import os
import subprocess
import sys

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT_SECONDS", "120"))
# Workers' heartbeat files go to the temporary directory ($TMPDIR or /tmp): under Kubernetes an
# emptyDir, the root file system being read-only.
# No control socket (gunicornc): nothing uses it, it would be one more thing written under $HOME,
# and every gunicorn of one user on a machine would share its path.
control_socket_disable = True

_multiproc_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
health_bind = os.environ.get("HEALTH_BIND", "0.0.0.0:8001")
_health_listener: list[subprocess.Popen] = []


def on_starting(server):
    if not _multiproc_dir:
        return
    os.makedirs(_multiproc_dir, exist_ok=True)
    for path in glob.glob(os.path.join(_multiproc_dir, "*.db")):
        os.remove(path)


def child_exit(server, worker):
    # The worker's counter and histogram files stay and keep counting in the sum; this drops
    # only what belongs to a live process (gauges in a live* mode).
    if _multiproc_dir:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, _multiproc_dir)


def when_ready(server):
    # Its own process, exec'd rather than forked from the master: the master forks the
    # request workers and stays single-threaded (docs/deploy.md, "Probes").
    # Without PROMETHEUS_MULTIPROC_DIR: it serves no /metrics, and files of its own there would
    # outlive it uncounted as dead (child_exit is for workers).
    if health_bind:
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        _health_listener.append(subprocess.Popen([sys.executable, "-m", "gpuportal.health_listener", health_bind],
                                                 env=env))
        server.log.info("health listener on %s (pid %s)", health_bind, _health_listener[0].pid)


def on_exit(server):
    for listener in _health_listener:
        listener.terminate()
        try:
            listener.wait(timeout=5)
        except subprocess.TimeoutExpired:
            listener.kill()
