"""Agreement of synthmi's singling-out, linkability and inference risks with anonymeter 1.1.0.

anonymeter (Giomi et al. 2023, PoPETs; the reference implementation) cannot be a
test dependency: 1.1.0 pins ``numpy<1.27`` and ``pyarrow<22`` while synthmi runs on
numpy 2. This script therefore builds a separate virtual environment (``--venv``,
default ``$XDG_CACHE_HOME/synthmi/venv-anonymeter-1.1.0``, never inside the
repository) with ``anonymeter==1.1.0`` and its pins, runs anonymeter's three
evaluators there in a subprocess and synthmi's functions here, on the SAME inputs
(written once as CSV, read by both), with the same ``n_attacks`` and several seeds:

* Adult (a 4,000-record subset: 2,000 training, 2,000 control) and NHANES
  (bundled; 2,632 training, 2,633 control), both from ``synthmi.data``;
* two releases: a CART synthesis of the training records (``CartSynthesizer``, all
  columns synthesized) and the training records released as they are.

Both implementations draw their attacks at random (anonymeter with polars and
``np.random``'s global state, synthmi with its own streams), so agreement is
statistical: per (data, release, attack) the mean over seeds of each, the difference
and its Monte Carlo standard error
:math:`\\sqrt{s_a^2/S + s_s^2/S}` (:math:`s` the standard deviations over the
:math:`S` seeds; for a success rate at least the binomial
:math:`\\sqrt{\\sum \\bar p (1 - \\bar p) / (n S)}`). Agreement: every compared figure
(risk, main rate, control rate) within 2 standard errors. Singling out is compared with ``size_correction="anonymeter-1.1.0"``
(the reference's control-size rescaling; the sizes differ by a few deduplicated
records only) and synthmi's default ``"fitted"`` is reported beside it.

Run::

    python benchmarks/anonymeter_agreement.py --venv /path/outside/repo [--seeds 5]

Writes ``benchmarks/results/anonymeter_agreement.json`` and prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import write_json  # noqa: E402

PINS = ["anonymeter==1.1.0"]  # its own metadata pins numpy<1.27, pyarrow<22 (pip resolves them)

RUNNER = r'''
import json, sys, warnings, logging
import numpy as np, pandas as pd
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from anonymeter.evaluators import SinglingOutEvaluator, LinkabilityEvaluator, InferenceEvaluator
jobs = json.load(open(sys.argv[1]))
out = []
for job in jobs:
    ori = pd.read_csv(job["ori"]); syn = pd.read_csv(job["syn"]); ctrl = pd.read_csv(job["control"])
    seed = job["seed"]; n = job["n_attacks"]
    np.random.seed(seed)  # linkability and inference sample with the global state
    a = job["attack"]
    if a.startswith("singling_out"):
        mode = a.split("[")[1].rstrip("]")
        ev = SinglingOutEvaluator(ori=ori, syn=syn, control=ctrl, n_attacks=n, n_cols=job["n_cols"], seed=seed)
        ev.evaluate(mode=mode)
    elif a == "linkability":
        ev = LinkabilityEvaluator(ori=ori, syn=syn, control=ctrl, n_attacks=n, aux_cols=tuple(job["aux"]),
                                  n_neighbors=1)
        ev.evaluate(n_jobs=1)
    else:
        ev = InferenceEvaluator(ori=ori, syn=syn, control=ctrl, n_attacks=n, aux_cols=job["aux"],
                                secret=job["secret"])
        ev.evaluate(n_jobs=1)
    res = ev.results(confidence_level=0.95)
    risk = res.risk()
    out.append({**job, "attack_rate": res.attack_rate.value, "control_rate": res.control_rate.value,
                "baseline_rate": res.baseline_rate.value, "n_success": float(res.n_success),
                "n_control": float(res.n_control), "n_baseline": float(res.n_baseline),
                "risk": risk.value, "ci_low": risk.ci[0], "ci_high": risk.ci[1]})
json.dump(out, open(sys.argv[2], "w"))
'''


def default_venv() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "synthmi" / "venv-anonymeter-1.1.0"


def ensure_venv(venv: Path) -> Path:
    """The venv's python, creating the venv with anonymeter 1.1.0 when it lacks it."""
    repo = Path(__file__).resolve().parent.parent
    if repo in venv.resolve().parents or venv.resolve() == repo:
        raise SystemExit(f"--venv must be outside the repository ({repo}); got {venv}")
    py = venv / "bin" / "python"
    ok = py.exists() and subprocess.run([str(py), "-c", "import anonymeter"], capture_output=True).returncode == 0
    if not ok:
        print(f"creating {venv} with {PINS} (a few minutes)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PINS], check=True)
    return py


def inputs(seed: int = 0) -> dict[str, dict]:
    """Per data set: training, control, the releases, the attack settings."""
    from synthmi.data import load_adult, load_nhanes
    from synthmi.models import CartSynthesizer

    rng = np.random.default_rng(seed)
    adult = load_adult().drop(columns="split")
    adult = adult.iloc[rng.permutation(len(adult))[:4000]].reset_index(drop=True)
    nhanes = load_nhanes().reset_index(drop=True)
    nhanes = nhanes.iloc[rng.permutation(len(nhanes))].reset_index(drop=True)
    out = {}
    for name, df, aux, secret in (
        ("adult", adult, (["age", "sex", "race", "education"],
                          ["occupation", "hours_per_week", "marital_status", "workclass"]), "income"),
        ("nhanes", nhanes, (["age", "gender", "race_ethnicity", "education"],
                            ["marital_status", "weight_kg", "height_cm", "health_insurance"]), "diabetes"),
    ):
        half = len(df) // 2
        train, control = df.iloc[:half].reset_index(drop=True), df.iloc[half:].reset_index(drop=True)
        cart = CartSynthesizer().fit(train, quasi_identifiers=list(train.columns)).sample(1, random_state=seed)
        cart = cart.copies[0] if hasattr(cart, "copies") else cart
        out[name] = {"train": train, "control": control, "releases": {"cart": cart, "original": train},
                     "aux": aux, "secret": secret}
    return out


ATTACKS = ("singling_out[univariate]", "singling_out[multivariate]", "linkability", "inference")


def run_synthmi(job: dict, frames: dict[str, pd.DataFrame], size_correction: str) -> dict:
    from synthmi.evaluation import inference_risk, linkability_risk, singling_out_risk

    ori, syn, ctrl = frames["ori"], frames["syn"], frames["control"]
    a, seed, n = job["attack"], job["seed"], job["n_attacks"]
    if a.startswith("singling_out"):
        mode = a.split("[")[1].rstrip("]")
        r = singling_out_risk(ori, syn, ctrl, mode=mode, n_attacks=n, n_cols=job["n_cols"], random_state=seed,
                              size_correction=size_correction)
    elif a == "linkability":
        r = linkability_risk(ori, syn, ctrl, aux_columns=tuple(job["aux"]), n_attacks=n, random_state=seed)
    else:
        r = inference_risk(ori, syn, ctrl, secret=job["secret"], aux_columns=job["aux"], n_attacks=n,
                           random_state=seed)
    row = r.per_copy.iloc[0]
    return {"attack_rate": row["attack_rate"], "control_rate": row["control_rate"],
            "baseline_rate": row["baseline_rate"], "n_success": float(row["n_success"]),
            "n_control": float(row["n_control"]), "n_baseline": float(row["n_baseline"]),
            "risk": row["risk"], "ci_low": row["ci_low"], "ci_high": row["ci_high"]}


def summarise(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    out = []
    for (data, release, attack), g in df.groupby(["data", "release", "attack"], sort=False):
        rec = {"data": data, "release": release, "attack": attack, "seeds": len(g)}
        for fig in ("risk", "attack_rate", "control_rate"):
            a, s = g[f"anonymeter_{fig}"], g[f"synthmi_{fig}"]
            se = float(np.sqrt(a.var(ddof=1) / len(a) + s.var(ddof=1) / len(s)))
            if fig != "risk":
                # a rate over n attacks varies about binomially between seeds (less when the attacked
                # records are a large share of the frame); with few seeds the sample variance is itself
                # noisy and can fall well below that, so the binomial se is used as a floor
                n = g["n_attacks"].iloc[0]
                binom = np.sqrt(sum(x.mean() * (1 - x.mean()) / (n * len(x)) for x in (a, s)))
                se = max(se, float(binom))
            rec.update({f"anonymeter_{fig}": a.mean(), f"synthmi_{fig}": s.mean(), f"diff_{fig}": s.mean() - a.mean(),
                        f"se_{fig}": se})
        rec["synthmi_risk_fitted"] = g["synthmi_fitted_risk"].mean() if "synthmi_fitted_risk" in g else np.nan
        # agreement: every compared figure within 2 MC standard errors (exactly equal when both are constant)
        rec["within_2se"] = bool(all(abs(rec[f"diff_{f}"]) <= 2 * rec[f"se_{f}"] + 1e-9
                                     for f in ("risk", "attack_rate", "control_rate")))
        out.append(rec)
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", type=Path, default=default_venv())
    ap.add_argument("--seeds", type=int, default=12)
    ap.add_argument("--n-attacks", type=int, default=500)
    ap.add_argument("--n-cols", type=int, default=3)
    args = ap.parse_args()
    py = ensure_venv(args.venv)
    data = inputs()
    jobs, frames = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, d in data.items():
            paths = {}
            for key, frame in (("ori", d["train"]), ("control", d["control"]),
                               *((f"syn_{r}", f) for r, f in d["releases"].items())):
                p = Path(tmp) / f"{name}_{key}.csv"
                frame.to_csv(p, index=False)
                paths[key] = str(p)
            for release in d["releases"]:
                # both sides read the same files (CSV: categories become strings on both)
                frames[(name, release)] = {"ori": pd.read_csv(paths["ori"]), "control": pd.read_csv(paths["control"]),
                                           "syn": pd.read_csv(paths[f"syn_{release}"])}
                for attack in ATTACKS:
                    for seed in range(args.seeds):
                        aux = (d["aux"] if attack == "linkability" else
                               [c for c in d["train"].columns if c != d["secret"]])
                        jobs.append({"data": name, "release": release, "attack": attack, "seed": seed,
                                     "n_attacks": args.n_attacks, "n_cols": args.n_cols, "aux": aux,
                                     "secret": d["secret"], "ori": paths["ori"], "control": paths["control"],
                                     "syn": paths[f"syn_{release}"]})
        jobfile, outfile = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        jobfile.write_text(json.dumps(jobs))
        runner = Path(tmp) / "runner.py"
        runner.write_text(RUNNER)
        t0 = time.perf_counter()
        subprocess.run([str(py), str(runner), str(jobfile), str(outfile)], check=True)
        t_anon = time.perf_counter() - t0
        anon = json.loads(outfile.read_text())
    rows = []
    t0 = time.perf_counter()
    for job, ref in zip(jobs, anon):
        fr = frames[(job["data"], job["release"])]
        ours = run_synthmi(job, fr, "anonymeter-1.1.0")
        row = {k: job[k] for k in ("data", "release", "attack", "seed", "n_attacks")}
        row.update({f"anonymeter_{k}": ref[k] for k in ours})
        row.update({f"synthmi_{k}": v for k, v in ours.items()})
        if job["attack"].startswith("singling_out"):
            row["synthmi_fitted_risk"] = run_synthmi(job, fr, "fitted")["risk"]
        rows.append(row)
    t_ours = time.perf_counter() - t0
    table = summarise(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[["data", "release", "attack", "anonymeter_risk", "synthmi_risk", "diff_risk", "se_risk",
                     "anonymeter_attack_rate", "synthmi_attack_rate", "diff_attack_rate", "se_attack_rate",
                     "diff_control_rate", "se_control_rate", "within_2se", "synthmi_risk_fitted"]]
              .round(4).to_string(index=False))
    print(f"agreement within 2 MC standard errors: {int(table['within_2se'].sum())} of {len(table)} comparisons")
    write_json("anonymeter_agreement", {
        "n_attacks": args.n_attacks, "n_cols": args.n_cols, "seeds": args.seeds,
        "wall_seconds": {"anonymeter": t_anon, "synthmi": t_ours},
        "summary": table.to_dict(orient="records"), "runs": rows,
    })


if __name__ == "__main__":
    main()
