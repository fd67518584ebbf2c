"""Bundled public microdata (copies shipped with the package; nothing is fetched).

Provenance and licences are in ``PROVENANCE.md`` beside this file:

* UCI Adult (Becker & Kohavi 1996, CC BY 4.0), 48,842 rows;
* NHANES 2017-2018 adults (US CDC / NCHS, public domain), 5,265 rows;
* UCI Adult as discretized by private-pgm (Apache-2.0 discretization), the
  standard benchmark file for marginal-based DP synthesis.
"""
from __future__ import annotations

import json
import re
from importlib import resources

import numpy as np
import pandas as pd
from ..errors import InputError, InputNotFound, ParameterError

__all__ = [
    "load_adult",
    "load_nhanes",
    "load_adult_discretized",
    "load_dataset",
    "load_domain",
    "check_csv_frame",
    "read_csv_checked",
    "recode_adult",
    "recode_nhanes",
    "ADULT_EDUCATION_ORDER",
]


# UCI Adult education levels in the order of ``education_num`` (1..16).
ADULT_EDUCATION_ORDER = [
    "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th",
    "HS-grad", "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters",
    "Prof-school", "Doctorate",
]
EDU3 = ["<HS", "HS", ">HS"]

NHANES_EDUCATION_ORDER = [
    "Less than 9th grade",
    "9-11th grade (Includes 12th grade with no diploma)",
    "High school graduate/GED or equivalent",
    "Some college or AA degree",
    "College graduate or above",
]


def _path(name: str):
    return resources.files(__name__).joinpath(name)


def _domain_json(name: str) -> dict:
    return json.loads(_path(f"{name}.domain.json").read_text())


def _declared_levels(name: str, column: str) -> list:
    """A column's levels from the bundled public domain file (documentation, not data)."""
    return list(_domain_json(name)["columns"][column]["levels"])


def load_domain(name: str, recode: bool = False):
    """The public domain (:class:`~synthmi.domain.PublicDomain`) of a bundled data set.

    ``name`` is ``"adult"``, ``"nhanes"`` or ``"adult_discretized"``. The levels and
    bounds come from the data sets' public documentation (see each file's
    ``source``), never from the data. With ``recode=True`` the domain matches
    :func:`recode_adult` / :func:`recode_nhanes` (what ``load_dataset`` returns).
    """
    from ..domain import PublicDomain

    key = str(name).lower()
    if key not in ("adult", "nhanes", "adult_discretized"):
        raise ParameterError(
            f"The 'name' parameter of load_domain must be 'adult', 'nhanes' or 'adult_discretized'. Got {name!r} instead.", parameter='name', owner='load_domain'
        )
    d = _domain_json(key)
    if recode and key == "adult":
        d["columns"]["race"] = {"kind": "binary", "levels": ["white", "non-white"], "missing": False}
        d["columns"]["education"] = {"kind": "ordinal", "levels": EDU3, "missing": False}
        d["source"] += "; recoded as in recode_adult (race white / non-white, education <HS / HS / >HS)"
    elif recode and key == "nhanes":
        d["columns"]["race_ethnicity"] = {"kind": "binary", "levels": ["white", "non-white"], "missing": False}
        d["columns"]["education"] = {"kind": "ordinal", "levels": EDU3}
        d["columns"]["diabetes"] = {"kind": "binary", "levels": ["no", "yes"]}
        d["source"] += "; recoded as in recode_nhanes (race white / non-white, education <HS / HS / >HS, diabetes no / yes)"
    return PublicDomain.from_dict(d)


