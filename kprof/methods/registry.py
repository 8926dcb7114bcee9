"""Name -> Method registry, and the three ways a user's own method arrives.

Built-in methods register themselves with :func:`register` when their modules are imported (by
name, on first use). A user's method arrives as ``--method MODULE:NAME`` (a Method subclass, or a
plain function ``f(q, k, v) -> o``), as an entry point in the group ``kprof.methods`` of an
installed package, or as a module named in ``$KPROF_PLUGINS`` that calls :func:`register`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
from importlib.metadata import entry_points

from kprof.core.config_space import parse_overrides
from kprof.core.errors import KprofError, UsageError
from kprof.methods.base import Method
from kprof.methods.catalogue import ENTRY_POINT_GROUP
from kprof.methods.function import FunctionMethod
from kprof.methods.revision import load_method_class, load_user_object, resolve
from kprof.methods.user_code import importing_users_module

METHODS: dict[str, type[Method]] = {}
ORIGINS: dict[str, str] = {}  # method name -> where it came from (built-in, an entry point, KPROF_PLUGINS)
# modules that register the built-in methods; imported by name on first use, so the methods
# layer does not import the kernel families that build on it
BUILTIN = ("kprof.methods.sdpa", "kprof.methods.flashinfer_decode", "kprof.kernels.dense.method",
           "kprof.kernels.santa.method", "kprof.kernels.fathom.method")
_CAPTURE: list[list[type[Method]]] = []  # open captures (a revision's adapter being imported)
HOW_TO_ADD = ("your own: --method MODULE:NAME (a Method subclass or a function f(q, k, v) -> o), an entry point "
              f"in group {ENTRY_POINT_GROUP!r} of an installed package, or KPROF_PLUGINS=pkg.module")


def register(cls: type[Method]) -> type[Method]:
    if _CAPTURE:
        _CAPTURE[-1].append(cls)
        return cls
    if cls.name in METHODS and METHODS[cls.name] is not cls:
        raise ValueError(f"method {cls.name!r} registered twice")
    METHODS[cls.name] = cls
    return cls


@contextlib.contextmanager
def capturing():
    """Collect the classes that ``register`` sees instead of registering them (a method at an
    older revision carries the same name as today's)."""
    found: list[type[Method]] = []
    _CAPTURE.append(found)
    try:
        yield found
    finally:
        _CAPTURE.pop()


def _importing(module: str, origin: str) -> None:
    """Import ``module`` and record ``origin`` for the methods it registered."""
    before = set(METHODS)
    importlib.import_module(module)
    for name in set(METHODS) - before:
        ORIGINS[name] = origin


def load_builtins() -> None:
    for module in BUILTIN:
        _importing(module, "built-in")


def load_plugins() -> None:
    """Methods of installed packages (entry points) and of the modules named in ``$KPROF_PLUGINS``
    (comma-separated). Tuning workers are separate processes, so user methods reach them this way."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        origin = f"entry point {ep.name} = {ep.value}" + (f" ({ep.dist.name})" if ep.dist else "")
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin package: say which, in one line
            raise KprofError(f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r} cannot be loaded "
                             f"({type(exc).__name__}: {exc}): fix or uninstall that package") from None
        if inspect.isclass(obj) and issubclass(obj, Method):
            cls = obj
        elif callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj):
            cls = METHODS.get(ep.name) if ORIGINS.get(ep.name) == origin else FunctionMethod.for_function(obj, ep.name)
        elif inspect.ismodule(obj):  # a module that registers its methods when imported
            for name in [n for n, c in METHODS.items() if inspect.getmodule(c) is obj]:
                ORIGINS.setdefault(name, origin)
            continue
        else:
            raise KprofError(f"entry point {ep.name!r} ({ep.value}) is a {type(obj).__name__}: point it at a Method "
                             "subclass, a function f(q, k, v) -> o, or a module that registers methods")
        if cls.name in METHODS and METHODS[cls.name] is not cls:
            raise KprofError(f"entry point {ep.name!r} ({ep.value}) names method {cls.name!r}, which "
                             f"{origin_of(cls.name)} already registered: give it another name")
        if cls.name not in METHODS:
            METHODS[cls.name] = cls
            ORIGINS[cls.name] = origin
    for module in filter(None, (m.strip() for m in os.environ.get("KPROF_PLUGINS", "").split(","))):
        try:
            with importing_users_module(f"KPROF_PLUGINS {module}"):
                _importing(module, f"KPROF_PLUGINS {module}")
        except ImportError as exc:
            raise KprofError(f"KPROF_PLUGINS names {module!r}, which cannot be imported ({exc}): fix the name or "
                             "PYTHONPATH") from None


def registered() -> dict[str, type[Method]]:
    """Every method kprof knows by name: built-ins, entry points, then ``$KPROF_PLUGINS``."""
    load_builtins()
    load_plugins()
    return dict(METHODS)


def origin(name: str) -> str:
    if name in ORIGINS:
        return ORIGINS[name]
    built_in = name in METHODS and METHODS[name].__module__ in BUILTIN  # its module imported before the registry asked
    return "built-in" if built_in else "registered by an imported module"


def origin_of(name: str) -> str:
    """Who registered ``name``, as the subject of a sentence."""
    where = origin(name)
    return "kprof itself" if where == "built-in" else where


def _is_object_reference(spec: str) -> bool:
    """``pkg.mod:Name`` or ``mod:Name``: a module path before the first ':' and an identifier
    after it (``name:key=value`` is a registered method with options)."""
    head, _, rest = spec.partition(":")
    target = rest.partition(":")[0].partition("@")[0]
    return bool(target) and "=" not in target and target.isidentifier() and all(
        part.isidentifier() for part in head.split("."))


def at_revision(spec: str, rev: str) -> str:
    """``spec`` as it was at ``rev``: ``NAME@REV[:options]``, or ``MODULE:NAME@REV[:options]``
    for a user's object."""
    if _is_object_reference(spec) and spec.partition(":")[0] not in METHODS:
        module, _, rest = spec.partition(":")
        attr, colon, options = rest.partition(":")
        return f"{module}:{attr}@{rev}{colon}{options}"
    name, colon, options = spec.partition(":")
    return f"{name}@{rev}{colon}{options}"


def load_object(spec: str) -> Method:
    """The Method that ``MODULE:NAME`` names: a Method subclass, or a function ``f(q, k, v)``."""
    module_name, _, rest = spec.partition(":")
    attr, _, options = rest.partition(":")
    attr, at, rev = attr.partition("@")
    if at and not rev:
        raise UsageError(f"method spec {spec!r} names no revision after '@': write MODULE:NAME@REV, e.g. "
                         f"{module_name}:{attr}@HEAD~1")
    if at:  # the object as it was at a revision of the git repository that holds the module
        obj, sha = load_user_object(module_name, attr, rev)
    else:
        try:
            with importing_users_module(f"--method {spec}: module {module_name!r}"):
                module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UsageError(f"--method {spec}: module {module_name!r} cannot be imported ({exc}): install it or add "
                             "its folder to PYTHONPATH") from None
        obj, sha = getattr(module, attr, None), None
    if obj is None:
        raise UsageError(f"--method {spec}: module {module_name!r} has no {attr!r}: name a Method subclass or a "
                         "function f(q, k, v) -> o in it")
    label = f"{module_name}:{attr}" + (f"@{sha[:12]}" if sha else "")
    own = {k: v for k, v in _options(options, spec).items() if "." not in k}
    if inspect.isclass(obj) and issubclass(obj, Method):
        if sha:
            obj = type(obj.__name__, (obj,), {"name": f"{obj.name}@{sha[:12]}", "revision": sha,
                                              "__module__": obj.__module__})
        method = obj.from_options(own)
        ORIGINS.setdefault(obj.name, f"--method {label}")
        return method
    if callable(obj) and not inspect.isclass(obj):
        _check_signature(obj, spec)
        cls = FunctionMethod.for_function(obj, label)
        cls.revision = sha
        return cls.from_options(own)
    raise UsageError(f"--method {spec}: {attr!r} is a {type(obj).__name__}: name a Method subclass or a function "
                     "f(q, k, v) -> o")


def _check_signature(fn, spec: str) -> None:
    """A function is called as ``f(q, k, v)`` (a tunable one with its launch parameters too)."""
    inner = getattr(fn, "fn", fn)
    params = {p.name: 0 for p in fn.space.params} if hasattr(fn, "space") else {}
    try:
        signature = inspect.signature(inner)
    except (TypeError, ValueError):
        return  # a builtin or C function: its call will say
    try:
        signature.bind(0, 0, 0, **params)
    except TypeError as exc:
        raise UsageError(f"--method {spec}: kprof calls it as f(q, k, v){' with its launch parameters' * bool(params)}"
                         f", but its signature is {inner.__name__}{signature} ({exc}): make it take q, k, v") from None


def _options(rest: str, spec: str) -> dict[str, str]:
    options = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"bad method option {item!r} in {spec!r}: write NAME:key=value,key=value")
        options[key.strip()] = value.strip()
    return options


