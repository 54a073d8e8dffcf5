//! `LSTM`, `GRU` and `RNN`: the input projections of every step and
//! direction as one matrix product, then one `Recurrent` thunk per
//! direction for the time loop (`docs/kernels/recurrent.md`).
//!
//! `W`, `R`, `B`, `P` and `sequence_lens` must be constants: `W` is
//! transposed and both directions' gates laid side by side for the product,
//! `R` is packed per direction in the kind's layout, the biases are summed
//! at import. `X` and the initial states may be data.

use rlx_sched::{ActKind, DType, RecurrentCell, Thunk};

use crate::error::ImportError;
use crate::lower::build::R;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{FusedMmBiasAct, Recurrent, Sgemm};

/// Which ONNX op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Lstm,
    Gru,
    Rnn,
}

impl Op {
    /// Activations per direction (`f, g, h`, `f, g` or `f`) and their
    /// defaults.
    fn default_activations(self) -> &'static [ActKind] {
        match self {
            Op::Lstm => &[ActKind::Sigmoid, ActKind::Tanh, ActKind::Tanh],
            Op::Gru => &[ActKind::Sigmoid, ActKind::Tanh],
            Op::Rnn => &[ActKind::Tanh],
        }
    }
}

/// The activations the kernels compute exactly as ONNX defines them and
/// that take no `activation_alpha`/`activation_beta`.
fn activation(ctx: &NodeCtx<'_>, name: &str) -> Result<ActKind, ImportError> {
    match name.to_ascii_lowercase().as_str() {
        "sigmoid" => Ok(ActKind::Sigmoid),
        "tanh" => Ok(ActKind::Tanh),
        "relu" => Ok(ActKind::Relu),
        _ => Err(ctx.bad_attr("activations", format!("names `{name}`; supported: Sigmoid, Tanh, Relu"))),
    }
}

/// Input `i` as an f32 constant of shape `want` (`None` when absent).
fn const_f32(
    lw: &Lowerer,
    ctx: &NodeCtx<'_>,
    i: usize,
    what: &str,
    want: &[usize],
) -> Result<Option<Vec<f32>>, ImportError> {
    let Some(name) = ctx.input_name(i) else { return Ok(None) };
    match lw.const_input(ctx, i)? {
        Some(ConstTensor { shape, data: ConstData::F32(v) }) if shape == want => Ok(Some(v)),
        Some(ConstTensor { shape, data: ConstData::F32(_) }) => {
            Err(ctx.err(format!("{what} `{name}` has shape {shape:?}, expected {want:?}")))
        }
        Some(c) => Err(ctx.err(format!("{what} `{name}` is {} data; it must be f32", c.data.dtype().name()))),
        None => Err(ctx
            .err(format!("{what} `{name}` must be a constant known at import time (an initializer or a `Constant`)"))),
    }
}

/// `f32` values as a `param` named `name`.
fn param(lw: &mut Lowerer, name: &str, shape: Vec<usize>, v: Vec<f32>) -> Result<usize, ImportError> {
    lw.add_param(name, &ConstTensor { shape, data: ConstData::F32(v) })
}

