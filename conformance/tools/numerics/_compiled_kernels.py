"""numba kernels of compiled.py: model.py's arithmetic on integers, one dot product per row, rows ``lo..hi`` per call
(compiled.py spreads chunks of rows over threads: the kernels release the GIL).

Every function mirrors a step of model.py (named in its docstring); ``plan`` is compiled._float_plan's vector.
Everything is int64 (NumPy's promotion of uint64 with int64 would give float64).  Imported only by compiled.py, and
only where numba is installed."""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types as nbtypes
from numba.core.extending import intrinsic
from numba.cpython.unsafe.numbers import leading_zeros

version = numba.__version__

# plan slots (compiled._float_plan)
_BLOCK, _FRAC, _EXTRA, _OUT_P, _FMODE, _ALIGN, _C_ENTRY, _HAS_FLOOR, _EXP_FLOOR, _OUT_FLUSH, _OVF, _NEGZ = range(12)
_UF_POS, _NANP, _ACC_EMIN, _ACC_EMAX, _TO_D, _PAIRS, _IN_FLUSH, _PLSB = range(12, 20)
_EB, _MB, _BIAS, _FN, _P, _EMIN, _EMAX, _NSB, _NSM, _XEMIN, _TF32, _CONV = range(12)
_A, _B, _C, _D = 24, 36, 48, 60
_LOWEXP = -1000000


@njit(cache=True)
def _bitlen(x):
    return 64 - leading_zeros(np.uint64(x))


@njit(cache=True, inline="always")
def _dec(plan, at, bits, in_flush):
    """(neg, cls, mag, raw) of a float element: cls 0 zero, 1 finite non-zero, 2 inf, 3 NaN (model.decode with
    ``in_subnormals``, ``input_conversion`` for .tf32, and the raw exponent of model.raw_exponent)."""
    bits = _index(plan[at + _TF32], plan[at + _CONV], bits)
    return _decf(plan[at + _EB], plan[at + _MB], plan[at + _BIAS], plan[at + _FN], bits, in_flush)


@njit(cache=True, inline="always")
def _decf(eb, mb, bias, fn, bits, in_flush):
    """_dec of bits already converted: ``eb`` exponent and ``mb`` significand bits, ``fn``: no infinities."""
    emask = (1 << eb) - 1
    mmask = (1 << mb) - 1
    ef = (bits >> mb) & emask
    m = bits & mmask
    neg = (bits >> (eb + mb)) & 1
    if ef == emask and (fn == 0 or m == mmask):
        return neg, 2 if (fn == 0 and m == 0) else 3, 0, 0
    if ef == 0:
        if m == 0 or in_flush:
            return neg, 0, 0, 0  # a flushed subnormal reads as a signed zero
        return neg, 1, m, 1 - bias
    return neg, 1, m | (1 << mb), ef - bias


@njit(cache=True)
def _dec_operand(plan, at, bits, in_flush):
    """An A/B element; ``operand_cvt f16`` (model.operand_format): a subnormal of a narrower exponent range is a
    normal f16 with its own raw exponent (down to XEMIN), the significand shifted to keep the value."""
    neg, cls, mag, raw = _dec(plan, at, bits, in_flush)
    mb = plan[at + _MB]
    if cls == 1 and mag < (1 << mb):
        s = min(mb - (_bitlen(mag) - 1), plan[at + _EMIN] - plan[at + _XEMIN])
        mag <<= s
        raw -= s
    return neg, cls, mag, raw


@njit(cache=True)
def decode_table(plan, at, in_flush):
    """Every element of an operand format decoded (``_dec_operand``), packed: cls | neg << 2 | (raw + 4096) << 3 |
    mag << 16, indexed by its bits (float_dots reads it for 8-bit and widened formats, which never are .tf32)."""
    width = plan[at + _EB] + plan[at + _MB] + 1
    out = np.empty(1 << width, np.int64)
    plan2 = plan.copy()
    plan2[at + _TF32] = 0  # the table is indexed by the converted bits already
    for x in range(1 << width):
        neg, cls, mag, raw = _dec_operand(plan2, at, x, in_flush)
        out[x] = cls | (neg << 2) | ((raw + 4096) << 3) | (mag << 16)
    return out


@njit(cache=True, inline="always")
def _index(tf32, conv, bits):
    """The decode table's index of an operand's container bits (.tf32: converted, then its top 19 bits), without a
    branch (a decode loop without branches is vectorised)."""
    finite = np.int64((bits & 0x7F800000) != 0x7F800000) * tf32
    add = np.int64(conv == 1) * 0x1000 + np.int64(conv == 2) * (0xFFF + ((bits >> 13) & 1))
    return ((bits + add * finite) & 0xFFFFFFFF) >> (13 * tf32)


@njit(cache=True)
def _round_p(neg, mag, exp, p, emin, emax, mode, flush, ovf):
    """(neg, inf, mag, exp): the exact ``(-1)^neg mag 2^exp`` to ``p`` bits within [emin, emax] (model.round_to_format)."""
    if mag == 0:
        return neg, 0, 0, 0
    e = exp + _bitlen(mag) - 1
    q = max(e - (p - 1), emin - (p - 1))
    if q <= exp:
        v = mag << (exp - q)
    else:
        s = q - exp
        if s > 63:
            v, half, sticky = 0, 0, 1
        else:
            v = mag >> s
            half = (mag >> (s - 1)) & 1
            sticky = 1 if (mag & ((1 << (s - 1)) - 1)) != 0 else 0
        up = 0
        if mode == 1:
            up = 1 if half and (sticky or (v & 1)) else 0
        elif mode == 2:
            up = half
        elif mode == 3:
            up = 1 if (not neg) and (half or sticky) else 0
        elif mode == 4:
            up = 1 if neg and (half or sticky) else 0
        v += up
    if v == 0:
        return neg, 0, 0, 0
    top = q + _bitlen(v) - 1
    if flush and top < emin:
        return neg, 0, 0, 0
    if top >= emax + 1:
        to_max = mode == 0 or (mode == 3 and neg) or (mode == 4 and not neg)
        if ovf == 1 or (ovf == 2 and to_max):
            return neg, 0, (1 << p) - 1, emax - p + 1
        return neg, 1, 0, 0
    return neg, 0, v, q


