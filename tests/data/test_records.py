"""One pass over the records: numpy, pandas, polars, pyarrow and Dask inputs give the same
statistics, the same data-set ids and the same refusals, and nothing is computed from Dask
chunks that failed their checks."""

from __future__ import annotations

import copy as copy_module

import cloudpickle
import numpy as np
import pymc as pm
import pytensor
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymc.model.fgraph import clone_model

import pymc_private as pmp
from pymc_private.analysis.core import analyze
from pymc_private.data.declaration import PrivateData, exact_statistics, private_data
from pymc_private.data.records import record_digest, rows_per_chunk
from pymc_private.errors import DataBoundsError, UnsupportedModelError
from pymc_private.examples.demo import naive_bayes_model
from pymc_private.families import kinds as statistic_kinds
from pymc_private.families.statistics import StatisticSpec
from pymc_private.steps.metropolis import PrivateMetropolis

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

N, D = 600, 4
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, N)
    features = (rng.random((N, D)) < np.where(labels[:, None] == 1, 0.7, 0.3)).astype(np.int64)
    return labels, features


def containers(labels, features):
    """The same records in every container `PrivateData` accepts."""
    columns = {f"f{j}": features[:, j] for j in range(D)}
    return {
        "numpy": (labels, features),
        "pandas": (pd.Series(labels), pd.DataFrame(columns)),
        "polars": (pl.Series(labels), pl.DataFrame(columns)),
        "pyarrow": (pa.array(labels), pa.table(columns)),
        "dask array": (da.from_array(labels, chunks=97), da.from_array(features, chunks=(131, D))),
        "dask dataframe": (
            dd.from_pandas(pd.Series(labels), npartitions=5),
            dd.from_pandas(pd.DataFrame(columns), npartitions=5),
        ),
    }


def statistics(model: pm.Model) -> dict[str, np.ndarray]:
    return exact_statistics(model, analyze(model).statistics)


def refusal(build) -> str:
    with pytest.raises(DataBoundsError) as info:
        build()
    return str(info.value)


@pytest.mark.slow
def test_every_container_gives_the_same_statistics_ids_and_release(records):
    labels, features = records
    reference = naive_bayes_model(labels, features)
    expected = statistics(reference)
    ids = {name: spec.dataset for name, spec in private_data(reference).items()}
    released = pmp.privatised_statistics(pmp.privatize(reference, 1.0, secure=False, random_seed=3))
    for kind, (y, x) in containers(labels, features).items():
        model = naive_bayes_model(y, x)
        got = statistics(model)
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value, err_msg=kind)
        assert {n: s.dataset for n, s in private_data(model).items()} == ids, kind
        private = pmp.privatize(model, 1.0, secure=False, random_seed=3)
        for name, value in pmp.privatised_statistics(private).items():
            np.testing.assert_array_equal(value, released[name], err_msg=kind)
    # One data set, one ledger: the six privatisations above and the reference's composed.
    assert pmp.ledger_for(reference).epsilon() == pytest.approx(7.0)


def test_dask_data_is_never_brought_into_memory(records):
    labels, features = records
    model = naive_bayes_model(da.from_array(labels, chunks=97), da.from_array(features, 131))
    stored = model["x_obs"].get_value(borrow=True)
    assert stored.strides == (0, 0) and stored.shape == (N, D)
    # A sampler reading the placeholder by mistake fails at once instead of fitting it: the
    # placeholders are no valid Bernoulli values (below the declared bounds), and the label
    # placeholder, read as an index, stays inside the axis (PyTensor's Numba backend does
    # not check indices: a placeholder out of the axis crashed the process).
    assert np.isneginf(model.compile_logp()(model.initial_point()))
    with pm.Model() as single:
        x = PrivateData("x", da.from_array(features[:, 0], chunks=97), bounds=(0, 1))
        pm.Bernoulli("obs", pmp.TruncatedBeta("p", 1, 1, lower=0.1, upper=0.9), observed=x)
    assert not np.isfinite(single.compile_logp()(single.initial_point()))


