//! Every message text of the validator, in one place. Messages are
//! lower-case with no trailing period; hints say how to fix.

use crate::ast::BufferDecl;
use crate::dtype::DType;
use crate::ops::ResizeMode;
use crate::schedule::Segment;

use super::access::Dir;

/// `[1, 2, 3]`.
pub(super) fn dims(shape: &[usize]) -> String {
    let items: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `write `x` instead`.
pub(super) fn write_instead(text: &str) -> String {
    format!("write `{text}` instead")
}

pub(super) fn did_you_mean(name: &str) -> String {
    format!("did you mean `{name}`?")
}

/// An I/O error's reason, lower-case and without the OS error number, so
/// messages read the same everywhere.
pub(super) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "the file does not exist".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::UnexpectedEof => "the file ended early".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        _ => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            let mut chars = text.chars();
            chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default()
        }
    }
}

// ---- header ---------------------------------------------------------------

pub(super) fn unsupported_version(v: u32) -> String {
    format!("unsupported format version {v}")
}
pub(super) const VERSION_HINT: &str = "this validator reads format version 1: write `rlx-sched 1`";
pub(super) const EMPTY_MODEL: &str = "the model name is empty";

pub(super) fn bad_arena_align(align: usize) -> String {
    format!("arena alignment {align} is not a power of two of at least 64")
}
pub(super) const ARENA_ALIGN_HINT: &str = "write `align 64` (a cache line; enough for every SIMD load)";

pub(super) fn arena_too_large(size: usize) -> String {
    format!("arena size {size} is too large for one allocation")
}

pub(super) const NO_OUTPUTS: &str = "the schedule has no output buffer: nothing its thunks compute can be read";
pub(super) const NO_OUTPUTS_HINT: &str =
    "declare what the model computes with `output NAME: DTYPE[DIMS] @ arena+OFFSET`";

pub(super) fn arena_over_limit(size: usize, limit: usize) -> String {
    format!("arena of {size} bytes is larger than {limit} bytes: running the model needs that much memory at start-up")
}
pub(super) const ARENA_LIMIT_HINT: &str =
    "check the dims the importer was given (--shape); raise the limit with --max-arena BYTES if this is meant";

pub(super) fn header_nan(name: &str) -> String {
    format!("`{name}` is nan")
}
pub(super) const HEADER_NAN_HINT: &str =
    "every comparison with nan is false, which would silently change attention masking";

pub(super) fn empty_arena(buffers: usize) -> String {
    let s = if buffers == 1 { "" } else { "s" };
    format!("the arena is empty, but {buffers} buffer{s} live in it")
}

pub(super) fn arena_size_hint(needed: usize, align: usize) -> String {
    format!("the buffers need {needed} bytes: write `arena {needed} align {align}`")
}

// ---- buffers --------------------------------------------------------------

pub(super) fn duplicate_buffer(name: &str) -> String {
    format!("buffer `{name}` is declared twice")
}

pub(super) fn first_declared(line: u32) -> String {
    format!("first declared on line {line}")
}

pub(super) fn buffer_too_large(name: &str) -> String {
    format!("buffer `{name}` is too large: its size in bytes overflows")
}

pub(super) fn param_in_arena(name: &str) -> String {
    format!("`param` buffer `{name}` must live in the weights segment")
}
pub(super) const PARAM_SEGMENT_HINT: &str =
    "parameters are read from the weights file: write `@ weights+OFFSET`, or make it an input";

pub(super) fn not_param_in_weights(role: &str, name: &str) -> String {
    format!("{role} buffer `{name}` cannot live in the weights segment")
}
pub(super) const WEIGHTS_SEGMENT_HINT: &str =
    "the weights segment is read-only and holds only `param` buffers: write `@ arena+OFFSET`";