def parse_method_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"santa:p=16,r=4"`` -> ``("santa", {"p": "16", "r": "4"})``; ``"santa@HEAD~1:p=16"`` keeps
    ``"santa@HEAD~1"`` as the name."""
    name, _, rest = spec.partition(":")
    return name, _options(rest, spec)


def get_method(spec: str) -> Method:
    """A Method from ``name``, ``name:key=value,...``, ``name@REV`` or ``MODULE:NAME``.

    Keys with a dot (``attend.NUM_SPLITS=64``) are launch parameters; the others go to the
    method's own options (e.g. SANTA++'s P, R, S).
    """
    load_builtins()
    if _is_object_reference(spec) and spec.partition(":")[0] not in METHODS:
        method = load_object(spec)
        options = _options(spec.partition(":")[2].partition(":")[2], spec)
    else:
        name, options = parse_method_spec(spec)
        name, at, rev = name.partition("@")
        if name not in METHODS:
            load_plugins()
        try:
            cls = METHODS[name]
        except KeyError:
            raise UsageError(f"unknown method {name!r}: choose one of {', '.join(sorted(METHODS))}; "
                             f"{HOW_TO_ADD}") from None
        if at:
            if not rev:
                raise UsageError(f"method spec {spec!r} names no revision after '@': write NAME@REV, e.g. "
                                 f"{name}@HEAD~1")
            cls = _at_revision(name, cls, rev)
        method = cls.from_options({k: v for k, v in options.items() if "." not in k})
    launch = parse_overrides([f"{k}={v}" for k, v in options.items() if "." in k])
    merged = {name: dict(params) for name, params in method.launch_overrides.items()}  # from_options' own
    for name, params in launch.items():
        merged.setdefault(name, {}).update(params)
    method.launch_overrides = merged
    return method


_AT_REVISION: dict[tuple[str, str], type[Method]] = {}  # (name, commit) -> loaded class (a registry)


def _at_revision(name: str, cls: type[Method], rev: str) -> type[Method]:
    sha = resolve(rev)
    if (name, sha) not in _AT_REVISION:
        _AT_REVISION[(name, sha)] = load_method_class(name, cls, sha, capturing)
    return _AT_REVISION[(name, sha)]
