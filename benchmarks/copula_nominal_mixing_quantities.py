"""Per-quantity R-hat and ESS of one copula_files fit (every correlation and monitored block coefficient).

The diagnosis run behind ``copula_nominal_mixing.py`` (without its per-iteration share recording):
``python benchmarks/copula_nominal_mixing_quantities.py FILE N_ITER [TAG]`` fits FILE of
``copula_files.py`` as that benchmark does (``RiskTargetedSynthesizer`` defaults, seed 28), prints the
25 slowest quantities and saves the draws to ``/tmp/copula_quantities_FILE_N_ITER_TAG.npz``; with
``--variant before`` main's sampler (``CopulaGibbs.collapse_missing_levels = collapse_ranked = False``).
"""
import sys, time, warnings  # noqa: E401
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402
import copula_files as cf  # noqa: E402
from synthmi.models import copula as cm  # noqa: E402
from synthmi.models.risk_targeted import RiskTargetedSynthesizer  # noqa: E402
from synthmi import diagnostics as dg  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
if "--variant" in sys.argv and sys.argv[sys.argv.index("--variant") + 1] == "before":
    args.remove("before")
    cm.CopulaGibbs.collapse_missing_levels = cm.CopulaGibbs.collapse_ranked = False
name, n_iter = args[0], int(args[1])
tag = args[2] if len(args) > 2 else "0"
df, qi, kw = cf.FILES[name]()
keep = [c for c in df.columns if c not in qi]
s = RiskTargetedSynthesizer(n_iter=n_iter, accept_diagnostics=True, max_seconds=None, random_state=cf.SEED)
c0 = time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    s.fit(df, quasi_identifiers=qi, keep=keep, **kw)
cpu = time.process_time() - c0
cop = s.copula_
d = cop.diagnostics_
ch, nd, q = d["n_chains"], d["n_draws"], cop.q_
iu = np.triu_indices(q, 1)
corr = cop.correlation_draws_[:, iu[0], iu[1]].reshape(ch, nd, -1)
co = cop.coefficient_draws_.reshape(ch, nd, -1)
names = [f"corr {cop.latent_names_[i]}~{cop.latent_names_[j]}" for i, j in zip(*iu)] + list(cop.coefficient_labels_)
x = np.concatenate([corr, co], axis=2)
r, eb, et = dg.rhat(x), dg.ess_bulk(x), dg.ess_tail(x)
print(name, "cpu", round(cpu, 1), "acc", d.get("collapsed_acceptance"), "moves", cop.sampler_.nominal_move)
print("release check: max R-hat", d["max_r_hat"], "min bulk", d["min_ess_bulk"], "min tail", d["min_ess_tail"], d["worst"])
for k in np.argsort(np.minimum(eb, et))[:25]:
    print(f"{names[k]:70s} rhat {r[k]:.3f} bulk {eb[k]:6.0f} tail {et[k]:6.0f}  mean {x[..., k].mean():+.3f} sd {x[..., k].std():.3f}")
np.savez(f"/tmp/copula_quantities_{name}_{n_iter}_{tag}.npz", x=x, names=np.array(names), cpu=cpu,
         release=np.array([d["max_r_hat"], d["min_ess_bulk"], d["min_ess_tail"]]))
