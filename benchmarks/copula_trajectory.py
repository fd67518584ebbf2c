"""A short copula chain's trajectory, recorded from one version of the code and compared with another (issue 28, h28cpu).

The CPU work on the copula sampler's kernels (``_mnp_kernel``, ``mnp_draw_latents``,
``_information``, ``truncated_normal`` ...) must not change what is sampled: the same
seed gives the same draws up to floating-point round-off. This script runs
:class:`synthmi.models.copula.CopulaGibbs` for a few iterations on a small mixed
frame (continuous, ordinal, binary and two nominal columns, each with gaps) in two
configurations -- a short burn-in (Hamiltonian moves of the nominal blocks from the
start) and a long one (Newton-proposal moves, the choice between the two at burn/2)
-- and records per iteration the block coefficients, the ranked covariance and
checksums of the latents, plus the final latents.

The parameter-expanded group moves of the ranked columns and the collapsed ranked
moves are switched off (``_group_moves`` a no-op, ``collapse_ranked = False``): they
are another helper's work this round and deliberately change the draws; what is
compared is the rest of the sampler.

Usage::

    # record the reference from the ORIGINAL code (a checkout of main before the change)
    PYTHONPATH=/path/to/original python benchmarks/copula_trajectory.py --code COMMIT --write tests/models/data/copula_trajectory.json
    # compare the working tree with it (also tests/models/test_copula_trajectory.py)
    PYTHONPATH=. python benchmarks/copula_trajectory.py --check tests/models/data/copula_trajectory.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: (name, n_iter, burn): burn < 40 starts the nominal blocks on Hamiltonian moves; burn >= 40 on Newton moves,
#: whose per-record curvatures are frozen at the end of burn-in ("frozen" runs past it)
CONFIGS = [("hmc", 30, 10), ("newton", 30, 60), ("frozen", 50, 40)]


def frame(n: int = 160, seed: int = 28) -> pd.DataFrame:
    """Continuous (skewed), ordinal (4 levels), binary and two nominal columns (3 and 4 levels), all with gaps."""
    rng = np.random.default_rng(seed)
    R = np.full((4, 4), 0.4) + 0.6 * np.eye(4)
    z = rng.multivariate_normal(np.zeros(4), R, size=n)
    u = np.column_stack([np.zeros(n), 0.8 * z[:, 0], -0.6 * z[:, 1]]) + rng.normal(size=(n, 3))
    v = np.column_stack([np.zeros(n), 0.5 * z[:, 2], 0.7 * z[:, 0], -0.4 * z[:, 3]]) + rng.normal(size=(n, 4))
    df = pd.DataFrame({
        "x": np.exp(z[:, 0]),
        "o": pd.Categorical(np.digitize(z[:, 1], [-0.6, 0.1, 0.8]).astype(str), categories=list("0123"), ordered=True),
        "b": pd.Categorical(np.where(z[:, 2] > 0.2, "yes", "no"), categories=["no", "yes"]),
        "nom": pd.Categorical(np.array(list("abc"))[u.argmax(axis=1)]),
        "nom2": pd.Categorical(np.array(list("pqrs"))[v.argmax(axis=1)]),
    })
    for col, frac in (("x", 0.08), ("o", 0.06), ("b", 0.05), ("nom", 0.08), ("nom2", 0.06)):
        df.loc[rng.random(n) < frac, col] = np.nan
    return df


def trajectory(name: str, n_iter: int, burn: int, seed: int = 7) -> dict:
    from synthmi.models.copula import CopulaGibbs, _encode
    from synthmi.schema import Schema

    df = frame()
    margins = _encode(df, Schema.infer(df))
    s = CopulaGibbs(margins, sum(len(m.cols) for m in margins))
    s.collapse_ranked = False
    s._group_moves = lambda *a, **k: None  # another helper's (draw-changing) work this round
    rng = np.random.default_rng(seed)
    s.start_adaptation(burn)
    st = s.initial_state()
    rows = []
    for _ in range(n_iter):
        s.step(st, rng)
        rows.append({
            "coef": [c.ravel().tolist() for c in st.coef],
            "sigma_a": st.sigma_a.ravel().tolist(),
            "z_sum": st.z.sum(axis=0).tolist(),
            "z_sq": (st.z ** 2).sum(axis=0).tolist(),
        })
    return {"name": name, "n_iter": n_iter, "burn": burn, "moves": list(s.nominal_move),
            "accepted": s.collapsed_counts.tolist(), "iterations": rows, "z_final": st.z.tolist()}


def run() -> list[dict]:
    return [trajectory(*c) for c in CONFIGS]


def _flat(rec: dict) -> np.ndarray:
    parts = []
    for it in rec["iterations"]:
        for c in it["coef"]:
            parts.extend(c)
        parts.extend(it["sigma_a"] + it["z_sum"] + it["z_sq"])
    parts.extend(np.ravel(rec["z_final"]))
    return np.asarray(parts, dtype=float)


def compare(ref: list[dict], new: list[dict]) -> dict:
    """Largest relative difference per configuration, ``|a - b| / max(1, |a|)`` (absolute near 0)."""
    out = {}
    for r, n in zip(ref, new):
        a, b = _flat(r), _flat(n)
        if a.shape != b.shape or r["moves"] != n["moves"] or r["accepted"] != n["accepted"]:
            out[r["name"]] = float("inf")
            continue
        out[r["name"]] = float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a))))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--check", type=Path)
    ap.add_argument("--code", default="", help="the commit the recorded code is (stored with --write)")
    a = ap.parse_args(argv)
    recs = run()
    if a.write:
        a.write.write_text(json.dumps({"code": a.code, "records": recs}))
        print(f"wrote {a.write} from {a.code}")
    else:
        ref = json.loads(a.check.read_text())["records"]
        diff = compare(ref, recs)
        print(json.dumps(diff))
        sys.exit(0 if all(v <= 1e-8 for v in diff.values()) else 1)


if __name__ == "__main__":
    main()