@njit(cache=True, inline="always")
def _round_n(neg, mag, exp, p, emin, emax, mode, flush, ovf):
    """``_round_p`` inlined where the result is a normal number short of D's overflow (a row's common case: no call,
    no test of the flush or overflow rules, which cannot apply there), the rest by ``_round_p`` (called: inlining
    it everywhere doubled the kernel's compile time)."""
    e = exp + _bitlen(mag) - 1
    q = e - (p - 1)
    if mag == 0 or e < emin or e >= emax or q - exp > 62:
        return _round_p(neg, mag, exp, p, emin, emax, mode, flush, ovf)
    if q <= exp:
        return neg, 0, mag << (exp - q), q
    s = q - exp  # 1..62; the top bit of mag stays: v >= 2^(p-1), and v + 1 <= 2^p keeps the top at e + 1 <= emax
    v = mag >> s
    half = (mag >> (s - 1)) & 1
    sticky = np.int64((mag & ((1 << (s - 1)) - 1)) != 0)
    if mode == 1:
        v += half & (sticky | (v & 1))
    elif mode == 2:
        v += half
    elif mode == 3:
        v += (1 - neg) * (half | sticky)
    elif mode == 4:
        v += neg * (half | sticky)
    return neg, 0, v, q


@njit(cache=True, inline="always")
def _uf(uf_pos, r):
    """model.underflow_zero: with ``underflow_sign: positive`` a zero rounded from a non-zero sum is +0."""
    neg, inf, mag, exp = r
    if uf_pos and inf == 0 and mag == 0:
        return 0, 0, 0, 0
    return r


@njit(cache=True, inline="always")
def _block_round(rp, neg, mag, exp):
    """A block's exact sum to out_precision bits by final_rounding in acc_type's range (``rp``: those parameters)."""
    out_p, emin, emax, fmode, flush, ovf, uf_pos = rp
    return _uf(uf_pos, _round_n(neg, mag, exp, out_p, emin, emax, fmode, flush, ovf))


@intrinsic
def _bits_of(typingctx, x):
    """The bits of a float64 as int64 (a bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(nbtypes.int64))

    return nbtypes.int64(nbtypes.float64), codegen


@intrinsic
def _of_bits(typingctx, x):
    """The float64 of int64 bits (a bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(nbtypes.float64))

    return nbtypes.float64(nbtypes.int64), codegen


@njit(cache=True, inline="always")
def _to_double(neg, mag, exp):
    """``(-1)^neg mag 2^exp`` as a float64, exact: mag < 2^53, the scale a power of two built from its bits (no
    libm call) where it is a normal float64."""
    scale = _of_bits((exp + 1023) << 52) if -1022 <= exp <= 1023 else math.ldexp(1.0, exp)
    v = float(mag) * scale
    return -v if neg else v


@njit(cache=True, inline="always")
def _from_double(x):
    """A finite non-zero float64 (never subnormal here) as (neg, mag, exp): its 53-bit significand, read from its
    bits."""
    bits = _bits_of(x)
    return (1 if x < 0 else 0), (bits & 0xFFFFFFFFFFFFF) | (1 << 52), ((bits >> 52) & 0x7FF) - 1075


@njit(cache=True, inline="always")
def _add_round(rp, negz, x, y):
    """model._add (``block_add``): x + y rounded once as a block's sum; float64's sum made round-to-odd by TwoSum's
    error (a 54-bit odd value strictly between the sum and its neighbour toward the error rounds as the exact sum)."""
    a = _to_double(x[0], x[2], x[3])
    b = _to_double(y[0], y[2], y[3])
    s = a + b
    if s == 0.0:
        return (1 if negz and x[0] and y[0] else 0), 0, 0, 0
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    neg, mag, exp = _from_double(s)
    if err != 0.0 and (mag & 1) == 0:
        away = (err > 0.0) == (s > 0.0)  # toward the error: away from zero when it has the sum's sign
        mag = 2 * mag + (1 if away else -1)
        exp -= 1
    return _block_round(rp, neg, mag, exp)


@njit(cache=True, inline="always")
def _encode_d(dp, neg, inf, mag, exp):
    """D's container bits: round to nearest even into D (model._encode, NumPy's cast); ``dp``: D's layout."""
    eb, mb, bias, emin, emax = dp
    sign = neg << (eb + mb)
    infb = sign | (((1 << eb) - 1) << mb)
    if inf:
        return infb
    rn, rinf, rm, re = _round_n(neg, mag, exp, mb + 1, emin, emax, 1, 0, 0)
    if rinf:
        return infb
    if rm == 0:
        return sign
    ln = _bitlen(rm)
    e = re + ln - 1
    if e >= emin:
        m = (rm << (mb - (ln - 1))) if ln - 1 <= mb else (rm >> ((ln - 1) - mb))
        return sign | ((e + bias) << mb) | (m & ((1 << mb) - 1))
    return sign | (rm << (re - (emin - mb)))


@njit(cache=True, inline="always")
def _nan_conv(sb, sm, deb, dmb, bits):
    """A NaN operand (``sb`` container bits, ``sm`` significand bits) as D's quiet NaN with its sign and payload
    (model.nan_convert)."""
    mant = bits & ((1 << sm) - 1)
    mant = (mant << (dmb - sm)) if dmb >= sm else (mant >> (sm - dmb))
    return (((bits >> (sb - 1)) & 1) << (deb + dmb)) | (((1 << deb) - 1) << dmb) | mant | (1 << (dmb - 1))


@njit(cache=True)
def _align(mag, s, align):
    """A term ``mag 2^lsb`` on the grid, ``s = lsb + frac + extra - anchor`` (model._block's ``align``)."""
    if align == 0:  # truncate, without a branch (random exponents put s on either side of 0): mag < 2^62
        return (mag << max(s, 0)) >> min(max(-s, 0), 63)
    if s >= 0:
        return mag << s
    r = -s
    if align == 2:  # sticky: cut at the grid, then one more bit, set where anything below it was cut
        r += 1
        if r >= 63:
            return 1 if mag != 0 else 0
        return ((mag >> r) << 1) | (1 if (mag & ((1 << r) - 1)) != 0 else 0)
    if r >= 63:
        return 0
    q = mag >> r
    if align == 1:
        rem = mag & ((1 << r) - 1)
        half = 1 << (r - 1)
        if rem > half or (rem == half and (q & 1)):
            q += 1
    return q


@njit(cache=True)
def _halves(lab, li, k, nh, order):
    """The k_order halves of row ``li`` as one column list in ``order`` (in column order); returns the first's length."""
    if nh == 1:
        for j in range(k):
            order[j] = j
        return k
    h0 = 0
    for j in range(k):
        if lab[li, j] % 4 < 2:
            order[h0] = j
            h0 += 1
    h1 = h0
    for j in range(k):
        if lab[li, j] % 4 >= 2:
            order[h1] = j
            h1 += 1
    return h0


