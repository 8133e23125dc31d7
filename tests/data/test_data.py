"""PrivateData: registration, public specification, and refusal of bad inputs.

Every refusal must name the array, the column and the first offending row, never quote the
offending value, and leave the model untouched.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymc.model.fgraph import clone_model

from pymc_private.analysis.core import analyze
from pymc_private.data.declaration import (
    PrivateData,
    check_private_data,
    private_data,
    private_data_domain,
    private_record_count,
)
from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.priors.distributions import TruncatedGamma, TruncatedNormal

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_refused(value, bounds=(0.0, 1.0), *, match, forbidden=(), **kwargs):
    """PrivateData raises DataBoundsError matching ``match``, without the forbidden strings,
    and registers nothing."""
    with pm.Model() as model:
        with pytest.raises(DataBoundsError, match=match) as info:
            PrivateData("secret", value, bounds, **kwargs)
    message = str(info.value)
    assert "`secret`" in message
    for text in forbidden:
        assert text not in message
    assert "secret" not in model.named_vars
    assert model.data_vars == []
    return message


def test_registers_like_pm_data_with_per_column_bounds(rng):
    values = np.column_stack([rng.uniform(0, 1, 20), rng.uniform(-5, 5, 20)])
    with pm.Model(coords={"feature": ["a", "b"]}) as model:
        x = PrivateData("x_obs", values, bounds=([0, -5], [1, 5]), dims=("obs", "feature"))
    assert model["x_obs"] is x
    assert x in model.data_vars
    np.testing.assert_array_equal(x.get_value(), values)
    spec = private_data_domain(model, "x_obs")
    np.testing.assert_array_equal(spec.lower, [0, -5])
    np.testing.assert_array_equal(spec.upper, [1, 5])
    assert (spec.n, spec.record_shape, spec.integer, spec.out_of_bounds) == (
        20,
        (2,),
        False,
        "raise",
    )
    assert spec.dims == ("obs", "feature")
    assert private_record_count(model) == 20
    assert spec.element_bounds() == [(-5.0, 5.0, 1), (0.0, 1.0, 1)]
    assert spec.l2_bound() == pytest.approx(np.sqrt(26.0))


def test_integer_and_boolean_data_keep_an_integer_domain():
    with pm.Model() as model:
        PrivateData("labels", np.array([0, 1, 1, 0]), bounds=(0, 1))
        PrivateData("flags", np.array([True, False, True, True]), bounds=(0, 1))
        PrivateData("scores", np.array([0.0, 1.0, 1.0, 0.0]), bounds=(0, 1))
    specs = private_data(model)
    assert specs["labels"].integer and specs["flags"].integer
    assert not specs["scores"].integer
    assert model["flags"].dtype.startswith("int")
    assert model["labels"].dtype.startswith("int")


def test_scalar_bounds_broadcast_to_the_record_shape():
    with pm.Model() as model:
        PrivateData("x", np.zeros((3, 2, 4)), bounds=(-1, 1))
    spec = private_data(model)["x"]
    assert spec.lower.shape == spec.upper.shape == (2, 4)
    assert not spec.lower.flags.writeable


def test_clip_clips_into_the_bounds_and_is_recorded():
    with pm.Model() as model:
        x = PrivateData(
            "x", np.array([[-3.0, 0.5], [0.2, 7.0]]), bounds=(0, 1), out_of_bounds="clip"
        )
    np.testing.assert_array_equal(x.get_value(), [[0.0, 0.5], [0.2, 1.0]])
    assert private_data(model)["x"].out_of_bounds == "clip"


def test_specification_survives_cloning_and_do():
    with pm.Model() as model:
        y = PrivateData("y_obs", np.array([0, 1, 1]), bounds=(0, 1))
        p = pm.Beta("p", 2, 2)
        pm.Bernoulli("y", p, observed=y)
    for transformed in (clone_model(model), pm.do(model, {"p": 0.5})):
        spec = private_data(transformed)["y_obs"]
        assert (spec.n, spec.integer, float(spec.upper)) == (3, True, 1.0)


def test_unknown_name_and_no_private_data_are_refused():
    with pm.Model() as model:
        pm.Data("public", np.zeros(3))
    with pytest.raises(UnsupportedModelError, match=r"pmp\.PrivateData\('other'"):
        private_data_domain(model, "other")
    with pytest.raises(UnsupportedModelError, match="no PrivateData"):
        private_record_count(model)


@SETTINGS
@given(
    n=st.integers(1, 30),
    d=st.integers(1, 5),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    data=st.data(),
)
def test_non_finite_values_are_refused(n, d, bad, data):
    row = data.draw(st.integers(0, n - 1))
    column = data.draw(st.integers(0, d - 1))
    values = np.full((n, d), 0.5)
    values[row, column] = bad
    for mode in ("raise", "clip"):
        message = assert_refused(
            values,
            match=rf"row {row}, column {column} is missing or not a finite number",
            forbidden=("nan", "inf "),
            out_of_bounds=mode,
        )
        assert "NaN or infinite" in message


@SETTINGS
@given(
    n=st.integers(2, 30),
    d=st.integers(1, 4),
    # Not integral: a value printed as "4" could not be told from the row number 4.
    excess=st.floats(1.001, 1e6, allow_nan=False).filter(lambda e: not (1.0 + e).is_integer()),
    below=st.booleans(),
    data=st.data(),
)
def test_out_of_bounds_values_are_refused_without_quoting_them(n, d, excess, below, data):
    row = data.draw(st.integers(0, n - 1))
    column = data.draw(st.integers(0, d - 1))
    values = np.full((n, d), 0.5)
    value = -excess if below else 1.0 + excess
    values[row, column] = value
    message = assert_refused(
        values,
        match=rf"row {row}, column {column} lies outside the declared bounds \[0, 1\]",
        forbidden=(repr(value), str(value), f"{value:g}", f"{value:.6g}"),
    )
    assert "out_of_bounds='clip'" in message


@SETTINGS
@given(n=st.integers(2, 20), secret=st.integers(1000, 10**9), data=st.data())
def test_integer_data_out_of_bounds_names_row_only(n, secret, data):
    row = data.draw(st.integers(0, n - 1))
    values = np.zeros(n, dtype=np.int64)
    values[row] = secret
    assert_refused(
        values,
        (0, 1),
        match=rf"row {row}, column 0 \(one value per record\) lies outside",
        forbidden=(str(secret),),
    )


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 4), min_size=2, max_size=6).filter(lambda v: len(set(v)) > 1)
)
def test_ragged_input_is_refused(lengths):
    ragged = [[0.5] * length for length in lengths]
    assert_refused(ragged, match="ragged")


@SETTINGS
@given(
    n=st.integers(1, 20),
    kind=st.sampled_from(["text", "bytes", "complex", "object", "dict"]),
)
def test_non_real_dtypes_are_refused(n, kind):
    make = {
        "text": lambda: np.array(["a"] * n),
        "bytes": lambda: np.array([b"a"] * n),
        "complex": lambda: np.full(n, 1 + 2j),
        "object": lambda: np.array([0.5] * (n - 1) + [None], dtype=object),
        "dict": lambda: np.array([{"a": 1}] * n),
    }
    assert_refused(make[kind](), match="real numbers")


@SETTINGS
@given(first=st.integers(1, 20), second=st.integers(1, 20).filter(lambda v: v != 7))
def test_mismatched_record_counts_are_refused(first, second):
    with pm.Model() as model:
        PrivateData("first", np.full(7, 0.5), (0, 1))
        with pytest.raises(
            DataBoundsError, match=rf"`second` has {second} records .* `first` has 7"
        ):
            PrivateData("second", np.full((second, 2), 0.5), (0, 1))
    assert "second" not in model.named_vars
    assert [v.name for v in model.data_vars] == ["first"]


@pytest.mark.parametrize(
    ("value", "bounds", "match"),
    [
        (np.zeros((3, 2)), (1, 0), "lower bound above upper bound at column 0"),
        (np.zeros((3, 2)), ([0, 2], [1, 1]), "lower bound above upper bound at column 1"),
        (np.zeros(3), (0, np.inf), "upper bound must be finite"),
        (np.zeros(3), (np.nan, 1), "lower bound must be finite"),
        (np.zeros((3, 2)), ([0, 0, 0], 1), r"does not broadcast to one record's shape \(2,\)"),
        (np.zeros(3, dtype=int), (0, 2.5), "integer dtype: its upper bound must be integers"),
        (np.zeros(3), (0,), "must be a pair"),
        (np.zeros(3), ("a", "b"), "lower bound must be real numbers"),
        (np.float64(0.5), (0, 1), "scalar"),
        (np.zeros((0, 2)), (0, 1), "no records"),
    ],
)
def test_invalid_bounds_and_shapes_are_refused(value, bounds, match):
    assert_refused(value, bounds, match=match)


def test_invalid_out_of_bounds_option_is_refused():
    assert_refused(
        np.zeros(3), match="out_of_bounds must be 'raise' or 'clip'", out_of_bounds="drop"
    )


# -- values replaced after declaration (pm.set_data, set_value) ------------------------------


def declared(values, bounds=(0.0, 1.0), **kwargs) -> pm.Model:
    with pm.Model() as model:
        PrivateData("secret", values, bounds, dims=("obs", "feature"), **kwargs)
    return model


@SETTINGS
@given(
    n=st.integers(2, 20),
    d=st.integers(1, 4),
    excess=st.floats(1.001, 1e6, allow_nan=False),
    data=st.data(),
)
def test_set_data_out_of_bounds_is_refused_without_quoting_the_value(n, d, excess, data):
    """pm.set_data keeps the shape, so only a re-check of the values catches this."""
    row = data.draw(st.integers(0, n - 1))
    column = data.draw(st.integers(0, d - 1))
    model = declared(np.full((n, d), 0.5))
    replaced = np.full((n, d), 0.5)
    value = 1.0 + excess
    replaced[row, column] = value
    with model:
        pm.set_data({"secret": replaced})
    with pytest.raises(
        DataBoundsError,
        match=rf"`secret`: row {row}, column {column} \(dims \('feature',\)\) lies outside the "
        r"declared bounds \[0, 1\]",
    ) as info:
        check_private_data(model)
    for text in (repr(value), str(value), f"{value:g}", f"{value:.6g}"):
        assert text not in str(info.value)


@pytest.mark.parametrize(
    ("replace", "match"),
    [
        (lambda v: pm.set_data({"secret": np.array([[0.5], [np.nan], [0.5]])}), "row 1, column 0"),
        (lambda v: v.set_value(np.array([[0.5], [0.5], [-np.inf]])), "row 2, column 0"),
    ],
    ids=["set_data NaN (masked)", "set_value inf"],
)
@pytest.mark.parametrize("mode", ["raise", "clip"])
def test_non_finite_replacements_are_refused_in_both_modes(replace, match, mode):
    model = declared(np.full((3, 1), 0.5), out_of_bounds=mode)
    with model:
        replace(model["secret"])
    with pytest.raises(
        DataBoundsError, match=rf"`secret`: {match} .*is missing or not a finite number"
    ):
        check_private_data(model)


def test_clip_mode_clips_the_replaced_value_in_place():
    """The declared mechanism applies to the value the model holds now: out-of-bounds
    entries are clipped into the bounds, the rest are untouched, the caller's array is not
    modified, and checking again changes nothing."""
    model = declared(np.full((3, 2), 0.5), bounds=([0, -1], [1, 1]), out_of_bounds="clip")
    replaced = np.array([[-3.0, 0.25], [0.75, 9.0], [1.5, -1.0]])
    with model:
        pm.set_data({"secret": replaced})
    check_private_data(model)
    expected = [[0.0, 0.25], [0.75, 1.0], [1.0, -1.0]]
    np.testing.assert_array_equal(model["secret"].get_value(), expected)
    assert replaced[0, 0] == -3.0
    check_private_data(model)
    np.testing.assert_array_equal(model["secret"].get_value(), expected)


def test_valid_replacements_pass_unchanged_and_shape_changes_are_refused():
    model = declared(np.full((3, 1), 0.5))
    with model:
        pm.set_data({"secret": np.array([[0.0], [1.0], [0.25]])})
    check_private_data(model)
    np.testing.assert_array_equal(model["secret"].get_value(), [[0.0], [1.0], [0.25]])
    with model:
        pm.set_data({"secret": np.full((4, 1), 0.5)})
    with pytest.raises(DataBoundsError, match=r"`secret` no longer has the shape.*pm\.set_data"):
        check_private_data(model)


def test_a_value_of_another_dtype_is_refused():
    """PyTensor's type refuses a float value for integer data through set_value; a value
    stored behind its back is still caught."""
    with pm.Model() as model:
        labels = PrivateData("labels", np.array([0, 1, 1]), bounds=(0, 1))
    labels.container.storage[0] = np.array([0.0, 0.5, 1.0])
    with pytest.raises(DataBoundsError, match="`labels` now holds dtype float64 but was declared"):
        check_private_data(model)


# -- values stored exactly as given (the stored dtype is public) ----------------------------

INT32_MAX = 2**31 - 1
EXACT = 2**53


def poisson_counts(values, bounds, **kwargs) -> pm.Model:
    with pm.Model() as model:
        counts = PrivateData("counts", values, bounds, **kwargs)
        pm.Poisson("y", TruncatedGamma("lam", 2, 1, lower=0.5, upper=4.0), observed=counts)
    return model


@pytest.mark.parametrize("value", [INT32_MAX, 2**31, 2**32 - 1, 2**32])
def test_int64_values_beyond_int32_are_stored_exactly(value):
    """The audit's case: pm.Data stores int64 as int32, so 2³¹ became −2³¹ and every call
    raised naming the row, while the neighbour with 2³¹ − 1 released normally."""
    model = poisson_counts(np.array([value, 0, 7], dtype=np.int64), (0, 2**32))
    stored = model["counts"].get_value()
    assert model["counts"].dtype == "int64"
    assert [int(v) for v in stored] == [value, 0, 7]
    check_private_data(model)
    assert analyze(model) == analyze(poisson_counts(np.array([0, 0, 7]), (0, 2**32)))


@pytest.mark.parametrize(
    ("values", "bounds", "dtype"),
    [
        (np.array([0, 1]), (0, 1), "int32"),
        (np.array([True, False]), (0, 1), "int32"),
        (np.array([5, 200], dtype=np.uint8), (0, 255), "int32"),
        (np.array([0, 1]), (-(2**31), INT32_MAX), "int32"),
        (np.array([0, 1]), (0, 2**31), "int64"),
        (np.array([0, 1], dtype=np.int8), (-(2**31) - 1, 1), "int64"),
        (np.array([0, 1]), (-EXACT, EXACT), "int64"),
        (np.array([0.25, 1.0], dtype=np.float16), (0, 1), "float64"),
        (np.array([0.1, 1.0], dtype=np.float32), (0, 1), "float64"),
    ],
)
def test_the_stored_dtype_depends_on_the_declaration_only(values, bounds, dtype):
    """int32 (what pm.set_data produces) when it holds every integer within the bounds,
    int64 beyond; float64 for real data, wider input being exact in it."""
    with pm.Model():
        data = PrivateData("x", values, bounds)
    assert data.dtype == dtype
    stored = data.get_value()
    assert stored.tolist() == values.astype(np.float64 if dtype == "float64" else int).tolist()


def test_integer_values_are_compared_with_the_bounds_as_integers():
    """As float64, 2⁵³ + 1 rounds to the bound 2⁵³ and would pass; it lies outside."""
    values = np.array([0, EXACT + 1, 3], dtype=np.int64)
    assert_refused(
        values,
        (0, EXACT),
        match=r"row 1, column 0 \(one value per record\) lies outside the declared bounds "
        r"\[0, 9007199254740992\]",
        forbidden=(str(EXACT + 1),),
    )
    with pm.Model():
        clipped = PrivateData("x", values, (0, EXACT), out_of_bounds="clip")
        huge = PrivateData(
            "u", np.array([2**64 - 1, 2, 0], dtype=np.uint64), (-5, 5), out_of_bounds="clip"
        )
    assert [int(v) for v in clipped.get_value()] == [0, EXACT, 3]
    assert huge.get_value().tolist() == [5, 2, 0]
    assert_refused(
        np.array([1, 2**64 - 1], dtype=np.uint64), (-5, 5), match=r"row 1, column 0 .*lies outside"
    )


@pytest.mark.parametrize(
    ("value", "bounds", "match"),
    [
        (
            np.zeros(3, int),
            (0, EXACT + 2),
            r"upper bound must be integers of magnitude at most 2\*\*53",
        ),
        (
            np.zeros(3, int),
            (-(2**60), 0),
            r"lower bound must be integers of magnitude at most 2\*\*53",
        ),
        (np.zeros(3, int), (0, np.uint64(2**63)), "upper bound must be integers of magnitude"),
        (np.zeros(3), (0, EXACT + 1), "upper bound is not exactly a float64"),
        (np.full(3, 0.5), (np.longdouble(1) / 10, 1), "lower bound is not exactly a float64"),
        (np.zeros(3, dtype=np.longdouble), (0, 1), "wider than float64"),
        (np.zeros((3, 2)), (0, 1), r"2 axes but 1 dims"),
    ],
    ids=[
        "int beyond 2^53",
        "int far below",
        "uint64 bound",
        "inexact int",
        "longdouble bound",
        "longdouble data",
        "dims",
    ],
)
def test_declarations_that_cannot_be_stored_exactly_are_refused(value, bounds, match):
    kwargs = {"dims": ("obs",)} if match.startswith("2 axes") else {}
    assert_refused(value, bounds, match=match, **kwargs)


def test_replacements_must_keep_the_stored_dtype():
    """pm.set_data casts integers to int32 before storing them. Within int32 bounds that is
    exact, so it works; beyond, it would wrap values within the bounds, so PyTensor refuses it
    by dtype, for every value alike, and an int64 set_value replaces the data exactly."""
    narrow = poisson_counts(np.array([0, 1, 2]), (0, 3))
    with narrow:
        pm.set_data({"counts": np.array([3, 0, 1], dtype=np.int64)})
    check_private_data(narrow)
    assert narrow["counts"].get_value().tolist() == [3, 0, 1]

    wide = poisson_counts(np.array([0, 1, 2]), (0, 2**32))
    for replacement in ([2**31, 0, 1], [1, 2, 3]):
        with wide, pytest.raises(TypeError, match="expected an ndarray with dtype=int64"):
            pm.set_data({"counts": np.array(replacement, dtype=np.int64)})
    assert wide["counts"].get_value().tolist() == [0, 1, 2]
    wide["counts"].set_value(np.array([2**31, 0, 2**32], dtype=np.int64))
    check_private_data(wide)
    assert wide["counts"].get_value().tolist() == [2**31, 0, 2**32]
    with pytest.raises(TypeError, match="dtype=int64"):
        wide["counts"].set_value(np.array([0.5, 1.0, 2.0]))


@pytest.mark.parametrize(
    ("bounds", "stored", "match"),
    [
        (
            (0, 2**32),
            np.array([0, 1, 2], dtype=np.int32),
            r"int32, which cannot hold every "
            r"integer within its declared bounds \[0, 4294967296\]",
        ),
        ((-1, 1), np.array([0, 1, 1], dtype=np.uint8), r"uint8, which cannot hold .*\[-1, 1\]"),
    ],
)
def test_a_stored_dtype_too_narrow_for_the_bounds_is_refused(bounds, stored, match):
    """A value stored behind the container's back (or by a cast) under the same dtype rules."""
    with pm.Model() as model:
        labels = PrivateData("labels", np.array([0, 1, 1]), bounds)
    labels.container.storage[0] = stored
    with pytest.raises(DataBoundsError, match=rf"`labels` now holds dtype {match}"):
        check_private_data(model)


