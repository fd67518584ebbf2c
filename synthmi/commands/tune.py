"""``synthmi tune``: DA-MI masks that maximise utility subject to disclosure-risk targets."""
from __future__ import annotations

import argparse
import json
import sys

from ._common import (
    EXAMPLES_FMT,
    add_attack_flags,
    attack_options,
    categorical_kinds,
    add_common_flags,
    add_convergence_flags,
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
from ..spec import FAMILIES, WHOLE_MODELS

EXAMPLES = """examples:
  synthmi tune --data adult --qi age,sex,race,education \\
      --analysis "income ~ age + sex + race + education" --tol age=1 \\
      --target "expected_matches<=7" --out tuned.json
  # then synthesize with the chosen masks (the spec carries them; --param as given to tune):
  synthmi synthesize --data adult --spec tuned.json --method dami --m 5 --out syn/
  synthmi tune --data survey.csv --spec spec.json --tol age=1 --attribute-target income \\
      --target "true_match_rate<=0.0005" --target "disco<=0.05" --out tuned.json --trace search.json

targets (repeatable, all must hold; MEASURE<=VALUE, or MEASURE<=cart for "at CART's risk": CART
(--cart-param, default its defaults) is synthesized with --reference-replicates seeds (default 5,
--m copies each), and a candidate meets the target when its mean is not above CART's by more than
2 x sqrt(SE_cart^2 + SE_candidate^2), MC SEs over seeds): membership_auc, membership_tpr_at_fpr_0.01
(the stronger of the distance attack and DOMIAS; these hold out --holdout-share of the rows, default
0.2, as the non-members, and fit on the rest), expected_matches, true_match_rate,
share_above_threshold, mean_risk, high_risk_mean_risk (needs --k0), disco, dcap,
attribute_risk_mean, repU (these four need --attribute-target). Risk is measured as in
'synthmi disclosure' (the intruder knows the true QIs; --tol sets closeness).

search: the posterior is fitted once and m x replicates posterior parameter sets are
drawn once (refused like a release if R-hat / ESS fail, unless --accept-diagnostics);
masks act only in the predictive step, so every candidate reuses them. Each QI's mask
runs from none through --continuous-grid (K:sigma_e, normal masks) or --alpha-grid
(categorical). When the spec's "models" give QIs a 'tree' or 'cart' model without a
"min_leaf", their minimum leaf size (one size for all of them) can be one more coordinate,
--leaf-grid (e.g. 5,10,20,40; 5 is CART's; default none), coarsest first: coarser leaves copy less of
each record, and the masks can spend the risk they save (the ascent below is run once per leaf
size, finest first, each from the masks where the previous stopped; the coordinate search varies
it too). From all masks off, each QI's mask
is raised one step at a time, moving
to the raise with the best mean CI overlap among those meeting every target (--m-search
copies per candidate), until no raise meets them. Then the diagonal (every QI at its k-th
level) and a coordinate search from the best point so far: each QI in turn is set to every level of its grid (no mask and the weakest
included) with the others held, moving to the best; the cycles over all QIs repeat until
one makes no move (--max-cycles, --max-search-points, --max-search-seconds; the points budget,
counted in mask settings measured, gives the same choice on any machine, the seconds budget does
not). The output says what was not
tried: each QI's grid, QIs never masked and why, levels never used, budget cut-offs. The --n-confirm best candidates are
re-run with --m copies x --replicates replicates; the best whose mean risk meets every
target is chosen. Validation: the chosen spec is then synthesized exactly as 'synthmi synthesize
--spec OUT --method dami --m M --seed S' does for S = --seed ... --seed + --replicates - 1 (a fit of
its own per seed, as the command fits) and measured as 'synthmi analyse' measures the copies; the
figures printed and recorded are those (search and confirmation copies use other seeds, so the
choice does not flatter them). Utility: the battery (synthmi.evaluation.battery): mean CI overlap over
the --analysis models and two generic regressions of each kept column on the QIs (quadratic
in numeric QIs, factors for categorical ones; the second adds the interactions involving a numeric
QI and the other kept columns), original vs combined copies, partial rule.
A candidate whose worst one-way or two-way table S_pMSE exceeds --max-table-s-pmse
(default 10; S_pMSE is about 1 for copies from the fitted model, 2 for proper copies) is infeasible whatever
its overlap: a mask must not buy overlap by wrecking a margin. With a MEASURE<=cart target so is
one whose worst one-way (two-way) S_pMSE exceeds --max-table-ratio (default 2) times CART's. When no
setting is feasible, the tables that broke the rule are named with their S_pMSE. --categorical,
--secret and --link-aux as in 'synthmi synthesize' and 'synthmi disclosure' (the intruder of the
inference and linkability targets).

output: --out is a release spec (the --spec given, or one drafted from --qi/--keep
without the data's levels or bounds) with the chosen masks, and the chosen leaf size in its
trees' "models" ("min_leaf"); 'synthmi synthesize --spec' takes it. --trace (optional) records the confirmed utility and risk (mean and Monte
Carlo SE), every candidate tried and the wall time. No other file is written. Exit
status 2 (and no --out) if no setting meets the targets."""


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
    p.add_argument("--spec", default=None, help="release spec (roles, kinds, analyses); the chosen masks are added to it")
    p.add_argument("--qi", default=None, help="comma-separated quasi-identifiers to synthesize (default: the spec's)")
    p.add_argument("--keep", default=None, help="columns released unchanged (default as 'synthmi synthesize')")
    p.add_argument("--categorical", action="append", metavar="COLUMNS",
                   help="comma-separated numeric columns holding codes of categories, modelled as categories "
                        "(as 'synthmi synthesize --categorical'; the spec written carries their kind)")
    p.add_argument("--analysis", action="append", default=None, metavar="FORMULA",
                   help="an analysis the release must support, e.g. 'income ~ age + sex' (repeatable; "
                        "default: the spec's analyses)")
    p.add_argument("--family", default="probit", choices=FAMILIES,
                   help="GLM family of the --analysis models (default probit)")
    p.add_argument("--max-table-s-pmse", type=float, default=10.0,
                   help="table rule: a candidate whose worst one- or two-way S_pMSE exceeds this is infeasible "
                        "(default 10)")
    p.add_argument("--max-table-ratio", type=float, default=2.0,
                   help="with a MEASURE<=cart target, a candidate whose worst one-way (two-way) S_pMSE exceeds this "
                        "many times CART's is infeasible too (default 2; 0: the --max-table-s-pmse bound alone)")
    p.add_argument("--target", action="append", required=True, metavar="MEASURE<=VALUE",
                   help="a risk target, e.g. expected_matches<=50 (repeatable; all must hold)")
    p.add_argument("--tol", action="append", metavar="COLUMN=VALUE", help="intruder's closeness on a continuous QI")
    p.add_argument("--attribute-target", default=None, help="sensitive column for disco / attribute risk targets")
    p.add_argument("--k0", type=int, default=None, help="risk-subgroup k0 (for high_risk_mean_risk)")
    add_attack_flags(p)
    p.add_argument("--m", type=int, default=5, help="copies per confirmation replicate (default 5)")
    p.add_argument("--replicates", type=int, default=3, help="confirmation replicates (default 3)")
    p.add_argument("--m-search", type=int, default=3, help="copies per search candidate (default 3)")
    p.add_argument("--n-confirm", type=int, default=3, help="search candidates confirmed (default 3)")
    p.add_argument("--alpha-grid", default="0.5,1,1.5,2,3,4,5", help="alphas tried for categorical QIs")
    p.add_argument("--continuous-grid", default="1:20,1:10,1:6,1:4,1:3,1:2,1:1.5,1:1",
                   help="K:sigma_e pairs tried for continuous QIs")
    p.add_argument("--models", choices=list(WHOLE_MODELS), default=None,
                   help="as synthesize --models: 'tree' (or 'cart') gives every quasi-identifier that model, 'auto' "
                        "chooses each by posterior predictive checks; with --spec, written into the tuned spec's "
                        "\"models\" (its own per-column entries win), so synthesize --spec reproduces them")
    p.add_argument("--leaf-grid", default="none",
                   help="minimum leaf sizes tried for the QIs the spec's \"models\" give a 'tree' or 'cart' without "
                        "a \"min_leaf\" (one size for all of them), e.g. 5,10,20,40; default 'none': no leaf search "
                        "(opt-in: on Adult it chose leaves of 20 whose held-out overlap was 0.058 below CART's)")
    p.add_argument("--jobs", type=int, default=2,
                   help="worker processes measuring candidates side by side (default 2; results do not depend on it)")
    p.add_argument("--max-search-seconds", type=float, default=None,
                   help="stop the search (not the confirmation) after this many seconds (what it reaches depends "
                        "on the machine's load; --max-search-points does not)")
    p.add_argument("--max-search-points", type=int, default=None,
                   help="stop the search (not the confirmation) before it measures more than this many distinct "
                        "mask settings: a budget that gives the same search and choice on any machine")
    p.add_argument("--max-cycles", type=int, default=10,
                   help="cycles of the coordinate search at most (default 10; 0: the greedy ascent alone)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="DA-MI parameter, e.g. ordinal_link=multinomial (repeatable; give it to synthesize too)")
    p.add_argument("--cart-param", action="append", metavar="NAME=VALUE",
                   help="CART parameter of the reference of a MEASURE<=cart target, e.g. min_samples_leaf=20 "
                        "(repeatable; default CART's defaults)")
    p.add_argument("--reference-replicates", type=int, default=5,
                   help="replicate seeds of CART for MEASURE<=cart targets (default 5; --m copies each)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout-share", type=float, default=None, metavar="SHARE",
                   help="share of the rows held out (with --seed) as the non-members of a membership target "
                        "(membership_auc, membership_tpr_at_fpr_0.01); default 0.2 when such a target is given")
    p.add_argument("--out", required=True, help="release spec JSON with the chosen masks (created; not overwritten)")
    p.add_argument("--trace", default=None, help="optional JSON file: confirmed figures, every candidate, timing")
    p.add_argument("--overwrite", action="store_true", help="replace existing --out / --trace files")
    p.add_argument("--accept-diagnostics", action="store_true",
                   help="search even if the posterior sampler fails its convergence check (flagged in --trace)")
    add_convergence_flags(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def _grid(text: str, name: str):
    if name == "leaf-grid" and text.strip().lower() == "none":
        return None
    try:
        if name == "leaf-grid":
            out = tuple(int(t) for t in split_list(text))
            bad = [f"{v}" for v in out if v < 1]
        elif name == "continuous-grid":
            out = tuple((int(a), float(b)) for a, b in (t.split(":") for t in split_list(text)))
            bad = [f"{k}:{s:g}" for k, s in out if k < 0 or s <= 0]
        else:
            out = tuple(float(t) for t in split_list(text))
            bad = [f"{a:g}" for a in out if a < 0]
    except ValueError:
        raise InputError(f"The '--{name}' option could not be read: {text!r}.") from None
    if bad or not out:
        what = {"continuous-grid": "K:sigma_e pairs with K >= 0 and sigma_e > 0",
                "leaf-grid": "minimum leaf sizes, integers >= 1 (or 'none')"}.get(name, "alphas >= 0")
        raise InputError(f"The '--{name}' option must list {what}. Got {text!r} instead.")
    return out


def not_tried_lines(settings: dict) -> list[str]:
    """What the search did not try (``settings["not_tried"]`` of :func:`synthmi.workflow.tuning.tune`),
    as lines for the terminal: the grid of each QI, the QIs never varied, levels never used, the
    share of the lattice measured and the budget cut-offs."""
    nt = settings.get("not_tried") or {}
    if not nt:
        return []
    cs = settings.get("coordinate_search") or {}
    out = [f"search: {nt['points_tried']} of {nt['lattice_points']} mask settings measured; greedy ascent "
           f"stopped by {settings.get('search_stopped_by')}, coordinate search by {cs.get('stopped_by')} after "
           f"{cs.get('cycles')} cycle(s)"]
    for c, levels in nt.get("grid", {}).items():
        out.append(f"  grid of {c}: {' < '.join(levels)}")
    if nt.get("min_leaf_grid"):
        out.append(f"  grid of the trees' min_leaf ({', '.join(settings.get('leaf_columns') or [])}): "
                   + " > ".join(map(str, nt["min_leaf_grid"])))
    out.append(f"not tried: {nt['outside_grid']}")
    for c, why in nt.get("columns_never_varied", {}).items():
        out.append(f"not tried: {c} never masked: {why}")
    for c, levels in nt.get("levels_never_tried", {}).items():
        out.append(f"not tried: {c} at {', '.join(levels)}")
    if nt.get("min_leaf_never_tried"):
        out.append(f"not tried: min_leaf {', '.join(map(str, nt['min_leaf_never_tried']))}")
    for cut in nt.get("budget_cut_offs", []):
        out.append(f"not tried: the search was cut by {cut} "
                   "(raise --max-search-points / --max-search-seconds / --max-cycles)")
    return out


def versus_reference_lines(info: dict | None) -> list[tuple[str, bool]]:
    """The tuned release's utility against the reference's (``settings["versus_reference"]`` of
    :func:`synthmi.workflow.tuning.tune`), one line per utility, with whether it is below."""
    out = []
    for k, name in (("battery_ci_overlap", "battery CI overlap"), ("mean_ci_overlap", "declared analyses' CI overlap")):
        v = (info or {}).get(k)
        if v:
            out.append((f"{name} {v['tuned']:.3f} vs CART's {v['reference']:.3f} (difference {v['difference']:+.3f}, "
                        f"MC se {v['se']:.3f}): {v['verdict']}", v["verdict"] == "below"))
    return out


#: tables named on the terminal when no setting is feasible (worst first; --trace has them all)
_SHOWN_TABLES = 8


_TREES = ("tree", "cart")


def infeasible_lines(info: dict | None, settings: dict | None = None) -> list[str]:
    """Why no setting was feasible (``settings["infeasible"]`` of :func:`synthmi.workflow.tuning.tune`), as
    lines for the terminal: the tables (names, S_pMSE, bound) that broke the table rule on the setting
    closest to it, or the risk targets when no setting met them; the advice depends on the QIs' current
    models (``settings["qi_models"]``): a tree is advised only for a QI that is not one already."""
    if not info:
        return []
    settings = settings or {}
    if info.get("binding") == "table rule":
        out = [f"{info['met_risk_targets']} of {info['settings_measured']} settings the search measured met the risk "
               f"targets but not its table rule; the closest, "
               f"{json.dumps(info['masks'], sort_keys=True) if info['masks'] else 'no masks at all'}, has"]
        tables = info.get("tables") or []
        out += [f"  {t['way']}-way table {t['table']}: S_pMSE {t['s_pmse']:.3g} (bound {t['cap']:.3g})"
                for t in tables[:_SHOWN_TABLES]]
        if len(tables) > _SHOWN_TABLES:
            out.append(f"  ... and {len(tables) - _SHOWN_TABLES} more tables above their bound (all in --trace)")
        if not tables:
            out += [f"  {k}: {v:.3g} (bound {info['caps'][k]:.3g}; mean over its search copies)"
                    for k, v in (info.get("worst") or {}).items()]
        for c, why in (info.get("unmaskable") or {}).items():
            out.append(f"  '{c}' cannot be masked ({why}): no setting moves its tables, drawn by its model alone")
        from ..models.tree import DISCRETE_MAX

        models = settings.get("qi_models") or {}
        named = [c for c in (settings.get("quasi_identifiers") or models)
                 if any(c in t["table"].split(":") for t in tables)] or list(models)
        not_trees = [c for c in named if models.get(c) not in _TREES]
        loosen = "a higher --max-table-s-pmse / --max-table-ratio"
        if not_trees or not models:
            which = ", ".join(f"'{c}' ({models[c]})" for c in not_trees) if models else "the named numeric QIs"
            out.append("(a model that fits those margins may make a setting feasible: a tree or a transform for "
                       f"{which} in the spec's \"models\" (a tree draws a QI of at most {DISCRETE_MAX} distinct "
                       "values, e.g. an age, from its donors' values, keeping zeros and heaps, and smooths one with "
                       f"more values with a kernel); or {loosen})")
        else:
            # a tree already draws from the data's own values; coarser leaves (the leaf grid) lower the risk,
            # not the tables' S_pMSE: no model change to advise
            grid = settings.get("leaf_grid")
            out.append("(the named QIs' models already are trees, drawing from the data's own values"
                       + (f", at the leaf sizes {', '.join(map(str, grid))} searched" if grid else "")
                       + f": no setting of this search meets the table rule at these bounds; {loosen}, or a looser "
                       "risk target)")
        return out
    if info.get("binding") == "risk targets":
        return [f"none of the {info['settings_measured']} settings measured met the risk targets; the closest, "
                f"{json.dumps(info['closest_masks'], sort_keys=True)}, has "
                + ", ".join(f"{k} {v:.4g}" for k, v in info["risk"].items())]
    return []


def _unmasked_risk_advice(settings: dict, info: dict) -> str:
    """What to do when even the release without masks misses the risk targets (masks only add risk), by the
    QIs' current models: the unmasked trees are CART's own draws (models/tree.py), at CART's risk (tune_files:
    Adult and NHANES, "min_leaf 5: origin infeasible"), and coarser leaves lower it; parametric models have no
    leaf to coarsen."""
    models = settings.get("qi_models") or {}
    head = "(the release without masks already misses the risk targets: masks only add risk"
    others = [c for c in models if models[c] not in _TREES]
    if others:
        return (f"{head}, so no mask setting reaches them with these models ("
                + ", ".join(f"'{c}' {models[c]}" for c in others) + "): loosen the targets, or change the QIs' models "
                "(the spec's \"models\"))")
    if settings.get("leaf_grid"):
        leaf = info.get("min_leaf")
        return (f"{head}, and the QIs' models already are trees whose leaf sizes "
                f"{', '.join(map(str, settings['leaf_grid']))} were searched"
                + (f" (closest at min_leaf {leaf})" if leaf is not None else "")
                + ": no setting reaches them; loosen the targets, or try coarser leaves than the grid's)")
    if settings.get("leaf_searchable"):
        return (f"{head}; the QIs' models already are trees, and coarser leaves lower it: --leaf-grid 5,10,20,40 "
                "searches their minimum leaf size with the masks)")
    # --leaf-grid needs the trees in a spec's "models" without a "min_leaf" (tuning.leaf_columns)
    return (f"{head}; the QIs' models already are trees, and coarser leaves lower it: --leaf-grid 5,10,20,40 searches "
            "their minimum leaf size when the trees are in a --spec's \"models\" without a \"min_leaf\" ('synthmi "
            "spec' drafts one; --models tree with --spec puts them there))")


def run(args: argparse.Namespace) -> int:
    from ..data import load_dataset
    from ..diagnostics import DiagnosticsFailed
    from ..models import DAMISynthesizer
    from ..models.conditional import check_spec_models
    from ..workflow.tuning import ReferenceTarget, parse_target, tune
    from .synthesize import _check_not_degenerate, _with_kinds, default_keep, parse_params

    # outputs first: a bad --out / --trace costs nothing
    out = check_output_file(args.out, "--out", args.overwrite)
    trace_path = check_output_file(args.trace, "--trace", args.overwrite)
    if trace_path is not None and trace_path.resolve() == out.resolve():
        raise InputError("The '--out' and '--trace' options name the same file; give two files.")
    targets = [parse_target(t) for t in args.target]
    if args.holdout_share is not None and not 0.0 < args.holdout_share < 1.0:
        raise InputError(f"The '--holdout-share' option must be a share in (0, 1), e.g. 0.2. Got "
                         f"{args.holdout_share!r} instead.")
    base_params = parse_params(args.param, DAMISynthesizer)
    from ..models import CartSynthesizer

    try:
        cart_params = parse_params(args.cart_param, CartSynthesizer)
    except InputError as exc:
        raise InputError(str(exc).replace("'--param'", "'--cart-param'")) from None
    if cart_params and not any(isinstance(t, ReferenceTarget) for t in targets):
        raise InputError("The '--cart-param' option sets the CART reference of a MEASURE<=cart target; no target "
                         "names cart.")
    if args.reference_replicates < 2:
        raise InputError(f"The '--reference-replicates' option must be >= 2 (an MC error needs two seeds). "
                         f"Got {args.reference_replicates} instead.")
    if "masks" in base_params:
        raise InputError("The '--param' option cannot set masks: tune chooses them.")
    from ..diagnostics import convergence_thresholds

    args.rhat_max, args.ess_min = convergence_thresholds(args.convergence, args.rhat_max, args.ess_min)
    for name in ("accept_diagnostics", "rhat_max", "ess_min"):
        if name in base_params:
            raise InputError(f"Give {name} with --{name.replace('_', '-')}, not --param.")
        base_params[name] = getattr(args, name)
    for name in ("m", "replicates", "m_search", "n_confirm", "jobs", "max_cycles", "max_search_points"):
        lo = 2 if name in ("m", "m_search") else 0 if name == "max_cycles" else 1  # partial rule: >= 2 copies
        if getattr(args, name) is not None and getattr(args, name) < lo:
            raise InputError(f"The '--{name.replace('_', '-')}' option must be >= {lo}. Got {getattr(args, name)} instead.")
    if not args.max_table_s_pmse > 0:
        raise InputError(f"The '--max-table-s-pmse' option must be > 0. Got {args.max_table_s_pmse} instead.")
    if not args.max_table_ratio >= 0:
        raise InputError(f"The '--max-table-ratio' option must be >= 0 (0: no ratio rule). Got {args.max_table_ratio} "
                         "instead.")
    grids = dict(continuous_grid=_grid(args.continuous_grid, "continuous-grid"),
                 alpha_grid=_grid(args.alpha_grid, "alpha-grid"), leaf_grid=_grid(args.leaf_grid, "leaf-grid"))
    spec, qi = spec_and_quasi_identifiers(args)
    if args.models is not None:
        if "models" in base_params:
            raise InputError("Give the models either with --models or with --param models=..., not both.")
        if spec is not None and args.models != "auto":
            # into the spec tune writes (its own entries win for their columns, as synthesize's), so that
            # synthesize --spec TUNED fits the same models and the leaf search sees them
            from dataclasses import replace as _replace

            from ..models.conditional import expand_models

            spec = _replace(spec, models=expand_models(args.models, list(spec.quasi_identifiers), spec.models))
        else:
            base_params["models"] = args.models
    if spec is not None:
        check_spec_models(spec, args.spec)  # one check and message with synthesize --spec
    if args.analysis:
        analyses = [(a, args.family) for a in args.analysis]
    elif spec is not None and spec.analyses:
        analyses = [(a["formula"], a["family"]) for a in spec.analyses]
    else:
        raise InputError("The '--analysis' option is needed: give the analyses the release must support "
                         "(or a --spec that lists them).")
    needs_target = {"disco", "dcap", "attribute_risk_mean", "repU"} & {t.measure for t in targets}
    if needs_target and not args.attribute_target:
        raise InputError(f"The targets {sorted(needs_target)} need --attribute-target (the sensitive column).")
    if any(t.measure == "high_risk_mean_risk" for t in targets) and args.k0 is None:
        raise InputError("The target high_risk_mean_risk needs --k0 (the risk-subgroup threshold).")
    df = load_dataset(args.data, sep=sep_of(args), option="--data", na_values=na_values_of(args, spec),
                      encoding=getattr(args, "encoding", None))
    if spec is not None:
        spec.check_data(df, "--data")
        keep = None
    elif args.keep is not None:
        keep = split_list(args.keep)
    elif default_keep(args.data) is not None:
        keep = [c for c in default_keep(args.data) if c not in qi]
    else:
        keep = [c for c in df.columns if c not in qi]
    unknown = [c for c in qi + (keep or []) if c not in df.columns]
    if unknown:
        raise InputError(f"The '--qi'/'--keep' options name columns not in the data: {unknown}. "
                         f"Available columns: {list(df.columns)}.")
    # an empty or constant released column, named with its role and where the role came from (as synthesize)
    keep_from = "option" if args.keep is not None else "spec" if spec is not None else "default"
    _check_not_degenerate(df, qi, spec.keep if spec is not None else keep, keep_from,
                          spec, "option" if args.qi or spec is None else "spec")
    if args.attribute_target and args.attribute_target not in df.columns:
        raise InputError(f"The '--attribute-target' option names '{args.attribute_target}', which is not a column "
                         "of the data.")
    categorical = split_list(args.categorical)
    if categorical:
        # as synthesize --categorical: the columns' kind in the spec the fit takes (and tune writes)
        from ..spec import ReleaseSpec

        roles = (spec.quasi_identifiers + spec.keep) if spec is not None else qi + keep
        outside = [c for c in categorical if c in df.columns and c not in roles]
        if outside:
            raise InputError(f"The '--categorical' option names columns that are not released (not in --qi or "
                             f"--keep): {outside}.")
        kinds = categorical_kinds(df[roles], categorical)
        if spec is not None:
            spec = _with_kinds(spec, df, kinds)
        else:
            spec, keep = ReleaseSpec.from_roles(df[roles], qi, keep, kinds), None
    released = (spec.quasi_identifiers + spec.keep) if spec is not None else qi + keep
    for formula, _ in analyses:
        check_formula(formula, released, "--analysis" if args.analysis else "--spec", "the release (--qi and --keep)")
    tol = parse_tolerances(args.tol)
    # --secret / --link-aux as 'synthmi disclosure' reads them (its --target is tune's --attribute-target)
    secrets, link_aux = attack_options(argparse.Namespace(secret=args.secret, link_aux=args.link_aux,
                                                          target=None), released)
    named = {t.measure for t in targets}
    for flag, value, measure in (("--secret", args.secret, "inference"), ("--link-aux", link_aux, "linkability")):
        if value and measure not in named:
            raise InputError(f"The '{flag}' option sets the intruder of the {measure} target; no --target names "
                             f"{measure}.")
    say = (lambda s: print(f"synthmi tune: {s}", file=sys.stderr, flush=True)) if progress_enabled(args) else None
    try:
        res = tune(df, None if spec is not None else qi, keep, analyses, targets, m_search=args.m_search, m=args.m,
                   replicates=args.replicates, n_confirm=args.n_confirm, seed=args.seed, tolerance=tol,
                   target=args.attribute_target, k0=args.k0, subgroup_tolerance=tol, base_params=base_params,
                   spec=spec, max_search_seconds=args.max_search_seconds, max_search_points=args.max_search_points,
                   n_jobs=args.jobs, progress=say,
                   holdout_share=args.holdout_share, max_table_s_pmse=args.max_table_s_pmse,
                   max_cycles=args.max_cycles, reference_params=cart_params,
                   reference_replicates=args.reference_replicates, max_table_ratio=args.max_table_ratio or None,
                   secrets=secrets if args.secret else None, link_aux=link_aux,
                   **grids)
    except DiagnosticsFailed as exc:
        raise exc.for_cli() from None
    step_line(args, "tune", f"search finished in {res.wall_seconds:.0f} s: "
              + ("a setting met the targets" if res.feasible else "no setting met the targets"), summary=True)
    ref = res.settings.get("reference")
    if ref:
        print(f"CART reference ({json.dumps(ref['params']) if ref['params'] else 'default'}; {len(ref['seeds'])} seeds "
              f"x {ref['m']} copies): " + "; ".join(f"{k} {v:.4g} (se {ref['se'][k]:.2g})" for k, v in ref["mean"].items()))
        print(f"rule: {ref['rule']}")
    for line in not_tried_lines(res.settings):
        print(line)
    extra = " ".join(f"--param {k}={v}" for k, v in base_params.items()
                     if k not in ("accept_diagnostics", "rhat_max", "ess_min"))
    if trace_path is not None:
        record = res.to_dict()
        record["data"] = str(args.data)
        record["spec_file"] = str(out) if res.feasible else None
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        trace_path.write_text(json_dumps(record, indent=2, sort_keys=True))
    if not res.feasible:
        caps = res.settings.get("table_caps") or {}
        caps_search = res.settings.get("table_caps_search")

        def bounds(cs):
            return "; ".join(f"{k.replace('worst_', '').replace('_s_pmse', '').replace('_', '-')} <= {v:.3g}"
                             for k, v in cs.items())

        print(f"No setting met {', '.join(map(str, res.targets))} with every table S_pMSE within its bound ("
              + bounds(caps) + f" on --m {args.m} copies"
              + (f"; the search's, on its --m-search {args.m_search} copies, whose worst tables are noisier: "
                 + bounds(caps_search) if caps_search else "")
              + "); no spec was written" + (f" (the search is in {trace_path})." if trace_path is not None else "."))
        for line in infeasible_lines(res.settings.get("infeasible"), res.settings):
            print(line)
        info = res.settings.get("infeasible") or {}
        if info.get("binding") == "risk targets" and not info.get("closest_masks"):
            print(_unmasked_risk_advice(res.settings, info))
        return 2
    # the validated figures (fresh copies) are reported; the confirmed ones chose the masks
    c = res.validated or res.confirmed
    d = res.to_spec().to_dict()
    d["note"] = (f"masks{'' if res.min_leaf is None else f' and min_leaf {res.min_leaf}'} chosen by 'synthmi tune' "
                 f"for {', '.join(map(str, res.targets))}: mean CI overlap "
                 f"{c['mean_ci_overlap']:.3f} at --m {args.m} (validated with --seed {args.seed} and after); "
                 f"synthesize with --spec THIS_FILE --method dami --m {args.m} {extra}".rstrip())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json_dumps(d, indent=2) + "\n")
    print(f"chosen masks: {json.dumps(res.masks, sort_keys=True)}")
    if res.min_leaf is not None:
        print(f"chosen min_leaf: {res.min_leaf} for the trees of {', '.join(res.settings['leaf_columns'])} "
              f"(grid {', '.join(map(str, res.settings['leaf_grid']))}; written in the spec's \"models\")")
    print("battery: " + "; ".join(f"{k} {c[k]:.3g} (se {c.get(k + '_se', float('nan')):.2g})"
                                  for k in ("battery_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
                                            "overall_s_pmse") if k in c))
    print(f"declared analyses' mean CI overlap {c['mean_ci_overlap']:.3f} "
          f"(se {c.get('mean_ci_overlap_se', float('nan')):.3f}); "
          + "; ".join(f"{t.measure} {c[t.measure]:.4g} (target {t})" for t in res.targets)
          + f"; validated (synthesize --spec route, seeds below), after the choice; wall {res.wall_seconds:.0f} s")
    for line, below in versus_reference_lines(res.settings.get("versus_reference")):
        print(line)
        if below:
            print("warning: " + line + ": CART's release (the reference, at whose risk this was tuned) is as safe and "
                  "more useful; the DA-MI release is dominated. Release CART's, or give the QIs models that fit "
                  "better (the spec's \"models\") and tune again.", file=sys.stderr)
    if res.validated is not None and not res.validated.get("feasible", True):
        # what failed: a risk target, or the table rule (fair in tune_files: worst one-way 2.77 > 2.69, and
        # the warning named nothing)
        caps = res.settings.get("table_caps") or {}
        missed = [str(t) for t in res.targets if not t.met(res.validated)]
        missed += [f"the table rule ({k.replace('worst_', '').replace('_s_pmse', '').replace('_', '-')} S_pMSE "
                   f"{res.validated[k]:.3g} > {cap:.3g})" for k, cap in caps.items()
                   if k in res.validated and float(res.validated[k]) > cap]
        print("warning: on fresh copies the chosen masks miss " + ", ".join(missed)
              + " (the search and confirmation met them): tighten the target or raise --m.", file=sys.stderr)
    held = res.settings.get("holdout_share")
    if held:
        # the masks were chosen on the training rows: the same holdout keeps the membership figures comparable
        extra = f"{extra} --holdout-share {held:g}".strip()
    # the validated figures are those of exactly this command with seeds SEED .. SEED + replicates - 1
    # (synthesize's own default --m is 20: more copies, a different overlap, so --m is always given)
    val = res.settings.get("validation") or {}
    seeds = val.get("seeds") or [args.seed]
    print(f"validated by the route a user takes: synthesize --spec with --m {args.m} and --seed "
          + (f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}..{seeds[-1]}")
          + ", copies measured as 'synthmi analyse' measures them (per seed in --trace)")
    print(f"spec with the masks -> {out}; synthesize with: synthmi synthesize --data {args.data} --spec {out} "
          f"--method dami --m {args.m} --seed {seeds[0]} {extra}".rstrip())
    if res.settings.get("diagnostics_check", {}).get("accepted"):
        print("warning: the posterior sampler failed its convergence check (accepted with --accept-diagnostics).",
              file=sys.stderr)
    return 0
