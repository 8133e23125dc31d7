"""Python code beside the graphs: what a function can reach by name, and the code a route is
handed besides the model.

PyMC runs Python functions a distribution carries outside any graph (a `pm.CustomDist`'s
``random``, an ``as_op``), and `pmp.sample` runs step methods, their proposals and the
functions they compiled. `python_references` reads everything a function can reach by name
(its closure, defaults, the globals its code names, the attributes of the user's objects, to
any depth) or refuses what cannot be read in full; `refuse_private_code` refuses the code a
route is handed when it refers to private data, and compiled functions that read private
data or update a variable. What such code reads by other means (``.get_value()`` on a
variable it finds at run time, ``globals()[name]``, memory addresses) is outside what can be
decided: the model author writes the model, and the package reads what it is given.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import inspect
import numbers
import os
import sys
import types
import weakref
from collections.abc import Iterator, Mapping

import numpy as np
import pymc as pm
from pytensor.compile.executor import Function
from pytensor.graph.basic import Variable
from pytensor.graph.op import Op
from pytensor.graph.traversal import ancestors
from pytensor.graph.type import Type
from pytensor.tensor.random.type import RandomType

from pymc_private.data.declaration import declaration, holds_private_values, private_data
from pymc_private.errors import UnsupportedModelError

__all__ = [
    "READ_AS_THEY_ARE",
    "defined_in",
    "own_code",
    "private_reference",
    "private_sources",
    "private_step_class",
    "python_references",
    "read_as_it_is",
    "refuse_private_code",
]


def own_code(code) -> bool:
    """Whether a class or function is defined in PyMC, PyTensor or this package
    (`defined_in`)."""
    return defined_in(code, ("pymc", "pytensor", "pymc_private"))


# Py_TPFLAGS_HEAPTYPE: set on every class defined in Python (whose attributes can be set).
_HEAP_TYPE = 1 << 9


def defined_in(code, packages: tuple[str, ...]) -> bool:
    """Whether a class or function is defined in one of ``packages`` (top-level names), never
    by its ``__module__`` alone, which any class or function can set on itself: a class is
    the one its module holds at its qualified name (identity), a Python function was compiled
    from a file of those packages; a type or function defined in C by its module."""
    module = getattr(code, "__module__", None) or ""
    if module.split(".")[0] not in packages:
        return False
    if isinstance(code, types.FunctionType):
        return _package_file(code.__code__.co_filename, packages)
    if isinstance(code, type):
        if not code.__flags__ & _HEAP_TYPE:
            return True  # a type defined in C (an iterator's): its module cannot be set
        found = sys.modules.get(module)
        for part in code.__qualname__.split("."):
            found = getattr(found, part, None)
        return found is code
    return True


@functools.cache
def _package_roots(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The directories (or files) the ``packages`` are installed in."""
    roots = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        if spec.submodule_search_locations:
            roots += [
                os.path.join(os.path.realpath(p), "") for p in spec.submodule_search_locations
            ]
        elif spec.origin:
            roots.append(os.path.realpath(spec.origin))
    return tuple(roots)


def _package_file(filename: str, packages: tuple[str, ...]) -> bool:
    return os.path.realpath(filename).startswith(_package_roots(packages))


def refuse_private_code(model: pm.Model, objects, what: str) -> None:
    """Refuse Python code handed to a route besides the model (a step method, its proposal)
    that refers to private data (`python_references`), and compiled functions it holds that
    read private data or update a variable (`_refuse_compiled`): of an object of PyMC's or this
    package's class, its attributes, entered to any depth (a `pm.Metropolis`'s proposal, its
    scale, its compiled log-density); of anything else, the whole of it.

    Raises
    ------
    UnsupportedModelError
        Naming ``what``, the private variable it refers to and what to change; or what it
        refers to that cannot be read in full.
    """
    sources = private_sources(model)
    for obj in objects:
        own = _private_step(obj)  # its code is checked by its construction
        for item in _held_code(obj):
            if own and isinstance(item, Function | np.ndarray):
                continue  # by its construction (the records it reads, its compile_kwargs)
            if isinstance(item, Function):
                _refuse_compiled(item, sources, what)
                continue
            reference = private_reference(item, sources)
            if reference is not None:
                raise UnsupportedModelError(
                    f"{what} refers to {reference}: it runs in Python beside the sampler, "
                    "where nothing bounds what it takes from the data. Give it only public "
                    "values."
                )


# The package's private step classes, by identity (`private_step_class`): a step of one of
# them charges its ledger for whatever it draws, and its code is checked by its construction.
_PRIVATE_STEPS: set[type] = set()


def private_step_class(cls: type) -> type:
    """Register ``cls`` as one of the package's private step classes (a class decorator)."""
    _PRIVATE_STEPS.add(cls)
    return cls