pub(super) fn no_weights_line(first: &str, count: usize) -> String {
    let others = match count {
        1 => String::new(),
        2 => " (and 1 more buffer)".to_string(),
        n => format!(" (and {} more buffers)", n - 1),
    };
    format!("buffer `{first}`{others} is in the weights segment, but the header has no `weights` line")
}
pub(super) const WEIGHTS_LINE_HINT: &str = "add `weights \"FILE.safetensors\" sha256 \"HEX\"` after the `arena` line";

pub(super) fn buffer_past_arena(name: &str, offset: usize, end: Option<usize>, arena: usize) -> String {
    match end {
        Some(end) => format!("buffer `{name}` (arena bytes {offset}..{end}) ends past the arena ({arena} bytes)"),
        None => format!("buffer `{name}` at arena offset {offset} ends past the end of memory"),
    }
}

pub(super) fn buffer_past_arena_hint(end: Option<usize>) -> String {
    match end {
        Some(end) => format!("grow the arena to at least {end} bytes, or move the buffer"),
        None => "move the buffer".to_string(),
    }
}

pub(super) fn buffer_misaligned(name: &str, place: &str, at: usize, align: usize, dtype: DType) -> String {
    format!("buffer `{name}` at {place} offset {at} is not aligned to {align} bytes ({dtype})")
}
pub(super) const ALIGN_HINT: &str = "offsets must be multiples of the element size";
pub(super) const WEIGHTS_ALIGN_HINT: &str =
    "weights are included at their file offset (8 + header length + data offset): pad the safetensors header with spaces so the data section starts 64-byte aligned";

pub(super) fn buffers_overlap(later: &BufferDecl, first: &BufferDecl, lo: usize, hi: usize) -> String {
    format!(
        "{} buffer `{}` overlaps {} buffer `{}` (arena bytes {lo}..{hi})",
        later.role.name(),
        later.name.value,
        first.role.name(),
        first.name.value
    )
}
pub(super) fn too_many_overlaps(shown: usize) -> String {
    format!("more than {shown} pairs of buffers overlap; {shown} are reported")
}
pub(super) const BUFFER_OVERLAP_HINT: &str =
    "only scratch buffers may share bytes (the planner reuses dead values' memory); inputs and outputs need bytes of their own";

// ---- weights file ---------------------------------------------------------

pub(super) fn weights_path_absolute(path: &str) -> String {
    format!("weights path `{path}` is absolute")
}
pub(super) const WEIGHTS_PATH_HINT: &str = "the weights path is relative to the directory of the .sched file";

pub(super) fn weights_path_parent(path: &str) -> String {
    format!("weights path `{path}` leaves the directory of the .sched file")
}
pub(super) const WEIGHTS_PARENT_HINT: &str = "keep the weights beside the .sched file or below it; \
     `cargo xtask check-sched|gen|run --allow-outside-weights` accepts `..`";

pub(super) fn weights_not_a_file(path: &str, kind: &str) -> String {
    format!("weights path `{path}` is {kind}, not a regular file")
}

pub(super) fn weights_unreadable(path: &str, reason: &str) -> String {
    format!("cannot read weights file `{path}`: {reason}")
}

pub(super) fn weights_malformed(path: &str, why: &str) -> String {
    format!("weights file `{path}` is not a valid safetensors file: {why}")
}

pub(super) fn weights_sha_mismatch(path: &str) -> String {
    format!("the sha256 of weights file `{path}` does not match this line")
}

pub(super) fn weights_sha_expected(declared: &str) -> String {
    format!("expected {declared}")
}

pub(super) fn weights_sha_hint(path: &str, actual: &str) -> String {
    format!("the file's sha256 is {actual}; if the file is the one you want, update the line to `weights \"{path}\" sha256 \"{actual}\"`")
}

pub(super) const ST_TOO_SHORT: &str = "it is shorter than the 8-byte header length";
pub(super) const ST_NOT_OBJECT: &str = "the header is not a json object";
pub(super) const ST_NO_DTYPE: &str = "no `dtype` string";
pub(super) const ST_NO_SHAPE: &str = "no `shape` list of non-negative integers";
pub(super) const ST_NO_OFFSETS: &str = "no `data_offsets` pair of non-negative integers";

