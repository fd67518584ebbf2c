"""Helpers shared by CLI verbs."""
from __future__ import annotations

import argparse
import csv
import os
import tempfile
from pathlib import Path
from ..errors import InputError, InputNotFound

EXAMPLES_FMT = argparse.RawDescriptionHelpFormatter

#: how to name a column whose name holds a comma, for the help texts
COMMA_NAMES_HELP = 'a name holding a comma goes in double quotes: --qi \'age,"income, household"\''


def split_list(text: str | list[str] | None) -> list[str]:
    """``"a,b , c"`` -> ``["a", "b", "c"]`` (empty or None -> []).

    A name holding a comma is written in double quotes (CSV quoting):
    ``'age,"income, household"'`` -> ``["age", "income, household"]``. A list
    (a repeated option) is the concatenation of its items' lists.
    """
    if not text:
        return []
    if isinstance(text, (list, tuple)):
        return [t for item in text for t in split_list(item)]
    try:
        fields = next(csv.reader([text], skipinitialspace=True, strict=True))
    except csv.Error:
        raise InputError(
            f"A comma-separated list has an unbalanced double quote: {text!r}. Quote a name that holds a "
            'comma, e.g. \'age,"income, household"\'.'
        ) from None
    return [t.strip() for t in fields if t.strip()]


# ---------------------------------------------------------------- output files
def _writable(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (a probe file, removed at once:
    ``os.access`` says yes to root even on a read-only mount)."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


def _check_location(path: Path, option: str) -> None:
    """The nearest existing ancestor of ``path`` is a directory we can write in."""
    a = path
    while not a.exists() and a != a.parent:
        a = a.parent
    if not a.is_dir():
        raise InputError(f"The '{option}' path '{path}' cannot be created: '{a}' is a file, not a directory.")
    if not _writable(a):
        raise InputError(
            f"The '{option}' location '{a}' is not writable (permission denied or a read-only file system); "
            "choose another place. Nothing was computed."
        )


def check_output_file(path: str | Path | None, option: str, overwrite: bool) -> Path | None:
    """Refuse an output file that exists (without ``--overwrite``) or cannot be written.

    Called before any data are read or models fitted, so a bad ``--out`` costs nothing.
    """
    if path is None:
        return None
    p = Path(path)
    if p.is_dir():
        raise InputError(f"The '{option}' option names a directory, '{p}'; give a file name.")
    if p.exists() and not overwrite:
        raise InputError(f"The '{option}' file '{p}' already exists; add --overwrite to replace it.")
    _check_location(p.parent if str(p.parent) else Path("."), option)
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"The '{option}' file '{p}' is not writable.")
    return p


def check_output_dir(path: str | Path, option: str, overwrite: bool, owned: list[str] | None = None) -> Path:
    """Refuse an output directory that already holds output (without ``--overwrite``),
    is a file, or cannot be written. ``owned``: glob patterns of the files the command
    writes there (default: any file at all)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"The '{option}' option must be a directory. '{p}' is a file.")
    if p.is_dir() and not overwrite:
        held = [f for pat in (owned or ["*"]) for f in p.glob(pat)]
        if held:
            raise InputError(
                f"The '{option}' directory '{p}' already holds output ({held[0].name}, ...); "
                "add --overwrite to replace it, or choose another directory."
            )
    _check_location(p, option)
    return p


def add_overwrite_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true", help="replace output files that already exist")


def add_sep_flag(p: argparse.ArgumentParser) -> None:
    """``--sep`` and ``--na-values``: how to read a CSV."""
    p.add_argument("--sep", default=",", help="field separator of CSV input, e.g. ';' or '\\t' (default: ',')")
    p.add_argument("--encoding", default=None, metavar="NAME",
                   help="text encoding of CSV input, e.g. cp1252 or latin-1 (default: utf-8, or the encoding "
                   "recorded with the copies)")
    p.add_argument(
        "--na-values", default=None, metavar="MARKERS",
        help="comma-separated cell values of CSV input that mean missing, e.g. '?,.,-9' (as pandas read_csv's "
        "na_values, for every column; empty cells and NA already are). Default: a --spec's \"na_values\", "
        "else the markers recorded with the copies",
    )


def na_values_of(args: argparse.Namespace, spec=None, recorded=None) -> list[str] | None:
    """The missing-value markers: ``--na-values``, else the spec's ``na_values``, else
    ``recorded`` (those written to metadata.json when the copies were made)."""
    given = getattr(args, "na_values", None)
    if given is not None:
        markers = split_list(given)
        if not markers:
            raise InputError("The '--na-values' option must list at least one marker, e.g. --na-values '?,-9'.")
        return markers
    if spec is not None and getattr(spec, "na_values", None):
        return list(spec.na_values)
    return list(recorded) if recorded else None


def encoding_of(args: argparse.Namespace, directory=None) -> str | None:
    """``--encoding``, else the encoding recorded in ``directory``/metadata.json (or None: UTF-8)."""
    given = getattr(args, "encoding", None)
    if given or directory is None:
        return given
    import json

    try:
        return (json.loads((Path(directory) / "metadata.json").read_text()).get("source") or {}).get("encoding")
    except (OSError, ValueError):
        return None


def input_label(spec: str) -> str:
    """How shared outputs (metadata.json, reports) name an input: a bundled data set by its
    name, a user's file by its base name only (its local path stays on the machine)."""
    return str(spec) if is_bundled(spec) else Path(str(spec)).name


