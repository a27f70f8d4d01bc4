"""gunicorn's settings for the portal: `gunicorn -c gpuportal/gunicorn.conf.py gpuportal.wsgi`.

Flags on the command line win over these (the tests bind a loopback port that way). The
request metrics' multiprocess directory is looked after here (docs/deploy.md "/metrics"): emptied
when gunicorn starts, so a restarted container does not add the previous run's counts to its
own, and told when a worker exits.
"""
import glob
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT_SECONDS", "120"))
# Workers' heartbeat files go to the temporary directory ($TMPDIR or /tmp): under Kubernetes an
# emptyDir, the root file system being read-only.
# No control socket (gunicornc): nothing uses it, it would be one more thing written under $HOME,
# and every gunicorn of one user on a machine would share its path.
control_socket_disable = True

_multiproc_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")


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