pub(super) fn st_header_len(len: u64, file_len: u64) -> String {
    format!("header length {len} does not fit in a file of {file_len} bytes")
}

pub(super) fn st_json(why: &str) -> String {
    format!("the header is not valid json ({why})")
}

pub(super) fn st_tensor(name: &str, why: &str) -> String {
    format!("tensor `{name}`: {why}")
}

pub(super) fn st_offsets(begin: usize, end: usize, data_len: usize) -> String {
    format!("data_offsets [{begin}, {end}] reach past the data section ({data_len} bytes)")
}

pub(super) fn st_size(dtype: &str, shape: &[usize], bytes: usize) -> String {
    format!("a {dtype} tensor of shape {} cannot take {bytes} bytes", dims(shape))
}

pub(super) fn tensor_missing(name: &str, path: &str) -> String {
    format!("tensor `{name}` is not in weights file `{path}`")
}

pub(super) fn tensor_missing_hint(closest: Option<&str>, count: usize) -> String {
    match closest {
        Some(c) => did_you_mean(c),
        None => format!("the file holds {count} tensor(s); a `param` buffer is named after its tensor"),
    }
}

pub(super) fn tensor_dtype(name: &str, dtype: DType, file_dtype: &str) -> String {
    format!("buffer `{name}` is {dtype}, but the weights file stores it as {file_dtype}")
}

pub(super) fn tensor_shape(name: &str, shape: &[usize], file_shape: &[usize]) -> String {
    format!("buffer `{name}` has shape {}, but the weights file's tensor has {}", dims(shape), dims(file_shape))
}

pub(super) fn tensor_offset(name: &str, offset: usize, begin: usize) -> String {
    format!("buffer `{name}` is at weights+{offset}, but the weights file's tensor starts at data offset {begin}")
}

// ---- operands -------------------------------------------------------------

pub(super) fn unknown_buffer(name: &str) -> String {
    format!("unknown buffer `{name}`")
}
pub(super) const DECLARE_BUFFER_HINT: &str =
    "declare it in the buffer table before the thunks: `scratch NAME: f32[DIMS] @ arena+OFFSET`";

pub(super) fn view_past_end(name: &str, view: usize, bytes: usize) -> String {
    format!("view `{name}+{view}` starts past the end of buffer `{name}` ({bytes} bytes)")
}

pub(super) fn operand_offset_overflow(name: &str, view: usize) -> String {
    format!("the offset of view `{name}+{view}` overflows")
}

pub(super) fn raw_past_end(offset: usize, arena: usize) -> String {
    format!("raw offset `@{offset}` is past the end of the arena ({arena} bytes)")
}

pub(super) fn write_to_weights(operand: &str) -> String {
    format!("`{operand}` writes to the weights segment, which is read-only")
}
pub(super) const WRITE_WEIGHTS_HINT: &str = "outputs must live in the arena";

pub(super) fn operand_misaligned(operand: &str, place: &str, at: usize, align: usize, elem: &str) -> String {
    format!("`{operand}` at {place} offset {at} is not aligned to {align} bytes ({elem})")
}

pub(super) fn operand_dtype(operand: &str, kind: &str, elem: &str, buffer: &str, dtype: DType) -> String {
    format!("`{operand}` of {kind} must be {elem} data, but buffer `{buffer}` is {dtype}")
}

/// How a kind's extent follows from its fields.
pub(super) fn extent_hint(
    kind: &str,
    dir: Dir,
    formula: &str,
    elems: Option<usize>,
    elem: &str,
    operand: &str,
) -> String {
    match elems {
        Some(n) => format!("{kind} {} {formula} = {n} {elem} elements at `{operand}`", dir.verb()),
        None => format!("{kind} {} {formula} {elem} elements at `{operand}`", dir.verb()),
    }
}