def recorded_na_values(directory) -> list[str] | None:
    """The markers recorded in ``directory``/metadata.json by 'synthmi synthesize' (or None)."""
    import json

    meta = Path(directory) / "metadata.json"
    try:
        source = json.loads(meta.read_text()).get("source") or {}
    except (OSError, ValueError):
        return None
    return source.get("na_values") or None


def sep_of(args: argparse.Namespace) -> str:
    """``--sep`` with ``\\t`` written out as a tab."""
    sep = getattr(args, "sep", ",") or ","
    return "\t" if sep in ("\\t", "tab", "TAB") else sep


def parse_assignments(items: list[str] | None, name: str) -> dict[str, str]:
    """``["age=2", "bmi=0.5"]`` -> ``{"age": "2", "bmi": "0.5"}``."""
    out: dict[str, str] = {}
    for item in items or []:
        for part in split_list(item):
            if "=" not in part:
                raise InputError(f"The '--{name}' option takes COLUMN=VALUE pairs. Got {part!r} instead.")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def parse_tolerances(items: list[str] | None) -> dict[str, float | str] | None:
    """``--tol`` pairs as the risk measures take them: ``age=1`` -> ``1.0`` (absolute), ``income=5%`` ->
    ``"5%"`` (relative to the target's value; :func:`synthmi.evaluation._matching.parse_tolerance`).
    One parser for every verb, so ``--tol income=5%`` means the same to disclosure, report, tune and frontier."""
    out: dict[str, float | str] = {}
    for k, v in parse_assignments(items, "tol").items():
        try:
            out[k] = float(v)
            continue
        except ValueError:
            pass
        try:
            ok = v.endswith("%") and float(v[:-1]) >= 0
        except ValueError:
            ok = False
        if not ok:
            raise InputError(f"The '--tol' option takes COLUMN=NUMBER or COLUMN=PERCENT% (e.g. age=2, income=5%). "
                             f"Got {k}={v!r} instead.")
        out[k] = v
    return out or None


def progress_enabled(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False)


def step_line(args: argparse.Namespace, verb: str, msg: str, summary: bool = False) -> None:
    """A progress line on stderr, ``synthmi VERB: msg``.

    Every verb that reads data ends each of its steps (fit, draws, evaluation,
    writing) with one ``summary=True`` line, shown with ``--quiet`` too; lines
    within a step (per copy, per column) are left out with ``--quiet``.
    """
    import sys

    if summary or progress_enabled(args):
        print(f"synthmi {verb}: {msg}", file=sys.stderr, flush=True)


def add_convergence_flags(p: argparse.ArgumentParser) -> None:
    """The release thresholds of a posterior sampler (synthesize, tune): one wording for both verbs."""
    p.add_argument("--convergence", choices=["vehtari2021", "lenient"], default=None,
                   help="named release thresholds: vehtari2021 (default; R-hat <= 1.01, bulk and tail ESS >= 400, "
                        "Vehtari et al. 2021) or lenient (R-hat <= 1.05, ESS >= 100; recorded and reported as looser)")
    p.add_argument("--rhat-max", type=float, default=None, help="largest acceptable R-hat of any column (default 1.01)")
    p.add_argument("--ess-min", type=float, default=None,
                   help="smallest acceptable bulk and tail ESS of any column (default 400)")


