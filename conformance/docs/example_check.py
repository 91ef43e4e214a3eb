"""The ISA's example instructions against specs/ and ptxas: does each example agree with its own section?

An example names a variant (shape, layouts, types, ``.kind``, ``.scale_vec``,
sparsity) and gives one register vector per operand.  :func:`check_examples`
parses the instruction into the spec's variant id and checks the operand count,
each vector's register count against the variant's fragment, and the declared
register types against the fragment's register width; :func:`ptxas_check`
wraps the example into a minimal kernel (its own declarations, the spec's
types for names it never declares) and asks ptxas.  A disagreement is an ISA
erratum, reported the way the tcgen05 self-check reports the ISA against itself;
one already pinned in a layout's ``errata`` (its ``isa_text`` names the example's
instruction) counts as explained.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ptxconf.isa.loader import Specs
from ptxconf.isa.model import REGISTER_BITS, Variant
from ptxconf.isa.targets import PtxVersion

from .examples import Example

__all__ = ["STATUSES", "ExampleFinding", "check_example", "check_examples", "kernel_for", "ptxas_check",
           "variant_key"]

# "erratum": the example disagrees with specs/ or ptxas; "explained": an erratum specs/ already pins;
# "template": a Syntax line with placeholders; "uncovered": specs/ has no variant of its kind; "ok".
STATUSES = ("ok", "erratum", "explained", "uncovered", "template")

_TYPE = re.compile(r"^(?:(?:b|s|u|f|bf|tf)\d+(?:x\d+)?(?:_p\d+)?|u?e\dm\d)$")
_PLACEHOLDER = re.compile(r"^(?:[a-ds]?type|[ab]layout|shape|num|ss|kind|stype|dst_fmt|src_fmt|\w*type|bitOp|op|"
                          r"scale_vec_size|vec|rnd|sat|cta_group|collector_usage|ashift)$")
_DEFAULTS = {"rn"}  # .rn is the only rounding of .f64 mma (ISA 9.x spells it, specs/ ids do not)
_STATE = {"shared", "shared::cta"}  # ldmatrix/stmatrix .ss: the variant is the same with or without it
_REG_BITS = {"pred": 1, **{f"{p}{n}": n for p in "bsuf" for n in (8, 16, 32, 64)}, "f16x2": 32, "bf16x2": 32}
_IDENT = re.compile(r"^%?[A-Za-z_$][\w$]*$")


@dataclass(frozen=True)
class ExampleFinding:
    """One finding about one example: ``check`` names what was checked (``variant``, ``operands``,
    ``registers.A``, ``type.A``, ``declared``, ``syntax``, ``ptxas``)."""

    status: str
    check: str
    section: str
    line: int
    instruction: str
    variant: str | None
    message: str
    erratum: str | None = None  # the pinned errata entry's isa_text, for "explained"

    def to_json(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        where = f"§{self.section}:{self.line}" if self.section else f"line {self.line}"
        tail = f" (pinned: {self.erratum})" if self.erratum else ""
        return f"{self.status:9s} {where:18s} {self.check:12s} {self.instruction}: {self.message}{tail}"


# -- the variant an example names -------------------------------------------------------------------------------
_HEAD_WORDS = {"sync", "aligned", "sp", "sp::ordered_metadata", "mma_async", "mma", "ws"}


def _head(parts: list[str]) -> str:
    """The opcode and its fixed words (``mma.sp::ordered_metadata.sync.aligned``); the rest are modifiers."""
    out = parts[:1]
    for p in parts[1:]:
        if p not in _HEAD_WORDS:
            break
        out.append(p)
    return ".".join(out)


def variant_key(opcode: str, register_a: bool | None = None) -> tuple:
    """An instruction string as the spec's ids spell it, order-free where the ISA is: the opcode head, the
    set of other modifiers (state space dropped, ISA default ``.scale_vec`` made explicit) and the types in
    order.  ``register_a``: wgmma A from registers (``/rs``) or a descriptor (``/ss``)."""
    text, _, form = opcode.partition("/")
    parts = text.split(".")
    head = _head(parts)
    rest = parts[len(head.split(".")):] if head else parts
    types = tuple(p for p in rest if _TYPE.match(p))
    mods = {p for p in rest if not _TYPE.match(p) and p not in _STATE and p not in _DEFAULTS}
    if "block_scale" in mods and not any(m.startswith("scale_vec::") for m in mods):
        kind = next((m[6:] for m in mods if m.startswith("kind::")), "")
        mods.add({"mxf8f6f4": "scale_vec::1X", "mxf4": "scale_vec::2X"}.get(kind, "scale_vec::?"))
    if register_a is not None:
        form = "rs" if register_a else "ss"
    return head, frozenset(mods), types, form or None


def _index(specs: Specs) -> dict[tuple, Variant]:
    return {variant_key(v.id): v for v in specs.variants.values()}


def is_template(ex: Example) -> bool:
    """A Syntax line (``mma.sync.aligned.shape.row.col.dtype... d, a, b, c;``), not an example: placeholders in
    the opcode, or operands that are bare names no declaration gives and no register vector."""
    if "{" in ex.opcode or any(_PLACEHOLDER.match(p) for p in ex.opcode.split(".")[1:]):
        return True
    names = [o.strip("[]") for o in ex.operands]
    if any(o.startswith("{") or "%" in o or ex.declaration(o) for o in names):
        return False
    return all(re.fullmatch(r"[a-z]|[a-z]+(?:-[a-z]+)+|-?\d+", o, re.I) for o in names)


# -- operand roles -----------------------------------------------------------------------------------------------
def _roles(ex: Example, v: Variant | None) -> tuple[dict[int, str], set[int] | None]:
    """Position -> spec operand (or a kind: ``addr``, ``desc``, ``pred``, ``ids``, ``reg``) and the operand
    counts the ISA's Syntax allows (None: not known)."""
    fam, block = ex.family, "block_scale" in ex.opcode
    if fam in ("mma.sync", "mma.sp"):
        roles = {0: "D", 1: "A", 2: "B", 3: "C"}
        k = 4
        if fam == "mma.sp":
            roles.update({4: "metadata", 5: "imm"})
            k = 6
        if block:
            roles.update({k: "scale_A", k + 1: "ids", k + 2: "scale_B", k + 3: "ids"})
            k += 4
        return roles, {k}
    if fam == "ldmatrix":
        return {0: "fragment", 1: "addr"}, {2}
    if fam == "stmatrix":
        return {0: "addr", 1: "fragment"}, {2}
    if fam == "movmatrix":
        return {0: "d", 1: "a"}, {2}
    if fam == "wgmma":
        rs = len(ex.operands) > 1 and ex.operands[1].startswith("{")
        sparse = ".sp." in ex.opcode
        roles = {0: "D", 1: "A" if rs else "desc", 2: "desc"}
        k = 3
        if sparse:
            roles.update({3: "reg", 4: "imm"})
            k = 5
        roles[k] = "pred"
        ab = [p for p in ex.opcode.split(".") if _TYPE.match(p)][1:2]
        if ab and ab[0] in ("f16", "bf16"):
            counts = {k + 4} if rs else {k + 5}
        elif ab and ab[0] in ("tf32", "e4m3", "e5m2"):
            counts = {k + 3}
        else:
            counts = {k + 1}
        return roles, counts
    if fam == "tcgen05":  # [d-tmem], a-desc or [a-tmem], b-desc, idesc, then vectors, [tmem] scales, predicate
        roles = {0: "tmem", 1: "tmem" if ex.operands[1:2] and ex.operands[1].startswith("[") else "desc", 2: "desc",
                 3: "reg"}
        for k in range(4, len(ex.operands)):
            op = ex.operands[k]
            roles[k] = "tmem" if op.startswith("[") else "reg" if op.startswith("{") else \
                "pred" if k == len(ex.operands) - 1 or _IDENT.match(op) else "imm"
        return roles, None
    return {}, None