@njit(cache=True, inline="always")
def _decb(eb, mb, bias, bits, in_flush):
    """(neg, mag, raw, special) of a format with infinities (f16, bf16, tf32's 19 bits) without a branch: a zero and
    a flushed subnormal have mag 0; an Inf or NaN (``special``) mag 0 too (float_rows takes its row aside)."""
    emask = (1 << eb) - 1
    ef = (bits >> mb) & emask
    normal = np.int64(ef != 0)
    special = ef == emask
    keep = (normal | (1 - in_flush)) & (1 - np.int64(special))
    return (bits >> (eb + mb)) & 1, ((bits & ((1 << mb) - 1)) | (normal << mb)) * keep, max(ef, 1) - bias, special


@njit(cache=True, inline="always")
def _elem(tab, table, eb, mb, bias, tf32, conv, bits, in_flush):
    """(neg, mag, raw, special) of an A/B element: by table (8-bit and widened formats) or by ``_decb``."""
    if tab:
        e = table[bits]
        return (e >> 2) & 1, e >> 16, ((e >> 3) & 0x1FFF) - 4096, (e >> 1) & 1
    neg, mag, raw, special = _decb(eb, mb, bias, _index(tf32, conv, bits), in_flush)
    return neg, mag, raw, np.int64(special)


@njit(cache=True, inline="always")
def _row_products(a_tab, b_tab, i, a, b, a_mask, b_mask, ta, tb, dec, pmag, praw, pneg):
    """Row ``i``'s products into ``pmag, praw, pneg`` (column order); (whether it holds an Inf or NaN operand, the
    largest raw exponent of a non-zero product, whether every product is negative: a block's anchor and zero sign
    where the row is one block of finite products).  ``a_tab, b_tab`` are literal at each call (float_rows): the
    loop has no branch and is vectorised."""
    a_eb, a_mb, a_bias, a_tf32, a_conv, b_eb, b_mb, b_bias, b_tf32, b_conv, in_flush = dec
    special = 0
    anchor = _LOWEXP
    allneg = 1
    for j in range(a.shape[1]):
        xn, xm, xr, xs = _elem(a_tab, ta, a_eb, a_mb, a_bias, a_tf32, a_conv, np.int64(a[i, j] & a_mask), in_flush)
        yn, ym, yr, ys = _elem(b_tab, tb, b_eb, b_mb, b_bias, b_tf32, b_conv, np.int64(b[i, j] & b_mask), in_flush)
        mag, raw, neg = xm * ym, xr + yr, xn ^ yn
        pmag[j] = mag
        praw[j] = raw
        pneg[j] = neg
        special |= xs | ys
        anchor = max(anchor, raw if mag != 0 else _LOWEXP)
        allneg &= neg
    return special, anchor, allneg


@njit(cache=True, inline="always")
def _cls(tab, table, bits, plan, at, in_flush):
    """An A/B element's class (0 zero, 1 finite, 2 Inf, 3 NaN): rows with an Inf or NaN operand only."""
    x = np.int64(bits)
    return table[x] & 3 if tab else _dec(plan, at, x, in_flush)[1]


@njit(cache=True, inline="always")
def _fin_of(plan, nan_bits):
    """What ``_finish`` reads of a plan, as scalars."""
    dp = (plan[_D + _EB], plan[_D + _MB], plan[_D + _BIAS], plan[_D + _EMIN], plan[_D + _EMAX])
    return (plan[_TO_D], plan[_C_ENTRY] == 2, plan[_UF_POS], plan[_D + _P], dp, plan[_OUT_FLUSH], plan[_OVF],
            plan[_NEGZ], plan[_NANP], np.int64(nan_bits), plan[_C + _NSB], plan[_C + _NSM])


@njit(cache=True, inline="always")
def _finish(fin, acc, pinf, ninf, nan, found, payload, cc, cn, c0, cbits):
    """D's bits of a row whose blocks are done (``acc``: the last one's result): model._to_d, add_rne's final add of
    C, D's encoding, and the row's infinities and NaN (``found``: ``payload`` is the first NaN operand's)."""
    to_d, late, uf_pos, d_p, dp, out_flush, ovf, negz = fin[0], fin[1], fin[2], fin[3], fin[4], fin[5], fin[6], fin[7]
    nan = nan or (pinf and ninf)
    if to_d and acc[2] != 0:  # model._to_d: the last block's result to D by RNE
        acc = _uf(uf_pos, _round_n(acc[0], acc[2], acc[3], d_p, dp[3], dp[4], 1, out_flush, ovf))
        if acc[1]:
            if not (pinf or ninf):
                pinf = acc[0] == 0
                ninf = acc[0] == 1
            acc = (0, 0, 0, 0)
    if late:  # the halves' D meets C in one float64 addition, rounded to nearest even in D
        pinf = pinf or (cc == 2 and cn == 0)
        ninf = ninf or (cc == 2 and cn == 1)
        nan = nan or (pinf and ninf)
        sd = _to_double(acc[0], acc[2], acc[3]) + _to_double(c0[0], c0[2], c0[3])
        sb = _bits_of(sd)
        if dp[3] <= ((sb >> 52) & 0x7FF) - 1023 < dp[4] and not (pinf or ninf or nan):
            return _d_of_double(dp, d_p, sb)
        if sd == 0.0:
            neg0 = negz and acc[0] == 1 and c0[0] == 1 and not uf_pos
            acc = (1 if neg0 else 0, 0, 0, 0)
        else:
            sn, sm, se = _from_double(sd)
            acc = _uf(uf_pos, _round_n(sn, sm, se, d_p, dp[3], dp[4], 1, out_flush, ovf))
    if pinf or ninf or nan:
        return _special_d(fin, ninf, nan, found, payload, cc, cbits)
    return _encode_d(dp, acc[0], acc[1], acc[2], acc[3])


@njit(cache=True, inline="always")
def _d_of_double(dp, d_p, bits):
    """D's container bits of a float64 (``bits``) whose value lies in D's normal range, at least one binade short of
    D's overflow: its bits rounded to nearest even at D's precision (a carry moves into the exponent), then D's
    exponent bias; the same as ``_from_double``, ``_round_n`` and ``_encode_d``, in a few integer operations."""
    drop = 53 - d_p
    m = bits & _ABS
    m = (m + ((1 << (drop - 1)) - 1) + ((m >> drop) & 1)) >> drop
    return (m - ((1023 - dp[2]) << dp[1])) | (((bits >> 63) & 1) << (dp[0] + dp[1]))


