"""``synthmi utility``: pMSE / S_pMSE of synthetic copies and the per-table utility."""
from __future__ import annotations

import argparse
from pathlib import Path

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_overwrite_flag,
    add_release_arguments,
    check_output_file,
    load_release,
    load_spec_option,
    out_format,
    split_list,
)
from ..errors import InputError

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
    p.add_argument("--out", default=None,
                   help="write the results here: .csv (the per-table S_pMSE) or .json (pMSE and tables as JSON)")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation.pmse import UtilityTablesResult, pmse, unchanged_columns, utility_tables

    fmt = out_format(args.out, "--out") if args.out else None
    check_output_file(args.out, "--out", args.overwrite)
    if fmt == "csv" and not split_list(args.tables):
        raise InputError("The '--out' option writes the per-table S_pMSE, but '--tables' is empty: give --tables 1 (or 1,2).")
    _, original, syn = load_release(args)
    spec = load_spec_option(args, syn)
    variables = split_list(args.variables) or None
    weight = (syn.structure or {}).get("weights")
    if variables is None:
        # a survey weight is released unchanged: comparing it says nothing about the synthesis
        variables = [c for c in original.columns if c != weight]
        if weight is not None:
            print(f"note: left out: survey weight '{weight}' (released unchanged)")
    import time

    from ._common import progress_enabled, step_line

    t0 = time.perf_counter()
    say = (lambda msg: step_line(args, "utility", msg)) if progress_enabled(args) else None
    res = pmse(original, syn.copies, method=args.method, variables=variables, random_state=args.seed, progress=say,
               spec=spec)
    step_line(args, "utility", f"pMSE ({args.method}) of {syn.m} copies in {time.perf_counter() - t0:.1f} s",
              summary=True)
    print(res.summary())
    ways = [int(w) for w in split_list(args.tables)]
    if ways:
        t1 = time.perf_counter()
        what = "/".join({1: "one", 2: "two", 3: "three"}[w] for w in ways) + "-way tables"
        step_line(args, "utility", f"{what} of {syn.m} copies")
        tables = utility_tables(original, syn.copies, variables=variables, ways=ways, spec=spec)
        tab = tables.to_frame()
        step_line(args, "utility", f"{len(tab)} {what} of {syn.m} copies in {time.perf_counter() - t1:.1f} s",
                  summary=True)
        # A kept column is released unchanged: its tables match the original's exactly (S_pMSE 0),
        # which says nothing about the synthesis. Tables of kept columns only are left out of the
        # printout (named in a note) and marked in the CSV; a kept column crossed with a
        # synthesized one is a real comparison and stays.
        kept = set(unchanged_columns(original, syn.copies, tab["variables"].str.split(":").explode().unique()))
        tab.insert(tab.columns.get_loc("s_pmse") + 1, "released_unchanged",
                   [set(v.split(":")) <= kept for v in tab["variables"]])
        cols = ["variables", "way", "df", "pmse", "s_pmse"]
        shown = tab[~tab["released_unchanged"]]
        print()
        if len(shown):
            print(shown[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        if kept:
            names = [v for v in variables if v in kept]
            print(f"note: not listed: {int(tab['released_unchanged'].sum())} tables of kept columns only "
                  f"({', '.join(names)}): released unchanged in every copy, not synthesized, so their "
                  "S_pMSE is 0 by construction")
        tables = UtilityTablesResult(tab, ways=tables.ways, n_bins=tables.n_bins, n_copies=tables.n_copies)
    if args.out:
        # .csv: the per-table S_pMSE (as before); .json: the pMSE's and the tables' to_dict()
        payload = {"pmse": res.to_dict(), **({"utility_tables": tables.to_dict()} if ways else {})}
        if fmt == "csv":
            tab.to_csv(args.out, index=False)
        else:
            from .._json import dumps as json_dumps

            Path(args.out).write_text(json_dumps(payload, indent=2, sort_keys=True))
        print(f"wrote {args.out}")
    return 0
