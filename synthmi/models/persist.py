"""Save and load a fitted synthesizer, so that more copies can be drawn later.

``save(synth, path)`` writes a directory::

    path/
      synthesizer.pkl   the fitted model (posterior / sufficient statistics), by default
                        WITHOUT the original records (see Synthesizer.retain_records)
      posterior.nc      the posterior draws as ArviZ InferenceData (netCDF), when the
                        method has a posterior
      spec.json         the release spec (its public part unless include_records=True)
      manifest.json     class, method, parameters, versions, SHA-256 of the files,
                        whether records are included, the original's fingerprint

``load(path)`` checks the manifest's digests and returns the synthesizer; the
same ``random_state`` then gives the same copies as before saving.

A method whose sampler conditions on the records (DA-MI's fresh pseudo-variables,
the risk-targeted copula chain, CART with ``proper=True``, Rubin's categorical
conditionals and NUTS) is saved only with ``include_records=True``: the file is
then as confidential as the data, and the manifest says so.

``synthesizer.pkl`` is a Python pickle: load only files you wrote or trust (the
manifest's SHA-256 guards against accidental change, not against a forger).
"""
from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
from ..errors import InputError, InputNotFound, InputTypeError, OutputExists

FORMAT = 1
_FILES = ("synthesizer.pkl", "posterior.nc", "spec.json", "manifest.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def posterior_inference_data(synth: Any, n_draws: int = 500, random_state: int = 0):
    """The fitted model's posterior draws as ArviZ InferenceData, or None when it has none.

    * Rubin / DA-MI: ``n_draws`` draws of every conditional model's parameters
      (the exact conjugate draws for normal models; the fast sampler's draws for
      categorical ones), or the NUTS trace when ``sampler="nuts"`` has run;
    * risk-targeted DA-MI and the copula imputer: the stored draws of the latent
      correlation matrix;
    * CART and DPSyn: None (no posterior: trees / noisy marginals).
    """
    import arviz as az

    cop = getattr(synth, "copula_", synth if hasattr(synth, "correlation_draws_") else None)
    if cop is not None and hasattr(cop, "correlation_draws_"):
        draws = np.asarray(cop.correlation_draws_)[None]
        names = list(cop.latent_names_)
        return az.from_dict(
            posterior={"correlation": draws},
            coords={"latent": names, "latent_": names},
            dims={"correlation": ["latent", "latent_"]},
        )
    diag = getattr(synth, "diagnostics_", None)
    if diag is not None and hasattr(diag, "posterior"):
        return diag
    conds = getattr(synth, "conditionals_", None)
    if not conds:
        return None
    rng = np.random.default_rng(random_state)
    posterior: dict[str, np.ndarray] = {}
    for c in conds:
        if c.fast is None or c.family in ("cart", "tree"):
            continue  # no coefficients: a tree's leaves
        if c.family == "normal":
            beta, sigma = c.fast.draw(n_draws, rng)
            posterior[f"{c.column}__beta"] = beta[None]
            posterior[f"{c.column}__sigma"] = sigma[None]
        else:
            from .glm import independence_mh

            res = independence_mh(c.fast, n_draws, rng, chains=1, warn=False)
            params = c.fast.unpack(res.draws.reshape(-1, res.draws.shape[-1]))
            for k, v in params.items():
                posterior[f"{c.column}__{k}"] = np.asarray(v)[None]
    return az.from_dict(posterior=posterior) if posterior else None


def save(synth: Any, path: str | Path, overwrite: bool = False, include_records: bool = False) -> Path:
    """Write a fitted synthesizer to the directory ``path`` (see the module docstring).

    Parameters
    ----------
    synth : Synthesizer
        A fitted synthesizer.
    path : str or Path
        Directory to create. An existing path is an error unless ``overwrite=True``.
    overwrite : bool
        Replace the files of an earlier save in ``path``.
    include_records : bool
        Keep the original records in the saved model (needed by methods whose
        sampler conditions on them; the directory is then confidential).
    """
    # duck-typed, not isinstance(Synthesizer): base.py calls this module, so importing base here
    # would close an import cycle (tests/test_layers.py)
    if not callable(getattr(synth, "_check_fitted", None)):
        raise InputTypeError(f"save() takes a fitted Synthesizer. Got {type(synth).__name__} instead.")
    synth._check_fitted()
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputExists(f"'{path}' already exists; pass overwrite=True to replace it.", path=path,
                           parameter="path", owner="save")
    if path.exists() and not path.is_dir():
        raise InputError(f"'{path}' is a file; save() writes a directory.")
    if not include_records and synth._needs_records_to_sample():
        raise InputError(
            f"This {type(synth).__name__} draws each copy conditional on the original records, so a model saved "
            "without them could not sample. Pass include_records=True to save them too (the saved directory is "
            "then as confidential as the data)."
        )
    posterior = posterior_inference_data(synth)
    path.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        (path / name).unlink(missing_ok=True)
    previous = getattr(synth, "_retain_records", False)
    try:
        synth.retain_records(include_records)
        blob = pickle.dumps(synth, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        synth.retain_records(previous)
    (path / "synthesizer.pkl").write_bytes(blob)
    files = ["synthesizer.pkl"]
    if posterior is not None:
        posterior.to_netcdf(str(path / "posterior.nc"))
        files.append("posterior.nc")
    spec = synth.spec_ if include_records else synth.spec_.public_view()
    (path / "spec.json").write_text(spec.to_json() + "\n")
    files.append("spec.json")
    from .._json import dumps, jsonable
    from ..synthetic import package_versions

    manifest = {
        "synthmi_model": FORMAT,
        "class": f"{type(synth).__module__}:{type(synth).__name__}",
        "method": synth.method,
        # A DP model never records its seed (README; issue 25): only its public parameters.
        "params": jsonable(synth.get_params(deep=False) if getattr(synth, "_publishes_seed", True)
                           else synth._published_params()),
        "includes_records": bool(include_records),
        "fingerprint": jsonable(getattr(synth, "fingerprint_", None)),
        "versions": package_versions(),
        "sha256": {f: _sha256(path / f) for f in files},
    }
    (path / "manifest.json").write_text(dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def load(path: str | Path, expected: type | None = None):
    """Read a synthesizer written by :func:`save` (digests checked), an instance of ``expected``.

    ``Synthesizer.load`` passes its class (this module does not import ``base``, which calls it).
    """
    path = Path(path)
    man_path = path / "manifest.json"
    if not man_path.is_file():
        raise InputNotFound(f"'{path}' holds no saved synthesizer (no manifest.json).", path=man_path,
                            parameter="path", owner="load")
    manifest = json.loads(man_path.read_text())
    if manifest.get("synthmi_model") != FORMAT:
        raise InputError(f"'{path}' was saved in format {manifest.get('synthmi_model')!r}; this synthmi reads {FORMAT}.")
    for f, digest in manifest.get("sha256", {}).items():
        if not (path / f).is_file() or _sha256(path / f) != digest:
            raise InputError(f"The file '{path / f}' is missing or changed since it was saved (SHA-256 mismatch).")
    synth = pickle.loads((path / "synthesizer.pkl").read_bytes())
    if expected is not None and not isinstance(synth, expected):
        raise InputTypeError(f"'{path}' does not hold a {expected.__name__}.")
    return synth


def load_posterior(path: str | Path):
    """The posterior draws saved beside a synthesizer, as ArviZ InferenceData (None if absent)."""
    import arviz as az

    f = Path(path) / "posterior.nc"
    return az.from_netcdf(str(f)) if f.is_file() else None