def load_adult(recode: bool = False) -> pd.DataFrame:
    """UCI Adult (training and test files stacked; column ``split`` says which).

    Continuous columns are float, categories are pandas Categorical
    (``education`` ordered by ``education_num``), missing values (``?`` in
    the UCI files) are NaN. ``income`` is a Categorical ``<=50K`` / ``>50K``.

    With ``recode=True`` the quasi-identifiers get the coding of the source
    tables (short-course slides): ``race`` white / non-white, ``education``
    ordered ``<HS`` / ``HS`` / ``>HS`` (see :func:`recode_adult`).
    """
    with _path("adult.csv.gz").open("rb") as fh:
        raw = pd.read_csv(fh, compression="gzip", na_values=["?", ""], keep_default_na=False, skipinitialspace=True)
    df = pd.DataFrame(index=raw.index)
    for c in raw.columns:
        if c in ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"):
            df[c] = raw[c].astype(float)
        elif c == "education":
            df[c] = pd.Categorical(raw[c], categories=ADULT_EDUCATION_ORDER, ordered=True)
        elif c == "income":
            # the UCI test file writes "<=50K." with a trailing dot
            df[c] = pd.Categorical(raw[c].str.rstrip("."), categories=["<=50K", ">50K"])
        elif c == "sex":
            df[c] = pd.Categorical(raw[c], categories=["Female", "Male"])
        else:
            # Levels from the documentation (adult.names), never from the values seen:
            # a level held by one record must not appear or vanish with that record.
            df[c] = pd.Categorical(raw[c], categories=_declared_levels("adult", c))
    return recode_adult(df) if recode else df


def recode_adult(df: pd.DataFrame) -> pd.DataFrame:
    """The source tables' coding of Adult's quasi-identifiers (returns a new frame).

    * ``race``: ``white`` if White, else ``non-white``;
    * ``education``: ``<HS`` (below HS-grad, education_num <= 8), ``HS``
      (HS-grad), ``>HS`` (any college or above), ordered;
    * ``sex``: Female / Male (already binary).
    """
    out = df.copy()
    out["race"] = pd.Categorical(
        np.where(df["race"].astype(object) == "White", "white", "non-white"), categories=["white", "non-white"]
    )
    codes = pd.Categorical(df["education"], categories=ADULT_EDUCATION_ORDER, ordered=True).codes
    edu = np.select([codes < 0, codes < 8, codes == 8], [None, "<HS", "HS"], ">HS")
    out["education"] = pd.Categorical(edu, categories=EDU3, ordered=True)
    return out


def load_nhanes(recode: bool = False) -> pd.DataFrame:
    """NHANES 2017-2018 adults (20+; age top-coded at 80), indexed by ``respondent_id``.

    Categories are pandas Categorical (``education`` ordered; "Don't Know"
    is treated as missing), ``diabetes`` is ``no`` / ``borderline`` / ``yes``
    (ordered), ``health_insurance`` and ``smoked_100_cigarettes`` are
    ``no`` / ``yes``. Item non-response is NaN.

    With ``recode=True``: ``race_ethnicity`` white (Non-Hispanic White) /
    non-white, ``education`` ``<HS`` / ``HS`` / ``>HS``, and ``diabetes``
    binary ``no`` / ``yes`` (borderline counted as no; see :func:`recode_nhanes`).
    """
    with _path("nhanes_2017_2018_adults.csv.gz").open("rb") as fh:
        raw = pd.read_csv(fh, compression="gzip", index_col="respondent_id")
    df = pd.DataFrame(index=raw.index)
    for c in raw.columns:
        if c == "education":
            df[c] = pd.Categorical(raw[c].where(raw[c] != "Don't Know"), categories=NHANES_EDUCATION_ORDER, ordered=True)
        elif c == "diabetes":
            mapped = raw[c].map({"0": "no", "1": "yes", "Borderline": "borderline", 0: "no", 1: "yes"})
            df[c] = pd.Categorical(mapped, categories=["no", "borderline", "yes"], ordered=True)
        elif c in ("health_insurance", "smoked_100_cigarettes"):
            df[c] = pd.Categorical(raw[c].map({0.0: "no", 1.0: "yes"}), categories=["no", "yes"])
        elif c in ("gender", "race_ethnicity", "marital_status"):
            # Levels from the NHANES codebook (nhanes.domain.json), not from the values seen.
            df[c] = pd.Categorical(raw[c], categories=_declared_levels("nhanes", c))
        else:
            df[c] = raw[c].astype(float)
    return recode_nhanes(df) if recode else df


