//! The C header of a model (`include/NAME.h`), one function per section:
//! preamble, status enum, lifetime and run functions, then one block per
//! input and per output. Plain text: C has no token printer here, and the
//! text is short and fixed.

use std::fmt::Write;

use rlx_sched::Schedule;

use super::{c_type, generated_note, CModel, Tensor, STATUSES};

/// The whole header for `s`; `sched_path` as in [`crate::Options`].
pub fn generate_header(s: &Schedule, sched_path: &str) -> String {
    let m = CModel::new(s);
    let mut out = generated_note(s, sched_path, "//");
    out.push('\n');
    out.push_str(&preamble(&m, s.model(), sched_path));
    out.push_str(&status_enum(&m));
    out.push_str(&lifetime(&m));
    for t in &m.inputs {
        out.push_str(&input_block(&m, t));
    }
    for t in &m.outputs {
        out.push_str(&output_block(&m, t));
    }
    out.push_str(&closing(&m));
    out
}

fn guard_macro(m: &CModel) -> String {
    format!("RLX_{}_H", m.upper)
}

/// Include guard, includes, the usage and thread-safety notes, the handle.
fn preamble(m: &CModel, model: &str, sched_path: &str) -> String {
    let (p, g) = (&m.prefix, guard_macro(m));
    format!(
        "\
/*
 * The `{model}` model ({sched_path}) as a C library: link lib{p}.a, built
 * by `cargo xtask build {p} --lib`, with -lpthread -ldl -lm.
 *
 * Usage: {p}_create a handle, write each input (through its pointer or
 * with its {p}_set_input_* copy), {p}_run, read each output, and
 * {p}_destroy the handle. Every function that can fail returns a
 * {p}_status; {p}_error_message describes it. No function aborts the
 * process: a null pointer is an error, and a Rust panic is caught and
 * reported as {upper}_ERROR_PANIC.
 *
 * Threads: a handle is used by one thread at a time (calls on one handle
 * must not overlap). Separate handles may run at the same time on
 * different threads: they share only the read-only weights and the
 * process's worker pool, whose size {p}_set_threads sets.
 */
#ifndef {g}
#define {g}

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern \"C\" {{
#endif

/* A model instance: its own arena of inputs, outputs and temporaries. */
typedef struct {p}_model {p}_model;

",
        upper = m.upper
    )
}

/// `NAME_status` and `NAME_error_message`.
fn status_enum(m: &CModel) -> String {
    let mut out = format!("typedef enum {}_status {{\n", m.prefix);
    for (suffix, value) in STATUSES {
        writeln!(out, "    {}_{suffix} = {value},", m.upper).unwrap();
    }
    writeln!(out, "}} {}_status;\n", m.prefix).unwrap();
    writeln!(out, "/* A static, NUL-terminated description of `status` (never null). */").unwrap();
    writeln!(out, "const char *{p}_error_message({p}_status status);\n", p = m.prefix).unwrap();
    out
}

/// Threads, create, destroy and run.
fn lifetime(m: &CModel) -> String {
    let p = &m.prefix;
    format!(
        "\
/*
 * Sets the worker-thread count of the process (1 to 1024), shared by every
 * model in it; by default RLX_NUM_THREADS or one per core. Call it before
 * the first run: once a parallel kernel of any model has started the
 * workers, it returns {u}_ERROR_THREADS_STARTED and changes nothing.
 */
{p}_status {p}_set_threads(size_t threads);

/* Creates a model in *out (null on failure). The weights are embedded in
 * the library and shared by every handle. */
{p}_status {p}_create({p}_model **out);

/* Frees a model; null is ignored. Pointers from its accessors die with it. */
void {p}_destroy({p}_model *model);

/* Runs the model once on its current inputs. Allocates nothing. */
{p}_status {p}_run({p}_model *model);

",
        u = m.upper
    )
}

/// `NAME_INPUT_X_RANK`, `_DIMS`, `_ELEMENTS` for one tensor.
fn dims_macros(m: &CModel, kind: &str, t: &Tensor) -> String {
    let base = format!("{}_{kind}_{}", m.upper, t.ident.to_ascii_uppercase());
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    format!(
        "#define {base}_RANK {}\n#define {base}_DIMS {{{}}}\n#define {base}_ELEMENTS {}\n",
        t.shape.len(),
        dims.join(", "),
        t.elements()
    )
}

fn tensor_doc(kind: &str, t: &Tensor) -> String {
    format!("/* {kind} `{}`: {}{:?}, {} elements of {}. */\n", t.name, t.dtype, t.shape, t.elements(), c_type(t.dtype))
}

fn input_block(m: &CModel, t: &Tensor) -> String {
    let (p, ty, id) = (&m.prefix, c_type(t.dtype), &t.ident);
    format!(
        "{doc}{dims}\
/* Where the input lives in the model (row-major); null for a null model. */
{ty} *{p}_input_{id}({p}_model *model);
/* Copies `elements` values ({u}_INPUT_{uid}_ELEMENTS) into the input. */
{p}_status {p}_set_input_{id}({p}_model *model, const {ty} *data, size_t elements);

",
        doc = tensor_doc("Input", t),
        dims = dims_macros(m, "INPUT", t),
        u = m.upper,
        uid = id.to_ascii_uppercase(),
    )
}

fn output_block(m: &CModel, t: &Tensor) -> String {
    let (p, ty, id) = (&m.prefix, c_type(t.dtype), &t.ident);
    format!(
        "{doc}{dims}\
/* Where the output lives in the model (row-major); null for a null model. */
const {ty} *{p}_output_{id}(const {p}_model *model);
/* Copies the output's `elements` values ({u}_OUTPUT_{uid}_ELEMENTS) to `data`. */
{p}_status {p}_get_output_{id}(const {p}_model *model, {ty} *data, size_t elements);

",
        doc = tensor_doc("Output", t),
        dims = dims_macros(m, "OUTPUT", t),
        u = m.upper,
        uid = id.to_ascii_uppercase(),
    )
}

fn closing(m: &CModel) -> String {
    format!("#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {} */\n", guard_macro(m))
}
