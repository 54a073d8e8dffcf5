"""A tiny writer for `.sched` files, used by the model-making scripts.

It places arena buffers with a bump allocator (64-byte aligned), saves the
weights as safetensors, reads their offsets back from the file's header,
and prints the schedule in the canonical form of `docs/sched-format.md`.
"""

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

DTYPES = {np.dtype("float32"): "f32", np.dtype("int64"): "i64", np.dtype("float64"): "f64",
          np.dtype("int32"): "i32", np.dtype("uint8"): "u8", np.dtype("float16"): "f16"}
ROLE_WIDTH = 8


def fmt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, float):
        return fmt_f32(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def fmt_f32(x):
    """Shortest text that parses back to the same f32, as Rust's `{:?}`."""
    f = np.float32(x)
    if np.isnan(f):
        return "nan"
    if np.isinf(f):
        return "inf" if f > 0 else "-inf"
    r = np.format_float_positional(f, unique=True, trim="0") if 1e-4 <= abs(f) < 1e16 or f == 0 \
        else np.format_float_scientific(f, unique=True, trim="0")
    r = r.replace("e+", "e")
    if "e" in r:
        mant, exp = r.split("e")
        if mant.endswith(".0"):
            mant = mant[:-2]
        elif mant.endswith("."):
            mant = mant[:-1]
        r = f"{mant}e{int(exp)}"
    elif r.endswith("."):
        r += "0"
    elif "." not in r:
        r += ".0"
    return r


class Sched:
    def __init__(self, model, mask_threshold=0.5, mask_neg_inf=-1e9, score_skip=0.0):
        self.model = model
        self.params = {}  # name -> array, in declaration order
        self.buffers = []  # (role, name, dtype, shape, segment, offset-or-None)
        self.thunks = []  # (comment-or-None, text)
        self.arena_top = 0
        self.scalars = (mask_threshold, mask_neg_inf, score_skip)

    def param(self, name, array):
        array = np.ascontiguousarray(array)
        self.params[name] = array
        self.buffers.append(("param", name, DTYPES[array.dtype], list(array.shape), "weights", None))
        return name

    def arena(self, role, name, dtype, shape):
        size = int(np.prod(shape, dtype=np.int64)) * {"f32": 4, "i64": 8, "f64": 8, "i32": 4, "u8": 1, "f16": 2}[dtype]
        off = self.arena_top
        self.arena_top = (off + size + 63) // 64 * 64
        self.buffers.append((role, name, dtype, list(shape), "arena", off))
        return name

    def thunk(self, thunk_kind, comment=None, **fields):
        body = ", ".join(f"{k}: {fmt_value(v)}" for k, v in fields.items())
        self.thunks.append((comment, f"{thunk_kind} {{ {body} }}" if body else f"{thunk_kind} {{}}"))

    def write(self, out_dir, header_comment):
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        wpath = out_dir / "weights.safetensors"
        offsets = {}
        if self.params:
            save_file(self.params, str(wpath))
            raw = wpath.read_bytes()
            (n,) = struct.unpack("<Q", raw[:8])
            header = json.loads(raw[8:8 + n])
            offsets = {k: v["data_offsets"][0] for k, v in header.items() if k != "__metadata__"}
            sha = hashlib.sha256(raw).hexdigest()
        lines = [f"// {c}" for c in header_comment]
        lines += ["rlx-sched 1", f"model {self.model}", f"arena {self.arena_top} align 64"]
        if self.params:
            lines.append(f'weights "weights.safetensors" sha256 "{sha}"')
        mt, mn, ss = self.scalars
        lines += [f"mask_threshold {fmt_f32(mt)}", f"mask_neg_inf {fmt_f32(mn)}", f"score_skip {fmt_f32(ss)}", ""]
        for role, name, dtype, shape, seg, off in self.buffers:
            if off is None:
                off = offsets[name]
            dims = ", ".join(str(d) for d in shape)
            lines.append(f"{role.ljust(ROLE_WIDTH)}{name}: {dtype}[{dims}] @ {seg}+{off}")
        lines.append("")
        for comment, text in self.thunks:
            if comment:
                lines.append(f"// {comment}")
            lines.append(text)
        (out_dir / "model.sched").write_text("\n".join(lines) + "\n")


def save_npy(path, array):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.ascontiguousarray(array))
