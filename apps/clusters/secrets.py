"""Cluster credentials: never stored in plain text, never shown back (docs/security.md).

A credential comes from one of three places, in this order:

1. a *source*: `file:/path` (a mounted Kubernetes Secret, Prometheus' own `bearer_token_file`
   / `password_file` convention; read at each ingest, so a rotated Secret is picked up) or
   `env:NAME` (an environment variable of the worker). Only files under
   `CLUSTER_CREDENTIALS_DIR` (the resolved path, so neither `..` nor a symbolic link leads out)
   and variables starting with `CLUSTER_CREDENTIALS_ENV_PREFIX` are read: whoever edits a
   cluster must not be able to send `/etc/passwd` or `SECRET_KEY` to a URL of their choosing;
2. a value kept in the database, encrypted with `CREDENTIALS_KEY` (Fernet: AES-128-CBC with an
   HMAC; several comma-separated keys decrypt, the first encrypts, so keys can be rotated);
3. nothing: no credential.
"""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

PREFIX = "fernet:"


class CredentialError(Exception):
    """A credential that cannot be read: one line saying which and why."""


def _fernet() -> MultiFernet:
    keys = [k.strip() for k in (settings.CREDENTIALS_KEY or "").split(",") if k.strip()]
    if not keys:   # development default: derived from SECRET_KEY (docs/security.md says to set one)
        keys = [base64.urlsafe_b64encode(hashlib.sha256(("credentials|" + settings.SECRET_KEY).encode()).digest())]
    return MultiFernet([Fernet(k) for k in keys])


def seal(plain: str) -> str:
    return PREFIX + _fernet().encrypt(plain.encode()).decode() if plain else ""


def unseal(stored: str) -> str:
    if not stored:
        return ""
    if not stored.startswith(PREFIX):
        raise CredentialError("a stored credential is not encrypted (run `manage.py migrate`)")
    try:
        return _fernet().decrypt(stored[len(PREFIX):].encode()).decode()
    except InvalidToken:
        raise CredentialError("a stored credential cannot be decrypted with CREDENTIALS_KEY "
                              "(was the key changed without keeping the old one?)") from None


class SealedField(models.TextField):
    """Holds `seal(value)` in the database; the model attribute is the stored (sealed) text, so
    nothing decrypts a credential except `unseal`, at the moment it is used."""

    def pre_save(self, model_instance, add):
        value = getattr(model_instance, self.attname) or ""
        if value and not value.startswith(PREFIX):
            value = seal(value)
            setattr(model_instance, self.attname, value)
        return value


def source_problem(value: str) -> str:
    """Why a source may not be read, or "" when it may (docs/security.md, "Cluster credentials")."""
    kind, _, rest = value.partition(":")
    if kind == "file" and rest.startswith("/"):
        base = settings.CLUSTER_CREDENTIALS_DIR
        if not base:
            return "file: sources are off (CLUSTER_CREDENTIALS_DIR is empty)"
        if not Path(rest).resolve().is_relative_to(Path(base).resolve()):
            return f"{rest} is outside {base} (CLUSTER_CREDENTIALS_DIR); only files there are read"
        return ""
    if kind == "env" and rest and rest.replace("_", "a").isalnum() and not rest[0].isdigit():
        prefix = settings.CLUSTER_CREDENTIALS_ENV_PREFIX
        if not prefix:
            return "env: sources are off (CLUSTER_CREDENTIALS_ENV_PREFIX is empty)"
        if not rest.startswith(prefix):
            return f"{rest} does not start with {prefix} (CLUSTER_CREDENTIALS_ENV_PREFIX); only such variables are read"
        return ""
    return "expected file:/absolute/path or env:VARIABLE_NAME"


def validate_source(value: str) -> None:
    if value and (problem := source_problem(value)):
        raise ValidationError(f"{value!r}: {problem}")


def from_source(source: str, what: str) -> str:
    if problem := source_problem(source):     # a row saved before the rule, or edited in SQL
        raise CredentialError(f"the {what} source {source!r} is refused: {problem}")
    kind, _, rest = source.partition(":")
    if kind == "file":
        try:
            return Path(rest).read_text().strip()
        except OSError as exc:
            raise CredentialError(f"the {what} file {rest} cannot be read: {exc.strerror or exc}") from None
    value = os.environ.get(rest)
    if value is None:
        raise CredentialError(f"the {what} variable {rest} is not set in this process's environment")
    return value.strip()


def resolve(source: str, sealed: str, what: str) -> str:
    return from_source(source, what) if source else unseal(sealed)
