"""Wall time of the three anonymeter-style risks on Adult (48,842 records, M = 5 copies).

Issue 26's budget: the full ``disclosure`` on Adult with M = 5 within 2 minutes on 2
cores; these attacks are part of it. Setting: an 80/20 split of Adult into training
(39,073) and control (9,769) records; two releases of 5 copies each: the training
records released as they are (the hardest case for the multivariate singling-out
search, which must find predicates that single out a copy of the original) and a CART
synthesis (``CartSynthesizer``, all columns; its time is not counted). Attacks at their
defaults (n_attacks = 500): singling out (univariate and multivariate, n_cols = 3),
linkability (two 4-column auxiliary sets) and inference on ``income``.
Median of 3 repeats; single-threaded BLAS (OPENBLAS_NUM_THREADS=1).

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/anonymeter_speed.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import measure, write_json  # noqa: E402

AUX = (["age", "sex", "race", "education"], ["occupation", "hours_per_week", "marital_status", "workclass"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from synthmi.data import load_adult
    from synthmi.evaluation import inference_risk, linkability_risk, singling_out_risk
    from synthmi.models import CartSynthesizer

    df = load_adult().drop(columns="split")
    perm = np.random.default_rng(0).permutation(len(df))
    cut = int(0.8 * len(df))
    train, control = df.iloc[perm[:cut]].reset_index(drop=True), df.iloc[perm[cut:]].reset_index(drop=True)
    t0 = time.perf_counter()
    cart = CartSynthesizer().fit(train, quasi_identifiers=list(train.columns)).sample(5, random_state=1)
    t_cart = time.perf_counter() - t0
    releases = {"original_as_released": [train] * 5, "cart": list(cart.copies)}
    attacks = {
        "singling_out[univariate]": lambda s: singling_out_risk(train, s, control, mode="univariate", random_state=0),
        "singling_out[multivariate]": lambda s: singling_out_risk(train, s, control, mode="multivariate",
                                                                  random_state=0),
        "linkability": lambda s: linkability_risk(train, s, control, aux_columns=AUX, random_state=0),
        "inference[income]": lambda s: inference_risk(train, s, control, secret="income", random_state=0),
    }
    out: dict = {"rows_training": len(train), "rows_control": len(control), "copies": 5,
                 "cart_synthesis_seconds": t_cart, "releases": {}}
    for name, copies in releases.items():
        rec = {}
        for attack, fn in attacks.items():
            m = measure(lambda: fn(copies), repeats=args.repeats, trace_memory=False)
            res = m.pop("result")
            rec[attack] = {**m, "risk": res.risk, "ci": [res.figures[f"{res.key}_ci_low"],
                                                         res.figures[f"{res.key}_ci_high"]],
                           "mc_error": res.figures[f"{res.key}_mc_error"]}
            print(f"{name:22s} {attack:28s} {m['wall_seconds_median']:6.1f} s  risk {res.risk:.3f}")
        total = sum(r["wall_seconds_median"] for r in rec.values())
        rec["total_wall_seconds_median_sum"] = total
        print(f"{name:22s} {'all four':28s} {total:6.1f} s")
        out["releases"][name] = rec
    write_json("anonymeter_speed", out)


if __name__ == "__main__":
    main()
