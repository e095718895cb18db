"""The native eager launch loop of ``bench nccl``: nccl-tests' eager loop, in C, over the NCCL CuPy loaded.

Why: an eager launch is timed as it is issued. From Python each launch of an already bound operation
(``comm.nccl.prepared``) still costs ~5 us over nccl-tests' C loop, which put eager ``bench nccl`` at
0.6-0.95x of nccl-tests from 8 B to 2 MiB on 2 x H200 (median per op 0.97/0.97/0.86/1.00/0.71 for
allgather/alltoall/sendrecv/allreduce/reduce_scatter, docs/runs/h200x2-2026-11-28/call4).

How: ``native/eagerloop.c`` (shipped in the package) is compiled on first use with the system C compiler
(``cbuild``: private per-user cache, keyed by source and compiler, atomic rename) and loaded with ctypes.
It links against nothing: it gets the NCCL functions (``ncclGroupStart``, ``ncclGroupEnd``,
``ncclAllReduce``...) looked up in the NCCL library already loaded in the process (the one CuPy's NCCL
module uses, ``nccl_backend._loaded_nccl_library``), and an array of bound calls, one struct per call typed
by its signature family. The plain arguments come from the backend's ``bind`` (the one home of each call's
argument layout: CuPy's method signatures are NCCL's prototypes without the communicator, which is put
back here from ``Peer.comm.comm``). The loop runs ``iters`` x (ncclGroupStart, the calls, ncclGroupEnd),
nothing in between, as nccl-tests 2.19.6 common.cu BenchTime does (727-745), a lone call (one GPU per
process, one collective) without the group as its startColl does (548), and returns the first NCCL
error. The timing around it is the runner's, unchanged (events on every peer's stream, ``time_op``).

``LINKSCOPE_EAGER_LOOP=python`` asks for the Python loop (to measure one path beside the other; the
default is ``native``). Fallback: no C compiler, a failed build, an unsafe cache folder, no NCCL library in the process or one
without the symbols: the Python loop, with a one-line note naming the reason. ``launch_path`` says which
loop launched each row's eager operations ("native" or "python"); with several MPI ranks the native
loop is used only when every rank has it (one launch path per row).
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..cbuild import build_library, find_c_compiler
from ..collectives import library_call
from ..errors import BackendUnavailable, MeasurementError, UserError
from .nccl_backend import library_error, library_name

LIBRARY_NAME = "libls_eagerloop.so"
NATIVE, PYTHON = "native", "python"
CHOICE_ENV = "LINKSCOPE_EAGER_LOOP"

# Signature families (eagerloop.c ``enum ls_family``): the NCCL prototype each call is made through, known by
# the call's argument layout (collectives.LibraryCall.args without the stream: the descriptor is the one home
# of which operation makes which call).
REDUCE, GATHER, P2P, ROOTED, BROADCAST = 1, 2, 3, 4, 5
FAMILY_OF_ARGS = {("send", "recv", "count", "dtype", "redop"): REDUCE, ("send", "recv", "count", "dtype"): GATHER,
                  ("buffer", "count", "dtype", "peer"): P2P, ("send", "recv", "count", "dtype", "redop", "root"): ROOTED,
                  ("send", "recv", "count", "dtype", "root"): BROADCAST}


def _call_of(name: str, library: str = "NCCL") -> tuple[int, str] | None:
    """(signature family, C symbol) of the bound call ``name``, None when the loop has no form for it."""
    call = library_call(name, library)
    if call is None:
        return None
    family = FAMILY_OF_ARGS.get(tuple(a for a in call.args if a != "stream"))
    return (family, call.function) if family is not None else None


BAD_FAMILY = -1  # eagerloop.c LS_BAD_FAMILY


class _Call(ctypes.Structure):
    """eagerloop.c ``ls_call``, field for field."""

    _fields_ = [("family", ctypes.c_int32), ("datatype", ctypes.c_int32), ("redop", ctypes.c_int32),
                ("peer", ctypes.c_int32), ("fn", ctypes.c_void_p), ("send", ctypes.c_void_p),
                ("recv", ctypes.c_void_p), ("count", ctypes.c_size_t), ("comm", ctypes.c_void_p),
                ("stream", ctypes.c_void_p)]


def loop_source() -> str:
    return (resources.files("linkscope.comm") / "native" / "eagerloop.c").read_text()


_built: dict[tuple[str, str], Any] = {}  # (compiler, cache) -> the loaded library, or the BackendUnavailable


def _loop_library(compiler: str, environ: Mapping[str, str], cache: Path | None) -> Any:
    """The compiled loop, loaded (built once per process and compiler; a failure is remembered too)."""
    key = (compiler, str(cache))
    if key not in _built:
        try:
            lib = ctypes.CDLL(str(build_library(loop_source(), LIBRARY_NAME, compiler, kind="eagerloop",
                                                environ=environ, flags=("-std=c99",), cache=cache)))
            fn = lib.ls_eager_loop
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Call), ctypes.c_int32, ctypes.c_int32,
                           ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)]
            fn.restype = ctypes.c_int
            _built[key] = fn
        except (BackendUnavailable, OSError, AttributeError) as exc:
            _built[key] = exc if isinstance(exc, BackendUnavailable) else BackendUnavailable(f"cannot load it: {exc}")
    found = _built[key]
    if isinstance(found, BackendUnavailable):
        raise found
    return found


def _fields(family: int, plain: Sequence[Any], comm: int) -> dict[str, Any]:
    """Struct fields of one call from ``bind``'s plain arguments (CuPy's signature: NCCL's without the comm)."""
    *head, stream = plain
    out: dict[str, Any] = {"family": family, "comm": comm, "stream": stream, "redop": 0, "peer": 0, "recv": None}
    if family == P2P:
        out["send"], out["count"], out["datatype"], out["peer"] = head
    elif family == REDUCE:
        out["send"], out["recv"], out["count"], out["datatype"], out["redop"] = head
    elif family == GATHER:
        out["send"], out["recv"], out["count"], out["datatype"] = head
    elif family == ROOTED:
        out["send"], out["recv"], out["count"], out["datatype"], out["redop"], out["peer"] = head
    else:
        out["send"], out["recv"], out["count"], out["datatype"], out["peer"] = head
    return out