def add_ngroups_options(p: argparse.ArgumentParser) -> None:
    """--ngroups-keys / --ngroups-target: synthpop's grouping of continuous keys and target for the attribute
    disclosure key tables (disclosure, report; :func:`synthmi.evaluation.attribute_disclosure`)."""
    p.add_argument("--ngroups-keys", type=int, default=None, metavar="N",
                   help="key tables (DiSCO, repU, ...): cut each continuous QI with more than N distinct values into N "
                        "groups at the quantiles of the original and copies pooled (synthpop's ngroups_keys; default: "
                        "exact keys, which read near 0 for copies synthesized on a continuous scale)")
    p.add_argument("--ngroups-target", type=int, default=None, metavar="N",
                   help="the same for a continuous --target (synthpop's ngroups_target; default its exact values)")


def check_ngroups_options(args: argparse.Namespace, keys_need_target: bool) -> None:
    """The --ngroups-* options checked in their own terms, before anything is read or fitted: integers >= 2;
    --ngroups-target (and --ngroups-keys where they only serve attribute disclosure) need --target."""
    for opt, v, needs_target in (("--ngroups-keys", args.ngroups_keys, keys_need_target),
                                 ("--ngroups-target", args.ngroups_target, True)):
        if v is not None and (v < 2 or (needs_target and not args.target)):
            raise InputError(f"The '{opt}' option must be an integer >= 2"
                             + (" and needs --target (it groups the key tables of attribute disclosure)"
                                if needs_target else "")
                             + f". Got {v}{' without --target' if needs_target and not args.target else ''}.")


def add_attack_flags(p: argparse.ArgumentParser) -> None:
    """--secret / --link-aux: what anonymeter's inference and linkability attacks assume (disclosure, report)."""
    p.add_argument("--secret", action="append", default=None, metavar="COLUMN",
                   help="a column whose inference risk is measured against the holdout (repeatable; default: "
                        "--target, else the spec's kept and outcome columns, else the columns not in --qi)")
    p.add_argument("--link-aux", default=None, metavar="A,B:C,D",
                   help="linkability: the intruder's two auxiliary data sets, column lists split by ':' "
                        "(default: the QIs split in two halves)")


def check_target_option(target: str | None, columns, qi) -> None:
    """Refuse a --target (attribute disclosure's sensitive column) that is not a column of the data or is
    also a quasi-identifier, naming the option and the column, before anything is computed."""
    if target is None:
        return
    if target not in columns:
        raise InputError(f"The '--target' option names a column not in the release: {target!r}. "
                         f"Available columns: {list(columns)}.")
    if target in qi:
        raise InputError(f"The '--target' column '{target}' is also in --qi: a column is either a "
                         "quasi-identifier the intruder knows or the attribute to learn; drop it from one.")


def attack_options(args: argparse.Namespace, columns) -> tuple[list[str] | None, tuple[list[str], list[str]] | None]:
    """(secrets or None, link_aux pair or None) from --secret / --target / --link-aux, checked against ``columns``
    (a --target standing in for --secret is checked as --target: :func:`check_target_option`)."""
    link_aux = None
    if args.link_aux is not None:
        sides = [split_list([part]) for part in args.link_aux.split(":")]
        if len(sides) != 2 or not all(sides):
            raise InputError(f"The '--link-aux' option must be two column lists split by ':', e.g. age,sex:race,"
                             f"education. Got {args.link_aux!r} instead.")
        link_aux = (sides[0], sides[1])
    given = split_list(args.secret) if args.secret else []
    if not given and args.target:
        check_target_option(args.target, columns, ())
    secrets = given or ([args.target] if args.target else None)
    named = [c for c in given + (link_aux[0] + link_aux[1] if link_aux else []) if c not in columns]
    if named:
        raise InputError(f"The '--secret' / '--link-aux' options name columns not in the release: {named}. "
                         f"Available columns: {list(columns)}.")
    return secrets, link_aux


def add_common_flags(p: argparse.ArgumentParser) -> None:
    """``--quiet`` on a verb too (``synthmi VERB --quiet``); SUPPRESS keeps a
    top-level ``synthmi --quiet VERB`` from being overwritten by the default."""
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress output")


