"""``synthmi tune``: DA-MI masks that maximise utility subject to disclosure-risk targets."""
from __future__ import annotations

import argparse
import json
import sys

from ._common import (
    EXAMPLES_FMT,
    add_common_flags,
    add_sep_flag,
    check_output_file,
    parse_assignments,
    progress_enabled,
    sep_of,
    split_list,
)

EXAMPLES = """examples:
  synthmi tune --data adult --qi age,sex,race,education \\
      --analysis "income ~ age + sex + race + education" --tol age=1 \\
      --target "expected_matches<=50" --out masks.json
  synthmi tune --data adult --qi age,sex,race,education --analysis "income ~ age + sex + race + education" \\
      --tol age=1 --attribute-target income --target "true_match_rate<=0.0005" --target "disco<=0.05" --out masks.json
  # then synthesize with the chosen masks (the JSON lists them as --mask flags):
  synthmi synthesize --data adult --qi age,sex,race,education --method dami --mask age:K=3,sigma=3 ... --out syn/

targets (repeatable, all must hold; MEASURE<=VALUE): expected_matches, true_match_rate,
share_above_threshold, mean_risk, high_risk_mean_risk (needs --k0), disco, dcap,
attribute_risk_mean, repU (these four need --attribute-target). Risk is measured as in
'synthmi disclosure' (the intruder knows the true QIs; --tol sets closeness).

search: the posterior is fitted once; masks act only in the predictive step. For each
(K, sigma_e) of the continuous QIs, the largest alpha (shared by the categorical QIs)
that meets the targets, by bisection with --m-search copies per point, then one-step
moves of each categorical QI's alpha and of the continuous setting; the best few are
confirmed with --m copies x --replicates replicates and the best confirmed setting
whose mean risk meets every target is chosen. Utility: mean CI overlap of the
--analysis models (original vs combined copies, partial-synthesis rule).

output (--out, JSON): the chosen masks, the same as --mask flags for 'synthmi
synthesize', their confirmed utility and risk (mean and Monte Carlo SE), the search
trace and the wall time. Exit status 2 if no setting meets the targets."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tune",
        help="choose DA-MI masks that maximise utility under risk targets",
        description="Search DA-MI masking parameters for the most useful release that meets disclosure-risk targets.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--data", required=True, help="'adult', 'nhanes' or a CSV path")
    add_sep_flag(p)
    p.add_argument("--qi", required=True, help="comma-separated quasi-identifiers to synthesize")
    p.add_argument("--keep", default=None, help="columns released unchanged (default as 'synthmi synthesize')")
    p.add_argument("--analysis", action="append", required=True, metavar="FORMULA",
                   help="an analysis the release must support, e.g. 'income ~ age + sex' (repeatable)")
    p.add_argument("--family", default="probit", help="GLM family of the analyses (default probit)")
    p.add_argument("--target", action="append", required=True, metavar="MEASURE<=VALUE",
                   help="a risk target, e.g. expected_matches<=50 (repeatable; all must hold)")
    p.add_argument("--tol", action="append", metavar="COLUMN=VALUE", help="intruder's closeness on a continuous QI")
    p.add_argument("--attribute-target", default=None, help="sensitive column for disco / attribute risk targets")
    p.add_argument("--k0", type=int, default=None, help="risk-subgroup k0 (for high_risk_mean_risk)")
    p.add_argument("--m", type=int, default=5, help="copies per confirmation replicate (default 5)")
    p.add_argument("--replicates", type=int, default=3, help="confirmation replicates (default 3)")
    p.add_argument("--m-search", type=int, default=2, help="copies per search point (default 2)")
    p.add_argument("--alpha-grid", default="0,1,2,3,4,5", help="alphas tried for categorical QIs")
    p.add_argument("--continuous-grid", default="1:10,1:5,2:4,3:3,3:2,5:1.5",
                   help="K:sigma_e pairs tried for continuous QIs")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="DA-MI parameter, e.g. ordinal_link=multinomial (repeatable; passed on to synthesize too)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="JSON file for the chosen masks (created; not overwritten)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    add_common_flags(p)
    p.set_defaults(func=run)


def _grid(text: str, name: str):
    try:
        if name == "continuous-grid":
            return tuple((int(a), float(b)) for a, b in (t.split(":") for t in split_list(text)))
        return tuple(float(t) for t in split_list(text))
    except ValueError:
        raise ValueError(f"The '--{name}' option could not be read: {text!r}.") from None


def run(args: argparse.Namespace) -> int:
    from ..data import load_dataset
    from ..evaluation.frontier import Target
    from ..tuning import tune
    from ..models import DAMISynthesizer
    from .synthesize import DEFAULT_KEEP, parse_params

    out = check_output_file(args.out, "--out", args.overwrite)
    targets = [Target.parse(t) for t in args.target]
    base_params = parse_params(args.param, DAMISynthesizer)
    if "masks" in base_params:
        raise ValueError("The '--param' option cannot set masks: tune chooses them.")
    qi = split_list(args.qi)
    if not qi:
        raise ValueError("The '--qi' option must name at least one column.")
    df = load_dataset(args.data, sep=sep_of(args), option="--data")
    if args.keep is not None:
        keep = split_list(args.keep)
    elif str(args.data).lower() in DEFAULT_KEEP:
        keep = [c for c in DEFAULT_KEEP[str(args.data).lower()] if c not in qi]
    else:
        keep = [c for c in df.columns if c not in qi]
    unknown = [c for c in qi + keep if c not in df.columns]
    if unknown:
        raise ValueError(f"The '--qi'/'--keep' options name columns not in the data: {unknown}.")
    needs_target = {"disco", "dcap", "attribute_risk_mean", "repU"} & {t.measure for t in targets}
    if needs_target and not args.attribute_target:
        raise ValueError(f"The targets {sorted(needs_target)} need --attribute-target (the sensitive column).")
    if any(t.measure == "high_risk_mean_risk" for t in targets) and args.k0 is None:
        raise ValueError("The target high_risk_mean_risk needs --k0 (the risk-subgroup threshold).")
    tol = {k: float(v) for k, v in parse_assignments(args.tol, "tol").items()} or None
    say = (lambda s: print(f"synthmi tune: {s}", file=sys.stderr, flush=True)) if progress_enabled(args) else None
    res = tune(df, qi, keep, [(a, args.family) for a in args.analysis], targets,
               continuous_grid=_grid(args.continuous_grid, "continuous-grid"),
               alpha_grid=_grid(args.alpha_grid, "alpha-grid"), m_search=args.m_search, m=args.m,
               replicates=args.replicates, seed=args.seed, tolerance=tol, target=args.attribute_target,
               k0=args.k0, subgroup_tolerance=tol, base_params=base_params, progress=say)
    spec = res.to_spec()
    spec["data"] = str(args.data)
    spec["trace"] = json.loads(res.trace.to_json(orient="records"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(spec, indent=2, sort_keys=True, default=str))
    if not res.feasible:
        print(f"No setting met {', '.join(map(str, targets))}; the search trace is in {out}.")
        return 2
    c = res.confirmed
    extra = " ".join(f"--param {k}={v}" for k, v in base_params.items())
    print(f"chosen masks: {' '.join('--mask ' + f for f in spec['mask_flags'])} {extra}".rstrip())
    print(f"mean CI overlap {c['mean_ci_overlap']:.3f} (se {c.get('mean_ci_overlap_se', float('nan')):.3f}); "
          + "; ".join(f"{t.measure} {c[t.measure]:.4g} (target {t.op} {t.value:g})" for t in targets)
          + f"; wall {res.wall_seconds:.0f} s -> {out}")
    return 0