def test_a_wider_than_float64_value_stored_later_is_refused():
    model = declared(np.full((3, 1), 0.5))
    model["secret"].container.storage[0] = np.full((3, 1), 0.5, dtype=np.longdouble)
    with pytest.raises(DataBoundsError, match="`secret` now holds dtype float128, wider than"):
        check_private_data(model)


# -- masked arrays ----------------------------------------------------------------------------


@pytest.mark.parametrize("hidden", [0.5, 0.0, 7.0, -3.0, np.nan], ids=str)
@pytest.mark.parametrize("mode", ["raise", "clip"])
@pytest.mark.parametrize("integer", [False, True], ids=["float", "int"])
def test_masked_entries_are_refused_whatever_lies_under_the_mask(hidden, mode, integer):
    """np.asarray drops the mask and exposes the value under it; a masked entry is a
    missing value, refused like NaN, the same way for any value under the mask."""
    if integer and np.isnan(hidden):
        hidden = 2**40
    data = np.array([[0.5, 0.5], [0.5, hidden], [0.5, 0.5]])
    if integer:
        data = np.array([[0, 1], [1, int(hidden)], [0, 0]])
    values = np.ma.masked_array(data, mask=[[False, False], [False, True], [False, False]])
    message = assert_refused(
        values,
        (0, 1),
        match=r"row 1, column 1 is missing or not a finite number \(masked, NaN or infinite\); "
        "remove or impute such records",
        forbidden=(str(hidden), repr(hidden)),
        out_of_bounds=mode,
    )
    assert "outside" not in message


