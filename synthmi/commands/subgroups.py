"""``synthmi subgroups``: label records low / medium / high re-identification risk."""
from __future__ import annotations

import argparse
import time

from ._common import (
    COMMA_NAMES_HELP,
    EXAMPLES_FMT,
    add_common_flags,
    add_sep_flag,
    add_summary_outputs,
    check_summary_outputs,
    parse_assignments,
    sep_of,
    split_list,
    step_line,
    write_summary_and_records,
)
from ..errors import InputError

EXAMPLES = """examples:
  synthmi subgroups --data adult --qi age,sex,race,education --k0 5 --tol age=2 --out subgroups.json

labels: low when at least k0 OTHER records share the record's categorical QIs and lie
within --tol on every continuous QI; medium when at least k0 others share the
categorical QIs but fewer than k0 of them are that close; high otherwise. A missing
value matches only a missing value.

output: --out (.json: summary, counts per label and settings; .csv: the summary table) and a per-record CSV beside it
(--records; default: the --out name with .records.csv): row label, risk subgroup, n_same_categorical, n_close."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "subgroups",
        help="label records low / medium / high risk by their matching neighbours",
        description="Risk subgroups (short-course slides, 'Risk subgroups') made precise; see the epilog.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--data", required=True, help="'adult', 'nhanes' (bundled, recoded) or a CSV path")
    add_sep_flag(p)
    p.add_argument("--qi", required=True, action="append",
                   help=f"comma-separated quasi-identifiers (repeatable; {COMMA_NAMES_HELP})")
    p.add_argument("--k0", type=int, required=True, help="number of other records that makes a record not unique (>= 1)")
    p.add_argument("--tol", action="append", metavar="COLUMN=VALUE", help="closeness, e.g. age=2 or age=5%% (repeatable)")
    add_summary_outputs(p, "counts")
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..evaluation.subgroups import risk_subgroups
    from ._common import load_original, na_values_of

    check_summary_outputs(args)
    df, _ = load_original(args.data, sep_of(args), option="--data", na_values=na_values_of(args),
                             encoding=getattr(args, "encoding", None))
    from ..spec import resolve_quasi_identifiers

    qi = resolve_quasi_identifiers(split_list(args.qi), option="--qi", spec_option=None)
    tol = parse_assignments(args.tol, "tol") or None
    t0 = time.perf_counter()
    res = risk_subgroups(df, qi, k0=args.k0, tolerance=tol)
    step_line(args, "subgroups", f"labelled {len(df)} records (k0 = {args.k0}) in {time.perf_counter() - t0:.1f} s",
              summary=True)
    write_summary_and_records(args, "subgroups", res, {"data": str(args.data), "n_records": int(len(df))})
    return 0
