"""``@openprogram.tool``: record every call of a function as a ``tool`` call.

The decorated function keeps its kind (sync, async, generator, async
generator), name, docstring and signature — minus ``_session``, which callers
may pass to choose the session explicitly and which never appears in
``inspect.signature`` or ``__annotations__``. Its ``.undo`` declares its
compensation, which makes it undoable; the undo feature provides it (:func:`declare_undo_with`).
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
import types
from collections.abc import AsyncGenerator, Callable, Generator
from contextvars import ContextVar
from typing import Any, TypeVar, overload

from .._capture import ATOMIC_TYPES, PRECAPTURED, bind_arguments, capture, capture_json, parameter_shape
from .._recording import (
    CALL_ID,
    SESSION,
    SessionHandle,
    call_var,
    end_call,
    failed_record,
    inflight,
    queue,
    reset_var,
    session_var,
)
from .._runtime import ids as _ids
from .._runtime import new_call_id
from .scope import resolve

__all__ = ["UndoDeclarer", "declare_undo_with", "injected_arguments", "records_itself", "tool"]

F = TypeVar("F", bound=Callable[..., Any])

#: Makes a tool's wrapper run the given body in place of the decorated function (for ``.undo``).
Rebind = Callable[[Callable[..., Any]], None]
#: Makes a tool's ``.undo`` from (function, name, parameter names, skip, shape, rebind).
UndoDeclarer = Callable[[Callable[..., Any], str, "tuple[str, ...]", int, str, Rebind], Callable[..., Any]]

# The undo feature sits above the calls and registers itself here when imported (``import openprogram`` does).
_undo_declarer: UndoDeclarer | None = None


def declare_undo_with(declarer: UndoDeclarer) -> None:
    """Give every tool decorated from now on a ``.undo`` made by ``declarer``."""
    global _undo_declarer
    _undo_declarer = declarer


_MAX_YIELDS = 100


@overload
def tool(func: F, /) -> F: ...
@overload
def tool(*, name: str | None = None) -> Callable[[F], F]: ...


def tool(func: F | None = None, /, *, name: str | None = None) -> F | Callable[[F], F]:
    """Record each call of the decorated function as a ``tool`` call in the current session.

    Use bare (``@tool``) or with a name (``@tool(name="search")``; the default
    is ``__name__``). Pass ``_session=handle`` to record into a given session;
    a function that declares a ``_session`` parameter receives the session in
    use. The caller's exceptions pass through unchanged.
    """
    if func is None:
        return functools.partial(_decorate, name=name)
    return _decorate(func, name=name)


def _decorate(func: F, name: str | None = None) -> F:
    # Above @staticmethod / @classmethod: wrap the function inside and keep the descriptor,
    # else a static method would be bound to the instance like a plain function.
    if isinstance(func, staticmethod):
        return staticmethod(_decorate(func.__func__, name))  # type: ignore[return-value]
    if isinstance(func, classmethod):
        return classmethod(_decorate(func.__func__, name))
    if not callable(func):
        raise TypeError(f"@openprogram.tool needs a function, not {type(func).__name__}")
    tool_name = name or getattr(func, "__name__", None) or type(func).__name__
    try:
        signature: inspect.Signature | None = inspect.signature(func)
    except (TypeError, ValueError):
        signature = None
    params = list(signature.parameters.values()) if signature is not None else []
    accepts_session = any(p.name == "_session" for p in params)
    names = tuple(
        p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "_session"
    )
    skip = 1 if names and names[0] in ("self", "cls") else 0
    names = names[skip:]

    # A callable object's kind is its __call__'s (inspect does not look there).
    kind = func if inspect.isroutine(func) or isinstance(func, (type, functools.partial)) else type(func).__call__
    wrapper: Callable[..., Any]
    if inspect.isasyncgenfunction(kind):
        shape = "async_generator"
        wrapper, rebind = _async_generator_wrapper(func, tool_name, names, skip, accepts_session)
    elif inspect.isgeneratorfunction(kind):
        shape = "generator"
        wrapper, rebind = _generator_wrapper(func, tool_name, names, skip, accepts_session)
    elif inspect.iscoroutinefunction(kind):
        shape = "coroutine"
        wrapper, rebind = _async_wrapper(func, tool_name, names, skip, accepts_session)
    else:
        shape = "function"
        wrapper, rebind = _sync_wrapper(func, tool_name, names, skip, accepts_session, signature)

    functools.update_wrapper(wrapper, func)
    # A new dict: the function's own __annotations__ is shared and must not change.
    annotations = getattr(func, "__annotations__", None)
    if isinstance(annotations, dict):
        wrapper.__annotations__ = {k: v for k, v in annotations.items() if k != "_session"}
    if signature is not None:
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p for p in params if p.name != "_session"]
        )
    # A framework decorator applied before this one may have stored parameter
    # metadata listing `_session` (Semantic Kernel's @kernel_function keeps it in
    # __kernel_function_parameters__); update_wrapper copied it, so drop it here.
    framework_params = wrapper.__dict__.get("__kernel_function_parameters__")
    if isinstance(framework_params, list):
        wrapper.__kernel_function_parameters__ = [  # type: ignore[attr-defined]
            p for p in framework_params if not (isinstance(p, dict) and p.get("name") == "_session")
        ]
    wrapper.__openprogram_tool__ = tool_name  # type: ignore[attr-defined]
    if _undo_declarer is not None:
        wrapper.undo = _undo_declarer(func, tool_name, names, skip, shape, rebind)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def records_itself(owner: Any, *attributes: str) -> bool:
    """Whether one of ``owner``'s named attributes is an ``@openprogram.tool`` function.

    Adapters use it to leave a framework tool built on such a function to record its own
    calls, instead of recording each call twice.
    """
    for name in attributes:  # noqa: SIM110 - a loop, not any(generator): this runs for every tool call
        if hasattr(getattr(owner, name, None), "__openprogram_tool__"):
            return True
    return False


# Arguments a framework injects into a tool call (a LangGraph tool's graph state or
# runtime): plumbing, possibly huge, so not captured. An adapter sets a one-element list
# ``[(tool names, argument names)]`` around the framework's call; the first call of a tool
# of one of those names takes it (another tool called inside keeps its own arguments). A
# call whose arguments are all scalars takes the compiled path, which does not look: its
# scalar injected arguments (an injected tool-call id) are recorded.
injected_arguments: ContextVar[list[tuple[frozenset[str], frozenset[str]]] | None] = ContextVar(
    "openprogram.injected", default=None
)


def _snapshot(names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Arguments as the writer will need them: by reference when immutable, else copied now."""
    for value in args:
        if type(value) not in ATOMIC_TYPES:
            return capture_json(bind_arguments(names, args, kwargs))
    for value in kwargs.values():
        if type(value) not in ATOMIC_TYPES:
            return capture_json(bind_arguments(names, args, kwargs))
    return None