/// Lowers one `LSTM`, `GRU` or `RNN` node.
pub(crate) fn recurrent(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: Op) -> R {
    let max_inputs = if op == Op::Lstm { 8 } else { 6 };
    ctx.expect_arity(3, max_inputs)?;
    let max_outputs = if op == Op::Lstm { 3 } else { 2 };
    if let Some(extra) = ctx.node.output.iter().skip(max_outputs).find(|o| !o.is_empty()) {
        return Err(ctx.err(format!("output `{extra}` is not an output of {}", ctx.node.op_type)));
    }
    let wanted = |i: usize| ctx.node.output.get(i).is_some_and(|o| !o.is_empty());

    // Attributes.
    let dirs = match ctx.string_attr("direction")?.as_deref() {
        None | Some("forward") => [false].as_slice(),
        Some("reverse") => [true].as_slice(),
        Some("bidirectional") => [false, true].as_slice(),
        Some(other) => {
            return Err(ctx.bad_attr("direction", format!("is `{other}`; expected forward, reverse or bidirectional")))
        }
    };
    let num_dirs = dirs.len();
    let batch_major = match ctx.int_attr("layout", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("layout", format!("is {v}; expected 0 or 1"))),
    };
    let clip = if ctx.has_attr("clip") {
        let clip = ctx.float_attr("clip", 0.0)?;
        if clip.is_nan() || clip <= 0.0 {
            return Err(ctx.bad_attr("clip", format!("is {clip}; it must be positive")));
        }
        clip
    } else {
        f32::INFINITY
    };
    for attr in ["activation_alpha", "activation_beta"] {
        if ctx.has_attr(attr) {
            return Err(ctx.bad_attr(attr, "is not supported (only Sigmoid, Tanh and Relu, which take no parameters)"));
        }
    }
    let per_dir = op.default_activations().len();
    let acts: Vec<ActKind> = match ctx.strings_attr("activations")? {
        None => op.default_activations().repeat(num_dirs),
        Some(names) => {
            // ONNX's RNN schema spells its default as two names even for
            // one direction; the first is the forward one.
            let names = if op == Op::Rnn && num_dirs == 1 && names.len() == 2 { &names[..1] } else { &names[..] };
            if names.len() != per_dir * num_dirs {
                let want = per_dir * num_dirs;
                return Err(ctx.bad_attr("activations", format!("has {} names; expected {want}", names.len())));
            }
            names.iter().map(|n| activation(ctx, n)).collect::<Result<_, _>>()?
        }
    };
    let cell = match op {
        Op::Lstm => {
            match ctx.int_attr("input_forget", 0)? {
                0 => {}
                v => return Err(ctx.bad_attr("input_forget", format!("is {v}; only 0 is supported"))),
            }
            RecurrentCell::Lstm
        }
        Op::Gru => match ctx.int_attr("linear_before_reset", 0)? {
            0 => RecurrentCell::Gru,
            1 => RecurrentCell::GruLinearBeforeReset,
            v => return Err(ctx.bad_attr("linear_before_reset", format!("is {v}; expected 0 or 1"))),
        },
        Op::Rnn => RecurrentCell::Rnn,
    };
    let gates = cell.gates();

    // Shapes: X, then W and R fix the sizes.
    let (x_name, x_value) = lw.input(ctx, 0)?;
    let x_shape = match &x_value {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let [d0, d1, input] = x_shape[..] else {
        return Err(ctx.err(format!("X `{x_name}` has shape {x_shape:?}; it must have rank 3")));
    };
    let (seq, batch) = if batch_major { (d1, d0) } else { (d0, d1) };
    if seq == 0 || batch == 0 || input == 0 {
        return Err(ctx.err(format!("X `{x_name}` of shape {x_shape:?} is empty; empty sequences are not supported")));
    }
    if ctx.input_name(2).is_none() {
        return Err(ctx.err("input 2 (R) is missing"));
    }
    let r_shape = match lw.const_input(ctx, 2)? {
        Some(c) => c.shape,
        None => return Err(ctx.err("R must be a constant known at import time (an initializer or a `Constant`)")),
    };
    let hidden = match r_shape[..] {
        [_, _, h] if h > 0 => h,
        _ => {
            return Err(ctx.err(format!("R has shape {r_shape:?}; expected [num_directions, {gates} * hidden, hidden]")))
        }
    };
    if ctx.has_attr("hidden_size") {
        let h = ctx.int_attr("hidden_size", 0)?;
        if h != hidden as i64 {
            return Err(ctx.bad_attr("hidden_size", format!("is {h}, but R {r_shape:?} has hidden size {hidden}")));
        }
    }
    let cols = gates * hidden;
    let w = const_f32(lw, ctx, 1, "W", &[num_dirs, cols, input])?.ok_or_else(|| ctx.err("input 1 (W) is missing"))?;
    let r = const_f32(lw, ctx, 2, "R", &[num_dirs, cols, hidden])?.expect("R is present");
    let b = const_f32(lw, ctx, 3, "B", &[num_dirs, 2 * cols])?;
    if ctx.input_name(4).is_some() {
        let (_, lens) = lw.const_ints(ctx, 4)?;
        if lens.len() != batch || lens.iter().any(|&l| l != seq as i64) {
            return Err(ctx.err(format!(
                "sequence_lens {lens:?} differ from the sequence length {seq}; only full-length sequences are supported"
            )));
        }
    }
    let p = if op == Op::Lstm { const_f32(lw, ctx, 7, "P", &[num_dirs, 3 * hidden])? } else { None };
    if !(0..max_outputs).any(wanted) {
        return Ok(());
    }

    // The projections of every step and direction: one product.
    let base = ctx.input_name(1).unwrap_or("rnn").to_string();
    let n = num_dirs * cols;
    let mut w_t = vec![0.0f32; input * n];
    for (row, w_row) in w.chunks_exact(input).enumerate() {
        for (k, &v) in w_row.iter().enumerate() {
            w_t[k * n + row] = v;
        }
    }
    let w_t = param(lw, &format!("{base}.projection"), vec![input, n], w_t)?;
    let (x, _) = lw.data_input(ctx, 0)?;
    let rows = seq * batch;
    let proj_shape = if batch_major { vec![batch, seq, n] } else { vec![seq, batch, n] };
    let proj = lw.scratch_storage(&format!("{base}.projected"), proj_shape, DType::F32)?;
    // Every bias goes into the projections but the `h` gate's `Rb` of a
    // GRU that resets after its product: that one is added to the product.
    let after_reset = cell == RecurrentCell::GruLinearBeforeReset;
    match &b {
        Some(b) => {
            let bias: Vec<f32> = (0..n)
                .map(|at| {
                    let (d, j) = (at / cols, at % cols);
                    let (wb, rb) = (b[d * 2 * cols + j], b[d * 2 * cols + cols + j]);
                    if after_reset && j >= 2 * hidden {
                        wb
                    } else {
                        wb + rb
                    }
                })
                .collect();
            let bias = param(lw, &format!("{base}.projection_bias"), vec![n], bias)?;
            let thunk = Thunk::FusedMmBiasAct(FusedMmBiasAct {
                a: x,
                w: w_t,
                bias,
                c: proj,
                m: rows,
                k: input,
                n,
                act: ActKind::Identity,
            });
            lw.emit(ctx, thunk);
        }
        None => lw.emit(ctx, Thunk::Sgemm(Sgemm { a: x, b: w_t, c: proj, m: rows, k: input, n })),
    }

    // Initial states and outputs.
    let state_shape = if batch_major { vec![batch, num_dirs, hidden] } else { vec![num_dirs, batch, hidden] };
    let state = |lw: &mut Lowerer, i: usize, what: &str| -> Result<Option<usize>, ImportError> {
        if ctx.input_name(i).is_none() {
            return Ok(None);
        }
        let (id, shape) = lw.data_input(ctx, i)?;
        if shape != state_shape {
            let name = ctx.input_name(i).unwrap_or_default();
            return Err(ctx.err(format!("{what} `{name}` has shape {shape:?}, expected {state_shape:?}")));
        }
        Ok(Some(id))
    };
    let h0 = state(lw, 5, "initial_h")?;
    let c0 = if op == Op::Lstm { state(lw, 6, "initial_c")? } else { None };
    let y_shape = if batch_major { vec![batch, seq, num_dirs, hidden] } else { vec![seq, num_dirs, batch, hidden] };
    let output = |lw: &mut Lowerer, i: usize, shape: &[usize]| -> Result<Option<usize>, ImportError> {
        if !wanted(i) {
            return Ok(None);
        }
        let id = lw.output_storage(ctx, i, shape.to_vec())?;
        lw.define(ctx, i, Value::Data { storage: id, shape: shape.to_vec() })?;
        Ok(Some(id))
    };
    let y = output(lw, 0, &y_shape)?;
    let y_h = output(lw, 1, &state_shape)?;
    let y_c = output(lw, 2, &state_shape)?;

    // One thunk per direction.
    for (dir, &reverse) in dirs.iter().enumerate() {
        let r_dir = &r[dir * cols * hidden..][..cols * hidden];
        let r_packed = cell.pack_r(r_dir, hidden);
        let r_len = r_packed.len();
        let r_id = param(lw, &format!("{base}.recurrence{dir}"), vec![r_len], r_packed)?;
        let bias = match &b {
            Some(b) if after_reset => {
                let mut rb = vec![0.0f32; cols];
                rb[2 * hidden..].copy_from_slice(&b[dir * 2 * cols + cols + 2 * hidden..][..hidden]);
                Some(param(lw, &format!("{base}.recurrence_bias{dir}"), vec![cols], rb)?)
            }
            _ => None,
        };
        let p_id = match &p {
            Some(p) => {
                let v = p[dir * 3 * hidden..][..3 * hidden].to_vec();
                Some(param(lw, &format!("{base}.peepholes{dir}"), vec![3 * hidden], v)?)
            }
            None => None,
        };
        let act = |k: usize| acts.get(dir * per_dir + k).copied().unwrap_or(ActKind::Identity);
        let thunk = Thunk::Recurrent(Recurrent {
            x: proj,
            r: r_id,
            bias,
            p: p_id,
            h0,
            c0,
            y,
            y_h,
            y_c,
            cell,
            seq,
            batch,
            hidden,
            dirs: num_dirs,
            dir,
            reverse,
            batch_major,
            clip,
            act_f: act(0),
            act_g: act(1),
            act_h: act(2),
        });
        lw.emit(ctx, thunk);
    }
    Ok(())
}