@njit(cache=True)
def _special_d(fin, ninf, nan, found, payload, cc, cbits):
    """D's bits of a row that gives a NaN (``nan``) or else an infinity (``ninf``: -Inf), as _finish reads them:
    called, not inlined (a row's rare end)."""
    dp, nanp, nb, c_nsb, c_nsm = fin[4], fin[8], fin[9], fin[10], fin[11]
    if nan:
        if nanp == 0:
            return nb
        if nanp == 1:
            return _nan_conv(c_nsb, c_nsm, dp[0], dp[1], cbits) if cc == 3 else (payload if found else nb)
        return payload if found else (_nan_conv(c_nsb, c_nsm, dp[0], dp[1], cbits) if cc == 3 else nb)
    return (((1 << dp[0]) - 1) << dp[1]) | (np.int64(ninf) << (dp[0] + dp[1]))


@njit(cache=True, inline="always")
def _fused_round(rp, r0, total, cneg, cmag, cexp, anchor, fe, align):
    """A block's end (model._block): the running value ``(-1)^cneg cmag 2^cexp`` aligned onto the grid of ``anchor``
    (``fe``: frac_bits + the sticky bit) beside the products' aligned ``total``, the sum rounded; ``r0`` where it is
    zero."""
    if cmag != 0:
        v = _align(cmag, cexp + fe - anchor, align)
        total += -v if cneg else v
    if total != 0:
        return _block_round(rp, 1 if total < 0 else 0, abs(total), anchor - fe)
    return r0


@njit(cache=True, inline="always")
def _carry_inf(r, pinf, ninf):
    """(running value, pinf, ninf) after a block's result ``r``: an overflow to an infinity is carried unless the
    row already holds one (model._carry_inf)."""
    if r[1]:
        if not (pinf or ninf):
            pinf = r[0] == 0
            ninf = r[0] == 1
        return (0, 0, 0, 0), pinf, ninf
    return r, pinf, ninf


_PMAG, _PNINF, _PKEY, _PNEG, _PNAN, _PPINF = 0x1FFFFF, 21, 22, 29, 30, 31  # compiled._product_table's fields


@njit(cache=True, inline="always")
def _ptab_scan(ptab, a, b, i, order, ent):
    """Row ``i``'s product-table entries in block order (``order``: the column of each position): one load each.
    Indices of a runtime range are unsigned here and below: numba tests a signed index for wraparound (a negative
    index counts from the end), which kept these loops from loading contiguous entries as vectors (e4m3 x e5m2 ->
    f32, K = 32, one thread: 152 -> 121 ns a dot)."""
    for jj in range(ent.shape[0]):
        j = np.uint64(order[jj])
        ent[jj] = np.int64(ptab[((a[i, j] & np.uint64(0xFF)) << np.uint64(8)) | (b[i, j] & np.uint64(0xFF))])


@njit(cache=True, inline="always")
def _ptab_half(ent, lo, hi):
    """(largest exponent key (anchor + 64; 0: no non-zero product), AND (every product negative), OR (a NaN or
    infinite product)) of the entries ``lo..hi``: contiguous, vectorised."""
    m, n, q = 0, -1, 0
    for j in range(lo, hi):
        e = ent[np.uint64(j)]
        m = max(m, (e >> _PKEY) & 127)
        n &= e
        q |= e
    return m, n, q


@njit(cache=True, inline="always")
def _ptab_sum(ent, lo, hi, shift, align):
    """The aligned sum of entries ``lo..hi`` (model._block's ``align``), each on the grid at its exponent key +
    ``shift``."""
    total = 0
    if align == 0:  # the test outside the loop: inside, it leaves the loop unvectorised (1.6x slower)
        for j in range(lo, hi):
            e = ent[np.uint64(j)]
            s = ((e >> _PKEY) & 127) + shift
            v = ((e & _PMAG) << max(s, 0)) >> min(max(-s, 0), 63)
            sg = -((e >> _PNEG) & 1)
            total += (v ^ sg) - sg
    else:
        for j in range(lo, hi):
            e = ent[np.uint64(j)]
            v = _align(e & _PMAG, ((e >> _PKEY) & 127) + shift, align)
            sg = -((e >> _PNEG) & 1)
            total += (v ^ sg) - sg
    return total


@njit(cache=True, inline="always")
def _takes_ptab(plan, blocks, ptab):
    """Whether ptab_rows computes the rows of this plan: a product table, each k_order half one block, and no block
    added to C by float64 (block_add, late)."""
    c_entry = plan[_C_ENTRY]
    return (ptab.shape[0] > 1 and c_entry != 1 and c_entry != 3 and blocks[0] == 1
            and (plan[_PAIRS] == 0 or blocks[1] == 1))