pub(super) fn past_buffer(operand: &str, dir: Dir, bytes: usize, view: usize, buffer: &str, size: usize) -> String {
    if view == 0 {
        format!("`{operand}` {} {bytes} bytes, but buffer `{buffer}` has {size}", dir.verb())
    } else {
        format!("`{operand}` {} {bytes} bytes from byte {view} of buffer `{buffer}`, which has {size}", dir.verb())
    }
}

pub(super) fn past_segment(
    operand: &str,
    dir: Dir,
    segment: Segment,
    offset: usize,
    end: Option<usize>,
    size: Option<usize>,
) -> String {
    let seg = segment.name();
    let size = size.map_or(String::new(), |s| format!(" ({s} bytes)"));
    match end {
        Some(end) => format!("`{operand}` {} {seg} bytes {offset}..{end}, past the end of the {seg}{size}", dir.verb()),
        None => format!("`{operand}` {} past the end of memory from {seg} offset {offset}", dir.verb()),
    }
}

pub(super) fn outputs_overlap(a: &str, b: &str) -> String {
    format!("outputs `{a}` and `{b}` overlap")
}

pub(super) fn overlap_not_exact(input: &str, output: &str, kind: &str) -> String {
    format!("`{input}` overlaps the output `{output}`; {kind} runs in place only when both are exactly the same bytes")
}

pub(super) fn overlap_not_in_place(input: &str, output: &str, kind: &str) -> String {
    format!("`{input}` overlaps the output `{output}`; {kind} does not run in place")
}

pub(super) fn overlap_label(output: &str, wlo: usize, whi: usize, lo: usize, hi: usize) -> String {
    format!("arena bytes {lo}..{hi}; `{output}` is {wlo}..{whi}")
}

// ---- field rules ----------------------------------------------------------

pub(super) fn extent_overflow(field: &str, formula: &str) -> String {
    format!("the extent of `{field}` ({formula}) overflows")
}

pub(super) fn overflow_hint() -> String {
    "no real tensor is this large: check the dims".to_string()
}

pub(super) fn field_overflow(field: &str) -> String {
    format!("computing with `{field}` overflows")
}

pub(super) fn scratch_overflow(formula: &str) -> String {
    format!("the scratch this thunk needs ({formula} bytes) overflows")
}

pub(super) fn bad_elem_bytes(value: usize, expected: &str) -> String {
    format!("element size {value} is not supported: expected {expected}")
}

pub(super) fn bad_dtype_field(field: &str, dtype: DType, allowed: &str) -> String {
    format!("`{field}` {dtype} is not supported: expected one of {allowed}")
}

pub(super) fn not_finite(field: &str) -> String {
    format!("`{field}` must be a finite number")
}

pub(super) fn negative(field: &str) -> String {
    format!("`{field}` must not be negative")
}

pub(super) fn resize_nearest_field(field: &str, mode: ResizeMode) -> String {
    format!("`{field}` is set, but mode `{}` has no filter to apply it to (only linear and cubic do)", mode.name())
}

pub(super) fn resize_filter_too_wide(scale: f64) -> String {
    format!("an antialiased resize at scale {scale:e} needs a filter of more than 2^40 taps per output")
}

pub(super) fn must_be_positive(field: &str) -> String {
    format!("`{field}` must be at least 1")
}

pub(super) fn bcast_dims_product(product: usize, len: usize) -> String {
    format!("`out_dims_bcast` holds {product} elements, but `len` is {len}")
}

pub(super) fn rank_mismatch(field: &str, n: usize, other: &str, m: usize) -> String {
    format!("`{field}` has {n} entries, but `{other}` has {m}")
}

pub(super) fn index_past_len(field: &str, max: usize, len_field: &str, n: usize) -> String {
    format!("`{field}` reach element {max}, but `{len_field}` is {n}")
}

pub(super) fn empty_rank(field: &str) -> String {
    format!("`{field}` is empty: the kind needs a rank of at least 1")
}

pub(super) fn axis_past_rank(axis: usize, rank: usize) -> String {
    format!("`axis` {axis} is out of range for rank {rank}")
}