class NativeLoop:
    """One bound operation (all of this process's calls, one NCCL group) launched ``iters`` times in C; with
    several variants (the same operation on buffers moved along), launch i issues variant i mod variants."""

    def __init__(self, entry: Any, nccl: Any, calls: Sequence[tuple[int, str, Sequence[Any], int]],
                 variants: int = 1) -> None:
        """``calls``: (signature family, C symbol, plain arguments from ``bind``, communicator handle) in
        launch order, ``variants`` sets of equal length one after another."""
        if variants < 1 or len(calls) % variants:
            raise ValueError(f"{len(calls)} calls do not make {variants} equal variants")
        self._entry = entry
        self._nccl = nccl
        self._start = ctypes.cast(nccl.ncclGroupStart, ctypes.c_void_p)
        self._end = ctypes.cast(nccl.ncclGroupEnd, ctypes.c_void_p)
        self._calls = (_Call * len(calls))()
        for slot, (family, symbol, plain, comm) in zip(self._calls, calls):
            fields = _fields(family, plain, comm)
            for attr, value in fields.items():
                setattr(slot, attr, value)
            slot.fn = ctypes.cast(getattr(nccl, symbol), ctypes.c_void_p).value
        self.variants = variants
        self.ncalls = len(calls) // variants

    def run(self, iters: int) -> None:
        """``iters`` launches, back to back (variant 0 first)."""
        self._check(self._entry(self._start, self._end, self._calls, self.ncalls, self.variants, iters, None))

    def run_timed(self, iters: int) -> list[float]:
        """``iters`` launches; the host time of each (group start to group end returned), seconds."""
        out = (ctypes.c_int64 * max(iters, 1))()
        self._check(self._entry(self._start, self._end, self._calls, self.ncalls, self.variants, iters, out))
        return [out[i] * 1e-9 for i in range(iters)]

    def _check(self, code: int) -> None:
        if code == 0:
            return
        if code == BAD_FAMILY:
            raise MeasurementError("native eager loop: a call of an unknown family")
        raise library_error(self._nccl, code, "in the native eager loop")