def recode_nhanes(df: pd.DataFrame) -> pd.DataFrame:
    """The source tables' coding for NHANES (returns a new frame).

    ``race_ethnicity`` -> white / non-white; ``education`` -> ``<HS``
    (less than 9th, 9-11th), ``HS`` (graduate/GED), ``>HS`` (some college or
    above); ``diabetes`` -> no / yes, with *borderline* (pre-diabetes) as no.
    """
    out = df.copy()
    race = df["race_ethnicity"].astype(object)
    out["race_ethnicity"] = pd.Categorical(
        np.where(race.isna(), None, np.where(race == "Non-Hispanic White", "white", "non-white")),
        categories=["white", "non-white"],
    )
    codes = pd.Categorical(df["education"], categories=NHANES_EDUCATION_ORDER, ordered=True).codes
    edu = np.select([codes < 0, codes <= 1, codes == 2], [None, "<HS", "HS"], ">HS")
    out["education"] = pd.Categorical(edu, categories=EDU3, ordered=True)
    dia = df["diabetes"].astype(object)
    out["diabetes"] = pd.Categorical(
        np.where(dia.isna(), None, np.where(dia == "yes", "yes", "no")), categories=["no", "yes"]
    )
    return out


def load_adult_discretized() -> tuple[pd.DataFrame, dict[str, int]]:
    """Adult as discretized by private-pgm: integer codes 0..d-1 and the domain sizes."""
    with _path("adult_discretized.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    domain = json.loads(_path("adult_discretized_domain.json").read_text())
    return df, domain


def load_dataset(name_or_path: str, recode: bool = True, sep: str = ",", option: str | None = None,
                 na_values: list[str] | str | None = None, private: bool = False,
                 encoding: str | None = None) -> pd.DataFrame:
    """``"adult"`` / ``"nhanes"`` (bundled, recoded by default) or a CSV path.

    A CSV's text columns become unordered Categoricals; numbers stay numeric.
    Their levels are the values seen, which is fine for non-private work; DP code
    never uses them (it takes levels only from a declared public domain, see
    :mod:`synthmi.domain`).

    The file is checked (:func:`check_csv_frame`): a numeric-looking column
    with a few cells that are not numbers, infinite values and a separator
    other than ``sep`` are errors, not silent recodings. ``option`` names the
    command-line option the path came from, so the errors can speak it.

    ``na_values``: cell values of the CSV that mean missing, besides an empty cell and
    pandas' defaults (``NA``, ``NaN``, ...): agency files code missing as ``?``, ``.`` or
    ``-9`` (pandas ``read_csv``'s ``na_values``, for every column; a number such as
    ``-9`` also matches ``-9.0``). Without it such a marker is a level of a categorical
    column or a number of a numeric one. The bundled data have no markers.

    ``private=True`` (differentially private paths, issue 25): the file is read as it is,
    with no scan of its values -- only the header's separator check; text stays text
    (no categories from the values seen) and nothing names a cell or a row. The DP code
    then conforms every column to its declared domain, where a value outside is an
    error naming the column only.

    ``encoding``: the file's text encoding (default UTF-8); reading faults (not UTF-8, empty,
    not a CSV, duplicate column names) are errors in the user's words, see
    :func:`read_csv_checked`.
    """
    key = str(name_or_path).lower()
    if key == "adult":
        return load_adult(recode=recode)
    if key == "nhanes":
        return load_nhanes(recode=recode)
    if isinstance(na_values, str):
        na_values = [na_values]
    # A private read keeps every cell as its text (dtype=str): a reader's type guess is a
    # function of all the (private) values -- and, in chunks, warns about one record's --
    # so the declared domain alone turns the text into numbers or levels (issue 25).
    df = read_csv_checked(name_or_path, sep=sep, option=option, na_values=na_values, encoding=encoding,
                          dtype=str if private else None)
    check_csv_frame(df, str(name_or_path), sep=sep, option=option, scan_values=not private)
    if private:
        return df
    for c in df.columns:
        if _is_text(df[c]):
            df[c] = pd.Categorical(df[c].astype(object), categories=sorted(df[c].dropna().unique(), key=str))
    return df


#: leading bytes of files that are not CSV text -> the suffixes under which pandas reads them
#: (compressed CSV), what they are, and what to do. None of these can start CSV text: each holds
#: a control byte (bzip2's "BZh" is followed by its block size and the pi digits of its header).
_NOT_CSV = (
    (b"PK\x03\x04", (".zip",), "an Excel workbook (.xlsx) or a zip archive",
     "save the sheet as CSV (e.g. File > Save As > CSV UTF-8)"),
    (b"\xd0\xcf\x11\xe0", (), "an Excel 97-2003 workbook (.xls)", "save the sheet as CSV (e.g. File > Save As > CSV UTF-8)"),
    (b"BZh", (".bz2",), "a bzip2-compressed file", "name it .csv.bz2 or decompress it"),
    (b"\xfd7zXZ\x00", (".xz",), "an xz-compressed file", "name it .csv.xz or decompress it"),
)
_PARQUET = b"PAR1"  # at both ends of a Parquet file
_GZIP = b"\x1f\x8b"


def _where(path: str, option: str | None) -> str:
    return f"The '{option}' file '{path}'" if option else f"The file '{path}'"


def _encoding_hint(raw: bytes, option: str | None) -> str:
    """Which encoding reads ``raw`` (Windows-1252 covers Latin-1 text with curly quotes), as the option to add."""
    flag = "--encoding" if option else "encoding="
    for enc in ("cp1252", "latin-1"):
        try:
            raw.decode(enc)
        except UnicodeDecodeError:
            continue
        return f"It reads as {enc} ({'Windows' if enc == 'cp1252' else 'ISO'} Latin-1) text: add {flag} {enc} (or the file's own encoding)."
    return f"Give the file's encoding with {flag} NAME."


def _header_fields(text: str, sep: str) -> list[str]:
    import csv

    line = text.splitlines()[0] if text else ""
    if len(sep) == 1:
        return next(csv.reader([line], delimiter=sep), [])
    return re.split(sep, line)


def check_column_names(names: list[str], where: str) -> None:
    """Refuse a header whose names repeat exactly or up to case and spaces.

    pandas renames a repeated ``age`` to ``age.1``; released unchanged as a kept column,
    that second ``age`` sits beside the synthetic one (and as a CART predictor makes the
    synthesized ``age`` equal the true age). Columns are named, never values.
    """
    seen: dict[str, list[str]] = {}
    for n in names:
        seen.setdefault(" ".join(str(n).split()).casefold(), []).append(str(n))
    dup = [v for v in seen.values() if len(v) > 1]
    if not dup:
        return
    exact = [v for v in dup if len(set(v)) == 1]
    if exact:
        listed = ", ".join(f"'{v[0]}' ({len(v)} times)" for v in exact)
        raise InputError(
            f"{where} has columns with the same name: {listed}. A repeated column would be renamed and could be "
            "released beside its synthetic version; rename or remove the repeats in the file."
        )
    listed = "; ".join(" and ".join(repr(x) for x in v) for v in dup)
    raise InputError(
        f"{where} has columns whose names differ only by case or spaces: {listed}. They are easily confused "
        "(one synthesized, the other released unchanged); rename or remove one of each in the file."
    )


def _decompressed_head(p, suffix: str, where: str) -> bytes:
    """The first 64 KiB of a compressed CSV (``.bz2``, ``.xz``, ``.zip`` with one member)."""
    import bz2
    import lzma
    import zipfile

    try:
        if suffix == ".zip":
            with zipfile.ZipFile(p) as z:
                names = z.namelist()
                if len(names) != 1:
                    raise InputError(f"{where} is a zip archive of {len(names)} files; give the CSV itself.")
                with z.open(names[0]) as fh:
                    return fh.read(1 << 16)
        opener = bz2.open if suffix == ".bz2" else lzma.open
        with opener(p, "rb") as fh:
            return fh.read(1 << 16)
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile):
        raise InputError(f"{where} is a damaged compressed file.") from None