pub(super) fn index_dim_past_data(d: usize, index_dim: usize, data_dim: usize) -> String {
    format!("`index_dims[{d}]` {index_dim} is larger than `data_dims[{d}]` {data_dim}: only the axis may be longer")
}

pub(super) fn grid_sample_rank(rank: usize) -> String {
    format!("`in_dims` has {rank} entries; GridSample samples 1 to 3 spatial axes")
}

pub(super) fn empty_sampled_axis(axis: usize) -> String {
    format!("`in_dims[{axis}]` is 0: the output has samples to read, the input none")
}

pub(super) fn pad_rank(rank: usize) -> String {
    format!("`dims` has {rank} entries; Pad takes 1 to {} axes", rlx_core::plan::PAD_MAX_RANK)
}

pub(super) fn pad_value_unused(mode: crate::ops::PadMode) -> String {
    format!("`value` is read in `constant` mode only, and the mode is `{}`", mode.name())
}

pub(super) fn pad_value_hint() -> String {
    "write `value: none`".to_string()
}

pub(super) fn pad_empty_source(d: usize, mode: crate::ops::PadMode) -> String {
    format!("`dims[{d}]` is 0: `{}` pads copy elements of the source, which has none", mode.name())
}

pub(super) fn pad_reflect_too_wide(field: &str, d: usize, pad: usize, len: usize) -> String {
    format!("`{field}[{d}]` is {pad}: `reflect` pads must stay below the axis length {len}")
}

pub(super) fn reduction_dtype(dtype: DType) -> String {
    format!("`reduction` needs f32, f64, i32, i64 or bool data; {dtype} data takes `reduction: none` only")
}

pub(super) fn scatter_dtype_size(dtype: DType) -> String {
    format!("`dtype` {dtype} is not supported: a scatter moves elements of 1, 2, 4 or 8 bytes")
}

pub(super) fn strides_without_dims(field: &str) -> String {
    format!("`{field}` is given without `out_dims_bcast`")
}

pub(super) fn flat_len_must_divide(field: &str, n: usize, len: usize) -> String {
    format!("`{field}` {n} does not divide `len` {len}")
}

pub(super) fn flat_broadcast_hint() -> String {
    "without `out_dims_bcast`, operand element `i % n` is read, which only broadcasts a trailing block: give `out_dims_bcast` and strides for other broadcasts".to_string()
}

pub(super) fn flat_len_must_equal(field: &str, n: usize, len: usize) -> String {
    format!("`{field}` is {n}, but a non-scalar operand without `out_dims_bcast` has `len` {len} elements")
}

pub(super) fn scalar_len(scalar_field: &str, len_field: &str, n: usize) -> String {
    format!("`{scalar_field}` is set, so `{len_field}` must be 1, not {n}")
}

pub(super) fn inputs_i64_mismatch(flag: bool, elem_bytes: usize) -> String {
    if flag {
        format!("`inputs_i64` is true, but `inputs_elem_bytes` is {elem_bytes}, not 8")
    } else {
        "`inputs_elem_bytes` is 8, so `inputs_i64` must be true".to_string()
    }
}

pub(super) fn no_inputs(kind: &str) -> String {
    format!("{kind} needs at least one input")
}

pub(super) fn step_input_out_of_range(i: usize, n: usize) -> String {
    format!("a step reads `in{i}`, but the region has {n} input(s)")
}

pub(super) fn rows_overlap(field: &str, stride: usize, inner: usize) -> String {
    format!("`{field}` {stride} is smaller than `inner` {inner}, so destination rows overlap")
}

pub(super) fn inner_count(n: usize, inputs: usize) -> String {
    format!("`inner` has {n} entries, but there are {inputs} inputs")
}

pub(super) fn kv_append_past_end(pos: usize, new_len: usize, max_len: usize) -> String {
    format!("`pos` {pos} + `new_len` {new_len} is past `max_len` {max_len}")
}

pub(super) fn step_longer_than_cache(len: usize, max_len: usize) -> String {
    format!("a step of {len} positions does not fit in a cache of `max_len` {max_len}")
}