def load_original(spec: str, sep: str = ",", option: str = "--original", na_values: list[str] | None = None,
                  private: bool = False, encoding: str | None = None):
    """The original frame and a digest of its source.

    Bundled public data get a plain SHA-256; a user's (confidential) file only a
    keyed HMAC, or none without a key (see ``synthmi.provenance.confidential_digest``).
    """
    from ..data import load_dataset
    from ..provenance import confidential_digest, frame_sha256

    path = Path(spec)
    public = is_bundled(spec)
    if not public and not path.exists():
        raise InputNotFound(f"The '{option}' file '{spec}' does not exist.", path=spec, option=option)
    if option in ("--original", "--holdout") and not public and not private and is_parquet(path):
        # the review verbs' original may be Parquet (a Dask release's input); other inputs stay CSV
        df = read_parquet_input(path, option)
        # a directory has no one byte stream to digest: the keyed digest of the frame
        return df, confidential_digest(df) if path.is_dir() else confidential_digest(path=path)
    df = load_dataset(spec, sep=sep, option=option, na_values=na_values, private=private, encoding=encoding)
    digest = ("sha256:" + frame_sha256(df)) if public else confidential_digest(path=path)
    return df, digest


def is_parquet(path: Path) -> bool:
    """Whether an input path names Parquet data: a ``.parquet`` / ``.pq`` file or a directory
    (of Parquet files, as ``synthesize --engine dask`` reads them)."""
    return path.is_dir() or path.suffix.lower() in (".parquet", ".pq")


def read_parquet_input(path: Path, option: str):
    """A Parquet file or directory as one pandas frame (its index dropped, as a CSV has none);
    a file that is not Parquet refused naming ``option``, never quoting the reader's text."""
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception:  # pyarrow's ArrowInvalid or OSError: their text may quote the file
        what = "a directory holding no readable Parquet files" if path.is_dir() else \
            f"a '{path.suffix}' file that is not Parquet"
        raise InputError(f"The '{option}' option takes a CSV file, a Parquet file or a directory of Parquet files. "
                         f"Got '{input_label(str(path))}', {what}.") from None
    return df.reset_index(drop=True)


def is_bundled(spec: str) -> bool:
    """Whether ``spec`` names one of the bundled public data sets."""
    return str(spec).lower() in ("adult", "nhanes")


def align_original(original, syn):
    """The original restricted to the copies' columns (a release may drop columns), with the
    categorical columns on the levels a DP release declared (see :func:`declared_categories`)."""
    cols = list(syn.copies[0].columns)
    missing = [c for c in cols if c not in original.columns]
    if missing:
        raise InputError(f"The synthetic copies have columns the original lacks: {missing}.")
    return declared_categories(original[cols], syn)


def declared_categories(original, syn):
    """The original's categorical columns on the levels the release declared (its public domain).

    A CSV reader orders the categories it saw; a DP release's copies carry the declared
    levels in the declared order, so without this the reference levels differ and the
    analysis terms do not line up. When the release mapped out-of-domain values to a
    column's declared 'other' level (``--map-other``, recorded as
    ``structure["out_of_domain"]``), the original's are mapped the same public way, so
    both sides hold the same variable; otherwise columns whose values fall outside the
    declared domain are left as read.
    """
    from ..domain import DomainError, PublicDomain

    dom = (getattr(syn, "structure", None) or {}).get("domain")
    if not dom:
        return original
    domain = PublicDomain.from_dict(dom)
    mode = syn.structure.get("out_of_domain", "error")
    out = original.copy()
    for c in original.columns:
        if c in domain and domain[c].is_discrete:
            try:
                out[c] = domain[c].conform(original[c], out_of_domain=mode)
            except DomainError:
                pass
    return out


def synthetic_dir(d: str) -> Path:
    path = Path(d)
    if not path.is_dir():
        raise InputNotFound(f"The '--synthetic' directory '{d}' does not exist.", path=d, option="--synthetic")
    return path


def add_spec_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--spec", default=None, metavar="SPEC.json",
        help="release spec (roles, kinds, analyses; see 'synthmi spec'); default: the spec recorded with the copies",
    )


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    """``--original``, one ``--synthetic`` directory and ``--spec``, as the evaluation verbs take them."""
    p.add_argument("--original", default="adult", help="'adult', 'nhanes', a CSV path, or a Parquet file or directory "
                   "(default: adult)")
    p.add_argument("--synthetic", required=True, help="directory written by 'synthmi synthesize' (CSV copies, or "
                   "--engine dask's Parquet copies, read into memory)")
    add_sep_flag(p)
    add_spec_argument(p)