@pytest.mark.parametrize("kind", ["numpy", "pandas", "polars", "pyarrow", "dask array"])
@pytest.mark.parametrize("problem", ["outside", "missing"])
def test_every_container_gives_the_same_refusal(records, kind, problem):
    labels, features = records
    features = features.astype(np.float64)
    features[417, 2] = 3.0 if problem == "outside" else np.nan
    features[530, 1] = 5.0
    expected = refusal(lambda: naive_bayes_model(labels, features))
    assert ("row 417, column 2" in expected) and ("3" not in expected.split("bounds")[0])
    y, x = containers(labels, features)[kind]
    assert refusal(lambda: naive_bayes_model(y, x)) == expected


def test_missing_entries_of_nullable_columns_are_refused_like_nan(records):
    _, features = records
    values = pd.array(features[:, 0], dtype="Int64")
    values[311] = pd.NA
    nullable = pd.Series(values)
    expected = "row 311, column 0 .* missing or not a finite number"
    for value in (nullable, pl.from_pandas(nullable), pa.array(values)):
        with pm.Model(), pytest.raises(DataBoundsError, match=expected):
            PrivateData("x", value, bounds=(0, 1))


def test_clipping_is_the_same_for_every_container(records):
    labels, features = records
    features = features * 3 - 1  # values -1 and 2, declared within [0, 1] and clipped
    expected = statistics(naive_bayes_model(labels, features, out_of_bounds="clip"))
    for kind, (y, x) in containers(labels, features).items():
        got = statistics(naive_bayes_model(y, x, out_of_bounds="clip"))
        for name, value in expected.items():
            np.testing.assert_array_equal(got[name], value, err_msg=kind)


@settings(SETTINGS, max_examples=12)
@given(
    n=st.integers(1, 300),
    categories=st.integers(2, 5),
    width=st.integers(1, 3),
    chunk=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
    bad=st.sampled_from([None, "nan", "above", "below"]),
)
def test_dask_matches_numpy_on_any_chunking(n, categories, width, chunk, seed, bad):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 3, n)
    values = rng.integers(0, categories, (n, width))
    if bad == "nan":
        values = values.astype(np.float64)
    if bad is not None:
        row, column = rng.integers(0, n), rng.integers(0, width)
        values[row, column] = {"nan": np.nan, "above": categories, "below": -1}[bad]

    def build(g, x):
        with pm.Model() as model:
            index = PrivateData("g", g, bounds=(0, 2))
            data = PrivateData("x", x, bounds=(0, categories - 1))
            p = pmp.TruncatedDirichlet("p", np.ones((3, width, categories)), min_prob=0.01)
            pm.Categorical("obs", p[index], observed=data)
        return model

    lazy = (da.from_array(group, chunks=chunk), da.from_array(values, chunks=(chunk, width)))
    if bad is not None:
        assert refusal(lambda: build(*lazy)) == refusal(lambda: build(group, values))
        return
    eager, dask_model = build(group, values), build(*lazy)
    expected = statistics(eager)
    got = statistics(dask_model)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])
    assert private_data(dask_model)["x"].dataset == private_data(eager)["x"].dataset