def _vector(op: str) -> list[str]:
    if op.startswith("{") and op.endswith("}"):
        return [x.strip() for x in op[1:-1].split(",") if x.strip()]
    return [op]


def _register_type(v: Variant, role: str) -> str | None:
    """The PTX register type the spec holds ``role`` in (``b32``, ``f32``, ``f64``, ``s32``)."""
    op = v.operands.get(role)
    return op.fragment.register if op is not None else None


def _type_problems(ex: Example, v: Variant, role: str, regs: list[str]) -> list[str]:
    """Why the declared types of ``role``'s registers cannot hold it: a width other than the spec's register,
    or a typed float register (``.f16x2``, ``.f32``) of another element type than the operand's."""
    reg = _register_type(v, role) or "b32"
    bits = REGISTER_BITS.get(reg, 32)
    elem = v.operands[role].type.name
    out = []
    for r in regs:
        d = ex.declaration(r)
        if d is None:
            continue
        if _REG_BITS.get(d.type, bits) != bits:
            out.append(f"{role} register {r} is declared .{d.type} ({_REG_BITS[d.type]} bits); {v.id} {role} is held "
                       f"in .{reg} ({bits}-bit) registers")
        elif re.match(r"^b?f\d", d.type) and d.type.split("x")[0] != elem and d.type != reg:
            out.append(f"{role} register {r} is declared .{d.type}, a register of .{d.type.split('x')[0]} values; "
                       f"{v.id} {role} holds .{elem} (in .{reg} registers)")
    return out