def load_spec_option(args: argparse.Namespace, syn=None):
    """The ``--spec`` file, else the spec recorded with the copies ``syn``, else None."""
    from ..spec import ReleaseSpec

    path = getattr(args, "spec", None)
    if path:
        return ReleaseSpec.load(path)
    return getattr(syn, "spec", None)


def spec_and_quasi_identifiers(args: argparse.Namespace):
    """(spec or None, quasi-identifiers) of the verbs that fit a release (synthesize, tune).

    The ``--spec`` file with the ``--qi`` / ``--keep`` given beside it applied to its
    roles (the flags win), and the quasi-identifiers resolved from it, or from ``--qi``
    alone, by :func:`synthmi.spec.resolve_quasi_identifiers`.
    """
    from ..spec import ReleaseSpec, resolve_quasi_identifiers

    spec = None
    if args.spec:
        spec = ReleaseSpec.load(args.spec)
        if args.qi or args.keep is not None:
            spec = spec.with_roles(split_list(args.qi) or None, split_list(args.keep) if args.keep is not None else None)
    # (with a --spec, --qi is in its roles already)
    return spec, resolve_quasi_identifiers(split_list(args.qi) if spec is None else None, spec, option="--qi")


def recorded_holdout(directory) -> dict | None:
    """The holdout ``synthesize --holdout-share`` recorded in ``directory``/metadata.json:
    ``{"share", "n_rows_original", "positions"}`` (row positions of the input file, no value), or None."""
    import json

    try:
        source = json.loads((Path(directory) / "metadata.json").read_text()).get("source") or {}
    except (OSError, ValueError):
        return None
    return source.get("holdout") or None


def split_holdout(original, recorded: dict, option: str = "--original"):
    """(training rows, held-out rows) of the file the copies were made from, by the positions
    recorded at synthesis; both with a fresh 0..n-1 index (the copies are row-aligned with the
    training rows). The file must have the row count recorded (else the positions mean nothing)."""
    from ..evaluation.membership import split_at

    n = int(recorded["n_rows_original"])
    if len(original) != n:
        raise InputError(f"The '{option}' data have {len(original)} rows, but the copies' metadata.json records a "
                         f"holdout drawn from {n} rows ('synthesize --holdout-share'): give the file the copies "
                         "were made from.")
    return split_at(original, recorded["positions"])


def load_release(args: argparse.Namespace, with_holdout: bool = False):
    """(full original, original restricted to the copies' columns, SyntheticData), and with
    ``with_holdout`` the held-out records (or None) as a fourth item.

    The original must be the data the copies were fitted to (row count and
    columns; the keyed HMAC too when ``SYNTHMI_PROVENANCE_KEY`` is set). When the
    copies' metadata records a holdout (``synthesize --holdout-share``), the original
    here is its training rows (every measure reads the rows the copies are aligned
    with) and the held-out rows are the holdout.
    """
    from ..synthetic import SyntheticData

    from ..spec import ReleaseSpec

    syn = SyntheticData.from_dir(synthetic_dir(args.synthetic), name="--synthetic")
    spec = ReleaseSpec.load(args.spec) if getattr(args, "spec", None) else None
    na = na_values_of(args, spec, recorded_na_values(args.synthetic))
    original_full, _ = load_original(args.original, sep_of(args), na_values=na,
                                     encoding=encoding_of(args, args.synthetic))
    holdout = None
    recorded = recorded_holdout(args.synthetic)
    if recorded:
        original_full, holdout = split_holdout(original_full, recorded)
    syn.check_original(original_full, "--original")
    if with_holdout:
        return original_full, align_original(original_full, syn), syn, holdout
    return original_full, align_original(original_full, syn), syn


def recorded_rule(syn) -> str:
    """The combining rule the copies were made for: the one recorded with them, else the
    rule of their layout (nested m x r copies; DPSyn's fully synthetic copies; partial)."""
    rule = getattr(syn, "rule", None) or (syn.structure or {}).get("rule")
    if rule:
        return str(rule)
    if {"m", "r"} <= set(syn.structure or {}):
        return "nested"
    if syn.method == "dpsyn":
        return "full"
    return "partial"


