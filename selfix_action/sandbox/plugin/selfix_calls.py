"""Record the calls the project's tests make to chosen functions, and replay them on another version of the code.

It runs in the project's own interpreter (Python 3.8 and later), so it needs only the standard library (and pytest,
for the recording half). Two halves:

- **Recording** (``-p selfix_calls`` with ``SELFIX_CALLS_SPEC`` naming a JSON spec): while each test runs, a profile
  function catches every call of the named functions (by code object: file, name and first line, so a function
  imported under another name or reached through a decorator is caught too) and pickles its arguments as they were
  at the call, before the body could change them. At most ``max_calls`` distinct calls per function are kept, each
  with the test that made it. Written to the spec's ``out`` when the session ends.
- **Replay** (``python selfix_calls.py replay SPEC``): reads the recording, builds each recorded call and, one
  argument at a time, a few variations of it (another type of the same thing, an empty one, a neighbour), calls the
  function on each in this process's version of the code, and writes one JSON line per input: the outcome as
  text (the value returned, or the exception raised, and what the call left in its mutable arguments). Run once on
  the unpatched code and once per patch, the lines are compared by selfix (``repair/differential.py``).

The code under test can write any file it can reach, these included: selfix reads back only plain strings of
bounded size and never unpickles anything in its own process.
"""

import hashlib
import importlib
import io
import json
import os
import pickle
import re
import signal
import sys
import types

_PROTOCOL = 4
_TEXT_LIMIT = 400
# Objects the pickler takes apart itself; anything else is tried whole first (``_Keeper.persistent_id``).
_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset)


