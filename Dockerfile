FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml ./
RUN pip install --no-cache-dir -e . 2>/dev/null || pip install --no-cache-dir .
COPY . .
RUN pip install --no-cache-dir -e . && DEBUG=false SECRET_KEY=build python manage.py collectstatic --noinput
EXPOSE 8000
CMD ["gunicorn", "gpuportal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
