"""Cluster credentials: never stored in plain text, never shown back (docs/security.md).

A credential comes from one of three places, in this order:

1. a *source*: `file:/path` (a mounted Kubernetes Secret, Prometheus' own `bearer_token_file`
   / `password_file` convention; read at each ingest, so a rotated Secret is picked up) or
   `env:NAME` (an environment variable of the worker);
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


def validate_source(value: str) -> None:
    if not value:
        return
    kind, _, rest = value.partition(":")
    if kind == "file" and rest.startswith("/"):
        return
    if kind == "env" and rest.replace("_", "a").isalnum() and not rest[0].isdigit():
        return
    raise ValidationError(f"{value!r}: expected file:/absolute/path or env:VARIABLE_NAME")


def from_source(source: str, what: str) -> str:
    kind, _, rest = source.partition(":")
    if kind == "file":
        try:
            return Path(rest).read_text().strip()
        except OSError as exc:
            raise CredentialError(f"the {what} file {rest} cannot be read: {exc.strerror or exc}") from None
    if kind == "env":
        value = os.environ.get(rest)
        if value is None:
            raise CredentialError(f"the {what} variable {rest} is not set in this process's environment")
        return value.strip()
    raise CredentialError(f"the {what} source {source!r} is neither file:… nor env:…")


def resolve(source: str, sealed: str, what: str) -> str:
    return from_source(source, what) if source else unseal(sealed)