def _start(
    name: str, names: tuple[str, ...], skip: int, accepts_session: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], SessionHandle | None] | None:
    """Resolve the session and begin the call; None when it must run unrecorded.

    Returns the call record and, when the session var must be installed for the
    call (an explicit or implicit session), the handle to install.
    """
    override = kwargs.pop("_session", None) if "_session" in kwargs else None
    # Absent, or sent by a model (not a handle): the context decides.
    resolved = resolve(override if type(override) is SessionHandle else None, f"tool {name!r}")
    if resolved is None:
        if accepts_session:
            kwargs["_session"] = None  # unrecorded, but the declared parameter still gets a value
        return None
    handle, parent, must_install = resolved
    install = handle if must_install else None
    call_args = args[skip:] if skip else args
    injected = injected_arguments.get()
    if injected and name in injected[0][0]:  # the framework's own arguments to this call: left out
        left_out = injected.pop()[1]
        bound = bind_arguments(names, call_args, kwargs)
        snapshot = capture_json({k: v for k, v in bound.items() if k not in left_out})
    else:
        snapshot = _snapshot(names, call_args, kwargs)
    if accepts_session:
        record_kwargs = dict(kwargs)
        kwargs["_session"] = handle  # always overwrite, never setdefault
    else:
        record_kwargs = kwargs
    call_id = new_call_id()
    rec: tuple[Any, ...]
    if snapshot is None:
        rec = (call_id, handle, parent, "tool", name, None, names, call_args, record_kwargs, None, time.time())
    else:
        rec = (call_id, handle, parent, "tool", name, None, PRECAPTURED, snapshot, None, None, time.time())
    inflight[call_id] = rec
    return rec, install