def read_csv_checked(path, sep: str = ",", option: str | None = None, na_values: list[str] | None = None,
                     encoding: str | None = None, **read_kw) -> pd.DataFrame:
    """``pandas.read_csv`` with every reading fault as one sentence naming the file and option.

    A directory, an empty or header-only file, a file that is not CSV text (Excel, Parquet,
    a compressed file with the wrong suffix: gzip is read as gzip whatever its name), text
    that is not in ``encoding`` (default UTF-8; the encoding that reads it is offered) and
    repeated column names (:func:`check_column_names`) are refused before pandas guesses.
    """
    from pathlib import Path

    p = Path(path)
    where = _where(str(path), option)
    if p.is_dir():
        raise InputError(f"{where} is a directory; give a CSV file.")
    if not p.exists():
        raise InputNotFound(f"{where} does not exist.", path=p, parameter="path", option=option)
    with open(p, "rb") as fh:
        head = fh.read(1 << 16)
    if not head:
        raise InputError(f"{where} is empty: it has no header line and no rows.")
    compression = read_kw.pop("compression", "infer")
    if head.startswith(_GZIP):
        import gzip

        compression = "gzip"
        try:
            with gzip.open(p, "rb") as fh:
                head = fh.read(1 << 16)
        except (OSError, EOFError):
            raise InputError(f"{where} is a damaged gzip file.") from None
    elif p.suffix.lower() in (".gz", ".gzip"):
        raise InputError(f"{where} is named .gz but is not gzip-compressed; rename it to .csv.")
    else:
        for magic, suffixes, what, todo in _NOT_CSV:
            if magic == b"BZh" and not (head[3:4].isdigit() and head[4:10] == b"1AY&SY"):
                continue
            if not head.startswith(magic):
                continue
            if p.suffix.lower() not in suffixes:
                raise InputError(f"{where} is {what}, not a CSV text file: {todo}.")
            head = _decompressed_head(p, p.suffix.lower(), where)  # a compressed CSV pandas reads
        if head.startswith(_PARQUET):
            with open(p, "rb") as fh:
                fh.seek(max(0, p.stat().st_size - 4))
                tail = fh.read(4)
            if tail == _PARQUET:
                raise InputError(f"{where} is a Parquet file, not a CSV text file: read it with --engine dask, or "
                                 "convert it to CSV (pandas: read_parquet, to_csv).")
    enc = encoding or "utf-8"
    try:
        import codecs

        codecs.lookup(enc)
    except LookupError:
        raise InputError(f"The '--encoding' option names an unknown encoding, {enc!r}; e.g. utf-8, cp1252, latin-1.") from None
    if b"\x00" in head[:4096] and not enc.lower().replace("-", "").startswith("utf16"):
        raise InputError(f"{where} holds binary data (NUL bytes), not CSV text; give a CSV file (or its encoding, "
                         "e.g. --encoding utf-16).")
    try:
        text = head.decode(enc)
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a multi-byte character cut at the end of the sample
            raise InputError(f"{where} is not {enc} text (byte 0x{head[exc.start]:02x} at position {exc.start} "
                             f"cannot be decoded). {_encoding_hint(head, option)}") from None
        text = head[: exc.start].decode(enc)
    if not text.strip():
        raise InputError(f"{where} is empty: it has no header line and no rows.")
    check_column_names(_header_fields(text.lstrip("\ufeff"), sep), where)
    try:
        df = pd.read_csv(p, sep=sep, na_values=list(na_values) if na_values else None, encoding=enc,
                         compression=compression, **read_kw)
    except UnicodeDecodeError as exc:
        with open(p, "rb") as fh:
            raw = fh.read()
        raise InputError(f"{where} is not {enc} text (a byte after the first lines cannot be decoded: "
                         f"{exc.reason}). {_encoding_hint(raw if compression != 'gzip' else head, option)}") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{where} is empty: it has no header line and no rows.") from None
    except pd.errors.ParserError as exc:
        reason = " ".join(str(exc).split())
        raise InputError(f"{where} cannot be read as CSV with separator {sep!r} ({reason}); check the separator "
                         f"({'--sep' if option else 'sep='}) and the quoting of its cells.") from None
    if len(df) == 0:
        raise InputError(f"{where} has a header line but no data rows.")
    return df