@njit(cache=True, nogil=True)
def ptab_rows(lo, hi, plan, blocks, nan_bits, ptab, a, b, c, lab, out, c_mask, pending):
    """float_rows of operands that are both 8-bit where each k_order half is one block (``_takes_ptab``), from the
    product table: a row read once from it into block order (every layout of the halves through one column list,
    ``_halves``: one loop, not one per layout), then each half's anchor, zero sign and non-finite products and its
    aligned sum from its contiguous entries.  A row whose D takes a NaN operand's payload is left to float_rows:
    its index goes to ``pending``; returns how many."""
    k = a.shape[1]
    in_flush, nanp, c_entry = plan[_IN_FLUSH], plan[_NANP], plan[_C_ENTRY]
    frac, extra, align, plsb = plan[_FRAC], plan[_EXTRA], plan[_ALIGN], plan[_PLSB]
    has_floor, exp_floor, negz, acc_emin = plan[_HAS_FLOOR], plan[_EXP_FLOOR], plan[_NEGZ], plan[_ACC_EMIN]
    rp = (plan[_OUT_P], acc_emin, plan[_ACC_EMAX], plan[_FMODE], plan[_OUT_FLUSH], plan[_OVF], plan[_UF_POS])
    fin = _fin_of(plan, nan_bits)
    c_eb, c_mb, c_bias, c_fn = plan[_C + _EB], plan[_C + _MB], plan[_C + _BIAS], plan[_C + _FN]
    c_p, c_emin0 = plan[_C + _P], plan[_C + _EMIN]
    late = c_entry == 2
    shift = frac + extra - plsb - 64  # a product's grid shift is its exponent key + shift - anchor
    nh = 2 if plan[_PAIRS] else 1
    dense = lab.shape[0] == 1
    order = np.empty(k, np.int64)  # the column of each position in block order
    ent = np.empty(k, np.int64)  # a row's product-table entries in block order
    h0 = _halves(lab, 0, k, nh, order)
    npend = 0
    for i in range(lo, hi):
        if not dense and nh == 2:  # one half: block order is column order, listed once
            h0 = _halves(lab, i, k, nh, order)
        _ptab_scan(ptab, a, b, i, order, ent)
        m0, n0, q0 = _ptab_half(ent, 0, h0)
        m1, n1, q1 = _ptab_half(ent, h0, k)
        o = q0 | q1
        if nanp != 0 and (o >> _PNAN) & 1:
            pending[npend] = i
            npend += 1
            continue
        cbits = np.int64(c[i] & c_mask)
        cn, cc, cm, cr = _decf(c_eb, c_mb, c_bias, c_fn, cbits, in_flush)
        nan = cc == 3 or (o >> _PNAN) & 1 == 1
        c0 = (cn if cc <= 1 else 0, 0, cm if cc == 1 else 0, (cr - (c_p - 1)) if cc == 1 else 0)
        acc = (0, 0, 0, 0) if late else c0
        emin = acc_emin if late else c_emin0
        pinf = (not late) and cc == 2 and cn == 0  # C's infinity enters with C (add_rne: at the final add)
        ninf = (not late) and cc == 2 and cn == 1
        for h in range(nh):  # model._block of each half, the running value fused in
            q = q0 if h == 0 else q1  # the half's infinite products (model._carry_inf)
            pinf = pinf or (q >> _PPINF) & 1 == 1
            ninf = ninf or (q >> _PNINF) & 1 == 1
            if pinf or ninf or nan:  # D is an infinity or a NaN whatever the sums (model._carry_inf): none taken
                continue
            cneg, cmag, cexp = acc[0], acc[2], acc[3]
            key = m0 if h == 0 else m1
            anchor = key - 64 if key != 0 else _LOWEXP
            cnz = cmag != 0
            if cnz:
                anchor = max(anchor, max(cexp + _bitlen(cmag) - 1, emin))
            if has_floor:
                anchor = max(anchor, exp_floor)
            if anchor == _LOWEXP:
                anchor = 0
            total = _ptab_sum(ent, 0 if h == 0 else h0, h0 if h == 0 else k, shift - anchor, align)
            allneg = ((n0 if h == 0 else n1) >> _PNEG) & 1
            r0 = (1 if (negz and key == 0 and not cnz and allneg and cneg) else 0, 0, 0, 0)
            r = _fused_round(rp, r0, total, cneg, cmag, cexp, anchor, frac + extra, align)
            acc, pinf, ninf = _carry_inf(r, pinf, ninf)
            emin = acc_emin
        out[i] = np.uint64(_finish(fin, acc, pinf, ninf, nan, False, 0, cc, cn, c0, cbits))
    return npend