def test_a_masked_array_with_nothing_masked_is_plain_data():
    with pm.Model() as model:
        labels = PrivateData("labels", np.ma.masked_array([0, 1, 1], mask=False), (0, 1))
        scores = PrivateData("scores", np.ma.masked_array([0.25, 1.0, 0.5]), (0, 1))
    assert private_data(model)["labels"].integer
    assert type(labels.get_value()) is np.ndarray
    assert labels.get_value().tolist() == [0, 1, 1]
    assert scores.get_value().tolist() == [0.25, 1.0, 0.5]


@pytest.mark.parametrize("mode", ["raise", "clip"])
@pytest.mark.parametrize("integer", [False, True], ids=["float", "int"])
def test_masked_replacements_are_refused_in_both_modes(mode, integer):
    """pm.set_data keeps a masked array; the container keeps its mask (no dtype cast), and the
    check refuses it whatever lies under the mask."""
    if integer:
        with pm.Model() as model:
            PrivateData("secret", np.array([0, 1, 1]), (0, 1), out_of_bounds=mode)
        replacement = np.ma.masked_array([1, 0, 1], mask=[False, True, False])
    else:
        model = declared(np.full((3, 1), 0.5), out_of_bounds=mode)
        replacement = np.ma.masked_array([[0.5], [0.25], [0.5]], mask=[[False], [True], [False]])
    with model:
        pm.set_data({"secret": replacement})
    with pytest.raises(DataBoundsError, match=r"`secret`: row 1, column 0 .*is missing"):
        check_private_data(model)


