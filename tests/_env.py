"""Loaded with -p before pytest-django reads settings: tests default to the local Postgres."""
import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuportal")
os.environ.setdefault("SECRET_KEY", "test-secret-key")
