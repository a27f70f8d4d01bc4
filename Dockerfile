# The portal's image: web (gunicorn), worker and beat (Celery) and the migrations Job all run it
# (docs/deploy.md). It runs as uid 10001, never root; the code and collected static files belong
# to root and are only readable, so the root file system can be mounted read-only.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    HOME=/tmp

RUN groupadd --system --gid 10001 gpuportal \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin gpuportal

WORKDIR /app
# Dependencies first, in their own layer: they change less often than the code.
COPY pyproject.toml ./
RUN pip install .
COPY . .
# The static files are collected now, not at start-up (DEBUG off: whitenoise's manifest), and the
# code compiled now: with PYTHONDONTWRITEBYTECODE and a read-only file system, every process
# (a worker, the migrations Job, `manage.py ingest`) would otherwise compile it from source.
RUN DEBUG=false SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v 0 \
 && python -m compileall -q apps gpuportal >/dev/null \
 && chmod -R a+rX,go-w /app

USER 10001
# 8000: gunicorn's request workers; 8001: the health listener the probes ask (docs/deploy.md).
EXPOSE 8000 8001
CMD ["gunicorn", "-c", "gpuportal/gunicorn.conf.py", "gpuportal.wsgi:application"]