# -- property: errors depend on public quantities only -----------------------------------------

MAX = float(np.finfo(np.float64).max)
TINY = float(np.finfo(np.float64).smallest_subnormal)
INTEGER_BOUNDS = [
    (0, 1),
    (0, 2**32),
    (-(2**31), 2**31),
    (-(2**31) - 1, INT32_MAX),
    (0, EXACT - 1),
    (-EXACT, EXACT),
]
INTEGER_EXTREMES = [0, 1, -1, INT32_MAX, 2**31, -(2**31), -(2**31) - 1, 2**32, EXACT - 1, EXACT]
FLOAT_BOUNDS = [(0.0, 1.0), (-1.0, 1.0), (-MAX, MAX), (0.0, TINY), (-1e-300, 1e-300), (-1e6, 1e6)]
FLOAT_EXTREMES = [0.0, -0.0, TINY, -TINY, 2.2250738585072014e-308, 1e-300, 1.0, -1.0, MAX, -MAX]


def declare_and_analyse(values, bounds, family: str):
    """What PrivateData and pmp.analyze do with these values: ``("ok", analysis, stored)`` or
    ``(error type, message, None)``."""
    try:
        with pm.Model() as model:
            data = PrivateData("y_obs", values, bounds)
            if family == "poisson":
                lam = TruncatedGamma("lam", 2, 1, lower=0.5, upper=4.0)
                pm.Poisson("y", lam, observed=data)
            else:
                mu = TruncatedNormal("mu", 0, 1, lower=-1, upper=1)
                pm.Normal("y", mu, 1.0, observed=data)
        analysis = analyze(model)
    except Exception as error:  # every error type counts: none may depend on the values
        return type(error), str(error), None
    return "ok", analysis.to_dict(), data.get_value()


