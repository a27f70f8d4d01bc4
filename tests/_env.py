"""Loaded with -p before pytest-django reads settings: tests default to the local Postgres, and
to development settings (DEBUG on, a test key), which production refuses; the production tests
set their own (tests/gpuportal/test_production_settings.py)."""
import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuportal")
os.environ.setdefault("SECRET_KEY", "test-secret-key")
os.environ.setdefault("DEBUG", "true")