class Stub:
    """What replaces an argument (or a part of one) that cannot be copied: a lock, a socket, a test case's bound
    method given as a callback. Every version of the code gets the same stand-in, so outcomes still compare: it
    answers any attribute with another stand-in, any call with None, and works as a context manager."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return Stub(self._name + "." + attribute)

    def __call__(self, *args, **kwargs):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        return iter(())

    def __repr__(self):
        return "<" + self._name + ">"


class _Keeper(pickle.Pickler):
    """Pickles a call's arguments, putting a ``Stub`` in place of every object that cannot be taken apart (its own
    ``__reduce_ex__`` refuses: a lock, a socket, a module, a generator); objects around it are kept, so one lock
    inside a large argument does not lose the call."""

    def __init__(self, handle, strict=False):
        super().__init__(handle, protocol=_PROTOCOL)
        self.strict = strict  # also stand in for the test machinery's objects and instances of nameless classes
        self._classes = {}

    def persistent_id(self, obj):
        if isinstance(obj, _PLAIN):
            return None
        if isinstance(obj, type):
            return None
        named = isinstance(obj, types.MethodType) or self._named(type(obj))  # a method is rebuilt from its parts
        if self.strict and (_machinery(obj) or not named):
            return self._stub(obj)
        try:
            if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
                pickle.dumps(obj, protocol=_PROTOCOL)  # by its name: a lambda or a local function has none
            else:
                obj.__reduce_ex__(_PROTOCOL)
            return None
        except Exception:
            pass
        return self._stub(obj)

    def _named(self, kind):
        """Whether instances of ``kind`` can be rebuilt: the class is found by its name (one defined inside a
        function, or a test's local class, is not)."""
        known = self._classes.get(kind)
        if known is None:
            try:
                pickle.dumps(kind, protocol=_PROTOCOL)
                known = True
            except Exception:
                known = False
            self._classes[kind] = known
        return known

    def _stub(self, obj):
        kind = type(obj)
        return "{}.{}".format(getattr(kind, "__module__", "?"), getattr(kind, "__qualname__", kind.__name__))


# The test run's own machinery: what a test hands the code as a callback or a context drags these in, and the
# code's behaviour does not depend on their insides.
_MACHINERY = ("_pytest", "pytest", "pluggy", "unittest", "twisted.trial", "py.", "_io", "logging")


def _machinery(obj):
    if isinstance(obj, types.MethodType):
        obj = obj.__self__
    module = getattr(type(obj), "__module__", "") or ""
    return module.startswith(_MACHINERY) or isinstance(obj, (types.ModuleType, types.FrameType, types.TracebackType))


class _Restorer(pickle.Unpickler):
    def persistent_load(self, pid):
        return Stub(str(pid))


_MAX_PAYLOAD = 2_000_000  # bytes of one call's pickled arguments: past that, the call is not kept


def _pickled(value, strict):
    handle = io.BytesIO()
    keeper = _Keeper(handle, strict)
    keeper.dump(value)
    if handle.tell() > _MAX_PAYLOAD:
        raise ValueError("arguments too large to keep")
    return handle.getvalue()


def _dumps(call):
    """A call's arguments pickled: with stand-ins for what cannot be taken apart; failing that, also for the test
    machinery and classes without a name; failing that, with a stand-in for each argument that still fails."""
    for strict in (False, True):
        try:
            return _pickled(call, strict)
        except Exception:
            continue
    positional, extra, keywords, more = call

    def kept(value):
        try:
            _pickled(value, True)
            return value
        except Exception:
            return Stub(type(value).__name__)

    call = (
        [kept(v) for v in positional],
        tuple(kept(v) for v in extra),
        {k: kept(v) for k, v in keywords.items()},
        {k: kept(v) for k, v in more.items()},
    )
    return _pickled(call, True)


def _loads(payload):
    return _Restorer(io.BytesIO(payload)).load()


# -- recording ------------------------------------------------------------------------------------------------
_SPEC = os.environ.get("SELFIX_CALLS_SPEC", "")
_rec = {"targets": {}, "calls": [], "seen": set(), "counts": {}, "unpicklable": 0, "test": "", "max": 10, "out": ""}


def _load_spec():
    if not _SPEC:
        return
    with open(_SPEC, encoding="utf-8") as handle:
        spec = json.load(handle)
    _rec["max"] = int(spec.get("max_calls", 10))
    _rec["out"] = spec["out"]
    for target in spec["targets"]:
        key = (os.path.realpath(target["file"]), target["name"])
        _rec["targets"].setdefault(key, []).append(target)


def _arguments(frame):
    """The call's arguments from its frame at the ``call`` event: (positional, *args, keyword-only, **kwargs)."""
    code = frame.f_code
    names = code.co_varnames
    local = frame.f_locals
    count = code.co_argcount
    kwonly = code.co_kwonlyargcount
    positional = [local[name] for name in names[:count]]
    keywords = {name: local[name] for name in names[count : count + kwonly] if name in local}
    index = count + kwonly
    extra = ()
    if code.co_flags & 0x04:  # CO_VARARGS
        extra = tuple(local.get(names[index], ()))
        index += 1
    more = {}
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        more = dict(local.get(names[index], {}))
    return positional, extra, keywords, more


def _profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    candidates = _rec["targets"].get((os.path.realpath(code.co_filename), code.co_name))
    if not candidates:
        return
    for target in candidates:
        if target["first"] - 3 <= code.co_firstlineno <= target["last"]:
            break
    else:
        return
    name = target["id"]
    if _rec["counts"].get(name, 0) >= _rec["max"]:
        return
    try:
        payload = _dumps(_arguments(frame))
    except Exception:  # arguments too large to keep, or that fail even with stand-ins: not replayable
        _rec["unpicklable"] += 1
        return
    digest = hashlib.sha1(payload).hexdigest()
    if (name, digest) in _rec["seen"]:
        return
    _rec["seen"].add((name, digest))
    _rec["counts"][name] = _rec["counts"].get(name, 0) + 1
    module = frame.f_globals.get("__name__", "")
    _rec["calls"].append({"target": name, "module": module, "test": _rec["test"], "payload": payload})


def pytest_configure(config):
    _load_spec()


def pytest_runtest_setup(item):
    if _rec["targets"]:
        _rec["test"] = item.nodeid
        sys.setprofile(_profile)


def pytest_runtest_teardown(item, nextitem):
    sys.setprofile(None)


def pytest_runtest_call(item):
    if _rec["targets"]:
        sys.setprofile(_profile)  # a test's setup may have replaced it (a coverage tool, a debugger)


def pytest_unconfigure(config):
    sys.setprofile(None)
    if not _rec["out"]:
        return
    with open(_rec["out"], "wb") as handle:
        pickle.dump({"calls": _rec["calls"]}, handle, protocol=_PROTOCOL)
    # What selfix reads back in its own process: plain JSON, never the pickle.
    summary = {"calls": len(_rec["calls"]), "unpicklable": _rec["unpicklable"], "python": sys.executable}
    with open(_rec["out"] + ".json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle)


# -- replay ---------------------------------------------------------------------------------------------------
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _clip(text):
    text = _ADDRESS.sub("", text)
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."


def describe(value, depth=0):
    """A text of ``value`` that says what it holds: its repr, unless that is object's default (an address), in
    which case its class and attributes; sets and dicts in a stable order."""
    if depth > 3:
        return "..."
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return repr(int(value))  # 4.0 == 4: the tests compare values, and so does the probe
    if isinstance(value, (str, bytes, int, float, complex, bool, type(None))):
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v, depth + 1) for v in value[:20])
        more = ", ..." if len(value) > 20 else ""
        if isinstance(value, list):
            return f"[{inner}{more}]"
        return f"({inner},)" if len(value) == 1 else f"({inner}{more})"
    if isinstance(value, (set, frozenset)):
        inner = ", ".join(sorted(describe(v, depth + 1) for v in value)[:20])
        return f"{type(value).__name__}({{{inner}}})"
    if isinstance(value, dict):
        items = sorted((describe(k, depth + 1), describe(v, depth + 1)) for k, v in list(value.items())[:40])
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, Stub):
        return repr(value)
    try:
        custom = type(value).__repr__ is not object.__repr__
    except Exception:
        custom = False
    if custom:
        try:
            return repr(value)
        except Exception as exc:
            return f"<repr failed: {type(exc).__name__}>"
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        items = sorted((k, describe(v, depth + 1)) for k, v in list(attributes.items())[:40] if not k.startswith("__"))
        return f"{type(value).__name__}(" + ", ".join(f"{k}={v}" for k, v in items) + ")"
    return f"<{type(value).__name__}>"