def _erratum_for(ex: Example, specs: Specs) -> str | None:
    """A pinned errata entry (of any layout: an example may name no variant) whose ISA text is an example's and
    names this example's instruction; matched by instruction, never by section number."""
    want = re.compile(r"(?<![\w.:])" + re.escape(ex.opcode) + r"(?![\w.:])")
    for lay in specs.layouts.values():
        for err in getattr(lay, "errata", ()):
            isa = err.get("isa_text", "")
            if "example" in isa and want.search(isa):
                return isa
    return None


def check_example(ex: Example, specs: Specs, index: dict[tuple, Variant] | None = None) -> list[ExampleFinding]:
    """What specs/ says of one example: one "ok" finding when it agrees, else a finding per disagreement."""
    index = index if index is not None else _index(specs)

    def finding(status: str, check: str, message: str, v: Variant | None = None) -> ExampleFinding:
        return ExampleFinding(status, check, ex.section, ex.line, ex.opcode, v.id if v else None, message)

    if is_template(ex):
        return [finding("template", "syntax", "a Syntax line with placeholders, not an example")]
    register_a = (len(ex.operands) > 1 and ex.operands[1].startswith("{")) if ex.family == "wgmma" else None
    key = variant_key(ex.opcode, register_a)
    v = index.get(key)
    out: list[ExampleFinding] = []
    if v is None:
        same_head = [w for k, w in index.items() if k[0] == key[0]]
        if not same_head:
            return [finding("uncovered", "variant", f"specs/ has no {key[0]} variants to check it against")]
        shape = next((p for p in ex.opcode.split(".") if re.match(r"^m\d+n\d+", p)), None)
        near = sorted({w.id.split(shape + ".", 1)[-1] for w in same_head if shape and f".{shape}." in w.id})
        hint = (f"; specs/ has {shape} as " + ", ".join(near[:6]) + (" ..." if len(near) > 6 else "")) if near \
            else (f"; specs/ has no {shape} {key[0]}" if shape else "")
        out.append(finding("erratum", "variant", f"names no variant of specs/{hint}"))
    roles, counts = _roles(ex, v)
    if counts and len(ex.operands) not in counts:
        out.append(finding("erratum", "operands", f"{len(ex.operands)} operands; the Syntax gives "
                                                  f"{' or '.join(map(str, sorted(counts)))}", v))
    for problem in ex.problems:
        out.append(finding("erratum", "syntax", problem + " (not valid PTX)", v))
    for pos, op in enumerate(ex.operands):
        role = roles.get(pos)
        if v is not None and role in v.operands:
            regs = _vector(op)
            want = v.operands[role].registers
            if len(regs) != want:
                out.append(finding("erratum", f"registers.{role}", f"{role} {op} has {len(regs)} register(s); "
                                   f"{v.id} {role} is {want} .{_register_type(v, role)} register(s)", v))
            out += [finding("erratum", f"type.{role}", msg, v) for msg in _type_problems(ex, v, role, regs)[:1]]
        if ex.decls:
            missing: dict[str, list[str]] = {}
            for r in _vector(op):
                if _IDENT.match(r) and ex.declaration(r) is None and ex.base_of(r) is not None:
                    missing.setdefault(ex.base_of(r).base, []).append(r)
            for base, names in missing.items():
                d = ex.decls[base]
                have = f"{base}0..{base}{d.count - 1}" if d.count else base
                used = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
                out.append(finding("erratum", "declared", f"uses {used}, but '{d.text}' declares only {have}", v))
    if not out:
        return [finding("ok", "all", "agrees with specs/ (variant, operand and register counts, register types)", v)]
    pinned = _erratum_for(ex, specs)
    if pinned:
        out = [ExampleFinding("explained", f.check, f.section, f.line, f.instruction, f.variant, f.message, pinned)
               if f.status == "erratum" else f for f in out]
    return out


def check_examples(examples: list[Example], specs: Specs) -> list[ExampleFinding]:
    index = _index(specs)
    return [f for ex in examples for f in check_example(ex, specs, index)]