def _private_step(obj) -> bool:
    """Whether ``obj``'s class is one of the package's private step classes itself (not a
    subclass, not a class carrying an attribute anyone can set)."""
    return type(obj) in _PRIVATE_STEPS


def _held_code(obj) -> Iterator[object]:
    """The user's code and the compiled functions an object holds: the attributes (and the
    items of containers) of objects of PyMC's, PyTensor's or this package's classes, to any
    depth; anything else whole, for `python_references`."""
    stack, seen = [obj], set()
    while stack:
        value = stack.pop()
        if id(value) in seen or value is None or read_as_it_is(value):
            continue
        seen.add(id(value))
        if len(seen) > _MOST_REFERENCES:
            raise _unreadable(obj, f"more than {_MOST_REFERENCES} values")
        if isinstance(value, Function):
            yield value
        elif isinstance(value, Variable | pm.Model):
            continue  # graphs and models are the model's, read by the route's own checks
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, np.ndarray) and value.dtype != object:
            yield value
        elif own_code(type(value)):  # its attributes, not its class's code
            stack.extend(_attributes(value))
        else:  # read whole, a library's object too (a bound method, a partial holds code)
            yield value


def _attributes(value) -> list[object]:
    """The values of an object's ``__dict__`` and ``__slots__``."""
    slots = [
        getattr(value, name)
        for cls in type(value).__mro__
        for name in getattr(cls, "__slots__", ())
        if isinstance(name, str) and hasattr(value, name)
    ]
    return [*getattr(value, "__dict__", {}).values(), *slots]


def _refuse_compiled(function: Function, sources: Mapping[Variable, str], what: str) -> None:
    """Refuse a compiled function that reads private data or updates a variable other than a
    random generator (``compile_kwargs={"updates": ...}`` wrote the records into a public
    pm.Data a Deterministic released)."""
    for given in function.maker.inputs:
        variable = getattr(given, "variable", None)
        if variable is None:
            continue
        if variable in sources or declaration(variable) is not None:
            raise UnsupportedModelError(
                f"{what} compiles a function that reads {sources.get(variable, variable.name)}: "
                "only the private steps may read private data."
            )
        if given.update is not None and not isinstance(variable.type, RandomType):
            raise UnsupportedModelError(
                f"{what} compiles a function that updates `{variable.name or variable}` as it "
                "runs (compile_kwargs={'updates': ...}): build it without updates."
            )


def python_references(function: object) -> Iterator[object]:
    """The values a Python function (or an operation of the user's) can reach by name, read
    in full or refused: its closure, defaults and the globals its code names (nested
    functions' code included); a bound method's object (built-in methods' too), a
    `functools.partial`'s arguments, a weak reference's referent; the items of containers
    (lists, tuples, sets, dicts, deques, object arrays); the attributes of the user's objects
    and the functions of the user's classes; to any depth. Numbers, strings, numeric arrays,
    graphs (`Variable`, read by their ancestors), models (read by their data), modules, and
    the functions, classes and objects of the libraries listed in `READ_AS_THEY_ARE` are
    read as they are.

    Raises
    ------
    UnsupportedModelError
        It reaches an object that cannot be read in full (an iterator, a table, a variable's
        storage container, an object of another library, a step holding private data ...),
        more than `_MOST_REFERENCES` values, or nests deeper than `_DEEPEST_REFERENCE`: whether
        it reads private data cannot be decided, so it is refused.
    """
    seen: set[int] = set()
    stack: list[tuple[object, int]] = [(function, 0)]
    while stack:
        value, level = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        referred = _referred(value, function)
        if referred and (level >= _DEEPEST_REFERENCE or len(seen) > _MOST_REFERENCES):
            raise _unreadable(
                function,
                f"more than can be read (beyond {_DEEPEST_REFERENCE} levels or "
                f"{_MOST_REFERENCES} values)",
            )
        stack.extend((item, level + 1) for item in referred)


_DEEPEST_REFERENCE = 12
_MOST_REFERENCES = 20_000
# Functions and classes of these packages are their code, not the user's: not entered.
_LIBRARIES = (
    "builtins",
    "numpy",
    "scipy",
    "pandas",
    "xarray",
    "arviz",
    "pytensor",
    "pymc",
    "pymc_private",
    "collections",
    "functools",
    "fractions",
    "decimal",
    "math",
    "operator",
    "itertools",
)


# Objects that hold no reference a function could read data through: read as they are.
READ_AS_THEY_ARE = (
    type(None),
    numbers.Number,
    str,
    bytes,
    np.generic,
    np.dtype,
    np.ufunc,
    np.random.Generator,
    np.random.BitGenerator,
    np.random.SeedSequence,
    types.ModuleType,
    types.CodeType,
    slice,
    range,
    type(Ellipsis),
    # A class's descriptors of instance storage: the values are read on the instance.
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    Op,
    Type,
)


