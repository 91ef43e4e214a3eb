"""CuTe layouts of operand tiles: nested shape:stride from (thread, value) to a column-major tile index.

A CuTe TV layout is ``((thread modes),(value modes)):((strides),(strides))``; the index of (t, v)
is the sum over modes of ``digit * stride``, digits read colexicographically (first mode fastest).
Such a layout exists exactly when the tile index splits as ``T(t) + V(v)`` and each part is a
sum of strided digits; :func:`fit` finds it or says why not.  Printed forms: CuTe's own
``print(layout)`` text without the ``_`` of static integers, and the C++ type
``Layout<Shape<...>,Stride<...>>``; :func:`parse` reads both.

Coverage: register fragments (every thread, every value holding one tile cell, copies allowed as
stride 0).  Maps held only by some slots (sparse metadata, block-scale factors, ldmatrix row
addresses of x1/x2) get a layout that agrees on the held slots, with zero strides where nothing
decides (:func:`fit_held`); a map no strides fit is refused with the first slot that breaks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .tile import Tile

__all__ = ["CuteLayout", "CuteError", "fit", "fit_tile", "parse", "coalesce_mode"]

Nested = int | tuple  # an integer or a tuple of Nested


class CuteError(ValueError):
    """Text that is no CuTe layout, or a map with no shape:stride form."""


@dataclass(frozen=True)
class CuteLayout:
    shape: Nested
    stride: Nested

    def __post_init__(self):
        if _profile(self.shape) != _profile(self.stride):
            raise CuteError(f"shape {_text(self.shape)} and stride {_text(self.stride)} are not congruent")

    @property
    def size(self) -> int:
        return int(np.prod([s for s, _ in _flat(self.shape, self.stride)], dtype=np.int64))

    def mode(self, i: int) -> CuteLayout:
        if not isinstance(self.shape, tuple):
            raise CuteError(f"{self} has no mode {i}")
        return CuteLayout(self.shape[i], self.stride[i])

    def __call__(self, x: np.ndarray | int) -> np.ndarray:
        """The index of each linear coordinate ``x`` (colexicographic over the flattened modes)."""
        x = np.asarray(x, dtype=np.int64)
        out = np.zeros_like(x)
        for size, stride in _flat(self.shape, self.stride):
            out += (x % size) * stride
            x = x // size
        return out

    def tv(self, threads: int, values: int) -> np.ndarray:
        """int64[thread, value] of a rank-2 (thread, value) layout."""
        t, v = self.mode(0), self.mode(1)
        if t.size != threads or v.size != values:
            raise CuteError(f"layout covers (thread {t.size}, value {v.size}); the operand has "
                            f"(thread {threads}, value {values})")
        return t(np.arange(threads))[:, None] + v(np.arange(values))[None, :]

    def __str__(self) -> str:
        return f"{_text(self.shape)}:{_text(self.stride)}"

    def cpp(self) -> str:
        """The C++ type a CuTe user pastes: ``Layout<Shape<...>,Stride<...>>``."""
        return f"Layout<{_cpp(self.shape, 'Shape')},{_cpp(self.stride, 'Stride')}>"


def _profile(x: Nested):
    return tuple(_profile(y) for y in x) if isinstance(x, tuple) else 0


def _flat(shape: Nested, stride: Nested) -> list[tuple[int, int]]:
    if isinstance(shape, tuple):
        return [p for s, d in zip(shape, stride) for p in _flat(s, d)]
    return [(int(shape), int(stride))]


def _text(x: Nested) -> str:
    return "(" + ",".join(_text(y) for y in x) + ")" if isinstance(x, tuple) else str(x)


def _cpp(x: Nested, kind: str) -> str:
    if isinstance(x, tuple):
        return f"{kind}<" + ",".join(_cpp(y, kind) for y in x) + ">"
    return f"_{x}" if x >= 0 else f"Int<{x}>"


# --- fitting ----------------------------------------------------------------------------------


def _modes(h: np.ndarray) -> list[tuple[int, int]] | None:
    """Colexicographic (size, stride) modes with ``h(x) = sum digit_i * stride_i``, largest first mode first."""
    n = len(h)
    if n == 1:
        return []
    step = int(h[1])
    run = 1
    while run < n and h[run] == run * step:
        run += 1
    for first in range(run, 1, -1):
        if n % first:
            continue
        grid = h.reshape(n // first, first)  # [j, i] = h(j * first + i)
        if np.array_equal(grid, grid[:, :1] + grid[:1, :]):
            rest = _modes(grid[:, 0])
            if rest is not None:
                return [(first, step)] + rest
    return None


def coalesce_mode(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """CuTe's coalesce of one mode: drop size-1 modes, merge neighbours where ``d1 == s0 * d0``."""
    out: list[tuple[int, int]] = []
    for size, stride in pairs:
        if size == 1:
            continue
        if out and stride == out[-1][0] * out[-1][1]:
            out[-1] = (out[-1][0] * size, out[-1][1])
        else:
            out.append((size, stride))
    return out or [(1, 0)]