def _variations(value):
    """Other inputs of the kind ``value`` is: (label, value). The same thing in another type (a string for a
    list of one, a tuple for a list), empty ones, neighbours of numbers, None."""
    out = []
    if isinstance(value, bool):
        out.append(("not", not value))
    elif isinstance(value, int):
        out += [("0", 0), ("+1", value + 1), ("-1", value - 1), ("negated", -value)]
    elif isinstance(value, float):
        out += [("0.0", 0.0), ("negated", -value), ("doubled", value * 2)]
    elif isinstance(value, str):
        out += [("empty", ""), ("in a list", [value]), ("in a tuple", (value,)), ("as bytes", value.encode())]
        if value:
            out.append(("first character", value[:1]))
        if value.strip() != value or value.upper() != value:
            out.append(("stripped, upper case", value.strip().upper()))
        else:
            out.append(("padded, lower case", " " + value.lower() + " "))
        if value.strip().isdigit():
            out.append(("negative", "-" + value.strip()))
    elif isinstance(value, bytes):
        out += [("empty", b""), ("as str", value.decode("utf-8", "replace")), ("in a list", [value])]
    elif isinstance(value, list):
        out += [("as a tuple", tuple(value)), ("empty", []), ("reversed", list(reversed(value)))]
        if len(value) == 1:
            out.append(("its one item", value[0]))
        if len(value) > 1:
            out.append(("first item only", value[:1]))
        out.append(("as an iterator", iter(list(value))))
    elif isinstance(value, tuple):
        out += [("as a list", list(value)), ("empty", ())]
        if len(value) == 1:
            out.append(("its one item", value[0]))
    elif isinstance(value, dict):
        out.append(("empty", {}))
        if len(value) > 1:
            first = next(iter(value))
            out.append(("first key only", {first: value[first]}))
    elif isinstance(value, (set, frozenset)):
        out += [("as a list", sorted(value, key=repr)), ("empty", type(value)())]
    if value is not None:
        out.append(("None", None))
    return out


def _resolve(module_name, qualname, name):
    """The function object to call: ``qualname`` in ``module_name``, unwrapped down to the function named ``name``
    (a decorator's wrapper takes other arguments than the function whose call was recorded)."""
    module = importlib.import_module(module_name)
    obj = module
    for part in qualname.split("."):
        if part == "<locals>":
            return None
        holder = obj
        obj = holder.__dict__.get(part) if hasattr(holder, "__dict__") and part in holder.__dict__ else None
        if obj is None:
            obj = getattr(holder, part, None)
        if obj is None:
            return None
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    for _ in range(10):
        code = getattr(obj, "__code__", None)
        if isinstance(obj, types.FunctionType) and code is not None and code.co_name == name:
            return obj
        obj = getattr(obj, "__wrapped__", None) or getattr(obj, "__func__", None)
        if obj is None:
            return None
    return None


