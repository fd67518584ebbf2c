"""``synthmi analyse``: the analyst's model on the original and on the copies, combined."""
from __future__ import annotations

import argparse
import sys
import time
import warnings

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_overwrite_flag,
    add_release_arguments,
    check_formula,
    check_output_file,
    load_release,
    load_spec_option,
    recorded_rule,
    out_format,
    step_line,
    write_result,
)
from ..spec import FAMILIES
from ..errors import InputError

EXAMPLES = """examples:
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex + race + education"
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex" --family logit --rule full
  synthmi analyse --original nhanes --synthetic syn/ --formula "bmi ~ age + gender" --family gaussian --out table.csv
  # survey-weighted: the weight recorded by synthesize --weights is used unless --weights none
  synthmi analyse --original person.csv --synthetic syn/ --formula "hours_per_week ~ age + sex" --family gaussian

For each coefficient: the original estimate and 95% CI, the estimate and CI
combined over the M copies (by the rule recorded with them, e.g. Reiter 2003
'partial' for partially synthetic copies; --rule overrides it), the
standardized difference and the CI overlap. Formula and family default to the
spec's first analysis (--spec, or the spec recorded with the copies)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyse",
        help="fit a model on original and copies; combined estimates, CI overlap, std. difference",
        description="Analysis-specific utility: fit the formula on the original and each copy and combine.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    add_release_arguments(p)
    p.add_argument("--formula", default=None,
                   help='model formula, e.g. "income ~ age + sex" (default: the first analysis of the spec)')
    p.add_argument("--family", default=None, choices=FAMILIES,
                   help="model family (default: the spec's, else probit)")
    p.add_argument("--rule", default=None, choices=["partial", "full", "rubin", "nested"],
                   help="combining rule (default: the rule recorded with the copies in metadata.json)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default: 0.05)")
    p.add_argument("--weights", default=None, metavar="COLUMN|none",
                   help="survey weight column (default: the one recorded by 'synthesize --weights'; 'none': unweighted)")
    p.add_argument("--weight-type", default="probability", choices=["probability", "frequency"],
                   help="probability (survey) weights with design-based SEs, or frequency weights")
    p.add_argument("--out", default=None, help="write the table to this .csv file (or the result as .json)")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..evaluation.analysis import recorded_weights

    if args.out:
        out_format(args.out, "--out")
    check_output_file(args.out, "--out", args.overwrite)
    _, original, syn = load_release(args)
    if args.weights is None:
        # the weight recorded by 'synthesize --weights', read as the report reads it
        # ('none' was once compared with str(None) here, so the recorded weight was never used)
        weights = recorded_weights(syn) or False
    elif args.weights.lower() == "none":
        weights = False
    else:
        weights = args.weights
        if weights not in original.columns:
            raise InputError(f"The '--weights' option names '{weights}', which is not a column of the copies.")
    spec = load_spec_option(args, syn)
    formula, family = args.formula, args.family
    if formula is None:
        analyses = spec.analyses if spec is not None else []
        if not analyses:
            raise InputError("The '--formula' option is needed: the spec lists no analyses.")
        formula, family = analyses[0]["formula"], family or analyses[0]["family"]
    check_formula(formula, original.columns, "--formula" if args.formula is not None else "--spec", "the copies")
    t0 = time.perf_counter()
    step_line(args, "analyse", f"fitting {formula!r} ({family or 'probit'}) on the original and {syn.m} copies")
    with warnings.catch_warnings():
        # a separated fit is reported once, in the summary below
        warnings.filterwarnings("ignore", message=".*separated fit", category=RuntimeWarning)
        res = syn.analyse(formula, original=original, family=family or "probit", rule=args.rule or recorded_rule(syn),
                          alpha=args.alpha, spec=spec, weights=weights, weight_type=args.weight_type)
    step_line(args, "analyse", f"fitted the original and {syn.m} copies, combined by rule {res.rule!r}, "
              f"in {time.perf_counter() - t0:.1f} s", summary=True)
    if syn.unconverged:
        print("WARNING: these copies were released although the posterior sampler did not converge "
              "(--accept-diagnostics); see diagnostics_check in metadata.json.", file=sys.stderr)
    print(res.summary())
    if args.out:
        # .csv: the table (as before); .json: the result's to_dict()
        write_result(res, args.out, table=res.to_frame())
        print(f"wrote {args.out}")
    return 0