pub(super) fn odd_head_dim(d: usize) -> String {
    format!("`head_dim` {d} is odd; rotary embedding rotates pairs")
}

pub(super) fn empty_axis(kind: &str) -> String {
    format!("{kind} over an empty axis has no result: `axis_dim` must be at least 1")
}

pub(super) fn top_k_too_large(k: usize, axis_dim: usize) -> String {
    format!("`k` {k} is larger than `axis_dim` {axis_dim}")
}

pub(super) fn cumulative_op(op: crate::BinaryOp) -> String {
    format!("`op` is `{}`; a running result is `add` or `mul`", op.name())
}

pub(super) fn int_conv_zero_len(len: usize, c_out: usize) -> String {
    format!("`w_zero_len` is {len}; the weight's zero point is one element or one per output channel (`c_out` {c_out})")
}

pub(super) fn qconv_groups(groups: usize, c_in: usize, c_out: usize) -> String {
    format!(
        "`groups` is {groups} with `c_in` {c_in} and `c_out` {c_out}; a QLinearConv2D has one group or is depthwise (`groups` = `c_in` = `c_out`)"
    )
}

pub(super) fn qconv_pad(pad: usize) -> String {
    format!("`x_pad` is {pad}; the value of positions outside the input is a u8 (0 to 255)")
}

pub(super) fn qconv_scale_len(len: usize, c_out: usize) -> String {
    format!("`scale_len` is {len}; the scale is one element or one per output channel (`c_out` {c_out})")
}

pub(super) fn requantize_scale_len(len: usize, channels: usize) -> String {
    format!("`scale_len` is {len}; the scale is one element or one per channel (`channels` {channels})")
}

pub(super) fn int_gemm_zero_len(len: usize, n: usize) -> String {
    format!("`b_zero_len` {len} must be 1 (per tensor) or `n` {n} (per column)")
}

pub(super) fn packed_int_gemm_len(field: &str, len: usize, n: usize) -> String {
    format!("`{field}` {len} must be 1 (per tensor) or `n` {n} (per column)")
}

pub(super) fn packed_int_gemm_bias_without_scale() -> String {
    "`bias` is given without `scale`: the bias is added to the dequantized f32 product, which needs a scale".to_string()
}

pub(super) fn zero_kv_heads() -> String {
    "`kv_heads` must be at least 1".to_string()
}

pub(super) fn kv_heads_grouping(heads: usize, kv_heads: usize) -> String {
    format!("`heads` {heads} is not a multiple of `kv_heads` {kv_heads}")
}

pub(super) fn kv_heads_hint() -> String {
    "query head `h` reads key/value head `h / (heads / kv_heads)`: write `kv_heads: heads` for plain multi-head attention, 1 for multi-query".to_string()
}

pub(super) fn mask_missing(kind: &str) -> String {
    format!("mask kind `{kind}` reads a mask, but `mask` is `none`")
}

pub(super) fn mask_hint(kind: crate::ops::MaskKind) -> String {
    let shape = match kind {
        crate::ops::MaskKind::Bias => "an additive [batch, heads, seq, kv_seq] f32 tensor",
        _ => "a [batch, kv_seq] f32 key-padding mask",
    };
    format!("`{}` reads {shape}: write `mask: NAME`", kind.name())
}

pub(super) fn mask_unused(kind: &str) -> String {
    format!("mask kind `{kind}` reads no mask: write `mask: none`")
}

pub(super) fn row_stride_too_small(field: &str, stride: usize, formula: &str, width: usize) -> String {
    format!("`{field}` {stride} is smaller than a row of {formula} = {width} elements")
}

pub(super) fn groups_divide(field: &str, value: usize, groups: usize) -> String {
    format!("`groups` {groups} does not divide `{field}` {value}")
}

pub(super) fn blocked_nchw_groups(groups: usize) -> String {
    format!("`x_nchw` reads an NCHW input for a one-group convolution; `groups` is {groups}")
}