# -- ptxas -------------------------------------------------------------------------------------------------------
_DEFAULT_TARGETS = {"mma.sync": "sm_120a", "mma.sp": "sm_120a", "wgmma": "sm_90a", "ldmatrix": "sm_100a",
                    "stmatrix": "sm_100a", "movmatrix": "sm_75", "tcgen05": "sm_100a"}
_KIND_TYPE = {"addr": "b64", "desc": "b64", "pred": "pred", "ids": "b16", "reg": "b32", "metadata": "b32",
              "tmem": "b32"}


def kernel_for(ex: Example, v: Variant | None, version: str) -> tuple[str, str, int]:
    """(PTX module, target, line of the instruction in it): the example's own declarations (one per name,
    commas and ``;`` as PTX wants them) and, for names it never declares, the spec's register types."""
    target = v.min_target.name if v is not None else _DEFAULT_TARGETS.get(ex.family, "sm_100a")
    if target in ("sm_70", "sm_72"):
        target = "sm_75"  # this ptxas generation dropped them; later targets run the same instructions
    roles, _ = _roles(ex, v)
    decls = [f".reg .{d.type} {d.base}" + (f"<{d.count}>" if d.count else "") + ";" for d in ex.decls.values()]
    extra: dict[str, str] = {}
    for pos, op in enumerate(ex.operands):
        role = roles.get(pos, "reg")
        inner = op.strip("[]") if op.startswith("[") else op
        for r in _vector(inner):
            if not _IDENT.match(r) or ex.declaration(r) is not None or ex.base_of(r) is not None:
                continue
            if v is not None and role in v.operands:
                extra[r] = _register_type(v, role) or "b32"
            else:
                extra[r] = _KIND_TYPE.get(role, "b32")
    decls += [f".reg .{t} {n};" for n, t in extra.items()]
    body = [f".version {version}", f".target {target}", ".address_size 64", ".visible .entry docex()", "{",
            *decls]
    line = len(body) + 1
    body += [ex.text, "ret;", "}"]
    return "\n".join(body) + "\n", target, line


def module_version(v: Variant | None, doc_version: str | None, newest: PtxVersion | None) -> PtxVersion | None:
    """The ``.version`` an example is assembled at: what it uses (its variant's minimum, which carries the
    version its qualifiers were introduced in) and the version of the document it comes from, whichever is
    later; with neither, the newest this ptxas accepts.  None: no version is known at all."""
    known = [x for x in (v.min_ptx if v is not None else None,
                         getattr(v.min_target, "min_ptx", None) if v is not None else None,
                         PtxVersion.parse(doc_version) if doc_version else None) if x is not None]
    return max(known, key=lambda x: (x.major, x.minor)) if known else newest


def ptxas_check(examples: list[Example], specs: Specs, exe: str, doc_version: str | None = None,
                newest: PtxVersion | None = None) -> list[ExampleFinding]:
    """ptxas's verdict on every example that is not a Syntax template: an "erratum" finding with ptxas's first
    error for each one it rejects (explained when pinned), nothing for those it accepts.  Each is assembled at
    :func:`module_version`; one that needs a newer ``.version`` than this ptxas accepts (``newest``) is
    "uncovered", never an erratum."""
    from ptxconf.backends.ptxas import assemble, first_error, ptxas_info

    newest = newest if newest is not None else ptxas_info(exe)["max_ptx"]
    index = _index(specs)
    out = []
    for ex in examples:
        if is_template(ex):
            continue
        register_a = (len(ex.operands) > 1 and ex.operands[1].startswith("{")) if ex.family == "wgmma" else None
        v = index.get(variant_key(ex.opcode, register_a))
        if v is None and ex.family != "tcgen05" and not any(k[0] == _head(ex.opcode.split(".")) for k in index):
            continue  # uncovered: without the spec's operand types the kernel would guess them
        version = module_version(v, doc_version, newest)
        if newest < version:
            out.append(ExampleFinding("uncovered", "ptxas", ex.section, ex.line, ex.opcode, v.id if v else None,
                                      f"needs .version {version}; this ptxas accepts up to {newest}: not assembled"))
            continue
        text, target, _ = kernel_for(ex, v, str(version))
        ok, err = assemble(text, target, exe)
        if ok:
            continue
        msg = re.sub(r"^line \d+;\s*", "", first_error(err))
        pinned = _erratum_for(ex, specs)
        out.append(ExampleFinding("explained" if pinned else "erratum", "ptxas", ex.section, ex.line, ex.opcode,
                                  v.id if v else None, f"ptxas -arch={target} rejects it: {msg}", pinned))
    return out