def read_as_it_is(value) -> bool:
    """Whether ``value`` is read as it is (`READ_AS_THEY_ARE`): of one of those classes, the
    class itself a library's (`defined_in`; a user's subclass of ``str`` or ``numbers.Number``
    carries methods of its own), and a ufunc only one numpy or SciPy holds at its name
    (``np.frompyfunc`` wraps any Python function as a ufunc)."""
    if not isinstance(value, READ_AS_THEY_ARE) or not _in_libraries(type(value)):
        return False
    if isinstance(value, np.ufunc):
        return any(
            getattr(sys.modules.get(name), value.__name__, None) is value
            for name in ("numpy", "scipy.special")
        )
    return True


def _in_libraries(code) -> bool:
    return defined_in(code, _LIBRARIES)


def _unreadable(function: object, what: str) -> UnsupportedModelError:
    name = getattr(function, "__name__", None) or type(function).__name__
    return UnsupportedModelError(
        f"The Python function {name!r} refers to {what}, which cannot be read in full, so "
        "whether it reads private data cannot be decided: pass what it needs as its "
        "arguments (numbers, arrays of public values, or the distribution's parameters)."
    )


def _referred(value: object, function: object) -> list[object]:
    """What `python_references` enters from ``value``, one level down."""
    if isinstance(value, Variable | pm.Model | np.ndarray) and not (
        isinstance(value, np.ndarray) and value.dtype == object
    ):
        return []  # read by `private_reference`
    if isinstance(value, np.ndarray):
        return list(value.ravel())
    if isinstance(value, Op) and not own_code(type(value)):
        return [*vars(value).values(), type(value)]  # an operation of the user's
    if read_as_it_is(value) or _private_step(value):
        return []  # (a private step charges its ledger for whatever it draws, wherever it runs)
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    if isinstance(value, types.MethodType):
        return [value.__func__, value.__self__]
    if isinstance(value, types.BuiltinFunctionType | types.MethodWrapperType):
        owner = getattr(value, "__self__", None)
        return [] if owner is None or isinstance(owner, types.ModuleType) else [owner]
    if isinstance(value, types.FunctionType):
        if _in_libraries(value):
            return []
        closure = inspect.getclosurevars(value)
        names = set()
        codes = [value.__code__]
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        named = [value.__globals__[name] for name in names if name in value.__globals__]
        return [
            *closure.nonlocals.values(),
            *named,
            *(value.__defaults__ or ()),
            *(value.__kwdefaults__ or {}).values(),
        ]
    if isinstance(value, weakref.ref):
        return [value()]
    if isinstance(value, list | tuple | set | frozenset | collections.deque):
        return list(value)
    if isinstance(value, dict | types.MappingProxyType):
        return [*value.keys(), *value.values()]
    if isinstance(value, types.SimpleNamespace):
        return list(vars(value).values())
    if isinstance(value, type):
        return [
            item for cls in value.__mro__ if not _in_libraries(cls) for item in vars(cls).values()
        ]
    if isinstance(value, staticmethod | classmethod | property):
        return [getattr(value, "__func__", None) or value.fget, value.fset, value.fdel]
    if _in_libraries(type(value)):
        raise _unreadable(function, f"{type(value).__module__}.{type(value).__qualname__}")
    return [*_attributes(value), type(value)]


def private_reference(function: object, sources: Mapping[Variable, str]) -> str | None:
    """How ``sources`` names the private variable a Python function refers to (a variable
    of ``sources``, a graph over one, or any `PrivateData`), a model holding private data or
    an array holding private values (`pymc_private.data.declaration.holds_private_values`) it
    refers to;
    None when it refers to none."""
    for value in python_references(function):
        if isinstance(value, pm.Model) and private_data(value):
            return f"the model `{value.name or 'model'}`, which holds PrivateData"
        if isinstance(value, np.ndarray) and value.dtype != object and holds_private_values(value):
            return "an array holding private values (the raw data given to PrivateData)"
        if isinstance(value, Variable):
            for variable in ancestors([value]):
                if variable in sources:
                    return sources[variable]
                if declaration(variable) is not None:
                    return f"PrivateData `{variable.name}`"
    return None


def private_sources(model: pm.Model) -> dict[Variable, str]:
    """Every variable whose value is private data, with how a message names it: each
    `PrivateData`, each observed variable and each observed value."""
    specs = private_data(model)
    sources = {v: f"PrivateData `{v.name}`" for v in model.data_vars if v.name in specs}
    for rv in model.observed_RVs:
        sources.setdefault(model.rvs_to_values[rv], f"the observed data of `{rv.name}`")
        sources[rv] = f"the observed variable `{rv.name}` (PyMC evaluates it at its observed data)"
    return sources