@st.composite
def neighbours(draw, bounds_list, extremes, values_in, masks: bool):
    """Two data sets with bounds from ``bounds_list`` that differ in one record, every value
    within the bounds (extremes often); optionally the same mask on both, with anything at
    all under it (different on each side)."""
    lower, upper = draw(st.sampled_from(bounds_list))
    inside = st.one_of(
        st.sampled_from([lower, upper, *(v for v in extremes if lower <= v <= upper)]),
        values_in(lower, upper),
    )
    n = draw(st.integers(1, 6))
    first = draw(st.lists(inside, min_size=n, max_size=n))
    second = list(first)
    row = draw(st.integers(0, n - 1))
    second[row] = draw(inside)
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n)) if masks else [False] * n
    hidden = st.sampled_from([*extremes, lower - 1, upper + 1] if masks else extremes)
    for values in (first, second):
        for i in range(n):
            if mask[i]:
                values[i] = draw(hidden)
    return (lower, upper), first, second, mask


def assert_same_outcome(bounds, first, second, mask, make, family):
    one = declare_and_analyse(make(first, mask), bounds, family)
    two = declare_and_analyse(make(second, mask), bounds, family)
    assert one[:2] == two[:2]
    if one[0] == "ok":
        for values, stored in ((first, one[2]), (second, two[2])):
            assert not any(mask)
            assert stored.tolist() == list(values)
            assert np.signbit(stored).tolist() == np.signbit(np.asarray(values)).tolist()
    elif any(mask):
        assert "is missing" in one[1]


PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY
@given(
    case=neighbours(INTEGER_BOUNDS, INTEGER_EXTREMES, st.integers, masks=False),
    masked=st.booleans(),
    family=st.sampled_from(["poisson", "normal"]),
)
def test_integer_neighbours_give_the_same_outcome(case, masked, family):
    """Neighbours anywhere within integer bounds up to ±2⁵³ (2³¹, 2⁵³ − 1 and the bounds
    themselves included) are both stored exactly and analysed identically, or both refused
    with the same error."""
    bounds, first, second, mask = case

    def make(values, mask):
        array = np.array(values, dtype=np.int64)
        return np.ma.masked_array(array, mask=mask) if masked else array

    assert_same_outcome(bounds, first, second, mask, make, family)


@pytest.mark.slow
@PROPERTY
@given(
    case=neighbours(
        FLOAT_BOUNDS,
        FLOAT_EXTREMES,
        lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_subnormal=True),
        masks=False,
    ),
    family=st.sampled_from(["normal", "poisson"]),
)
def test_float_neighbours_give_the_same_outcome(case, family):
    """Neighbours anywhere within float bounds (subnormals, ±0, ±max float) are stored bit
    for bit and analysed identically, or both refused with the same error. Float data that
    a family of integers observes within integer bounds has the integers within them as its
    domain (rounded neighbours are neighbours in it); a value between integers is refused as
    a value outside the bounds is (test_analysis: not integers are refused by row)."""
    bounds, first, second, mask = case
    if family == "poisson" and all(float(bound).is_integer() for bound in bounds):
        first, second = np.round(first).tolist(), np.round(second).tolist()
    assert_same_outcome(bounds, first, second, mask, lambda v, m: np.array(v), family)


@PROPERTY
@given(
    case=neighbours(
        [(0.0, 1.0), (-MAX, MAX)],
        [*FLOAT_EXTREMES, np.nan, np.inf],
        lambda lo, hi: st.floats(lo, hi, allow_nan=False),
        masks=True,
    ),
    mode=st.sampled_from(["raise", "clip"]),
)
def test_masked_neighbours_give_the_same_outcome(case, mode):
    """With the same mask, neighbours that differ in one record and in anything under the
    mask (NaN, infinities, values outside the bounds) get the same outcome."""
    bounds, first, second, mask = case

    def outcome(values):
        try:
            with pm.Model():
                data = PrivateData(
                    "y_obs", np.ma.masked_array(values, mask=mask), bounds, out_of_bounds=mode
                )
        except DataBoundsError as error:
            return str(error)
        return data.get_value().tolist()

    one, two = outcome(first), outcome(second)
    if any(mask):
        assert one == two
        assert "is missing" in one
    else:
        assert one == first and two == second