def native_loop(backend: Any, calls: Sequence[tuple[str, tuple]], *, environ: Mapping[str, str],
                nccl: Any = None, cache: Path | None = None,
                more: Sequence[Sequence[tuple[str, tuple]]] = ()) -> tuple[NativeLoop | None, str]:
    """The native loop for ``calls`` (``comm.nccl.calls``: (name, args) per call), or None and why not
    (empty when the backend has no native calls at all: simulated, or no ``bind``). ``nccl``: the NCCL
    library to take the functions from (default: the one loaded in the process). ``more``: further variants of
    ``calls`` (the same calls on moved buffers), issued in turn after ``calls`` (``NativeLoop``)."""
    bind = getattr(backend, "bind", None)
    if getattr(backend, "simulated", False) or bind is None:
        return None, ""
    choice = environ.get(CHOICE_ENV) or NATIVE
    if choice not in (NATIVE, PYTHON):
        raise UserError(f"{CHOICE_ENV}={choice!r} is not a launch loop", hint=f"use {NATIVE} (the default) or {PYTHON}")
    if choice == PYTHON:
        return None, f"{CHOICE_ENV}={PYTHON} asked for it"
    library = library_name(backend)
    forms = {name: _call_of(name, library) for name, _ in calls}
    unknown = sorted(name for name, form in forms.items() if form is None)
    if unknown:
        return None, f"no native form for {', '.join(unknown)}"
    compiler = find_c_compiler(environ)
    if compiler is None:
        return None, "no C compiler found (cc, gcc, clang or $CC) to build the native eager loop"
    if nccl is None:
        from .nccl_backend import _nccl_library

        nccl = _nccl_library()
        if nccl is None:
            return None, "no NCCL library loaded in the process to take the functions from"
    missing = [s for s in ("ncclGroupStart", "ncclGroupEnd", *sorted({form[1] for form in forms.values() if form}))
               if not hasattr(nccl, s)]
    if missing:
        return None, f"the NCCL library has no {', '.join(missing)}"
    try:
        entry = _loop_library(compiler, environ, cache)
    except BackendUnavailable as exc:
        return None, f"native eager loop not built: {exc.one_line()}"
    variants = [list(calls), *(list(v) for v in more)]
    if any([name for name, _ in v] != [name for name, _ in calls] for v in variants):
        raise ValueError("the variants of an eager loop must make the same calls in the same order")
    bound = []
    for variant in variants:
        for name, args in variant:
            _, plain = bind(name, args)
            form = forms[name]
            assert form is not None  # refused above
            bound.append((form[0], form[1], plain, int(args[0].comm.comm)))
    return NativeLoop(entry, nccl, bound, len(variants)), ""


def eager_loop(job: Any, backend: Any, calls: Sequence[tuple[str, tuple]], notes: list[str],
               environ: Mapping[str, str] | None = None,
               more: Sequence[Sequence[tuple[str, tuple]]] = ()) -> NativeLoop | None:
    """``native_loop`` agreed over the job's ranks (native only where every rank has it); the reason for a
    fallback goes to ``notes`` (the runner keeps each note once), as one line naming the Python loop.
    ``environ``: where the C compiler and the cache are looked up (default: this process's); ``more``:
    ``native_loop``'s."""
    loop, why = native_loop(backend, calls, environ=os.environ if environ is None else environ, more=more)
    if job.size > 1:
        states = job.comm.allgather((loop is not None, why))
        if not all(ok for ok, _ in states):
            loop = None
            why = why or next((f"{w} (on another rank)" for _, w in states if w), "")
    if loop is None and why:
        notes.append(f"eager launches from the Python loop (launch_path python): {why}")
    return loop