pub(super) fn winograd_shape(s: &rlx_core::shapes::Conv2dShape) -> String {
    if s.h_out == 0 || s.w_out == 0 {
        return format!("WinogradConv2D needs a non-empty output plane; `h_out` is {}, `w_out` {}", s.h_out, s.w_out);
    }
    format!(
        "WinogradConv2D pads by at most 2 on each side: leading `ph` {} / `pw` {}, trailing {} / {} (implied by `h_out` {} / `w_out` {})",
        s.ph,
        s.pw,
        // Saturating: the fields are any file's numbers.
        s.h_out.saturating_add(2).saturating_sub(s.h.saturating_add(s.ph)),
        s.w_out.saturating_add(2).saturating_sub(s.w_in.saturating_add(s.pw)),
        s.h_out,
        s.w_out
    )
}

pub(super) fn winograd_shape_hint(s: &rlx_core::shapes::Conv2dShape) -> String {
    if s.h_out == 0 || s.w_out == 0 {
        "an empty output needs no kernel: drop the thunk".to_string()
    } else {
        "a wider padding only adds windows of zeros: run the layer as a BlockedConv2D".to_string()
    }
}

pub(super) fn blocked_residual_groups(groups: usize) -> String {
    format!("a `residual` is not added by a depthwise blocked convolution; `groups` is {groups}")
}

pub(super) fn half_filter_too_large(s: &rlx_core::shapes::Conv2dShape) -> String {
    format!(
        "a {}x{} window over {} input channels is too large for a 16-bit filter: one pass's slice must fit {} bytes \
         (windows up to 8x8 always do); store this filter in f32 (`BlockedConv2D`)",
        s.kh,
        s.kw,
        s.c_in,
        rlx_core::blocked::HALF_FILTER_SLICE_BYTES
    )
}

pub(super) fn blocked_groups(groups: usize, c_in: usize, c_out: usize) -> String {
    format!(
        "a blocked convolution has one group, is depthwise, or has groups of whole 16-channel blocks; `groups` {groups} with `c_in` {c_in} and `c_out` {c_out} is none of these"
    )
}

/// `axis` names the fields of one spatial axis: out, in, pad, kernel,
/// stride, dilation.
pub(super) fn conv_window(out_field: &str, out: usize, last: usize, inside: usize, axis: [&str; 6]) -> String {
    let [_, input, pad, ..] = axis;
    format!(
        "`{out_field}` {out} is too large: the last window starts at padded position {last}, past the input ({input} + {pad} = {inside})"
    )
}

pub(super) fn conv_window_hint(axis: [&str; 6]) -> String {
    let [out, input, pad, kernel, stride, dilation] = axis;
    format!(
        "the last window must start inside the input or its leading padding, ({out}-1)*{stride} < {input} + {pad}, or end within a trailing padding no larger than {pad}, ({out}-1)*{stride} + ({kernel}-1)*{dilation} + 1 <= {input} + 2*{pad}"
    )
}

pub(super) fn pool_window_hint(axis: [&str; 6]) -> String {
    let [out, input, pad, _, stride, _] = axis;
    format!("every window must hold an input element: ({out}-1)*{stride} < {input} + {pad}")
}

pub(super) fn pad_not_below_kernel(pad_field: &str, pad: usize, kernel_field: &str, kernel: usize) -> String {
    format!("padding `{pad_field}` {pad} must be smaller than the kernel `{kernel_field}` {kernel}")
}

pub(super) fn pool_empty_input(out_field: &str, out: usize, in_field: &str) -> String {
    format!("`{out_field}` is {out}, but the input is empty (`{in_field}` 0)")
}

pub(super) fn count_include_pad_max() -> String {
    "`count_include_pad` only applies to mean pooling".to_string()
}

// ---- dataflow -------------------------------------------------------------

/// `bytes 10..20`, or `bytes 10..20 (64 bytes in all)` when more is missing.
fn unwritten(lo: usize, hi: usize, missing: usize) -> String {
    if missing > hi - lo {
        format!("arena bytes {lo}..{hi} ({missing} bytes in all)")
    } else {
        format!("arena bytes {lo}..{hi}")
    }
}