def is_bundled_name(name) -> bool:
    """Whether ``name`` is a bundled data set ('adult', 'nhanes'), not a file."""
    return str(name).lower() in ("adult", "nhanes")


def _is_text(s: pd.Series) -> bool:
    """Object or string dtype (pandas 2 reads text as object, pandas 3 as ``str``)."""
    return (pd.api.types.is_object_dtype(s.dtype) or pd.api.types.is_string_dtype(s.dtype)) and not isinstance(
        s.dtype, pd.CategoricalDtype
    )


# a plain decimal number as a CSV parser reads one: no spaces, no thousands separators, no words
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def _coded_categorical(obs: pd.Series, plain: pd.Series, max_codes: int) -> bool:
    """A categorical coded mostly by numbers, such as NHANES' diabetes ``0`` / ``1`` / ``Borderline``.

    Its numeric cells take at most ``max_codes`` distinct values and every text label is a
    repeated level (held by at least 2 cells) that is not a number written with padding or a
    thousands separator. A mistyped cell in a numeric column (``forty`` among ages, ``1,000``,
    a single ``yes`` among 0/1 codes) fails one of these and stays an error.
    """
    if obs[plain].nunique() > max_codes:
        return False
    counts = obs[~plain].value_counts()
    if (counts < 2).any():
        return False
    return not any(re.fullmatch(_NUMBER, str(v).strip().replace(",", "")) for v in counts.index)