def records_path(args: argparse.Namespace) -> Path:
    """``--records``, or the name derived visibly from ``--out``: ``risk.json`` -> ``risk.records.csv``."""
    out = Path(args.out)
    return Path(args.records) if args.records else out.with_name(out.stem + ".records.csv")


#: what an ``--out`` file of a result holds, by its extension (see :func:`out_format`)
OUT_FORMATS = {".json": "json", ".csv": "csv"}


def out_format(path: str | Path, option: str = "--out") -> str:
    """``"json"`` or ``"csv"``: the format of a result's output file, from its extension.

    ``.json`` holds the result's ``to_dict()`` (through :func:`synthmi._json.dumps`:
    strict JSON), ``.csv`` its table. Any other extension is refused before anything is
    computed, so a ``util.json`` never holds CSV (json.load failed on it).
    """
    fmt = OUT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise InputError(f"The '{option}' option must name a .json file (the result's summary as JSON) or a .csv "
                         f"file (its table). Got '{path}' instead.")
    return fmt


def write_result(result, path: str | Path, table=None, extra: dict | None = None) -> None:
    """Write ``result`` to ``path`` in the format of its extension (:func:`out_format`):
    ``.json`` -> ``result.to_dict()`` plus ``extra``; ``.csv`` -> ``table`` (default
    ``result.to_frame()``, its index written as the first column)."""
    from .._json import dumps as json_dumps

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if out_format(path) == "json":
        payload = result.to_dict()
        payload.update(extra or {})
        path.write_text(json_dumps(payload, indent=2, sort_keys=True))
        return
    table = result.to_frame() if table is None else table
    table.to_csv(path)


def add_summary_outputs(p: argparse.ArgumentParser, what: str) -> None:
    """``--out`` JSON, ``--records`` CSV and ``--overwrite`` for the verbs writing both."""
    p.add_argument("--out", required=True,
                   help=f"file for the {what}: .json (the summaries as JSON) or .csv (the summary table)")
    p.add_argument("--records", default=None,
                   help="per-record CSV (default: the --out name with .records.csv, e.g. risk.json -> risk.records.csv)")
    add_overwrite_flag(p)


def check_summary_outputs(args: argparse.Namespace) -> None:
    """Both files of :func:`write_summary_and_records` are new (or --overwrite) and writable."""
    out_format(args.out, "--out")
    out = check_output_file(args.out, "--out", args.overwrite)
    rec = check_output_file(records_path(args), "--records", args.overwrite)
    if out.resolve() == rec.resolve():
        raise InputError(f"The '--out' and '--records' options name the same file '{out}'.")


def write_summary_and_records(args: argparse.Namespace, verb: str, result, extra: dict | None = None) -> None:
    """``--out`` summary (``.json``: ``result.to_dict()`` plus ``extra``; ``.csv``: the
    summary table, ``result.summary().to_frame()``) and the per-record CSV
    (``result.to_frame()``) at ``--records`` or its name derived from ``--out``;
    prints the report. Call :func:`check_summary_outputs` before computing."""
    out = Path(args.out)
    records = records_path(args)
    write_result(result, out, table=result.summary().to_frame(), extra={**(extra or {}), "records_csv": str(records)})
    records.parent.mkdir(parents=True, exist_ok=True)
    result.to_frame().to_csv(records, index_label="record")
    print(result.report())
    step_line(args, verb, f"wrote {out} and {records}", summary=True)


# ---------------------------------------------------------------- analysis formulas
#: names a formula may use that are not columns: patsy's built-ins and the numpy module
#: (statsmodels evaluates the formula with numpy in scope)
_FORMULA_NAMES = frozenset({
    "Q", "C", "I", "np", "numpy", "bs", "cr", "cc", "te", "center", "standardize", "scale",
    "Treatment", "Sum", "Poly", "Diff", "Helmert", "log", "log1p", "exp", "sqrt", "abs",
})


