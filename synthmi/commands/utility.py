"""``synthmi utility``: pMSE / S_pMSE of synthetic copies and the per-table utility."""
from __future__ import annotations

import argparse

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_overwrite_flag,
    add_release_arguments,
    check_output_file,
    load_release,
    load_spec_option,
    split_list,
)

EXAMPLES = """examples:
  synthmi utility --original adult --synthetic syn/
  synthmi utility --original adult --synthetic syn/ --variables age,sex,race,education,income --method cart
  synthmi utility --original adult --synthetic syn/ --tables 1,2 --out utility.csv

Prints pMSE, its null expectation and S_pMSE per copy (S_pMSE near 1: the copies
cannot be told from the original by the propensity model), then the S_pMSE of
every one-way (and two-way) table, continuous variables binned."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "utility",
        help="general utility: pMSE / S_pMSE per copy and per one-/two-way table",
        description="Propensity-score utility (Snoke et al. 2018) of synthetic copies against the original.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    add_release_arguments(p)
    p.add_argument("--variables", default=None,
                   help="columns to compare, comma-separated (default: the spec's released columns, else all)")
    p.add_argument("--method", default="logit", choices=["logit", "cart"], help="propensity model (default: logit)")
    p.add_argument("--tables", default="1", help="table orders for the per-table S_pMSE: '1', '1,2' or '' (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the CART fits and permutations")
    p.add_argument("--out", default=None, help="write the per-table S_pMSE to this CSV")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation.pmse import pmse, utility_tables

    check_output_file(args.out, "--out", args.overwrite)
    if args.out and not split_list(args.tables):
        raise ValueError("The '--out' option writes the per-table S_pMSE, but '--tables' is empty: give --tables 1 (or 1,2).")
    _, original, syn = load_release(args)
    spec = load_spec_option(args, syn)
    variables = split_list(args.variables) or None
    res = pmse(original, syn.copies, method=args.method, variables=variables, random_state=args.seed, spec=spec)
    print(res.summary())
    ways = [int(w) for w in split_list(args.tables)]
    if ways:
        tab = utility_tables(original, syn.copies, variables=variables, ways=ways, spec=spec)
        cols = ["variables", "way", "df", "pmse", "s_pmse"]
        print()
        print(tab[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        if args.out:
            tab.to_csv(args.out, index=False)
            print(f"wrote {args.out}")
    return 0