def check_csv_frame(df: pd.DataFrame, source: str, sep: str = ",", option: str | None = None,
                    numeric_share: float = 0.8, max_codes: int = 10, scan_values: bool = True) -> None:
    """Refuse a CSV that would be misread silently; every offending column is named.

    * one column whose name holds ``;``, a tab or ``|``: the file uses another
      separator than ``sep``;
    * a text column in which at least ``numeric_share`` of the non-missing cells
      are plain numbers (a numeric column with a few cells such as ``"forty"``,
      ``" 34 "`` or ``"1,000"``): the first offending cell is named by its row
      number, never by its value (cell values can be confidential). A categorical
      coded mostly by numbers (at most ``max_codes`` distinct numbers, every text
      label repeated, e.g. ``0`` / ``1`` / ``Borderline``) is read as categories;
    * infinite values in a numeric column.

    ``scan_values=False``: the separator check only (it reads the header, not the values).
    """
    where = f"The '{option}' file '{source}'" if option else f"The file '{source}'"
    if df.shape[1] == 1:
        name = str(df.columns[0])
        for cand, shown in ((";", "';'"), ("\t", "'\\t'"), ("|", "'|'")):
            if cand != sep and cand in name:
                how = f"--sep {shown}" if option else f"sep={shown}"
                raise InputError(
                    f"{where} has a single column whose name contains {shown}: it looks separated by {shown}, "
                    f"not {sep!r}. Pass {how}."
                )
    if not scan_values:
        return
    bad_cells = []
    for c in df.columns:
        s = df[c]
        if not _is_text(s):
            continue
        obs = s.dropna().astype(str)
        if obs.empty:
            continue
        plain = obs.str.fullmatch(_NUMBER)
        if plain.all() or plain.mean() < numeric_share:
            continue
        if _coded_categorical(obs, plain, max_codes):
            continue
        row = int(np.flatnonzero(~plain.to_numpy())[0])
        pos = int(s.index.get_loc(obs.index[row])) + 1
        bad_cells.append(f"'{c}' (first at data row {pos})")
    if bad_cells:
        raise InputError(
            f"{where} has numeric-looking columns with cells that are not plain numbers (words, spaces, "
            f"thousands separators): {'; '.join(bad_cells)}. Fix those cells (write missing values as empty "
            "cells); read as they are, the columns would become categories with one level per value."
        )
    inf_cols = [
        str(c) for c in df.columns
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        and bool(np.isinf(df[c].to_numpy(dtype=float, na_value=np.nan)).any())
    ]
    if inf_cols:
        raise InputError(f"{where} has infinite values in columns {inf_cols}; replace them by finite numbers or empty cells.")