@SETTINGS
@given(
    n=st.integers(1, 200),
    categories=st.integers(2, 4),
    grouped=st.booleans(),
    derived=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_counts_equal_a_direct_count(n, categories, grouped, derived, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, categories, (n, 3))
    group = rng.integers(0, 2, n) if grouped else None
    first = 1 if derived else 0
    spec = StatisticSpec(
        name="counts",
        kind="counts",
        data=("x",),
        shape=((2,) if grouped else ()) + (3, categories - first),
        unit=1.0,
        sensitivity=1,
        record_lower=np.zeros(1),
        record_upper=np.ones(1),
        group_by="g" if grouped else None,
        n_groups=2 if grouped else None,
        n_categories=categories,
        derived_first=derived,
    )
    # float32 blocks of 17 records instead of 2²⁴: the blocks' counts must add up exactly
    statistic_kinds._FLOAT32_EXACT_ROWS = 17 if seed % 2 else 2**24
    try:
        got = spec.compute({"x": values, "g": group})
    finally:
        statistic_kinds._FLOAT32_EXACT_ROWS = 2**24
    onehot = (values[..., None] == np.arange(first, categories)).astype(np.int64)
    if grouped:
        expected = np.stack([onehot[group == g].sum(axis=0) for g in range(2)])
    else:
        expected = onehot.sum(axis=0)
    np.testing.assert_array_equal(got, expected)


def test_digest_ignores_order_chunking_and_dtype_not_values(records):
    _, features = records
    whole = record_digest(features)
    parts = record_digest(features[:250]) + record_digest(features[250:])
    np.testing.assert_array_equal(parts, whole)
    np.testing.assert_array_equal(record_digest(features[::-1]), whole)
    np.testing.assert_array_equal(record_digest(features.astype(np.float32)), whole)
    changed = features.copy()
    changed[5, 0] = 1 - changed[5, 0]
    assert not np.array_equal(record_digest(changed), whole)
    swapped = features[:, ::-1]  # the same values in other columns: other records
    assert not np.array_equal(record_digest(swapped), whole)
    assert rows_per_chunk(10) * 10 <= 2**20


def _parquet_model(tmp_path, labels, features, parts: int = 4):
    frame = pd.DataFrame({"y": labels, **{f"f{j}": features[:, j] for j in range(D)}})
    size = len(frame) // parts
    for i in range(parts):
        frame.iloc[i * size : (i + 1) * size].to_parquet(tmp_path / f"part-{i}.parquet")
    table = dd.read_parquet(str(tmp_path / "part-*.parquet"))
    return naive_bayes_model(table["y"], table[[f"f{j}" for j in range(D)]])


def test_parquet_files_changed_after_declaration(records, tmp_path, monkeypatch):
    """The pass checks every chunk before any statistic is computed from it: a file that
    now holds a value out of bounds is refused (the same message as at declaration), no
    statistic is computed from its chunk, and nothing is released or recorded."""
    labels, features = records
    model = _parquet_model(tmp_path, labels, features)
    seen = []
    compute = StatisticSpec.compute

    def spy(self, arrays, rows=None):
        seen.append(max(int(np.max(a)) for a in arrays.values()))
        return compute(self, arrays, rows=rows)

    monkeypatch.setattr(StatisticSpec, "compute", spy)
    part = pd.read_parquet(tmp_path / "part-2.parquet")
    part.loc[part.index[3], "f1"] = 7
    part.to_parquet(tmp_path / "part-2.parquet")
    row = 2 * (N // 4) + 3
    with pytest.raises(DataBoundsError, match=f"row {row}, column 1 lies outside"):
        pmp.privatize(model, 1.0)
    assert seen and max(seen) <= 1
    assert pmp.ledger_for(model).epsilon() == 0.0

    part.loc[part.index[3], "f1"] = 1 - features[row, 1]
    part.to_parquet(tmp_path / "part-2.parquet")
    with pytest.raises(DataBoundsError, match="no longer holds the records it was checked with"):
        pmp.privatize(model, 1.0)
    assert pmp.ledger_for(model).epsilon() == 0.0


def test_dask_data_serves_statistics_routes_and_refuses_record_routes(records):
    labels, features = records
    model = naive_bayes_model(da.from_array(labels, chunks=97), da.from_array(features, 131))
    draws = pmp.sample_posterior(model, 2, secure=False, random_seed=1)
    assert draws.posterior["theta"].shape == (1, 2, 2, D)
    with model, pytest.raises(UnsupportedModelError, match=r"Dask collection.*PrivateMetropolis"):
        PrivateMetropolis(temperature=10.0)


@pytest.mark.slow
def test_local_distributed_cluster(records):
    distributed = pytest.importorskip("distributed")
    labels, features = records
    expected = statistics(naive_bayes_model(labels, features))
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        model = naive_bayes_model(da.from_array(labels, 97), da.from_array(features, (131, D)))
        got = statistics(model)
        private = pmp.privatize(model, 1.0)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)
    assert set(pmp.privatised_statistics(private)) == set(expected)


# Found by the attacker review of the records pass: each was a counterexample script.


@pytest.mark.slow
def test_values_changed_in_place_after_their_check_are_refused_at_release(records):
    """A checked value is not checked again by check_private_data while it is the same
    read-only object, but it can still change (a writable base, a PyTensor update in
    place): every release checks and identifies the records as it reads them."""
    labels, features = records
    model = naive_bayes_model(labels, features)
    base = features.astype(np.int32)
    model["x_obs"].set_value(base[:], borrow=True)
    pmp.data.check_private_data(model)
    base[:] = 1000  # out of bounds, behind the read-only view's back
    with pytest.raises(DataBoundsError, match="row 0, column 0 lies outside"):
        pmp.privatize(model, 1.0)
    base[:] = features
    base[7, 0] = 1 - base[7, 0]  # in bounds, but a neighbouring data set: its own ledger
    with pytest.raises(DataBoundsError, match="no longer holds the records it was checked"):
        pmp.privatize(model, 1.0)
    with model, pytest.raises(DataBoundsError, match="no longer holds the records"):
        PrivateMetropolis(temperature=10.0)
    assert pmp.ledger_for(model).epsilon() == 0.0
    pmp.privatize(naive_bayes_model(labels, features), 1.0)  # the data as declared: fine


def test_clipped_data_changed_in_place_is_refused_by_routes_that_read_records(records):
    """Clip mode stores clipped values; a value that needs clipping at release changed in
    place since (its clipped digest may not show it), and a route reading records raw would
    see it: refused."""
    labels, features = records
    model = naive_bayes_model(labels, features, out_of_bounds="clip")
    base = features.astype(np.int32)
    model["x_obs"].set_value(base[:], borrow=True)
    pmp.data.check_private_data(model)
    base[base == 1] = 1_000_000  # clips back to 1: the same clipped records
    for release in (lambda: pmp.privatize(model, 1.0), lambda: PrivateMetropolis(temperature=10)):
        with model, pytest.raises(DataBoundsError, match="no longer holds the records"):
            release()
    assert pmp.ledger_for(model).epsilon() == 0.0


def test_a_pytensor_update_in_place_is_refused_at_release(records):
    labels, features = records
    model = naive_bayes_model(labels, features)
    x = model["x_obs"]
    pytensor.function([], [], updates={x: x * 1000 + 7})()
    with pytest.raises(DataBoundsError, match="lies outside the declared bounds"):
        pmp.privatize(model, 1.0)


def test_empty_chunks_masks_and_nullable_columns_behave_as_in_numpy(records):
    labels, features = records
    expected = statistics(naive_bayes_model(labels, features))
    y = da.concatenate(
        [da.from_array(labels[:300]), da.zeros(0, dtype=labels.dtype), da.from_array(labels[300:])]
    )
    filtered = dd.from_pandas(pd.DataFrame(features), npartitions=4)
    filtered = filtered.loc[:449].repartition(npartitions=6)
    rest = dd.from_pandas(pd.DataFrame(features[450:]), npartitions=2)
    got = statistics(naive_bayes_model(y, dd.concat([filtered, rest])))
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)
    masked = np.ma.masked_array(features, np.zeros_like(features, dtype=bool))
    masked[44, 1] = np.ma.masked
    message = refusal(lambda: naive_bayes_model(labels, masked))
    assert refusal(lambda: naive_bayes_model(labels, da.from_array(masked, 100))) == message
    nullable = pd.DataFrame(features).astype("Int64")
    same = statistics(naive_bayes_model(labels, dd.from_pandas(nullable, npartitions=3)))
    np.testing.assert_array_equal(same["counts(x_obs | y_obs)"], expected["counts(x_obs | y_obs)"])
    nullable.iloc[44, 1] = pd.NA
    message = refusal(lambda: naive_bayes_model(labels, nullable))
    assert "row 44, column 1 is missing" in message
    lazy = dd.from_pandas(nullable, npartitions=3)
    assert refusal(lambda: naive_bayes_model(labels, lazy)) == message


