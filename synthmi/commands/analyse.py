"""``synthmi analyse``: the analyst's model on the original and on the copies, combined."""
from __future__ import annotations

import argparse
import sys
import warnings

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_overwrite_flag,
    add_release_arguments,
    check_output_file,
    load_release,
    recorded_rule,
)

EXAMPLES = """examples:
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex + race + education"
  synthmi analyse --original adult --synthetic syn/ --formula "income ~ age + sex" --family logit --rule full
  synthmi analyse --original nhanes --synthetic syn/ --formula "bmi ~ age + gender" --family gaussian --out table.csv

For each coefficient: the original estimate and 95% CI, the estimate and CI
combined over the M copies (by the rule recorded with them, e.g. Reiter 2003
'partial' for partially synthetic copies; --rule overrides it), the
standardized difference and the CI overlap."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyse",
        help="fit a model on original and copies; combined estimates, CI overlap, std. difference",
        description="Analysis-specific utility: fit the formula on the original and each copy and combine.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    add_release_arguments(p)
    p.add_argument("--formula", required=True, help='model formula, e.g. "income ~ age + sex"')
    p.add_argument("--family", default="probit", choices=["probit", "logit", "gaussian"])
    p.add_argument("--rule", default=None, choices=["partial", "full", "rubin", "nested"],
                   help="combining rule (default: the rule recorded with the copies in metadata.json)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default: 0.05)")
    p.add_argument("--out", default=None, help="write the table to this CSV")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    check_output_file(args.out, "--out", args.overwrite)
    _, original, syn = load_release(args)
    with warnings.catch_warnings():
        # a separated fit is reported once, in the summary below
        warnings.filterwarnings("ignore", message=".*separated fit", category=RuntimeWarning)
        res = syn.analyse(args.formula, original=original, family=args.family, rule=args.rule or recorded_rule(syn),
                          alpha=args.alpha)
    if syn.unconverged:
        print("WARNING: these copies were released although the posterior sampler did not converge "
              "(--accept-diagnostics); see diagnostics_check in metadata.json.", file=sys.stderr)
    print(res.summary())
    if args.out:
        res.to_frame().to_csv(args.out)
        print(f"wrote {args.out}")
    return 0
