"""``synthmi frontier``: the risk-utility frontier of a user's file, judged by the battery.

Why a verb of its own rather than ``tune --trace`` read by ``report --frontier``:
tune's trace holds DA-MI masks along one greedy path, while a frontier is only
worth reading against CART's own frontier (its leaf sizes and smoothing, issue
29) and the reference releases, measured on the same seeds; ``report
--frontier`` takes this verb's CSV to draw those points behind a release.
"""
from __future__ import annotations

import argparse
import sys

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_sep_flag,
    check_formula,
    check_output_file,
    na_values_of,
    parse_tolerances,
    progress_enabled,
    sep_of,
    spec_and_quasi_identifiers,
    split_list,
    step_line,
)
from .._json import dumps as json_dumps
from ..errors import InputError
from ..spec import FAMILIES

EXAMPLES = """examples:
  synthmi frontier --data survey.csv --qi age,sex,educ --analysis "y ~ age + sex + educ" \\
      --tol age=1 --out frontier.csv --figure frontier.png --json frontier.json
  # draw the points behind a release in the review report:
  synthmi report --original survey.csv --synthetic syn/ --frontier frontier.csv --out review.html

grid (from the quasi-identifiers' kinds, never their values): DA-MI with one normal mask
shared by the continuous QIs (--continuous-grid K:sigma_e; K = 0 unmasked) x one alpha shared by the
categorical QIs (--alpha-grid; 0 = unmasked); CART at each --leaves minimum leaf size
(the smallest also density-smoothed when a QI is continuous); norm+logit with --methods.
Each setting is synthesized --replicates times (seeds seed, seed+1, ...; the same for every
setting) with --m copies; the original released as is and an independent release are the
references.

measures (per point: mean and Monte Carlo SE over the replicates, columns NAME and NAME_se):
the battery (synthmi.evaluation.battery): battery_ci_overlap (mean CI overlap over the
declared analyses and two generic regressions of each kept column on the QIs), worst_one_way_s_pmse,
worst_two_way_s_pmse, overall_s_pmse, table_feasible (worst table S_pMSE <= --max-table-s-pmse);
mean_ci_overlap of the declared analyses alone; identity risk as 'synthmi disclosure'
(expected_matches, true_match_rate, ...); DiSCO etc. with --attribute-target.

output: --out CSV (one row per setting, references last); --json (optional: settings,
the battery's definition, replicate rows); --figure PNG (optional: battery overlap and worst
table S_pMSE against expected matches). No other file is written."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "frontier",
        help="risk-utility frontier of DA-MI and CART settings on a file, judged by the battery",
        description="Measure a grid of DA-MI and CART settings on a data file: utility by the battery "
                    "(declared and generic analyses, table S_pMSE) and disclosure risk, with Monte Carlo SE.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--data", required=True, help="'adult', 'nhanes' or a CSV path")
    add_sep_flag(p)
    p.add_argument("--spec", default=None, help="release spec (roles, kinds, analyses)")
    p.add_argument("--qi", default=None, help="comma-separated quasi-identifiers to synthesize (default: the spec's)")
    p.add_argument("--keep", default=None, help="columns released unchanged (default: every other column)")
    p.add_argument("--analysis", action="append", default=None, metavar="FORMULA",
                   help="a declared analysis (repeatable; default: the spec's; none: the generic battery alone)")
    p.add_argument("--family", default="probit", choices=FAMILIES,
                   help="GLM family of the --analysis models (default probit)")
    p.add_argument("--methods", default="dami,cart", help="comma-separated, of dami, cart, norm+logit (default dami,cart)")
    p.add_argument("--continuous-grid", default="0:1,1:10,1:3",
                   help="K:sigma_e masks of the continuous QIs, K = 0 unmasked (default 0:1,1:10,1:3)")
    p.add_argument("--alpha-grid", default="0,1,3", help="alphas of the categorical QIs, 0 = unmasked (default 0,1,3)")
    p.add_argument("--leaves", default="5,20,100", help="CART minimum leaf sizes (default 5,20,100)")
    p.add_argument("--m", type=int, default=3, help="copies per replicate (default 3)")
    p.add_argument("--replicates", type=int, default=3, help="replicate seeds per setting (default 3; SE needs >= 2)")
    p.add_argument("--pmse-copies", type=int, default=1, help="copies whose overall S_pMSE is averaged (default 1; 0 skips)")
    p.add_argument("--max-table-s-pmse", type=float, default=10.0,
                   help="table rule: a point whose worst one- or two-way S_pMSE exceeds this is flagged (default 10)")
    p.add_argument("--tol", action="append", metavar="COLUMN=VALUE", help="intruder's closeness on a continuous QI")
    p.add_argument("--attribute-target", default=None, help="sensitive column for DiSCO / attribute risk")
    p.add_argument("--k0", type=int, default=None, help="risk-subgroup k0 (for high_risk_mean_risk)")
    p.add_argument("--holdout-share", type=float, default=None, metavar="SHARE",
                   help="hold out this share of the rows (seeded by --seed) as real non-members, and measure every "
                        "point by the attacks that need them too (membership inference, singling out, linkability, "
                        "inference; see 'synthmi disclosure'); default: none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="CSV of the points (created; not overwritten)")
    p.add_argument("--json", default=None, help="optional JSON: settings, battery, replicate rows")
    p.add_argument("--figure", default=None, help="optional PNG: battery overlap and worst table S_pMSE against risk")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..data import load_dataset
    from ..workflow.grid import GRID_METHODS, default_settings
    from ..workflow.tuning import frontier
    from .synthesize import default_keep
    from .tune import _grid

    outs = [check_output_file(getattr(args, k), f"--{k}", args.overwrite) for k in ("out", "json", "figure")]
    named = [o.resolve() for o in outs if o is not None]
    if len(set(named)) != len(named):
        raise InputError("The '--out', '--json' and '--figure' options name the same file; give different files.")
    out, json_path, fig_path = outs
    methods = split_list(args.methods)
    bad = [m for m in methods if m not in GRID_METHODS]
    if bad or not methods:
        raise InputError(f"The '--methods' option takes {list(GRID_METHODS)}. Got {args.methods!r} instead.")
    for name, lo in (("m", 2), ("replicates", 1), ("pmse_copies", 0)):
        if getattr(args, name) < lo:
            raise InputError(f"The '--{name.replace('_', '-')}' option must be >= {lo}. Got {getattr(args, name)} instead.")
    share = args.holdout_share
    if share is not None and not 0.0 < share < 1.0:
        raise InputError(f"The '--holdout-share' option must be a share in (0, 1), e.g. 0.2. Got {share!r} instead.")
    if not args.max_table_s_pmse > 0:
        raise InputError(f"The '--max-table-s-pmse' option must be > 0. Got {args.max_table_s_pmse} instead.")
    try:
        leaves = [int(v) for v in split_list(args.leaves)]
    except ValueError:
        raise InputError(f"The '--leaves' option must list whole numbers >= 1. Got {args.leaves!r} instead.") from None
    if not leaves or min(leaves) < 1:
        raise InputError(f"The '--leaves' option must list whole numbers >= 1. Got {args.leaves!r} instead.")
    cgrid, agrid = _grid(args.continuous_grid, "continuous-grid"), _grid(args.alpha_grid, "alpha-grid")
    spec, qi = spec_and_quasi_identifiers(args)
    df = load_dataset(args.data, sep=sep_of(args), option="--data", na_values=na_values_of(args, spec),
                      encoding=getattr(args, "encoding", None))
    if spec is not None:
        spec.check_data(df, "--data")
        qi, keep = spec.quasi_identifiers, [c for c in spec.keep]
    elif args.keep is not None:
        keep = split_list(args.keep)
    elif default_keep(args.data) is not None:
        keep = [c for c in default_keep(args.data) if c not in qi]
    else:
        keep = [c for c in df.columns if c not in qi]
    unknown = [c for c in qi + keep if c not in df.columns]
    if unknown:
        raise InputError(f"The '--qi'/'--keep' options name columns not in the data: {unknown}. "
                         f"Available columns: {list(df.columns)}.")
    if args.attribute_target and args.attribute_target not in df.columns:
        raise InputError(f"The '--attribute-target' option names '{args.attribute_target}', which is not a column of the data.")
    if args.analysis:
        analyses = [(a, args.family) for a in args.analysis]
    else:
        analyses = [(a["formula"], a["family"]) for a in (spec.analyses if spec is not None else [])]
    for formula, _ in analyses:
        check_formula(formula, qi + keep, "--analysis" if args.analysis else "--spec", "the release (--qi and --keep)")
    if spec is None:
        from ..spec import ReleaseSpec

        spec = ReleaseSpec.draft(df[qi + keep], qi, keep)
    holdout = None
    if share is not None:
        from ..evaluation.membership import holdout_positions, split_at

        df, holdout = split_at(df, holdout_positions(len(df), share, args.seed))
    kinds = {c: spec.kind(c) for c in qi}
    settings = default_settings(kinds, methods, cgrid, agrid, leaves)
    tol = parse_tolerances(args.tol)
    say = (lambda s: print(f"synthmi frontier: {s}", file=sys.stderr, flush=True)) if progress_enabled(args) else None
    fr = frontier(df, qi, keep, settings, analyses, m=args.m, replicates=args.replicates, seed=args.seed,
                  tolerance=tol, target=args.attribute_target, k0=args.k0, subgroup_tolerance=tol,
                  pmse_copies=args.pmse_copies, rule="partial", spec=spec, battery=True,
                  max_table_s_pmse=args.max_table_s_pmse, progress=say, holdout=holdout)
    import pandas as pd

    points = pd.concat([fr.points, fr.references], ignore_index=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    points.to_csv(out, index=False, float_format="%.6g")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json_dumps({"data": str(args.data), **fr.to_dict(),
                                         "replicate_rows": fr.replicates.drop(columns=["params"], errors="ignore")},
                                        indent=2, sort_keys=True))
    if fig_path is not None:
        from ..report import figures

        fig_path.parent.mkdir(parents=True, exist_ok=True)
        fig = figures.battery_map(points, bound=args.max_table_s_pmse,
                                  title=f"{args.data}: {len(settings)} settings, {args.replicates} x {args.m} copies")
        fig.savefig(fig_path, dpi=110)
    step_line(args, "frontier", f"{len(settings)} settings measured -> {out}", summary=True)
    show = ["method", "setting", "battery_ci_overlap", "battery_ci_overlap_se", "worst_one_way_s_pmse",
            "worst_two_way_s_pmse", "mean_ci_overlap", "expected_matches", "true_match_rate"]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(points[[c for c in show if c in points]].round(4).to_string(index=False))
    return 0
