"""Provenance of inputs: digests of frames and files, and the fingerprint of an original.

A release records a *fingerprint* of the data it was fitted to (row count and
column set, plus a keyed HMAC of the values when the data holder sets
``SYNTHMI_PROVENANCE_KEY``), so that evaluating the copies against another file
is an error naming what differs instead of a silently wrong report.

A plain hash of confidential data is a confirmation oracle: an intruder who
knows every value but one (the kept columns of a partially synthetic release
are public) can try each candidate for the last and compare hashes. An
HMAC-SHA256 under a secret held by the data holder lets the holder verify the
input later without giving anyone else that oracle, so without a key only the
row count and column names are recorded.
"""
from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
from .errors import InputError

__all__ = [
    "PROVENANCE_KEY_ENV",
    "NOT_RECORDED",
    "frame_sha256",
    "file_sha256",
    "git_state",
    "confidential_digest",
    "original_fingerprint",
    "check_original",
]

#: Environment variable holding the data holder's secret for keyed provenance digests.
PROVENANCE_KEY_ENV = "SYNTHMI_PROVENANCE_KEY"
NOT_RECORDED = f"not recorded (confidential input; set {PROVENANCE_KEY_ENV} to record a keyed HMAC-SHA256)"


def frame_sha256(df: pd.DataFrame) -> str:
    """SHA-256 of a frame's column names, dtypes and values (row order included)."""
    h = hashlib.sha256()
    h.update(repr([(str(c), str(df[c].dtype)) for c in df.columns]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def confidential_digest(df: pd.DataFrame | None = None, path: str | Path | None = None) -> str:
    """Keyed digest (HMAC-SHA256) of confidential input, or :data:`NOT_RECORDED` without a key."""
    key = os.environ.get(PROVENANCE_KEY_ENV)
    if not key:
        return NOT_RECORDED
    mac = hmac.new(key.encode(), digestmod=hashlib.sha256)
    if path is not None:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                mac.update(chunk)
    else:
        mac.update(repr([(str(c), str(df[c].dtype)) for c in df.columns]).encode())
        mac.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return "hmac-sha256:" + mac.hexdigest()


def _canonical_hmac(df: pd.DataFrame, key: str) -> str:
    """HMAC of the values in a dtype-independent form, so that the same file read
    as category or object, int or float, gives the same digest."""
    mac = hmac.new(key.encode(), digestmod=hashlib.sha256)
    for c in sorted(df.columns, key=str):
        s = df[c]
        mac.update(repr(str(c)).encode())
        if pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype) \
                and not pd.api.types.is_bool_dtype(s):
            mac.update(b"n")
            mac.update(np.ascontiguousarray(s.to_numpy(dtype=float, na_value=np.nan)).tobytes())
        else:
            mac.update(b"s")
            txt = s.astype(object).where(s.notna(), None).map(lambda v: "\x00NA" if v is None else str(v))
            mac.update("\x1f".join(txt.tolist()).encode())
    return "hmac-sha256:" + mac.hexdigest()


def original_fingerprint(df: pd.DataFrame, private_count: bool = False) -> dict[str, Any]:
    """Row count, column set and (with a key) keyed HMAC of the data a release was fitted to.

    ``private_count=True`` (differentially private releases): the number of
    records and any digest of the values are themselves private under
    add/remove-one neighbours, so only the column set is recorded.
    """
    fp: dict[str, Any] = {"columns": sorted(map(str, df.columns))}
    if private_count:
        fp["n_rows"] = None
        fp["note"] = "row count and digest withheld: differentially private release"
        return fp
    fp["n_rows"] = int(len(df))
    key = os.environ.get(PROVENANCE_KEY_ENV)
    fp["hmac"] = _canonical_hmac(df, key) if key else None
    return fp


def check_original(original: pd.DataFrame, fingerprint: Mapping[str, Any] | None, name: str = "original",
                   rows: bool = True) -> None:
    """Raise if ``original`` is not the data the release was fitted to.

    The fingerprint's columns must all be in ``original`` (an original may hold
    more columns than were released); on them the row count and, when both the
    release and this session have the provenance key, the keyed HMAC must agree
    (``rows=False``: the columns only). The error names what differs (counts and
    column names, never values).
    """
    if not fingerprint:
        return
    cols = list(fingerprint.get("columns") or [])
    have = {str(c): c for c in original.columns}
    missing = [c for c in cols if c not in have]
    problems = []
    if missing:
        problems.append(f"it lacks the columns {missing} of the data the copies were made from")
    n = fingerprint.get("n_rows")
    if rows and n is not None and int(n) != len(original):
        problems.append(f"it has {len(original)} rows, the copies were made from {int(n)}")
    mac = fingerprint.get("hmac")
    key = os.environ.get(PROVENANCE_KEY_ENV)
    if rows and not problems and mac and key:
        if _canonical_hmac(original[[have[c] for c in cols]], key) != mac:
            problems.append(f"its values differ (the keyed HMAC under {PROVENANCE_KEY_ENV} does not match)")
    if problems:
        raise InputError(
            f"The '{name}' data are not the data these copies were made from: " + "; ".join(problems) + "."
        )


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes (public inputs: bundled data, released copies)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_state() -> dict[str, Any]:
    """Commit of the checkout and whether synthmi/ had uncommitted changes (None outside git)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        return {"commit": None}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "synthmi"], cwd=root, capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}
    if head.returncode != 0:
        return {"commit": None}
    return {"commit": head.stdout.strip(), "synthmi_modified": sorted(line[3:] for line in dirty.stdout.splitlines())}
