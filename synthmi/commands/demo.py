"""``synthmi demo``: the main job end to end on the bundled Adult data.

Synthesize the quasi-identifiers age, sex, race and education of UCI Adult
(recoded as in the source tables) with DA-MI and CART (M = 5 copies each),
evaluate utility, the probit analysis of income and re-identification risk,
and write the disclosure review report to ``OUT/report.html``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ._common import EXAMPLES_FMT, add_common_flags, progress_enabled

EXAMPLES = """examples:
  synthmi demo                       # writes ./synthmi-demo/report.html
  synthmi demo --out /tmp/demo --quiet
  synthmi demo --m 20 --seed 7       # more copies, another seed

The copies are written too (OUT/dami/, OUT/cart/: copy_01.csv ... and
metadata.json), so 'synthmi report' can be re-run on them."""

QI = ["age", "sex", "race", "education"]
#: non-identifying columns kept unchanged and used as predictors (complete in Adult)
KEEP = ["marital_status", "hours_per_week", "income"]
FORMULA = "income ~ age + sex + race + education"
#: DA-MI masking for the demo (the tuning of benchmarks/adult_table.py and of the
#: figures' coefficient tables): age gets K = 3 noisy copies with sigma_e = 3 years;
#: each categorical quasi-identifier W = 5 * code(X) + N(0, 1) (W alone puts a
#: record in the wrong neighbouring level with probability Phi(-2.5) ~ 0.6%)
DAMI_MASKS = {"age": {"K": 3, "sigma_e": 3.0}, "sex": {"alpha": 5.0}, "race": {"alpha": 5.0}, "education": {"alpha": 5.0}}
#: the intruder matches age within one year (DA-MI's ages are continuous)
TOLERANCE = {"age": 1.0}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="the main job: synthesize Adult's quasi-identifiers (DA-MI, CART), evaluate, write the report",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--out", default="synthmi-demo", help="output directory (default: synthmi-demo)")
    p.add_argument("--m", type=int, default=5, help="synthetic copies per method (default: 5)")
    p.add_argument("--seed", type=int, default=2026, help="random seed (default: 2026)")
    add_common_flags(p)
    p.set_defaults(func=run)


def synthesizers(seed: int | None = None):
    """The demo's methods: label -> unfitted synthesizer (DA-MI and CART)."""
    from ..models.cart import CartSynthesizer
    from ..models.dami import DAMISynthesizer

    return {"dami": DAMISynthesizer(masks=DAMI_MASKS, random_state=seed, progressbar=False), "cart": CartSynthesizer()}


def run(args) -> int:
    from tqdm.auto import tqdm

    from ..data import load_adult
    from ..report.collect import evaluate_release, frame_sha256
    from ..report.html import write_report

    if args.m < 2:
        raise ValueError(f"The '--m' option of synthmi demo must be >= 2 (combining rules need two copies). Got {args.m} instead.")
    progress = progress_enabled(args)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    adult = load_adult(recode=True)[QI + KEEP]
    releases = {}
    methods = synthesizers(args.seed)
    bar = tqdm(methods.items(), desc="synthesizing", unit="method", disable=not progress)
    for i, (label, model) in enumerate(bar):
        bar.set_postfix_str(f"{label} (M = {args.m})")
        model.fit(adult, quasi_identifiers=QI, keep=KEEP)
        syn = model.sample(args.m, random_state=args.seed + i)
        syn.to_dir(out / label)
        releases[label] = syn
    data = evaluate_release(
        adult, releases, QI, FORMULA, family="probit", rule=None, tolerance=TOLERANCE,
        original_label="UCI Adult (bundled, recoded)",
        input_hashes={"adult[" + ",".join(QI + KEEP) + "]": frame_sha256(adult)},
        seeds={label: s.seed for label, s in releases.items()}, progress=progress,
        original_is_public=True,  # the bundled Adult is public data
        target="income",  # attribute disclosure of income given the quasi-identifiers
    )
    data.provenance["wall_seconds"] = round(time.perf_counter() - t0, 1)
    path = write_report(data, out / "report.html")
    if progress:
        print(data.summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"), file=sys.stderr)
        print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print(path.resolve())
    return 0
