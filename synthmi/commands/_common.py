"""Helpers shared by CLI verbs."""
from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLES_FMT = argparse.RawDescriptionHelpFormatter


def split_list(text: str | None) -> list[str]:
    """``"a,b , c"`` -> ``["a", "b", "c"]`` (empty or None -> [])."""
    if not text:
        return []
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_assignments(items: list[str] | None, name: str) -> dict[str, str]:
    """``["age=2", "bmi=0.5"]`` -> ``{"age": "2", "bmi": "0.5"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in split_list(item):
            if "=" not in part:
                raise ValueError(f"The '--{name}' option takes COLUMN=VALUE pairs. Got {part!r} instead.")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def progress_enabled(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


def add_common_flags(p: argparse.ArgumentParser) -> None:
    """``--quiet`` on a verb too (``synthmi VERB --quiet``); SUPPRESS keeps a
    top-level ``synthmi --quiet VERB`` from being overwritten by the default."""
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress output")


def load_original(spec: str):
    """The original frame and a digest of its source.

    Bundled public data get a plain SHA-256; a user's (confidential) file only a
    keyed HMAC, or none without a key (see ``synthmi.report.collect.confidential_digest``).
    """
    from ..data import load_dataset
    from ..report.collect import confidential_digest, frame_sha256

    path = Path(spec)
    public = is_bundled(spec)
    if not public and not path.exists():
        raise FileNotFoundError(f"The '--original' file '{spec}' does not exist.")
    df = load_dataset(spec)
    digest = ("sha256:" + frame_sha256(df)) if public else confidential_digest(path=path)
    return df, digest


def is_bundled(spec: str) -> bool:
    """Whether ``spec`` names one of the bundled public data sets."""
    return str(spec).lower() in ("adult", "nhanes")


def align_original(original, syn):
    """The original restricted to the copies' columns (a release may drop columns), with the
    categorical columns on the levels a DP release declared (see :func:`declared_categories`)."""
    cols = list(syn.copies[0].columns)
    missing = [c for c in cols if c not in original.columns]
    if missing:
        raise ValueError(f"The synthetic copies have columns the original lacks: {missing}.")
    return declared_categories(original[cols], syn)


def declared_categories(original, syn):
    """The original's categorical columns on the levels the release declared (its public domain).

    A CSV reader orders the categories it saw; a DP release's copies carry the declared
    levels in the declared order, so without this the reference levels differ and the
    analysis terms do not line up. Columns whose values fall outside the declared domain
    (a release that mapped them to 'other') are left as read.
    """
    from ..domain import DomainError, PublicDomain

    dom = (getattr(syn, "structure", None) or {}).get("domain")
    if not dom:
        return original
    domain = PublicDomain.from_dict(dom)
    out = original.copy()
    for c in original.columns:
        if c in domain and domain[c].is_discrete:
            try:
                out[c] = domain[c].conform(original[c])
            except DomainError:
                pass
    return out


def synthetic_dir(d: str) -> Path:
    path = Path(d)
    if not path.is_dir():
        raise FileNotFoundError(f"The '--synthetic' directory '{d}' does not exist.")
    return path


def add_spec_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--spec", default=None, metavar="SPEC.json",
        help="release spec (roles, kinds, analyses; see 'synthmi spec'); default: the spec recorded with the copies",
    )


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    """``--original``, one ``--synthetic`` directory and ``--spec``, as the evaluation verbs take them."""
    p.add_argument("--original", default="adult", help="'adult', 'nhanes' or a CSV path (default: adult)")
    p.add_argument("--synthetic", required=True, help="directory written by 'synthmi synthesize'")
    add_spec_argument(p)


def load_spec_option(args: argparse.Namespace, syn=None):
    """The ``--spec`` file, else the spec recorded with the copies ``syn``, else None."""
    from ..spec import ReleaseSpec

    path = getattr(args, "spec", None)
    if path:
        return ReleaseSpec.load(path)
    return getattr(syn, "spec", None)


def load_release(args: argparse.Namespace):
    """(full original, original restricted to the copies' columns, SyntheticData).

    The original must be the data the copies were fitted to (row count and
    columns; the keyed HMAC too when ``SYNTHMI_PROVENANCE_KEY`` is set).
    """
    from ..synthetic import SyntheticData

    original_full, _ = load_original(args.original)
    syn = SyntheticData.from_dir(synthetic_dir(args.synthetic))
    syn.check_original(original_full, name=f"--original {args.original}")
    return original_full, align_original(original_full, syn), syn


def write_summary_and_records(args: argparse.Namespace, verb: str, result, extra: dict | None = None) -> None:
    """``--out`` JSON summary (``result.to_dict()`` plus ``extra``) and the per-record
    CSV (``result.to_frame()``) beside it or at ``--records``; prints the report."""
    import json
    import sys

    out = Path(args.out)
    records = Path(args.records) if args.records else out.with_suffix(".csv")
    payload = result.to_dict()
    payload.update(extra or {})
    payload["records_csv"] = str(records)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2, sort_keys=True))
    records.parent.mkdir(parents=True, exist_ok=True)
    result.to_frame().to_csv(records, index_label="record")
    print(result.report())
    if progress_enabled(args):
        print(f"synthmi {verb}: wrote {out} and {records}", file=sys.stderr)
