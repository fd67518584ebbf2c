"""Demographic coherence on Adult: raw release vs DA-MI synthetic data vs DPSyn.

The experiment of Bun et al. ("Enforcing Demographic Coherence", Figure 1) with
lens = age, sex, race, education; sensitive attribute income > 50K; subgroups =
the race x sex cells with gamma = 200; 20 random half-splits per release. The
release algorithms, each run on the half X_a:

* ``raw``: X_a itself;
* ``DA-MI``: one DA-MI copy (age, sex, race, education synthesized with the masks
  of ``benchmarks/adult_table.py``; income released unchanged, as in that table);
* ``DPSyn eps=0.5`` / ``DPSyn eps=8``: a DPSyn synthetic data set of the five
  columns (age on its public domain of whole years 17-90), delta = 1e-9.

The adversary's learner is either a logistic regression or a random forest
(50 trees, leaves of one record: the memorising learner) on the lens features.
A positive control repeats the forest runs with the lens widened by fnlwgt (nearly
unique per record) and hours_per_week; there DA-MI releases fnlwgt and hours
unchanged (kept columns) and DPSyn synthesizes them (fnlwgt bucketized on public
bounds 0-1.5 million, hours on their domain 1-99);
h = 2 P(income > 50K) - 1. Reported per subgroup: mean / sd / max over trials of
the Wasserstein-1 distance between h on X_a and on X_b, and the estimated beta
(share of trials in which some subgroup's distance exceeds alpha) with a 95%
Clopper-Pearson interval, at alpha in {0.01, 0.02, 0.05}; and the null reference
(the same h on a fresh random split of X ∩ C) with the excess W1 over it.

Writes ``benchmarks/results/coherence.json`` and ``coherence.csv``.
Run: ``python benchmarks/coherence.py`` (a few minutes on 2 cores).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import RESULTS, write_json  # noqa: E402

from synthmi.data import load_adult, load_domain  # noqa: E402
from synthmi.data.workloads import ADULT  # noqa: E402
from synthmi.evaluation.coherence import clopper_pearson, demographic_coherence  # noqa: E402
from synthmi.privacy import DPSynSynthesizer  # noqa: E402

LENS = ["age", "sex", "race", "education"]
TARGET = "income"
GAMMA = 200
N_TRIALS = 20
ALPHAS = (0.01, 0.02, 0.05)
SEED = 20261123
# The recoded Adult's declared public domain (synthmi/data/adult.domain.json, from its
# documentation): DPSyn takes levels and bounds only from it.
ADULT_DOMAIN = load_domain("adult", recode=True)
# A second, wider lens that includes a near-unique feature (fnlwgt), so that a
# memorising learner can tell records it was trained on: the experiment's positive control.
LENS_EXT = LENS + ["fnlwgt", "hours_per_week"]
DAMI_MASKS = dict(ADULT.masks)  # the Adult workload (synthmi.data.workloads)


def dpsyn_release(eps: float):
    def release(Xa: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        seed = int(rng.integers(2**31 - 1))
        s = DPSynSynthesizer(epsilon=eps, delta=1e-9, random_state=seed)
        # Levels and bounds from Adult's public documentation (ages are whole years 17..90).
        s.fit(Xa[LENS + [TARGET]], domain=ADULT_DOMAIN, ordinal=["age", "education"])
        return s.sample(1, random_state=seed).copies[0]

    return release


def dpsyn_release_extended(eps: float):
    def release(Xa: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        seed = int(rng.integers(2**31 - 1))
        s = DPSynSynthesizer(epsilon=eps, delta=1e-9, random_state=seed)
        s.fit(Xa[LENS_EXT + [TARGET]], domain=ADULT_DOMAIN, ordinal=["age", "education", "hours_per_week", "fnlwgt"])
        return s.sample(1, random_state=seed).copies[0]

    return release


def releases_extended() -> dict[str, object]:
    from synthmi.models import DAMISynthesizer
    from synthmi.models.masking import make_masking

    def dami(Xa: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        seed = int(rng.integers(2**31 - 1))
        s = DAMISynthesizer(masks={c: make_masking(v, c) for c, v in DAMI_MASKS.items()}, progressbar=False,
                            random_state=seed)
        s.fit(Xa[LENS_EXT + [TARGET]], quasi_identifiers=LENS, keep=[TARGET, "fnlwgt", "hours_per_week"])
        return s.sample(1, random_state=seed).copies[0]

    return {"raw": "raw", "DA-MI": dami, "DPSyn eps=0.5": dpsyn_release_extended(0.5),
            "DPSyn eps=8": dpsyn_release_extended(8.0)}


def releases() -> dict[str, object]:
    out: dict[str, object] = {"raw": "raw"}
    try:
        from synthmi.models import DAMISynthesizer
        from synthmi.models.masking import make_masking

        def dami(Xa: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
            seed = int(rng.integers(2**31 - 1))
            s = DAMISynthesizer(masks={c: make_masking(v, c) for c, v in DAMI_MASKS.items()}, progressbar=False,
                                random_state=seed)
            s.fit(Xa[LENS + [TARGET]], quasi_identifiers=LENS, keep=[TARGET])
            return s.sample(1, random_state=seed).copies[0]

        out["DA-MI"] = dami
    except ImportError as exc:  # pragma: no cover - DA-MI is written in parallel
        print(f"DA-MI not available: {exc}")
    out["DPSyn eps=0.5"] = dpsyn_release(0.5)
    out["DPSyn eps=8"] = dpsyn_release(8.0)
    return out


def main() -> None:
    full = load_adult(recode=True)
    per_group, summary = [], []
    configs = [("lens4", "logistic", LENS, releases()), ("lens4", "forest", LENS, releases()),
               ("lens4+fnlwgt+hours", "forest", LENS_EXT, releases_extended())]
    for lens_label, model, lens, rels in configs:
        df = full[lens + [TARGET]]
        for label, rel in rels.items():
            t0 = time.perf_counter()
            res = demographic_coherence(
                df, lens, TARGET, ["race", "sex"], release=rel, gamma=GAMMA, alpha=ALPHAS[1],
                n_trials=N_TRIALS, model=model, random_state=SEED,
            )
            wall = time.perf_counter() - t0
            f = res.to_frame().drop(columns="share_above_alpha")
            for g, r in f.iterrows():
                per_group.append({"lens": lens_label, "release": label, "model": model, "subgroup": g, **r.to_dict()})
            row = {
                "lens": lens_label, "release": label, "model": model, "n_trials": res.n_trials,
                "worst_subgroup": res.worst_subgroup, "worst_mean_w1": res.worst_distance,
                "worst_max_w1": float(res.distances.max().max()), "wall_seconds": wall,
                "worst_null_w1": float(res.null_distances.mean()[res.worst_subgroup]),
                "max_excess_w1": float(f["excess_w1"].max()),
            }
            d = res.distances.to_numpy()
            for a in ALPHAS:
                k = int((d > a).any(axis=1).sum())
                lo, hi = clopper_pearson(k, res.n_trials)
                row[f"beta@{a}"] = k / res.n_trials
                row[f"beta@{a}_ci"] = (lo, hi)
            summary.append(row)
            print(
                f"{lens_label:18s} {model:8s} {label:14s} worst {row['worst_subgroup']:28s} mean W1 {row['worst_mean_w1']:.4f} "
                f"(max {row['worst_max_w1']:.4f}, null {row['worst_null_w1']:.4f})  beta@0.01 {row['beta@0.01']:.2f}  beta@0.02 {row['beta@0.02']:.2f}  "
                f"beta@0.05 {row['beta@0.05']:.2f}  [{wall:.0f} s]",
                flush=True,
            )
    table = pd.DataFrame(per_group)
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "coherence.csv", index=False)
    print(table.round(4).to_string(index=False))
    write_json(
        "coherence",
        {
            "lens": LENS, "lens_extended": LENS_EXT, "target": f"{TARGET} > 50K", "subgroups": "race x sex", "gamma": GAMMA,
            "n_trials": N_TRIALS, "alphas": ALPHAS, "seed": SEED, "dami_masks": DAMI_MASKS,
            "summary": summary, "per_subgroup": per_group,
        },
    )


if __name__ == "__main__":
    main()
