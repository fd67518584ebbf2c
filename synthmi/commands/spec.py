"""``synthmi spec``: draft a release spec from a data file, for the user to edit."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_sep_flag,
    categorical_kinds,
    check_formula,
    coded_columns,
    identifier_columns,
    na_values_of,
    progress_enabled,
    sep_of,
    split_list,
    step_line,
    warn_coded,
    warn_markers,
    warn_identifiers,
)
from ..spec import FAMILIES
from ..errors import InputError

EXAMPLES = """examples:
  synthmi spec --data survey.csv --qi age,sex,region > spec.json
  synthmi spec --data adult --qi age,sex,race,education --keep income,hours_per_week \\
      --analysis "income ~ age + sex + race + education" --family probit --out spec.json

The draft lists every column with its role (quasi_identifier, keep, outcome, weight,
excluded), its kind (continuous, integer, binary, nominal, ordinal) and its levels or
bounds. Levels and bounds read from the data are marked "declared": false: they are
the data's own (confidential) values. Replace them with public ones (a code book, the
survey documentation) and set "declared": true; differentially private methods use
declared values only. Add masks ({"age": {"K": 3, "sigma_e": 5}}, or per risk group
{"low": {...}, "medium": {...}, "high": {...}}) and analyses, then pass the file to
synthesize, analyse, utility, disclosure and report with --spec spec.json."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "spec",
        help="draft a release spec (roles, kinds, levels/bounds, masks, analyses) as JSON",
        description="Draft a release spec from a data file; edit it, then pass it with --spec.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--data", required=True, help="'adult', 'nhanes' (bundled, recoded) or a CSV path")
    add_sep_flag(p)
    p.add_argument("--qi", default=None, help="comma-separated quasi-identifiers")
    p.add_argument("--keep", default=None,
                   help="comma-separated columns released unchanged (default: every column not in --qi); "
                   "the others are marked excluded")
    p.add_argument("--categorical", action="append", metavar="COLUMNS",
                   help="comma-separated numeric columns holding codes of categories (1/2 for sex, 1..5 for a "
                   "region): drafted as binary or nominal, not integer (repeatable)")
    p.add_argument("--analysis", action="append", metavar="FORMULA", help="an analysis formula (repeatable)")
    p.add_argument("--family", default="probit", choices=FAMILIES,
                   help="family of the --analysis models (default probit)")
    p.add_argument("--out", default=None, help="write the spec to this file instead of standard output")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import load_dataset
    from ..spec import ReleaseSpec
    from ._common import input_label

    if args.out and Path(args.out).exists() and not args.overwrite:
        raise InputError(f"The '--out' file '{args.out}' already exists; add --overwrite to replace it.")
    na_values = na_values_of(args)
    df = load_dataset(str(args.data), sep=sep_of(args), option="--data", na_values=na_values,
                      encoding=getattr(args, "encoding", None))
    if na_values is None:
        warn_markers("spec", df)
    qi = split_list(args.qi)
    unknown = [c for c in qi if c not in df.columns]
    if unknown:
        raise InputError(f"The '--qi' option names columns not in the data: {unknown}. Available columns: {list(df.columns)}.")
    keep = split_list(args.keep) if args.keep is not None else None
    unknown = [c for c in keep or [] if c not in df.columns]
    if unknown:
        raise InputError(f"The '--keep' option names columns not in the data: {unknown}. Available columns: {list(df.columns)}.")
    for formula in args.analysis or []:
        check_formula(formula, df.columns, "--analysis")
    # an empty or constant column is refused as synthesize refuses it (it was drafted silently, a constant
    # 1.0 as a binary column with levels 0 and 1)
    from .synthesize import _check_not_degenerate

    _check_not_degenerate(df, qi, keep if keep is not None else [c for c in df.columns if c not in qi],
                          "option" if keep is not None else "default")
    kinds = categorical_kinds(df, split_list(args.categorical))
    spec = ReleaseSpec.draft(df, quasi_identifiers=qi, keep=keep, kinds=kinds,
                             source=f"drafted by 'synthmi spec' from {input_label(args.data)}")  # no local path
    if args.analysis or na_values:
        analyses = [{"formula": f, "family": args.family} for f in args.analysis or []]
        spec = ReleaseSpec(spec.columns, analyses=analyses, source=spec.source, na_values=na_values)
    # a warning, shown with --quiet too
    warn_identifiers("spec", identifier_columns(df, spec.keep), "Set its role to \"excluded\" in the spec.")
    warn_coded("spec", coded_columns(df, [c for c in spec.released if c not in kinds]), "in this spec")
    text = spec.to_json() + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    step_line(args, "spec", f"drafted a spec of {len(spec.columns)} columns ({len(spec.quasi_identifiers)} "
              f"to synthesize, {len(spec.keep)} kept)" + (f"; wrote {args.out}" if args.out else ""), summary=True)
    if progress_enabled(args) and spec.inferred:
        print(
            f"synthmi spec: {len(spec.inferred)} columns have levels or bounds read from the data "
            '("declared": false); replace them with public values before a release.',
            file=sys.stderr,
        )
    return 0