def _nest(pairs: list[tuple[int, int]]) -> tuple[Nested, Nested]:
    if len(pairs) == 1:
        return pairs[0]
    return tuple(s for s, _ in pairs), tuple(d for _, d in pairs)


def _bit_strides(index: np.ndarray, axis: int) -> list[int]:
    """Per bit of ``axis``: the index step between two held slots that differ in that bit alone (0: none do)."""
    n = index.shape[axis]
    out = []
    for b in range(n.bit_length() - 1):
        lo = np.arange(n)[(np.arange(n) >> b) & 1 == 0]
        a, c = np.take(index, lo, axis=axis), np.take(index, lo + (1 << b), axis=axis)
        both = (a >= 0) & (c >= 0)
        out.append(int((c - a)[both][0]) if both.any() else 0)
    return out


def fit_held(index: np.ndarray) -> CuteLayout:
    """A layout that agrees with ``index`` on its held slots (>= 0); the others are don't-care.

    Thread and value counts must be powers of two: each bit is a mode of size 2 whose stride is read
    from two held slots that differ in that bit alone, 0 where no such pair exists (CuTe's own atoms
    write threads an instruction ignores the same way, e.g. the LDSM source layouts)."""
    index = np.asarray(index, dtype=np.int64)
    held = index >= 0
    for name, n in zip(("thread", "value"), index.shape):
        if n & (n - 1):
            raise CuteError(f"only {int(held.sum())} of {index.size} (thread, value) slots hold a value, and the "
                            f"{name} count {n} is not a power of two")
    ts, vs = _bit_strides(index, 0), _bit_strides(index, 1)
    lay = CuteLayout((_nest(coalesce_mode([(2, d) for d in ts]))[0], _nest(coalesce_mode([(2, d) for d in vs]))[0]),
                     (_nest(coalesce_mode([(2, d) for d in ts]))[1], _nest(coalesce_mode([(2, d) for d in vs]))[1]))
    got = lay.tv(*index.shape)
    bad = np.argwhere(held & (got != index))
    if len(bad):
        t, v = (int(x) for x in bad[0])
        raise CuteError(f"only {int(held.sum())} of {index.size} (thread, value) slots hold a value, and no "
                        f"shape:stride form gives them all: thread {t} value {v} holds {int(index[t, v])}, the "
                        f"strides give {int(got[t, v])}")
    return lay


