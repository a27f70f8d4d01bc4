"""The image, read from the Dockerfile: it ends as a numeric, non-root user, so Kubernetes'
runAsNonRoot can check it, collects static files at build, and serves with the gunicorn config
that looks after the metrics directory (docs/deploy.md)."""
from tests.deploy.dockerfile import ROOT, image_cmd, image_user, instructions


def test_the_image_runs_as_a_numeric_non_root_user_it_creates():
    uid = image_user()
    assert uid.isdigit() and int(uid) != 0, f"USER {uid}: numeric and not root, so runAsNonRoot can verify it"
    assert any(f"--uid {uid}" in run for run in instructions("RUN")), "the user is not created in the image"
    assert len(instructions("FROM")) == 1   # one stage: the last USER is the one that runs


def test_static_files_are_collected_at_build_and_gunicorn_serves_with_the_metrics_config():
    assert any("manage.py collectstatic" in run for run in instructions("RUN"))
    assert image_cmd() == ["gunicorn", "-c", "gpuportal/gunicorn.conf.py", "gpuportal.wsgi:application"]
    assert (ROOT / "gpuportal" / "gunicorn.conf.py").is_file()