@njit(cache=True, nogil=True)
def float_rows(lo, hi, plan, blocks, nan_bits, ta, tb, ptab, a, b, c, lab, out, a_mask, b_mask, c_mask):
    """model._float_dot, rows ``lo..hi`` (``lab``: the k labels of each row, or one row for all; container bits
    ``uint64``, masked here as model.py's decoding masks them).

    Each row: one pass decodes the products (a table for 8-bit and widened formats) into integer significands and
    raw exponents; a row holding an Inf or NaN operand takes a second pass for the products' classes and the NaN
    payload; then the blocks.  One function body: a helper taking an array would cost reference counting per row."""
    k = a.shape[1]
    # every parameter read once, as scalars (helpers take scalars and tuples: nothing is reference counted per row)
    in_flush, nanp, c_entry, bsz = plan[_IN_FLUSH], plan[_NANP], plan[_C_ENTRY], plan[_BLOCK]
    frac, extra, align, plsb = plan[_FRAC], plan[_EXTRA], plan[_ALIGN], plan[_PLSB]
    has_floor, exp_floor, negz, uf_pos = plan[_HAS_FLOOR], plan[_EXP_FLOOR], plan[_NEGZ], plan[_UF_POS]
    acc_emin, out_flush, ovf = plan[_ACC_EMIN], plan[_OUT_FLUSH], plan[_OVF]
    rp = (plan[_OUT_P], acc_emin, plan[_ACC_EMAX], plan[_FMODE], out_flush, ovf, uf_pos)
    dp = (plan[_D + _EB], plan[_D + _MB], plan[_D + _BIAS], plan[_D + _EMIN], plan[_D + _EMAX])
    a_tf32, a_conv, b_tf32, b_conv = plan[_A + _TF32], plan[_A + _CONV], plan[_B + _TF32], plan[_B + _CONV]
    a_nsb, a_nsm, b_nsb, b_nsm = plan[_A + _NSB], plan[_A + _NSM], plan[_B + _NSB], plan[_B + _NSM]
    c_p, c_emin0 = plan[_C + _P], plan[_C + _EMIN]
    c_eb, c_mb, c_bias, c_fn = plan[_C + _EB], plan[_C + _MB], plan[_C + _BIAS], plan[_C + _FN]
    a_eb, a_mb, a_bias = plan[_A + _EB], plan[_A + _MB], plan[_A + _BIAS]  # no .e4m3 here: it decodes by table
    b_eb, b_mb, b_bias = plan[_B + _EB], plan[_B + _MB], plan[_B + _BIAS]
    # 8-bit formats and widened ones (operand_cvt) decode by table (it stays in L1); wider ones by arithmetic (a
    # 64K-entry table misses the caches on random bits)
    a_tab = a_eb + a_mb < 8 or plan[_A + _XEMIN] != plan[_A + _EMIN]
    b_tab = b_eb + b_mb < 8 or plan[_B + _XEMIN] != plan[_B + _EMIN]
    late, chain = c_entry == 2, c_entry == 3
    shift0 = frac + extra - plsb  # a product's grid shift is its raw exponent + shift0 - anchor
    nh = 2 if plan[_PAIRS] else 1
    dense = lab.shape[0] == 1  # one order of the columns for every row: the halves listed once
    pneg = np.empty(k, np.int64)
    pcls = np.empty(k, np.int64)  # rows with an Inf or NaN operand only: 0 finite, 2 +Inf, 4 -Inf, 3 NaN
    pmag = np.empty(k, np.int64)
    praw = np.empty(k, np.int64)
    order = np.empty(k, np.int64)
    natural = nh == 1  # block order is column order
    if natural:
        bmag, braw, bneg = pmag, praw, pneg
    else:
        bmag, braw, bneg = np.empty(k, np.int64), np.empty(k, np.int64), np.empty(k, np.int64)
    dec = (a_eb, a_mb, a_bias, a_tf32, a_conv, b_eb, b_mb, b_bias, b_tf32, b_conv, in_flush)
    one_block = nh == 1 and blocks[0] == 1  # every product of a row in one block
    h0 = _halves(lab, 0, k, nh, order) if dense else 0
    fin = _fin_of(plan, nan_bits)
    rows, pending = hi - lo, np.empty(0, np.int64)
    use_ptab = _takes_ptab(plan, blocks, ptab)
    if use_ptab:  # the rows ptab_rows leaves
        pending = np.empty(hi - lo, np.int64)
        rows = ptab_rows(lo, hi, plan, blocks, nan_bits, ptab, a, b, c, lab, out, c_mask, pending)
    for ii in range(rows):
        i = pending[ii] if use_ptab else lo + ii
        li = 0 if dense else i
        cbits = np.int64(c[i] & c_mask)
        if not dense:
            h0 = _halves(lab, li, k, nh, order)
        # the products: exact significands and raw exponents (0: zero, non-finite); one loop per way of decoding
        # A and B, each without a branch (two loop-invariant tests in one loop leave it unvectorised: 3.6x slower)
        if a_tab and b_tab:
            special, row_anchor, row_allneg = _row_products(True, True, i, a, b, a_mask, b_mask, ta, tb, dec, pmag, praw,
                                                            pneg)
        elif a_tab:
            special, row_anchor, row_allneg = _row_products(True, False, i, a, b, a_mask, b_mask, ta, tb, dec, pmag, praw,
                                                            pneg)
        elif b_tab:
            special, row_anchor, row_allneg = _row_products(False, True, i, a, b, a_mask, b_mask, ta, tb, dec, pmag, praw,
                                                            pneg)
        else:
            special, row_anchor, row_allneg = _row_products(False, False, i, a, b, a_mask, b_mask, ta, tb, dec, pmag, praw,
                                                            pneg)
        if not natural:  # into block order (a separate loop: a scattering store above would not be vectorised)
            for jj in range(k):
                j = order[jj]
                bmag[jj], braw[jj], bneg[jj] = pmag[j], praw[j], pneg[j]
        cn, cc, cm, cr = _decf(c_eb, c_mb, c_bias, c_fn, cbits, in_flush)
        nan = cc == 3
        found = False
        payload = 0
        pinf = cc == 2 and cn == 0
        ninf = cc == 2 and cn == 1
        if special:  # each product's class (block order); the first NaN operand among a0, b0, a1, b1, ... as D's NaN
            for jj in range(k):
                j = order[jj]
                xc, yc = _cls(a_tab, ta, a[i, j] & a_mask, plan, _A, in_flush), _cls(b_tab, tb, b[i, j] & b_mask, plan, _B, in_flush)
                if xc == 3 or yc == 3 or (xc == 2 and yc == 0) or (xc == 0 and yc == 2):
                    pcls[jj] = 3
                    nan = True
                elif xc == 2 or yc == 2:
                    pcls[jj] = 2 + 2 * bneg[jj]
                    pinf = pinf or bneg[jj] == 0
                    ninf = ninf or bneg[jj] == 1
                else:
                    pcls[jj] = 0
                if pcls[jj] != 0:
                    bneg[jj] = 0  # a non-finite product counts as +0 in a block's zero sign
            for j in range(k if nanp != 0 else 0):
                aij, bij = np.int64(a[i, j] & a_mask), np.int64(b[i, j] & b_mask)
                if _cls(a_tab, ta, aij, plan, _A, in_flush) == 3:
                    found, payload = True, _nan_conv(a_nsb, a_nsm, dp[0], dp[1], aij)
                    break
                if _cls(b_tab, tb, bij, plan, _B, in_flush) == 3:
                    found, payload = True, _nan_conv(b_nsb, b_nsm, dp[0], dp[1], bij)
                    break
        nan = nan or (pinf and ninf)
        c0 = (cn if cc <= 1 else 0, 0, cm if cc == 1 else 0, (cr - (c_p - 1)) if cc == 1 else 0)
        if late:
            acc = (0, 0, 0, 0)
            emin = acc_emin
        else:
            acc = c0
            emin = c_emin0
        if not chain:  # the infinities the blocks carry: C's enter with C (add_rne: at the final add)
            pinf = (not late) and cc == 2 and cn == 0
            ninf = (not late) and cc == 2 and cn == 1
        for h in range(nh):
            hlo = 0 if h == 0 else h0
            hhi = h0 if h == 0 else k
            for bi in range(blocks[h]):
                j0 = min(hlo + bi * bsz, hhi)
                j1 = min(hlo + bi * bsz + bsz, hhi)
                # model._block: the products order[j0:j1] (and the running value when fused), aligned, summed
                # exactly, rounded to out_precision bits; block_add: the block alone (C = -0), then one add
                if chain:
                    cneg, cmag, cexp, c_emin, fused, lateb = 1, 0, 0, acc_emin, True, False
                else:
                    if special:  # a block holding an infinite product gives it (model._carry_inf below)
                        for j in range(j0, j1):
                            q = pcls[j]
                            pinf = pinf or q == 2
                            ninf = ninf or q == 4
                    cneg, cmag, cexp, c_emin = acc[0], acc[2], acc[3], emin
                    fused, lateb = c_entry != 1, c_entry == 1
                if one_block and not special:  # read with the products
                    anchor, allneg = row_anchor, row_allneg
                else:
                    anchor = _LOWEXP
                    allneg = 1
                    for j in range(j0, j1):
                        anchor = max(anchor, braw[j] if bmag[j] != 0 else _LOWEXP)
                        allneg &= bneg[j]  # a non-finite product counts as +0
                anyp = anchor != _LOWEXP
                cnz = cmag != 0
                if fused and cnz:
                    anchor = max(anchor, max(cexp + _bitlen(cmag) - 1, c_emin))
                if has_floor:
                    anchor = max(anchor, exp_floor)
                if anchor == _LOWEXP:
                    anchor = 0
                total = 0
                if align == 0:  # truncate, without a branch: every product's significand is below 2^22
                    for j in range(j0, j1):
                        s = braw[j] + shift0 - anchor
                        v = (bmag[j] << max(s, 0)) >> min(max(-s, 0), 63)
                        sg = -bneg[j]
                        total += (v ^ sg) - sg
                else:
                    for j in range(j0, j1):
                        v = _align(bmag[j], braw[j] + shift0 - anchor, align)
                        total += -v if bneg[j] else v
                zneg = 1 if (negz and not anyp and not cnz and allneg and cneg) else 0
                r = (zneg, 0, 0, 0)
                if lateb:
                    sd = _to_double(1 if total < 0 else 0, abs(total), anchor - frac - extra) + _to_double(cneg, cmag, cexp)
                    if sd != 0.0:
                        sn, sm, se = _from_double(sd)
                        r = _block_round(rp, sn, sm, se)
                else:
                    r = _fused_round(rp, r, total, cneg, cmag, cexp, anchor, frac + extra, align)
                if chain:  # an overflowed sum is an Inf each later add meets (Inf + -Inf gives NaN)
                    if r[1]:
                        pinf = pinf or r[0] == 0
                        ninf = ninf or r[0] == 1
                        r = (0, 0, 0, 0)
                    acc = _add_round(rp, negz, acc, r)
                    if acc[1]:
                        pinf = pinf or acc[0] == 0
                        ninf = ninf or acc[0] == 1
                        acc = (0, 0, 0, 0)
                else:  # a block without an infinite term may overflow to one
                    acc, pinf, ninf = _carry_inf(r, pinf, ninf)
                emin = acc_emin
        out[i] = np.uint64(_finish(fin, acc, pinf, ninf, nan, found, payload, cc, cn, c0, cbits))


