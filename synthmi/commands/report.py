"""``synthmi report``: the disclosure review report as one self-contained HTML file."""
from __future__ import annotations

import argparse
import sys
import time

from ._common import (
    COMMA_NAMES_HELP,
    EXAMPLES_FMT,
    add_attack_flags,
    add_ngroups_options,
    check_ngroups_options,
    add_common_flags,
    add_overwrite_flag,
    attack_options,
    check_target_option,
    add_sep_flag,
    check_formula,
    check_output_file,
    sep_of,
    align_original,
    is_bundled,
    load_original,
    parse_tolerances,
    progress_enabled,
    split_list,
    step_line,
    synthetic_dir,
)
from ..spec import FAMILIES
from ..errors import InputError, InputNotFound

EXAMPLES = """examples:
  synthmi report --original adult --synthetic syn_dami/ --qi age,sex,race,education \\
      --analysis "income ~ age + sex + race + education" --family probit --out report.html
  # compare several releases side by side (LABEL=DIR), age matched within 2 years
  synthmi report --original adult --synthetic dami=syn_dami/ --synthetic cart=syn_cart/ \\
      --qi age,sex,race,education --tol age=2 --analysis "income ~ age + sex + race + education" \\
      --out report.html
  synthmi report --original mydata.csv --synthetic syn/ --qi age,sex --analysis "y ~ age + sex" \\
      --family logit --out report.html

The report holds aggregates only (coefficients, S_pMSE, risk summaries, counts,
versions, seeds, SHA-256 hashes of the inputs), never a row or cell value of
the original."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="write the disclosure review report (one self-contained HTML file)",
        description="Evaluate synthetic copies against the original (utility, analysis, "
        "re-identification risk by risk subgroup) and write one HTML report.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    add_report_options(p)
    p.add_argument("--synthetic", action="append", required=True, metavar="[LABEL=]DIR",
                   help="directory written by 'synthmi synthesize' (repeat for several releases)")
    p.add_argument("--out", required=True, help="output HTML file, e.g. report.html")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def add_report_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``report`` and ``demo``."""
    p.add_argument("--original", default="adult", help="'adult', 'nhanes' or a CSV path (default: adult)")
    add_sep_flag(p)
    p.add_argument("--qi", default=None, action="append",
                   help=f"quasi-identifiers, comma-separated (repeatable; {COMMA_NAMES_HELP}; "
                   "default: the spec's, else those recorded with the first release)")
    p.add_argument("--analysis", default=None,
                   help="the analyst's model as a formula (default: the spec's first analysis; else, on the "
                   "bundled Adult data, the Adult workload's probit of income on age, sex, race and education)")
    p.add_argument("--family", default=None, choices=FAMILIES,
                   help="model family (default: the spec's, else probit)")
    p.add_argument("--rule", default=None, choices=["partial", "full", "rubin", "nested"],
                   help="combining rule (default: the rule each release recorded, e.g. full for dpsyn; else partial, "
                        "or nested for m x r copies)")
    p.add_argument("--spec", default=None, metavar="SPEC.json",
                   help="release spec (default: the spec recorded with the copies)")
    p.add_argument("--holdout", default=None, metavar="CSV",
                   help="real records NOT used for the releases: the non-members of membership inference and the "
                        "baseline of the distance to closest record of fully synthetic releases (default: the holdout "
                        "'synthesize --holdout-share' recorded with the copies; else no membership inference and a "
                        "leave-one-out DCR baseline)")
    p.add_argument("--tol", action="append", metavar="COL=VALUE",
                   help="matching tolerance for a continuous quasi-identifier (default: the risk module's)")
    p.add_argument("--k0", type=int, default=5, help="neighbours needed for the low-risk subgroup (default: 5)")
    p.add_argument("--threshold", type=float, default=0.5, help="review threshold on I_i (default: 0.5)")
    p.add_argument("--pmse-method", default="logit", choices=["logit", "cart"])
    p.add_argument("--target", default=None,
                   help="sensitive column for attribute disclosure (DiSCO, DCAP, TCAP, repU, matching attribute risk)")
    add_ngroups_options(p)
    add_attack_flags(p)
    p.add_argument("--frontier", default=None, metavar="CSV",
                   help="frontier points (benchmarks/frontier.py output) to draw behind the releases")
    p.add_argument("--no-references", action="store_true",
                   help="omit the reference rows (original released as is; independent release)")


def tolerance_from(args) -> dict[str, float | str] | None:
    return parse_tolerances(args.tol)


def report_defaults(args, syn=None):
    """(quasi-identifiers, formula, family, spec): flags, else the spec (``--spec`` or
    recorded with the copies), else the release's recorded QIs and the Adult workload's formula."""
    from ..spec import resolve_quasi_identifiers
    from ._common import load_spec_option

    spec = load_spec_option(args, syn)
    qi = resolve_quasi_identifiers(split_list(args.qi), spec, recorded=getattr(syn, "quasi_identifiers", None),
                                   option="--qi")
    formula, family = args.analysis, args.family
    if formula is None:
        if spec is not None and spec.analyses:
            formula, family = spec.analyses[0]["formula"], family or spec.analyses[0]["family"]
        elif str(getattr(args, "original", "adult")).lower() == "adult":
            from ..data.workloads import ADULT

            formula = ADULT.formula
        else:
            # Adult's formula names Adult's columns: on other data it could only die in a
            # PatsyError deep inside the model fit
            raise InputError(
                f"The '--analysis' option is required when --original is not adult (got {args.original!r}) "
                "and no spec declares an analysis: give the analyst's model as a formula, e.g. "
                "--analysis 'y ~ age + sex'."
            )
    return qi, formula, family or "probit", spec