def fit(index: np.ndarray) -> CuteLayout:
    """The (thread, value) layout of an int64[thread, value] index table, coalesced mode by mode; where only
    some slots hold a value, :func:`fit_held`."""
    index = np.asarray(index, dtype=np.int64)
    if (index < 0).any():
        return fit_held(index)
    if index[0, 0] != 0:
        raise CuteError(f"thread 0 value 0 holds index {int(index[0, 0])}, not 0 (a CuTe layout has no offset)")
    thr, val = index[:, 0], index[0, :]
    sep = thr[:, None] + val[None, :]
    if not np.array_equal(index, sep):
        t, v = np.argwhere(index != sep)[0]
        raise CuteError(f"the index is no sum of a thread part and a value part: thread {t} value {v} holds "
                        f"{int(index[t, v])}, thread {t} value 0 plus thread 0 value {v} give {int(sep[t, v])}")
    parts = []
    for name, h in (("thread", thr), ("value", val)):
        pairs = _modes(h)
        if pairs is None:
            raise CuteError(f"the {name} part {[int(x) for x in h[:16]]}{'...' if len(h) > 16 else ''} "
                            "is no sum of strided digits")
        parts.append(_nest(coalesce_mode(pairs)))
    return CuteLayout((parts[0][0], parts[1][0]), (parts[0][1], parts[1][1]))


def fit_tile(tile: Tile) -> CuteLayout:
    """The CuTe TV layout of ``tile``, or :class:`CuteError` saying why it has none."""
    why = tile.unspecified()
    if why:
        raise CuteError(why)
    return fit(tile.index())


# --- parsing ----------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+)|(?P<sym>[(),:<>])|(?P<word>[A-Za-z_][A-Za-z_0-9:]*))")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip().rstrip(";")
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise CuteError(f"unexpected {text[pos:pos + 12]!r} at character {pos + 1}")
        out.append(m.group("num") or m.group("sym") or m.group("word"))
        pos = m.end()
    return out


def _int_word(word: str) -> int | None:
    """``_4`` (a static integer) -> 4."""
    return int(word[1:]) if re.fullmatch(r"_\d+", word) else None


class _Reader:
    def __init__(self, toks: list[str]):
        self.toks, self.i = toks, 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise CuteError(f"expected {want or 'more'} at token {self.i + 1}, found {tok!r}")
        self.i += 1
        return tok

    def tuple_(self) -> Nested:
        """``(a,b,...)`` or an integer, the print form."""
        tok = self.take()
        if tok == "(":
            items = [self.tuple_()]
            while self.peek() == ",":
                self.take(",")
                items.append(self.tuple_())
            self.take(")")
            return tuple(items) if len(items) > 1 else items[0]
        val = _int_word(tok)
        if val is None:
            try:
                return int(tok)
            except ValueError:
                raise CuteError(f"expected an integer or '(', found {tok!r}") from None
        return val

    def typed(self, kind: str) -> Nested:
        """``Shape<...>``/``Stride<...>`` (or ``_4``, ``Int<4>``), the C++ form."""
        tok = self.take()
        val = _int_word(tok)
        if val is not None:
            return val
        if tok in ("Int", "cute::Int", "C", "cute::C"):
            self.take("<")
            num = int(self.take())
            self.take(">")
            return num
        if tok.split("::")[-1] != kind:
            raise CuteError(f"expected {kind}<...> or _N, found {tok!r}")
        self.take("<")
        items = [self.typed(kind)]
        while self.peek() == ",":
            self.take(",")
            items.append(self.typed(kind))
        self.take(">")
        return tuple(items) if len(items) > 1 else items[0]


def parse(text: str) -> CuteLayout:
    """``shape:stride`` (CuTe's print form, ``_N`` allowed) or ``Layout<Shape<...>,Stride<...>>``."""
    toks = _tokens(text)
    if not toks:
        raise CuteError("empty layout")
    r = _Reader(toks)
    if toks[0].split("::")[-1] == "Layout":
        r.take()
        r.take("<")
        shape = r.typed("Shape")
        r.take(",")
        stride = r.typed("Stride")
        r.take(">")
    else:
        shape = r.tuple_()
        r.take(":")
        stride = r.tuple_()
    if r.peek() is not None:
        raise CuteError(f"unexpected {r.peek()!r} after the layout")
    return CuteLayout(shape, stride)