pub(super) fn read_before_write(operand: &str, dir: Dir, lo: usize, hi: usize, missing: usize) -> String {
    format!("`{operand}` {} {} before anything writes them", dir.verb(), unwritten(lo, hi, missing))
}

/// `writer` is `None` when finding it was past the validator's budget.
pub(super) fn read_before_write_hint(writer: Option<u32>, reader: u32) -> String {
    let who = match writer {
        Some(w) if w == reader => "this thunk".to_string(),
        Some(w) => format!("the thunk on line {w}"),
        None => "a later thunk".to_string(),
    };
    format!("{who} writes them later, so the first run reads zeros and later runs read stale data")
}

pub(super) fn read_never_written(operand: &str, dir: Dir, lo: usize, hi: usize, missing: usize) -> String {
    format!("`{operand}` {} {}, which nothing ever writes", dir.verb(), unwritten(lo, hi, missing))
}
pub(super) const READ_NEVER_WRITTEN_HINT: &str =
    "they are always zero (the arena is zeroed once); write them with a thunk if that is not meant";

pub(super) fn output_not_written(name: &str, lo: usize, hi: usize, missing: usize, size: usize) -> String {
    format!("output `{name}` is not fully written: no thunk writes {} of its {size} bytes", unwritten(lo, hi, missing))
}
pub(super) fn output_not_written_by(
    name: &str,
    entry: &str,
    lo: usize,
    hi: usize,
    missing: usize,
    size: usize,
) -> String {
    format!(
        "output `{name}` is not fully written by entry `{entry}`: no thunk of it writes {} of its {size} bytes",
        unwritten(lo, hi, missing)
    )
}
pub(super) const OUTPUT_NOT_WRITTEN_HINT: &str = "every byte of an output must be written by some thunk";

pub(super) fn bad_entry_name(name: &str) -> String {
    format!("`{name}` cannot name an entry")
}
pub(super) const ENTRY_NAME_HINT: &str =
    "an entry name is lower-case letters, digits and `_`, not starting with a digit (it names the method `run_NAME`)";

pub(super) fn reserved_entry_name(name: &str) -> String {
    format!("entry `{name}` would generate the method `run_{name}`, which the model trait `GeneratedModel` defines")
}
pub(super) const RESERVED_ENTRY_NAME_HINT: &str =
    "rename the entry: the trait's `run_entry(index)` runs an entry by its index";

pub(super) fn duplicate_entry(name: &str) -> String {
    format!("entry `{name}` is declared twice")
}

pub(super) fn entry_wrong_role(name: &str, found: &str, want: &str) -> String {
    let article = |role: &str| if role.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("`{name}` is {} {found} buffer, not {} {want}", article(found), article(want))
}

pub(super) fn listed_twice(name: &str, entry: &str) -> String {
    format!("`{name}` is listed twice in entry `{entry}`")
}

pub(super) fn in_no_entry(role: &str, name: &str) -> String {
    format!("{role} `{name}` belongs to no entry")
}

pub(super) fn in_no_entry_hint(role: &str) -> String {
    format!("list it in the `{role}s` of the entry that uses it")
}

pub(super) fn not_in_entry(role: &str, name: &str, entry: &str) -> String {
    format!("{role} `{name}` is not among the {role}s of entry `{entry}`")
}

pub(super) fn not_in_entry_hint(role: &str, entry: &str, line: u32) -> String {
    format!("add it to the `{role}s` of entry `{entry}` (line {line}), or move the thunk to the entry that has it")
}

pub(super) fn q8_block_multiple(k: usize, block: usize) -> String {
    format!("`k` {k} is not a multiple of {block}: 8-bit weights come in blocks of {block} steps of `k`")
}

pub(super) fn q8_block_hint() -> String {
    "use `PackedGemm` or `PackedGemmHalf` for this product".to_string()
}