def _read_frontier(path: str | None, qi: list[str] | None = None):
    """The ``--frontier`` CSV; refused when its settings were measured on other quasi-identifiers
    (its ``unchanged_<QI>`` columns) than the releases': its points would come from another file."""
    if not path:
        return None
    from pathlib import Path

    import pandas as pd

    if not Path(path).exists():
        raise InputNotFound(f"The '--frontier' file '{path}' does not exist.", path=path, option="--frontier")
    df = pd.read_csv(path)
    need = {"method", "mean_ci_overlap", "expected_matches", "true_match_rate"}
    if not need <= set(df.columns):
        raise InputError(f"The '--frontier' file must have the columns {sorted(need)}; it lacks {sorted(need - set(df.columns))}.")
    cols = set(df.columns)
    measured = {c[len("unchanged_"):] for c in cols
                if c.startswith("unchanged_") and not (c.endswith("_se") and c[:-3] in cols)}
    if qi is not None and measured and measured != set(qi):
        raise InputError(f"The '--frontier' file was measured with the quasi-identifiers {sorted(measured)}, these "
                         f"releases have {sorted(qi)}: its points come from another file or another choice of "
                         "quasi-identifiers, and the map would compare unlike things. Give the frontier of these "
                         "data ('synthmi frontier --data FILE ...').")
    return df


def run(args) -> int:
    from ..provenance import file_sha256
    from ..workflow.evaluate import evaluate_release
    from ..report.html import write_report
    from ..synthetic import SyntheticData

    from ..spec import ReleaseSpec
    from ._common import na_values_of, recorded_na_values

    check_output_file(args.out, "--out", args.overwrite)
    check_ngroups_options(args, keys_need_target=False)  # before anything is read or fitted
    first_dir = args.synthetic[0].rpartition("=")[2] if "=" in args.synthetic[0] else args.synthetic[0]
    na = na_values_of(args, ReleaseSpec.load(args.spec) if getattr(args, "spec", None) else None,
                      recorded_na_values(first_dir))
    from ._common import encoding_of, input_label

    enc = encoding_of(args, first_dir)
    original, digest = load_original(args.original, sep_of(args), na_values=na, encoding=enc)
    releases, hashes = {}, {"original": digest}
    from ._common import recorded_holdout, split_holdout

    recorded, holdout = recorded_holdout(first_dir), None
    if recorded:
        # the copies were made from the training rows: every measure reads those, the held-out rows
        # are the holdout (membership inference, DCR baseline)
        original, holdout = split_holdout(original, recorded)
    for item in args.synthetic:
        label, _, d = item.rpartition("=") if "=" in item else ("", "", item)
        path = synthetic_dir(d)
        if recorded_holdout(path) != recorded:
            raise InputError(f"The '--synthetic' releases hold out different rows (synthesize --holdout-share): "
                             f"'{input_label(d)}' differs from the first; report releases made from the same "
                             "training rows together.")
        syn = SyntheticData.from_dir(path)
        syn.check_original(original, "--original")
        label = label or syn.method
        if label in releases:
            label = f"{label}:{path.name}"
        releases[label] = syn
        for f in sorted(path.glob("copy_*.csv")):
            hashes[f"{label}/{f.name}"] = file_sha256(f)
    first = next(iter(releases.values()))
    original = align_original(original, first)
    qi, formula, family, spec = report_defaults(args, first)
    check_formula(formula, original.columns, "--analysis" if args.analysis is not None else "--spec", "the copies")
    if args.holdout:
        holdout, _ = load_original(args.holdout, sep_of(args), option="--holdout", na_values=na, encoding=enc)
    check_target_option(args.target, original.columns, qi)
    secrets, link_aux = attack_options(args, original.columns)
    if (args.secret or args.link_aux) and holdout is None:
        raise InputError("The '--secret' / '--link-aux' options set up the attacks measured against a holdout, and "
                         "there is none: give --holdout FILE, or synthesize with --holdout-share 0.2.")
    t0 = time.perf_counter()
    data = evaluate_release(
        original, releases, qi, formula, family=family, rule=args.rule, spec=spec,
        tolerance=tolerance_from(args), k0=args.k0, risk_threshold=args.threshold,
        pmse_method=args.pmse_method, original_label=input_label(args.original), input_hashes=hashes,
        seeds={k: s.seed for k, s in releases.items() if s.seed is not None}, progress=progress_enabled(args),
        original_is_public=is_bundled(args.original), target=args.target,
        references=not args.no_references, frontier=_read_frontier(args.frontier, qi), holdout=holdout,
        secrets=secrets, link_aux=link_aux, ngroups_keys=args.ngroups_keys,
        ngroups_target=args.ngroups_target,
    )
    step_line(args, "report", f"evaluated {len(releases)} release{'s' if len(releases) > 1 else ''} (utility, "
              f"analysis, risk) in {time.perf_counter() - t0:.1f} s", summary=True)
    out = write_report(data, args.out)
    step_line(args, "report", f"wrote {out}", summary=True)
    print(out.resolve(), file=sys.stdout)
    return 0