@pytest.mark.parametrize(
    "value",
    [
        lambda x: pd.Index(x[:, 0]),
        lambda x: pd.array(x[:, 0], dtype="Int64"),
        lambda x: pd.DataFrame(x).astype("category"),
        lambda x: pl.DataFrame(x).lazy(),
        lambda x: pd.DataFrame(index=range(len(x))),
    ],
    ids=["index", "extension array", "categorical", "lazy frame", "no columns"],
)
def test_other_frame_inputs_are_read_or_refused_with_a_typed_error(records, value):
    _, features = records
    with pm.Model():
        try:
            PrivateData("x", value(features), bounds=(0, 1))
        except DataBoundsError as error:
            assert "`x`" in str(error)


def test_a_column_that_is_not_numbers_is_refused_by_name_in_every_frame(records):
    labels, features = records
    frame = pd.DataFrame({"f0": features[:, 0], "name": np.where(labels == 1, "a", "b")})
    expected = "column 'name' has dtype .*encode labels and strings as integers"
    lazy = dd.from_pandas(frame, npartitions=3)
    for value in (frame, pl.from_pandas(frame), pa.Table.from_pandas(frame), lazy):
        with pm.Model(), pytest.raises(DataBoundsError, match=expected):
            PrivateData("x", value, bounds=(0, 1))