def check_formula(formula: str, columns, option: str, what: str = "the data") -> None:
    """Refuse, in one sentence naming ``option``, an analysis formula that cannot be read or
    that names a column ``what`` lacks, before anything is fitted.

    Without this the formula first meets patsy inside the model fit (after minutes of
    synthesis in ``tune``) and fails as ``SyntaxError: invalid syntax`` (a column named
    ``class`` or ``Age in years`` written bare) or ``PatsyError ... NameError``. Only the
    formula text and column names are quoted, never a data value.
    """
    import ast
    import builtins
    import keyword

    from patsy import PatsyError
    from patsy.desc import ModelDesc

    cols = [str(c) for c in columns]
    if not isinstance(formula, str) or "~" not in formula:
        raise InputError(f"The '{option}' option must be a formula such as 'y ~ x1 + x2'. Got {formula!r} instead.")
    # awkward names written bare (not already inside Q("..."))
    awkward = [c for c in cols if (not c.isidentifier() or keyword.iskeyword(c)) and c in formula
               and f'Q("{c}")' not in formula and f"Q('{c}')" not in formula]
    example = awkward[0] if awkward else "age in years"
    hint = (f' A column whose name is not a plain name (spaces, hyphens, brackets, or a Python keyword such as '
            f'"class") goes in Q("..."), e.g. Q("{example}").')
    try:
        desc = ModelDesc.from_formula(formula)
    except PatsyError as exc:
        reason = str(exc).splitlines()[0].strip()
        raise InputError(f"The formula {formula!r} ({option}) cannot be read ({reason}).{hint}") from None
    unknown: list[str] = []
    for term in desc.lhs_termlist + desc.rhs_termlist:
        for factor in term.factors:
            code = factor.code
            try:
                tree = ast.parse(code, mode="eval")
            except SyntaxError:
                raise InputError(f"The formula {formula!r} ({option}) cannot be read at '{code}'.{hint}") from None
            called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
                        and node.args and isinstance(node.args[0], ast.Constant)):
                    name = str(node.args[0].value)
                elif isinstance(node, ast.Name) and id(node) not in called:
                    name = node.id
                    if name in _FORMULA_NAMES or hasattr(builtins, name):
                        continue
                else:
                    continue
                if name not in cols and name not in unknown:
                    unknown.append(name)
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        are = "is not a column" if len(unknown) == 1 else "are not columns"
        raise InputError(
            f"The formula {formula!r} ({option}) names {names}, which {are} of {what}."
            + (hint if awkward else f" Columns: {cols}.")
        )


# ---------------------------------------------------------------- identifiers
def identifier_columns(df, columns) -> list[str]:
    """Columns among ``columns`` that look like record identifiers: whole-number or text
    values, complete, and a different value in every row (at least 20 rows).

    Released unchanged beside synthesized quasi-identifiers, such a column links every
    synthetic row to its person, and as a predictor it lets CART split on individuals.
    Floats are not flagged (a weight or an income may be distinct in every row too).
    """
    import pandas as pd

    out = []
    for c in columns:
        s = df[c]
        whole = pd.api.types.is_integer_dtype(s) and not pd.api.types.is_bool_dtype(s)
        text = pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)
        if len(s) >= 20 and (whole or text) and s.notna().all() and s.nunique() == len(s):
            out.append(c)
    return out


def show_caught_warnings(caught, verb: str, args: argparse.Namespace, text=None, skip: tuple[str, ...] = ()) -> None:
    """Print the library warnings a verb caught (``warnings.catch_warnings(record=True)``), once each.

    Without ``--debug``: one line each, ``synthmi VERB: warning: ...`` (``text`` turns the message
    into command-line terms). With ``--debug`` (before or after the verb): Python's own form,
    with the category, source file and line, as the README and ``cli._warning_line`` promise.
    Messages starting with one of ``skip`` were said otherwise and are left out.
    """
    import sys
    import warnings

    debug = bool(getattr(args, "debug", False))
    seen: set[str] = set()
    for w in caught:
        msg = str(w.message)
        if msg in seen or msg.startswith(tuple(skip)):
            continue
        seen.add(msg)
        if debug:
            sys.stderr.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
        else:
            print(f"synthmi {verb}: warning: {text(msg) if text else msg}", file=sys.stderr, flush=True)
    sys.stderr.flush()