def _sync_wrapper(
    func: Callable[..., Any],
    name: str,
    names: tuple[str, ...],
    skip: int,
    accepts_session: bool,
    signature: inspect.Signature | None = None,
) -> tuple[Callable[..., Any], Rebind]:
    if skip or accepts_session:  # methods and functions taking _session: always the general path

        def general(*args: Any, **kwargs: Any) -> Any:
            return _slow_sync(func, name, names, skip, accepts_session, args, kwargs)

        def rebind(body: Callable[..., Any]) -> None:
            nonlocal func
            func = body

        return general, rebind
    generic = _fast_sync(func, name, names, None)
    params = _plain_parameters(func, signature)
    if params is None:
        return generic, _rebind_compiled(generic)
    wrapper = _fast_sync(func, name, names, params, generic)
    return wrapper, _rebind_compiled(generic, wrapper)


def _rebind_compiled(*wrappers: Callable[..., Any]) -> Rebind:
    """A compiled wrapper calls whatever its namespace holds as ``_op_func``: rebinding it adds nothing to a call."""

    def rebind(body: Callable[..., Any]) -> None:
        for wrapper in wrappers:
            wrapper.__globals__["_op_func"] = body

    return rebind


_MISSING: Any = object()
"""The default of a compiled wrapper's optional parameters: not passed, so not recorded."""

_MAX_COMPILED_PARAMETERS = 12

# The fast path of a plain sync tool, compiled per function (as dataclasses compile
# __init__). With the function's own parameter list instead of (*args, **kwargs), a
# call packs no tuple and dict and checks its arguments without a loop (see
# bench/README.md, P1). Every name the code uses (builtins too) starts with _op_,
# which no parameter may: none can shadow them.
_FAST_SYNC = """\
def _op_wrapper({parameters}):
    _op_handle = _op_get_session()
    if _op_handle is None{guard}:
        return {fallback}
{check}\
    _op_n = _op_next(_op_counter)
    if not _op_n & 0xFFF:
        _op_ids.every_4096_calls()
    # The call's id is the counter value: the writer spells it out (_ids.as_text).
    _op_rec = (_op_n, _op_handle, _op_get_call() or _op_handle.root_call_id, "tool", _op_name, None,
               _op_shape, {arguments}, None, None, _op_time())
    _op_running[_op_n] = _op_rec  # keyed by the counter value: an int hashes for free
    _op_token = _op_set_call(_op_n)
    try:
        _op_result = _op_func({call})
    except _op_BaseException as _op_exc:
        _op_reset_call(_op_token)
        del _op_running[_op_n]
        try:
            _op_extend(_op_failed(_op_rec, _op_exc))
        except _op_RecursionError:  # no stack left to describe it: its type, and the user's exception goes on
            _op_extend(_op_rec + ("error", None, _op_type(_op_exc).__qualname__, _op_time()))
        raise
    _op_reset_call(_op_token)
    del _op_running[_op_n]
    _op_extend(_op_rec + ("ok", _op_result if _op_type(_op_result) in _op_atomic else (_op_capture_json(_op_result),),
                          None, _op_time()))
    return _op_result
"""


def _plain_parameters(func: Callable[..., Any], signature: inspect.Signature | None) -> list[inspect.Parameter] | None:
    """A plain function's parameters, if all are positional-or-keyword with names the compiled wrapper can use.

    Only a plain function's signature is its code's: another decorator's (``__wrapped__``)
    or a declared ``__signature__`` may not say what the function really accepts.
    """
    if signature is None or not isinstance(func, types.FunctionType):
        return None
    if hasattr(func, "__wrapped__") or "__signature__" in func.__dict__:
        return None
    params = list(signature.parameters.values())
    if len(params) > _MAX_COMPILED_PARAMETERS:
        return None
    for p in params:
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.name.startswith("_op_"):  # a code object's names are identifiers
            return None
    return params


