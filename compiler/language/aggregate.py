"""`tl.core._aggregate`: a class whose instances are one value inside kernels, made of named fields (tensors,
constexprs, other aggregates, descriptors, block pointers), with methods that are jit functions (inlined with the
instance as `self`) or plain Python run while compiling (Triton's builtin-style methods, `_semantic=None`).

    @tl.core._aggregate
    class Pair:
        first: tl.tensor
        second: tl.tensor

        def __init__(self, first, second):     # plain Python, run while compiling
            self.first = first
            self.second = second

        @jit
        def total(self):                        # a jit method: self.total() inside a kernel
            return self.first + self.second

Only the annotated fields can be set, each must be set by the constructor, and a field annotated with a class
(`tl.tensor`, `tl.constexpr`, another aggregate) must hold one (a constexpr field wraps a plain value). Inside
a kernel an aggregate is immutable, as in Triton: `p.first = x` does not compile; make a new one. An aggregate
assigned in a runtime if or carried by a loop travels as its runtime parts (tensors), its other fields (constexprs)
being the same on every path.
"""
from __future__ import annotations

import inspect

from .values import constexpr

_NOT_PARTS = object()


def is_composite(v) -> bool:
    """A compile-time object over runtime parts: a block pointer, a tensor descriptor or an aggregate instance,
    each with `parts()`, `with_parts(parts)` and `same_structure(other)` (the frontend carries them through runtime
    ifs and loops part by part)."""
    return callable(getattr(v, "parts", None)) and callable(getattr(v, "with_parts", None)) and \
        callable(getattr(v, "same_structure", None)) and not isinstance(v, type)


def _sem():
    from ..frontend import semantic  # on first use, as the builtins do (compiler/language/core.py _sem)

    return semantic


def _tensor_type():
    return _sem().tensor


def _leaves(v) -> list:
    """The runtime parts of one field's value: a tensor is one, a composite gives its parts, a tuple its elements'
    parts; anything else (constexprs, dtypes) is structure."""
    if isinstance(v, _tensor_type()):
        return [v]
    if is_composite(v):
        return list(v.parts())
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return [p for e in v for p in _leaves(e)]
    return []


def _rebuild(v, parts):
    """`v` with its runtime parts taken, in order, from the iterator `parts`."""
    if isinstance(v, _tensor_type()):
        return next(parts)
    if is_composite(v):
        n = len(v.parts())
        return v.with_parts([next(parts) for _ in range(n)])
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_rebuild(e, parts) for e in v)
    return v


def _same(a, b) -> bool:
    if isinstance(a, _tensor_type()) or isinstance(b, _tensor_type()):
        return isinstance(a, _tensor_type()) and isinstance(b, _tensor_type()) and a.type == b.type
    if is_composite(a):
        return a.same_structure(b)
    if isinstance(a, tuple) and not hasattr(a, "_fields"):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values without a usable ==: the same object only
        return a is b


def _resolve(ann, cls):
    """An annotation as a class where it names one (a string annotation is looked up in the class's module)."""
    if isinstance(ann, str):
        import sys

        g = getattr(sys.modules.get(cls.__module__), "__dict__", {})
        try:
            ann = eval(ann, g)  # noqa: S307 - the user's own annotation, in the user's own module
        except Exception:  # noqa: BLE001 - not resolvable: no check
            return None
    if getattr(ann, "__module__", "").startswith("compiler.language") and getattr(ann, "__name__", "") == "tuple":
        return tuple  # tl.tuple(...) makes a plain tuple
    return ann if isinstance(ann, type) else None


def _aggregate(cls):
    """Make `cls` an aggregate type (see the module's docstring); Triton's `tl.core._aggregate`."""
    fields = dict(cls.__dict__.get("__annotations__", {}))
    init = cls.__init__  # object.__init__ for an aggregate without fields (a namespace of jit functions)
    if getattr(init, "__tilefarm_jit__", False):
        raise TypeError(f"{cls.__name__}.__init__ cannot be a jit function: it runs while compiling")
    try:
        init_params = inspect.signature(init).parameters
    except (TypeError, ValueError):
        init_params = {}
    kinds = {name: _resolve(ann, cls) for name, ann in fields.items()}

    class aggregate_value:
        __tilefarm_aggregate__ = True

        def __new__(this, *args, _semantic=None, _generator=None, **kwargs):
            inst = object.__new__(this)
            extra = {}
            if "_semantic" in init_params:
                extra["_semantic"] = _semantic
            if "_generator" in init_params:
                extra["_generator"] = _generator
            init(inst, *args, **extra, **kwargs)
            for name in fields:
                if name not in inst.__dict__:
                    raise AttributeError(f"constructor for {cls.__name__} did not initialize attribute '{name}'")
            return inst

        def __setattr__(self, name, value):
            if name not in fields:
                raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
            want = kinds[name]
            if want is _tensor_type() and isinstance(value, (bool, int, float, constexpr)) and \
                    isinstance(getattr(value, "value", value), (bool, int, float)):
                value = _sem().to_tensor(getattr(value, "value", value))  # `n = 11; Pair(x, n)`: an i32 scalar
            if want is constexpr and not isinstance(value, constexpr):
                if isinstance(value, _tensor_type()):
                    raise TypeError(f"{cls.__name__}.{name} is a tl.constexpr field, got a runtime tensor")
                value = constexpr(value)
            elif want is not None and not isinstance(value, want):
                raise TypeError(f"Expected {want.__name__} for attribute '{name}' of {cls.__name__}, got "
                                f"{type(value).__name__}")
            object.__setattr__(self, name, value)

        # the composite protocol (frontend: runtime ifs and loop-carried values)
        def parts(self):
            return [p for name in fields for p in _leaves(self.__dict__[name])]

        def with_parts(self, parts):
            it = iter(parts)
            new = object.__new__(type(self))
            for name in fields:
                object.__setattr__(new, name, _rebuild(self.__dict__[name], it))
            return new

        def same_structure(self, other):
            return type(other) is type(self) and all(_same(self.__dict__[n], other.__dict__[n]) for n in fields)

        def __repr__(self):
            inner = ", ".join(f"{n}={self.__dict__.get(n)!r}" for n in fields)
            return f"{cls.__name__}({inner})"

    methods = []
    for name, member in cls.__dict__.items():
        if name in ("__init__", "__annotations__", "__dict__", "__weakref__", "__module__", "__qualname__",
                    "__doc__"):
            continue
        if inspect.isfunction(member) or getattr(member, "__tilefarm_jit__", False) or \
                isinstance(member, (staticmethod, classmethod, property)):
            setattr(aggregate_value, name, member)
            methods.append(member)
            func = getattr(member, "__func__", member)
            if inspect.isfunction(func):  # plain Python: kernels call it while compiling, tensors and all
                func.__tilefarm_aggregate_fn__ = True
    aggregate_value.__tilefarm_fields__ = tuple(fields)
    aggregate_value.__tilefarm_methods__ = tuple([init] + methods)  # what the cache key reads (jit.py)
    aggregate_value.__name__ = cls.__name__
    aggregate_value.__qualname__ = cls.__qualname__
    aggregate_value.__module__ = cls.__module__
    aggregate_value.__doc__ = cls.__doc__
    return aggregate_value


class BoundJitMethod:
    """`obj.method` inside a kernel, where `method` is a jit function of an aggregate: calling it inlines the
    method with `obj` as its first argument."""

    __slots__ = ("fn", "obj")

    def __init__(self, fn, obj):
        self.fn, self.obj = fn, obj

    def __repr__(self):
        return f"<bound jit method {getattr(self.fn, '__name__', self.fn)} of {self.obj!r}>"
