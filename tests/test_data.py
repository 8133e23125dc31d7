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

from pymc_private.data import (
    PrivateData,
    check_private_data,
    private_data,
    private_data_domain,
    private_record_count,
)
from pymc_private.errors import DataBoundsError, UnsupportedModelError

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
            match=rf"row {row}, column {column} is not a finite number",
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
    with pytest.raises(DataBoundsError, match=rf"`secret`: {match} .*is not a finite number"):
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