def _fast_sync(
    func: Callable[..., Any],
    name: str,
    names: tuple[str, ...],
    params: list[inspect.Parameter] | None,
    generic: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """A sync tool's wrapper: recorded inline when inside a session with scalar arguments only.

    ``params`` None: the generic ``(*args, **kwargs)`` form. Otherwise the function's own
    parameters; a call that leaves an optional one out or passes ``_session`` takes the
    generic wrapper (``generic``), so what is recorded is what was passed.
    """
    namespace: dict[str, Any] = {
        "_op_func": func,
        "_op_name": name,
        "_op_atomic": ATOMIC_TYPES,
        "_op_ids": _ids,
        "_op_counter": _ids.counter,
        "_op_get_session": session_var.get,
        "_op_get_call": call_var.get,
        "_op_set_call": call_var.set,
        "_op_reset_call": call_var.reset,
        "_op_extend": queue.extend,
        "_op_running": inflight,
        "_op_shape": parameter_shape(names),  # kept in the record instead of the names: the writer needs no lookup
        "_op_time": time.time,
        "_op_failed": failed_record,
        "_op_capture_json": capture_json,
        "_op_slow": _slow_sync,
        "_op_names": names,
        "_op_missing": _MISSING,
        "_op_next": next,
        "_op_type": type,
        "_op_BaseException": BaseException,
        "_op_RecursionError": RecursionError,
    }
    slow = "_op_slow(_op_func, _op_name, _op_names, 0, False, {args}, {kwargs})"
    if params is None:
        parts = {
            "parameters": "*args, **kwargs",
            "guard": " or kwargs",
            "fallback": slow.format(args="args", kwargs="kwargs"),
            "check": "    for _op_value in args:\n"
            "        if _op_type(_op_value) not in _op_atomic:\n"
            f"            return {slow.format(args='args', kwargs='kwargs')}\n",
            "arguments": "args",
            "call": "*args",
        }
    else:
        listed = ", ".join(p.name for p in params)
        parts = {
            "parameters": ", ".join(p.name + ("=_op_missing" if p.default is not p.empty else "") for p in params)
            + ("," if params else "")
            + " *, _session=None",
            # A left-out optional parameter holds _op_missing, which is not atomic: generic path.
            "guard": " or _session is not None" + "".join(f" or _op_type({p.name}) not in _op_atomic" for p in params),
            "fallback": f"_op_passed(({listed}{',' if len(params) == 1 else ''}), _session)",
            "check": "",
            "arguments": f"({listed}{',' if len(params) == 1 else ''})",
            "call": listed,
        }

        def passed(values: tuple[Any, ...], session: Any) -> Any:
            """The call as made: leading values positionally, the rest by name, left-out ones not at all."""
            args: list[Any] = []
            kwargs: dict[str, Any] = {}
            gap = False
            for param, value in zip(params, values, strict=True):
                if value is _MISSING:
                    gap = True  # what follows can only have been passed by name
                    continue
                if gap:
                    kwargs[param.name] = value
                else:
                    args.append(value)
            if session is not None:
                kwargs["_session"] = session
            return generic(*args, **kwargs)  # type: ignore[misc]

        namespace["_op_passed"] = passed
    filename = f"<openprogram.tool {name}>".replace("\x00", "\\x00")  # compile() refuses NUL
    exec(compile(_FAST_SYNC.format(**parts), filename, "exec"), namespace)
    wrapper: Callable[..., Any] = namespace["_op_wrapper"]
    # Defined under a name no tool can shadow; tracebacks and argument errors show the function's own.
    own = getattr(func, "__name__", None)  # a callable object or functools.partial has none
    code = wrapper.__code__.replace(co_name=own if type(own) is str else name)
    if sys.version_info >= (3, 11):
        qualname = getattr(func, "__qualname__", None)
        code = code.replace(co_qualname=qualname if type(qualname) is str else code.co_name)
    wrapper.__code__ = code
    return wrapper


def _slow_sync(
    func: Callable[..., Any],
    name: str,
    names: tuple[str, ...],
    skip: int,
    accepts_session: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    started = _start(name, names, skip, accepts_session, args, kwargs)
    if started is None:
        return func(*args, **kwargs)
    rec, install = started
    s_token = session_var.set(install) if install is not None else None
    c_token = call_var.set(rec[CALL_ID])
    try:
        result = func(*args, **kwargs)
    except BaseException as exc:
        call_var.reset(c_token)  # a sync call ends in the context it began in
        if s_token is not None:
            session_var.reset(s_token)
        try:
            end_call(rec, exc, None)
        except RecursionError:  # no stack left to describe it: its type, and the user's exception goes on
            if inflight.pop(rec[CALL_ID], None) is not None:
                queue.extend(rec + ("error", None, type(exc).__qualname__, time.time()))
        raise
    reset_var(call_var, c_token)
    if s_token is not None:
        reset_var(session_var, s_token)
    end_call(rec, None, result)
    return result


def _async_wrapper(
    func: Callable[..., Any], name: str, names: tuple[str, ...], skip: int, accepts_session: bool
) -> tuple[Callable[..., Any], Rebind]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = _start(name, names, skip, accepts_session, args, kwargs)
        if started is None:
            return await func(*args, **kwargs)
        rec, install = started
        s_token = session_var.set(install) if install is not None else None
        c_token = call_var.set(rec[CALL_ID])
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            end_call(rec, exc, None)
            raise
        finally:
            reset_var(call_var, c_token)
            if s_token is not None:
                reset_var(session_var, s_token)
        end_call(rec, None, result)
        return result

    def rebind(body: Callable[..., Any]) -> None:
        nonlocal func
        func = body

    return wrapper, rebind


class _Yields:
    """Bounded capture of what a generator yielded."""

    __slots__ = ("count", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.count = 0

    def add(self, item: Any) -> None:
        self.count += 1
        if len(self.items) < _MAX_YIELDS:
            self.items.append(capture(item))

    def output(self, returned: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"yielded": self.items, "count": self.count}
        if returned is not None:
            out["returned"] = capture(returned)
        return out


def _generator_wrapper(
    func: Callable[..., Any], name: str, names: tuple[str, ...], skip: int, accepts_session: bool
) -> tuple[Callable[..., Any], Rebind]:
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        started = _start(name, names, skip, accepts_session, args, kwargs)
        if started is None:
            return (yield from func(*args, **kwargs))
        rec, _ = started
        handle, call_id = rec[SESSION], rec[CALL_ID]
        yields = _Yields()
        # Each step runs with this call and session current, wherever the
        # generator is iterated; between steps the consumer's context is untouched.
        s_token = session_var.set(handle)
        c_token = call_var.set(call_id)
        try:
            gen = func(*args, **kwargs)
        except BaseException as exc:
            end_call(rec, exc, None)
            raise
        finally:
            reset_var(call_var, c_token)
            reset_var(session_var, s_token)
        method: Callable[[Any], Any] = gen.send
        arg: Any = None
        while True:
            s_token = session_var.set(handle)
            c_token = call_var.set(call_id)
            try:
                item = method(arg)
            except StopIteration as stop:
                end_call(rec, None, yields.output(stop.value))
                return stop.value
            except BaseException as exc:
                end_call(rec, exc, yields.output(None))
                raise
            finally:
                reset_var(call_var, c_token)
                reset_var(session_var, s_token)
            yields.add(item)
            try:
                arg = yield item
                method = gen.send
            except GeneratorExit as exc:
                s_token = session_var.set(handle)
                c_token = call_var.set(call_id)
                try:
                    gen.close()
                finally:
                    reset_var(call_var, c_token)
                    reset_var(session_var, s_token)
                    end_call(rec, exc, yields.output(None))
                raise
            except BaseException as exc:
                method, arg = gen.throw, exc

    def rebind(body: Callable[..., Any]) -> None:
        nonlocal func
        func = body

    return wrapper, rebind


def _async_generator_wrapper(
    func: Callable[..., Any], name: str, names: tuple[str, ...], skip: int, accepts_session: bool
) -> tuple[Callable[..., Any], Rebind]:
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        started = _start(name, names, skip, accepts_session, args, kwargs)
        if started is None:
            async for item in func(*args, **kwargs):
                yield item
            return
        rec, _ = started
        handle, call_id = rec[SESSION], rec[CALL_ID]
        yields = _Yields()
        s_token = session_var.set(handle)
        c_token = call_var.set(call_id)
        try:
            agen = func(*args, **kwargs)
        except BaseException as exc:
            end_call(rec, exc, None)
            raise
        finally:
            reset_var(call_var, c_token)
            reset_var(session_var, s_token)
        method: Callable[[Any], Any] = agen.asend
        arg: Any = None
        while True:
            s_token = session_var.set(handle)
            c_token = call_var.set(call_id)
            try:
                item = await method(arg)
            except StopAsyncIteration:
                end_call(rec, None, yields.output(None))
                return
            except BaseException as exc:
                end_call(rec, exc, yields.output(None))
                raise
            finally:
                reset_var(call_var, c_token)
                reset_var(session_var, s_token)
            yields.add(item)
            try:
                arg = yield item
                method = agen.asend
            except GeneratorExit as exc:
                s_token = session_var.set(handle)
                c_token = call_var.set(call_id)
                try:
                    await agen.aclose()
                finally:
                    reset_var(call_var, c_token)
                    reset_var(session_var, s_token)
                    end_call(rec, exc, yields.output(None))
                raise
            except BaseException as exc:
                method, arg = agen.athrow, exc

    def rebind(body: Callable[..., Any]) -> None:
        nonlocal func
        func = body

    return wrapper, rebind