# ---------------------------------------------------------------------------
# integer and .b1
# ---------------------------------------------------------------------------


@njit(cache=True)
def _sext(x, bits, signed):
    if signed and (x >> (bits - 1)) & 1:
        return x - (1 << bits)
    return x


@njit(cache=True, inline="always")
def _s32_end(acc, cbits, satfinite):
    """D's bits of an integer or .b1 row: the exact sum plus C, wrapped to s32 or clamped (``.satfinite``)."""
    acc += _sext(np.int64(cbits & np.uint64(0xFFFFFFFF)), 32, 1)
    if satfinite:
        acc = min(max(acc, -2147483648), 2147483647)
    return np.uint64(acc & 0xFFFFFFFF)


@njit(cache=True, nogil=True)
def int_rows(lo, hi, a_bits, a_signed, b_bits, b_signed, bitop, satfinite, a, b, c, out):
    """model._int_dot: the exact sum (xor/and counts for .b1), plus C, wrapped to s32 or clamped (``.satfinite``)."""
    k = a.shape[1]
    a_mask, b_mask = np.uint64((1 << a_bits) - 1), np.uint64((1 << b_bits) - 1)
    for i in range(lo, hi):
        acc = 0
        for j in range(k):
            x = _sext(np.int64(a[i, j] & a_mask), a_bits, a_signed)
            y = _sext(np.int64(b[i, j] & b_mask), b_bits, b_signed)
            if bitop == 1:
                acc += x ^ y
            elif bitop == 2:
                acc += x & y
            else:
                acc += x * y
        out[i] = _s32_end(acc, c[i], satfinite)


@intrinsic
def _popc(typingctx, x):
    """The number of set bits of a uint64 (LLVM's llvm.ctpop.i64), as int64."""
    def codegen(context, builder, signature, args):
        i64 = context.get_value_type(nbtypes.uint64)
        fn = builder.module.declare_intrinsic("llvm.ctpop", [i64], ir.FunctionType(i64, [i64]))
        return builder.call(fn, args)

    return nbtypes.int64(nbtypes.uint64), codegen


@njit(cache=True, nogil=True)
def b1_rows(lo, hi, k, bitop, satfinite, a, b, c, out):
    """model._int_dot of .b1 operands packed 64 to a word (formats.pack_words): the popcount of each word's xor
    (``bitop`` 1) or and (2), the bits past ``k`` masked off, plus C.  A dot of K = 256 reads 64 bytes, not the
    4 KB of one container per element."""
    full = k // 64
    last = (np.uint64(1) << np.uint64(k % 64)) - np.uint64(1)  # the last word's elements (k % 64 of them)
    tail = k % 64 != 0
    for i in range(lo, hi):
        acc = 0
        if bitop == 1:  # one loop per operation: a loop-invariant test inside would leave it unvectorised
            for j in range(full):
                acc += _popc(a[i, j] ^ b[i, j])
            if tail:
                acc += _popc((a[i, full] ^ b[i, full]) & last)
        else:
            for j in range(full):
                acc += _popc(a[i, j] & b[i, j])
            if tail:
                acc += _popc(a[i, full] & b[i, full] & last)
        out[i] = _s32_end(acc, c[i], satfinite)


# ---------------------------------------------------------------------------
# f64
# ---------------------------------------------------------------------------


@intrinsic
def _fma(typingctx, x, y, z):
    """IEEE fused multiply-add rounded to nearest even (LLVM's llvm.fma.f64)."""
    sig = nbtypes.float64(nbtypes.float64, nbtypes.float64, nbtypes.float64)

    def codegen(context, builder, signature, args):
        dbl = context.get_value_type(nbtypes.float64)
        fn = builder.module.declare_intrinsic("llvm.fma", [dbl], ir.FunctionType(dbl, [dbl, dbl, dbl]))
        return builder.call(fn, args)

    return sig, codegen


@njit(cache=True)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


_ABS = 0x7FFFFFFFFFFFFFFF
_INF = 0x7FF0000000000000
_QUIET = 1 << 51


@njit(cache=True, inline="always")
def _err(x, y, v, r):
    """A float64 whose sign is that of ``x*y + v - r`` (0: exact), ``r`` the RNE FMA: ErrFma (Boldo and Muller:
    r1 + r2 + r3 = x*y + v exactly, r2 = RN(r2 + r3)), exact where none of its steps underflows or overflows."""
    p = x * y
    u2 = _fma(x, y, -p)
    a1, a2 = _two_sum(v, u2)
    b1, b2 = _two_sum(p, a1)
    return ((b1 - r) + b2) + a2


@njit(cache=True, inline="always")
def _directed(r, err, x, y, v, mode):
    """The RNE result ``r`` moved to ``mode``'s side of the exact sum (``err``: the sign of exact - r), with IEEE's
    sign of an exact zero sum (model._zero_sum: -0 under rd unless the terms are zeros of one sign)."""
    if err == 0.0:
        if r == 0.0 and mode == 4:
            zeros_only = (x == 0.0 or y == 0.0) and v == 0.0
            if not (zeros_only and (_bits_of(x) ^ _bits_of(y)) >= 0 and _bits_of(v) >= 0):
                return -0.0
        return r
    # r is not zero here (an inexact sum rounds to zero only in a subnormal range _fma_dir scales away): its
    # neighbour from its bits, one less in the magnitude where the exact sum lies toward zero (err's sign opposite
    # r's), one more away from it; no branch (the side is a coin toss on random rows: a branch would mispredict)
    rb = _bits_of(r)
    toward_zero = np.int64((_bits_of(err) ^ rb) < 0)
    if mode == 0:
        return _of_bits(rb - toward_zero)
    # ru moves when the error is positive, rd when negative: toward zero or away from it as err's sign says
    moves = np.int64(err > 0.0) if mode == 3 else np.int64(err < 0.0)
    return _of_bits(rb + moves * (1 - 2 * toward_zero))


_TINY = 2.0 ** -200  # stands for a term more than 900 binades below the other: a sticky bit of the same sign