def test_dask_backed_models_copy_and_pickle_without_loading_the_records(records):
    labels, features = records
    model = naive_bayes_model(da.from_array(labels, 97), da.from_array(features, (131, D)))
    ids = set(pmp.data.datasets_of(model))
    for copy in (
        clone_model(model),
        pm.do(model, {}),
        copy_module.deepcopy(model),
        cloudpickle.loads(cloudpickle.dumps(model)),
    ):
        stored = copy["x_obs"].get_value(borrow=True)
        assert stored.strides == (0, 0)
        assert set(pmp.data.datasets_of(copy)) == ids
        np.testing.assert_array_equal(
            statistics(copy)["counts(y_obs)"], statistics(model)["counts(y_obs)"]
        )
    in_memory = naive_bayes_model(labels, features)
    again = cloudpickle.loads(cloudpickle.dumps(in_memory))
    assert set(pmp.data.datasets_of(again)) == set(pmp.data.datasets_of(in_memory)) == ids


def test_coverage_studies_read_the_records_not_the_placeholder():
    from pymc_private.examples.calibration import coverage_study

    def build(data):
        with pm.Model() as model:
            x = PrivateData("x_obs", data, bounds=(0, 1))
            pm.Bernoulli("x", pmp.TruncatedBeta("theta", 1, 1, lower=0.01, upper=0.99), observed=x)
        return model

    truth = np.r_[np.ones(60, int), np.zeros(140, int)]
    grid = np.linspace(0.01, 0.99, 99)
    results = [
        coverage_study(
            build,
            lambda rng, data=data: (0.3, data),
            "theta",
            1.0,
            repetitions=1,
            grid=grid,
            seed=3,
        )
        for data in (truth, da.from_array(truth, chunks=64))
    ]
    assert results[0].width == pytest.approx(results[1].width)