def _call(function, positional, extra, keywords, more, timeout):
    """What calling ``function`` did: its result or exception, and its mutable arguments afterwards."""
    mutable = [i for i, v in enumerate(positional) if isinstance(v, (list, dict, set))]
    before = [describe(positional[i]) for i in mutable]
    sink = io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = sink
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            result = function(*positional, *extra, **keywords, **more)
            if isinstance(result, types.GeneratorType):
                items = []
                for item in result:
                    items.append(item)
                    if len(items) >= 50:
                        break
                result = items
            elif isinstance(result, types.CoroutineType):
                result.close()
                result = "<coroutine>"
            outcome = "returns " + describe(result)
        except _Timeout:
            outcome = f"runs past {timeout:g}s"
        except RecursionError:
            outcome = "raises RecursionError"
        except BaseException as exc:
            outcome = f"raises {type(exc).__name__}: {exc!s}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout, sys.stderr = saved
    after = [describe(positional[i]) for i in mutable]
    if after != before:  # the call changed an argument it was given: that is part of what it did
        outcome += " | arguments after: " + ", ".join(after)
    return _clip(outcome)


def _slot(positional, keywords, more, kind, slot):
    return positional[slot] if kind == "arg" else (keywords if kind == "kw" else more)[slot]


def _input_text(positional, extra, keywords, more, skip_first):
    shown = positional[1:] if skip_first else positional
    parts = [describe(v) for v in shown] + [describe(v) for v in extra]
    parts += [f"{k}={describe(v)}" for k, v in list(keywords.items()) + list(more.items())]
    return _clip("(" + ", ".join(parts) + ")")


def replay(spec_path):
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    for folder in spec.get("paths", []):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    with open(spec["recording"], "rb") as handle:
        recording = pickle.load(handle)
    targets = {t["id"]: t for t in spec["targets"]}
    timeout = float(spec.get("timeout", 2.0))
    limit = int(spec.get("max_variations", 12))
    lines = []
    number = {}
    for call in recording["calls"]:
        target = targets.get(call["target"])
        if target is None:
            continue
        k = number[call["target"]] = number.get(call["target"], 0) + 1
        base = {"target": call["target"], "call": k, "test": call["test"]}
        try:
            function = _resolve(call["module"], target["qualname"], target["name"])
        except BaseException as exc:
            lines.append(dict(base, variation="as recorded", text="", outcome=f"cannot import: {exc}"))
            continue
        if function is None:
            lines.append(dict(base, variation="as recorded", text="", outcome="function not found"))
            continue
        method = "." in target["qualname"] and function.__code__.co_varnames[:1] in (("self",), ("cls",))
        try:
            positional, extra, keywords, more = _loads(call["payload"])
        except BaseException as exc:  # a class the recording used is gone, or will not rebuild
            outcome = f"cannot rebuild the call: {type(exc).__name__}: {exc}"
            lines.append(dict(base, variation="as recorded", text="", outcome=_clip(outcome)))
            continue
        inputs = [("as recorded", positional, extra, keywords, more)]
        slots = [("arg", i) for i in range(1 if method else 0, len(positional))]
        slots += [("kw", name) for name in sorted(keywords)] + [("more", name) for name in sorted(more)]
        for kind, slot in slots:
            label_of = f"argument {slot + 1 - int(method)}" if kind == "arg" else slot
            count = len(_variations(_slot(positional, keywords, more, kind, slot)))
            for index in range(count):
                if len(inputs) > limit:
                    break
                # Each input from a fresh copy of the recorded call: no call shares an object with another.
                p, e, kw, mo = _loads(call["payload"])
                label, value = _variations(_slot(p, kw, mo, kind, slot))[index]
                if kind == "arg":
                    p[slot] = value
                else:
                    (kw if kind == "kw" else mo)[slot] = value
                inputs.append((f"{label_of} {label}", p, e, kw, mo))
        for label, p, e, kw, mo in inputs:
            text = _input_text(p, e, kw, mo, method)
            outcome = _call(function, p, e, kw, mo, timeout)
            lines.append(dict(base, variation=label, text=text, outcome=outcome))
    with open(spec["out"], "w", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "replay":
        sys.exit(replay(sys.argv[2]))
    sys.stderr.write("usage: selfix_calls.py replay SPEC\n")
    sys.exit(2)
