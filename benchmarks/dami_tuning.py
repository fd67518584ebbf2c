"""DA-MI tuning behaviour (short-course slides, "How does the tuning mechanism work?").

A deliberately misspecified association model: X depends on Z quadratically,
    Z ~ U(-2, 2),  X = Z^2 + N(0, 0.5^2),
while M_assoc (the DA-MI / Rubin imputation model) is linear in Z. The
analysis is the OLS regression X ~ 1 + Z + Z^2. For each masking setting
(K, sigma_e) M partially synthetic copies are drawn, combined with
``combine(rule="partial")``, and compared with the original-data fit:

* RMSE of the combined coefficients against the original-data coefficients
  (averaged over the three coefficients and the replications);
* mean 95% CI overlap (Karr et al. 2006) between original and synthetic CIs.

Rubin's MI (K = 0) loses the curvature; as sigma_e decreases or K increases
W carries more of X and both measures improve.

``--multi`` (issue 13): three dependent masked quasi-identifiers (the model
of ``dami_coverage.py --multi``: continuous X1, binary X2, 3-level X3), all
masks strengthened together along a path, joint vs sequential predictive:
RMSE of the six combined estimates against the original-data estimates, mean
CI overlap, and the re-identification risk of the copies (expected correct
matches and true-match rate, X1 matched within 0.25).

Run: ``python benchmarks/dami_tuning.py [--multi]``; writes
``benchmarks/results/dami_tuning.json`` (or ``dami_tuning_multi.json``).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthmi.evaluation import ci_overlap, combine  # noqa: E402
from synthmi.models import DAMISynthesizer, NormalMasking  # noqa: E402

#: (K, sigma_e): Rubin first, then the sigma_e path at K = 1, then the K path at sigma_e = 0.5
SETTINGS = [(0, 1.0), (1, 4.0), (1, 2.0), (1, 1.0), (1, 0.5), (4, 0.5), (16, 0.5)]


def _ols(y: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    XtX_inv = np.linalg.inv(A.T @ A)
    b = XtX_inv @ A.T @ y
    s2 = ((y - A @ b) ** 2).sum() / (len(y) - A.shape[1])
    return b, s2 * np.diag(XtX_inv)


def simulate(reps: int = 6, M: int = 5, n: int = 400, seed: int = 2022, settings=SETTINGS) -> dict:
    rng = np.random.default_rng(seed)
    sq_err = np.zeros(len(settings))
    overlap = np.zeros(len(settings))
    for rep in range(reps):
        z = rng.uniform(-2, 2, n)
        x = z**2 + rng.normal(scale=0.5, size=n)
        df = pd.DataFrame({"x": x, "z": z})
        A = np.column_stack([np.ones(n), z, z**2])
        b_o, v_o = _ols(x, A)
        lo_o, hi_o = b_o - 1.96 * np.sqrt(v_o), b_o + 1.96 * np.sqrt(v_o)
        for s, (K, se) in enumerate(settings):
            syn = DAMISynthesizer(masks={"x": NormalMasking(K, sigma_e=se)}).fit(df, quasi_identifiers=["x"])
            copies = syn.sample(M, random_state=rep)
            fits = [_ols(c["x"].to_numpy(), A) for c in copies]
            res = combine(np.array([f[0] for f in fits]), np.array([f[1] for f in fits]), rule="partial")
            sq_err[s] += ((res.estimate - b_o) ** 2).mean()
            overlap[s] += np.mean(ci_overlap(lo_o, hi_o, res.ci_lower, res.ci_upper))
    return {
        "settings": [{"K": K, "sigma_e": se} for K, se in settings],
        "rmse": np.sqrt(sq_err / reps).tolist(),
        "mean_ci_overlap": (overlap / reps).tolist(),
        "reps": reps, "M": M, "n": n, "seed": seed,
    }


#: strength path for the three masks: (K, sigma_e) of X1, alpha of X2, p of X3 (0: Rubin's MI)
MULTI_PATH = [(0, None, 0.0, None), (1, 2.0, 1.0, 0.5), (1, 1.0, 2.0, 0.7), (1, 0.5, 3.0, 0.85), (4, 0.5, 5.0, 0.97)]


def simulate_multi(reps: int = 20, M: int = 5, n: int = 300, seed: int = 2311, path=MULTI_PATH) -> dict:
    from dami_coverage import multi_analyses, multi_data

    from synthmi.evaluation import reidentification_risk
    from synthmi.models import LinearCategoricalMasking, TransitionMasking

    ss = np.random.SeedSequence(seed)
    preds = ("joint", "sequential")
    sq = {p: np.zeros(len(path)) for p in preds}
    ov = {p: np.zeros(len(path)) for p in preds}
    em = {p: np.zeros(len(path)) for p in preds}
    tm = {p: np.zeros(len(path)) for p in preds}
    for child in ss.spawn(reps):
        rng = np.random.default_rng(child)
        d = multi_data(n, rng)
        df = pd.DataFrame({"z": d["z"], "x1": d["x1"], "x2": pd.Categorical.from_codes(d["x2"], ["no", "yes"]),
                           "x3": pd.Categorical.from_codes(d["x3"], ["a", "b", "c"])})
        e_o, v_o = multi_analyses(d["x1"][None], d["x2"][None], d["x3"][None], d["z"])
        lo_o, hi_o = e_o[0] - 1.96 * np.sqrt(v_o[0]), e_o[0] + 1.96 * np.sqrt(v_o[0])
        for s, (K, se, alpha, p) in enumerate(path):
            masks = {} if K == 0 else {"x1": NormalMasking(K, sigma_e=se), "x2": LinearCategoricalMasking(alpha),
                                       "x3": TransitionMasking(p=p)}
            syn = DAMISynthesizer(masks=masks, random_state=int(rng.integers(2**31)), progressbar=False).fit(
                df, quasi_identifiers=["x1", "x2", "x3"], keep=["z"])
            seed_s = int(rng.integers(2**31))
            for pr in preds:
                syn.predictive = pr
                copies = syn.sample(M, random_state=seed_s)
                x1 = np.stack([c["x1"].to_numpy() for c in copies])
                x2 = np.stack([c["x2"].cat.codes.to_numpy() for c in copies])
                x3 = np.stack([c["x3"].cat.codes.to_numpy() for c in copies])
                est, var = multi_analyses(x1, x2, x3, d["z"])
                res = combine(est, var, rule="partial")
                sq[pr][s] += ((res.estimate - e_o[0]) ** 2).mean()
                ov[pr][s] += np.mean(ci_overlap(lo_o, hi_o, res.ci_lower, res.ci_upper))
                risk = reidentification_risk(df, copies, ["x1", "x2", "x3"], tolerance={"x1": 0.25}).figures
                em[pr][s] += float(risk["expected_matches"])
                tm[pr][s] += float(risk["true_match_rate"])
    return {
        "path": [{"x1": {"K": K, "sigma_e": se}, "x2_alpha": a, "x3_p": p} for K, se, a, p in path],
        "results": {pr: {"rmse": np.sqrt(sq[pr] / reps).tolist(), "mean_ci_overlap": (ov[pr] / reps).tolist(),
                         "expected_correct_matches": (em[pr] / reps).tolist(),
                         "true_match_rate": (tm[pr] / reps).tolist()} for pr in preds},
        "reps": reps, "M": M, "n": n, "seed": seed,
    }


def main() -> int:
    from _bench import write_json

    if "--multi" in sys.argv[1:]:
        t0 = time.perf_counter()
        res = simulate_multi()
        res["wall_seconds"] = time.perf_counter() - t0
        for pr, r in res["results"].items():
            for st, a, b, c in zip(res["path"], r["rmse"], r["mean_ci_overlap"], r["expected_correct_matches"]):
                print(f"{pr:>10} {st}: RMSE={a:.4f} CI overlap={b:.3f} expected matches={c:.1f}")
        write_json("dami_tuning_multi", res)
        return 0

    out = {}
    for M in (3, 20):
        t0 = time.perf_counter()
        res = simulate(reps=20, M=M)
        res["wall_seconds"] = time.perf_counter() - t0
        out[f"M={M}"] = res
        for st, r, o in zip(res["settings"], res["rmse"], res["mean_ci_overlap"]):
            print(f"M={M:2d} K={st['K']:2d} sigma_e={st['sigma_e']:4.2f}  RMSE={r:.4f}  CI overlap={o:.3f}")
    write_json("dami_tuning", {"results": out,
                               "model": "Z~U(-2,2), X=Z^2+N(0,.25); M_assoc linear in Z; analysis X~1+Z+Z^2"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