@njit(cache=True, inline="always")
def _fma_dir(x, y, v, mode):
    """``x*y + v`` (all finite) correctly rounded under ``mode`` (0 rz, 1 rne, 3 ru, 4 rd), every input: the RNE FMA
    and the sign of its error (``_err``) where nothing can underflow or overflow, else ``_fma_dir_scaled``."""
    r = _fma(x, y, v)
    if mode == 1:  # IEEE's FMA is model.f64_round's RNE everywhere: subnormal results, overflow to Inf, zero signs
        return r
    p = x * y
    if x == 0.0 or y == 0.0 or not (math.isinf(r) or abs(p) > 2.0 ** 1000 or abs(v) > 2.0 ** 1000
                                    or (r != 0.0 and abs(r) < 2.0 ** -960) or abs(p) < 2.0 ** -960):
        return _directed(r, _err(x, y, v, r), x, y, v, mode)
    return _fma_dir_scaled(x, y, v, mode)


@njit(cache=True)
def _fma_dir_scaled(x, y, v, mode):
    """``_fma_dir`` where the operands sit near the ends of the range: the same in a scaled copy: the larger of the product and ``v`` scaled to about 1, so nothing underflows or overflows, a term
    more than 900 binades below it replaced by a tiny one of its sign (it only tells which side of a 53-bit value
    the sum lies); the directed 53-bit result is then scaled back with the same directed rounding onto the
    subnormal grid, or to the overflow value of ``mode`` (a directed rounding of a directed rounding onto a
    coarser grid is the one rounding)."""
    fx, ex = math.frexp(x)
    fy, ey = math.frexp(y)
    top = ex + ey
    ev = 0
    if v != 0.0:
        fv, ev = math.frexp(v)
        top = max(top, ev)
    if ex + ey - top < -900:
        xs, ys = math.copysign(_TINY, fx), math.copysign(1.0, fy)
    else:
        xs, ys = fx, math.ldexp(fy, ex + ey - top)
    vs = v
    if v != 0.0:
        vs = math.copysign(_TINY, v) if ev - top < -900 else math.ldexp(fv, ev - top)
    rs = _fma(xs, ys, vs)
    d = _directed(rs, _err(xs, ys, vs, rs), x, y, v, mode)
    if d == 0.0:
        return d
    fd, ed = math.frexp(d)
    e = ed + top  # |result| in [2^(e-1), 2^e)
    neg = d < 0.0
    if e > 1024:  # past the largest finite: Inf, or the largest finite where mode rounds toward zero
        big = np.inf if (mode == 3 and not neg) or (mode == 4 and neg) else 1.7976931348623157e308
        return -big if neg else big
    if e - 1 >= -1022:
        return math.ldexp(d, top)  # a normal result: exact
    m = np.int64(abs(fd) * 9007199254740992.0)  # 53 bits, the value m 2^(e - 53), onto the grid 2^-1074
    s = -1074 - (e - 53)
    q = m >> s if s < 63 else 0
    if ((m & ((1 << s) - 1)) != 0 if s < 63 else m != 0) and ((mode == 3 and not neg) or (mode == 4 and neg)):
        q += 1
    return _of_bits(q | (np.int64(-9223372036854775808) if neg else 0))


@njit(cache=True, inline="always")
def _f64_step(nanp, mode, nan_bits, xb, yb, v, has_nan, vnan):
    """One fused multiply-add of model._f64_dot's chain: the running (value, NaN seen, NaN bits) after ``a_j b_j + v``
    (container bits ``xb, yb``)."""
    xn = (xb & _ABS) > _INF
    yn = (yb & _ABS) > _INF
    if has_nan or xn or yn:
        if nanp == 0:
            vnan = nan_bits
        elif nanp == 1:
            vnan = (vnan if has_nan else (xb if xn else yb)) | _QUIET
        elif nanp == 2:
            vnan = (xb if xn else (yb if yn else vnan)) | _QUIET
        elif nanp == 3:
            vnan = (vnan if has_nan else (yb if yn else xb)) | _QUIET
        else:
            vnan = (yb if yn else (vnan if has_nan else xb)) | _QUIET
        return v, True, vnan
    x, y = _of_bits(xb), _of_bits(yb)
    prod_inf = math.isinf(x) or math.isinf(y)
    vinf = math.isinf(v)
    if prod_inf or vinf:
        psign = ((xb ^ yb) >> 63) & 1
        if (prod_inf and (x == 0.0 or y == 0.0)) or (prod_inf and vinf and psign != (1 if v < 0 else 0)):
            return v, True, nan_bits
        if prod_inf:
            v = -np.inf if psign else np.inf
        return v, False, vnan
    return _fma_dir(x, y, v, mode), False, vnan


@njit(cache=True, inline="always")
def _f64_d(v, has_nan, vnan):
    """D's bits of a finished chain."""
    return vnan if has_nan else _bits_of(v)


@njit(cache=True, nogil=True)
def f64_rows(lo, hi, nanp, mode, reverse, nan_bits, a, b, c, out):
    """model._f64_dot, rows ``lo..hi``: D bits in ``out``.  Two rows at a time, their chains interleaved step by
    step: each step waits on the one before it (an FMA, and under a directed rounding the error's ~15 dependent
    additions), so one row alone leaves the FP units idle (.rz: 118 ns per dot on one row at a time, 91 on two,
    84 on four, whose four inlined copies of the step took 9 s to compile against 5 s)."""
    nb = np.int64(nan_bits)
    k = a.shape[1]
    i = lo
    while i + 2 <= hi:
        v0, v1 = _of_bits(c[i]), _of_bits(c[i + 1])
        h0, h1 = (c[i] & _ABS) > _INF, (c[i + 1] & _ABS) > _INF
        n0, n1 = c[i], c[i + 1]
        for jj in range(k):
            j = k - 1 - jj if reverse else jj
            v0, h0, n0 = _f64_step(nanp, mode, nb, a[i, j], b[i, j], v0, h0, n0)
            v1, h1, n1 = _f64_step(nanp, mode, nb, a[i + 1, j], b[i + 1, j], v1, h1, n1)
        out[i] = np.uint64(_f64_d(v0, h0, n0))
        out[i + 1] = np.uint64(_f64_d(v1, h1, n1))
        i += 2
    for r in range(i, hi):
        v, h, nv = _of_bits(c[r]), (c[r] & _ABS) > _INF, c[r]
        for jj in range(k):
            j = k - 1 - jj if reverse else jj
            v, h, nv = _f64_step(nanp, mode, nb, a[r, j], b[r, j], v, h, nv)
        out[r] = np.uint64(_f64_d(v, h, nv))