def warn_identifiers(verb: str, ids: list[str], how: str) -> None:
    """One warning line naming identifier-like columns (names only, never values)."""
    import sys

    if ids:
        names = ", ".join(f"'{c}'" for c in ids)
        print(f"synthmi {verb}: warning: {names} {'has' if len(ids) == 1 else 'have'} a different value in every "
              f"row, like a record identifier; released unchanged it links each synthetic row to its person, and "
              f"as a predictor it lets the model single people out. {how}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- integer-coded categories
#: at most this many distinct whole numbers make a numeric column look like codes of
#: categories (the same limit the CSV reader uses for numerically coded categoricals)
MAX_CODES = 10


def coded_columns(df, columns, max_codes: int = MAX_CODES) -> list[str]:
    """Numeric columns among ``columns`` that look like integer codes of categories: only
    whole numbers, 2 to ``max_codes`` distinct values, and not 0/1 (a 0/1 column is already
    read as binary, see :func:`synthmi.schema._infer_variable`).

    Such a column (sex coded 1/2, a region coded 1..5) is a number to the models unless it
    is declared categorical: a normal model, linear in its predictors. That follows
    synthpop, which models a numeric column as numeric unless it is made a factor; the
    warning built on this says so instead of guessing.
    """
    import numpy as np
    import pandas as pd

    out = []
    for c in columns:
        s = df[c]
        if (isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(s.dtype)
                or not pd.api.types.is_numeric_dtype(s.dtype)):
            continue
        x = pd.unique(s.dropna().to_numpy(dtype=float))
        if 2 <= x.size <= max_codes and np.all(np.mod(x, 1.0) == 0.0) and not set(x.tolist()) <= {0.0, 1.0}:
            out.append(c)
    return out


def categorical_kinds(df, columns: list[str], option: str = "--categorical") -> dict[str, str]:
    """``--categorical`` columns -> their kind: binary with 2 distinct values, else nominal."""
    unknown = [c for c in columns if c not in df.columns]
    if unknown:
        raise InputError(f"The '{option}' option names columns not in the data: {unknown}. "
                         f"Available columns: {list(df.columns)}.")
    kinds = {}
    for c in columns:
        n = int(df[c].nunique(dropna=True))
        if n < 2:
            raise InputError(f"The '{option}' option names column '{c}', which holds fewer than 2 distinct values.")
        kinds[c] = "binary" if n == 2 else "nominal"
    return kinds


def warn_coded(verb: str, cols: list[str], where: str = "in a spec ('synthmi spec')") -> None:
    """One warning line naming integer-coded columns modelled as numbers, and the option
    that declares them categorical (names and never a value)."""
    import sys

    if not cols:
        return
    one = len(cols) == 1
    names = ", ".join(f"'{c}'" for c in cols)
    listed = ",".join(f'"{c}"' if "," in c else c for c in cols)
    print(f"synthmi {verb}: warning: {names} {'holds' if one else 'hold'} only a few whole numbers and "
          f"{'is' if one else 'are'} modelled as {'a number' if one else 'numbers'}, as synthpop does with a numeric "
          f"column. If {'its' if one else 'their'} numbers are codes of categories (1/2 for sex, 1..5 for a "
          f"region), declare {'it' if one else 'them'} with --categorical {listed} (or kind \"nominal\" {where}); "
          f"counts and scores can stay numeric.", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- missing-value markers
#: cell values agency files use for a missing value that pandas does not read as missing
MISSING_MARKERS = ("?", ".", "-", "*", "..", "--")


def warn_markers(verb: str, df) -> None:
    """One warning line naming the text columns whose levels include a common missing-value
    marker (``?``, ``.``, ...), with the ``--na-values`` that would read them as missing.

    Without it a ``?`` among numbers makes the column a coded categorical with a ``?``
    level (see :func:`synthmi.data.check_csv_frame`), silently. The markers are fixed
    symbols, not data values; numeric codes such as ``-9`` cannot be told from data and
    are left to the user.
    """
    import sys

    import pandas as pd

    found: dict[str, list[str]] = {}
    for c in df.columns:
        s = df[c]
        levels = s.cat.categories if isinstance(s.dtype, pd.CategoricalDtype) else (
            s.dropna().unique() if pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)
            else [])
        hits = [m for m in MISSING_MARKERS if m in {str(v).strip() for v in levels}]
        if hits:
            found[str(c)] = hits
    if found:
        markers = sorted({m for h in found.values() for m in h}, key=MISSING_MARKERS.index)
        names = ", ".join(f"'{c}'" for c in found)
        print(f"synthmi {verb}: warning: {names} {'holds' if len(found) == 1 else 'hold'} the value "
              f"{' / '.join(repr(m) for m in markers)}, which many files use for a missing value; it is read as a "
              f"category. If it means missing, add --na-values '{','.join(markers)}'.", file=sys.stderr, flush=True)
