//! The entry against the scalar reference, bit for bit, over every cell,
//! direction, layout and optional operand, on awkward sizes (batch 1,
//! hidden 1, hidden past a SIMD width and past the GEMM's `k` pass, seq 0
//! and 1); and a few values worked out by hand.

use rlx_core::{ActKind, RecurrentCell};

use super::scalar::{self, Inputs, Outputs};
use super::{recurrent_f32, RecurrentShape};

const CELLS: [RecurrentCell; 4] =
    [RecurrentCell::Lstm, RecurrentCell::Gru, RecurrentCell::GruLinearBeforeReset, RecurrentCell::Rnn];

/// Deterministic values in about `[-scale, scale]` (splitmix64).
fn values(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5DEE_CE66;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// The operands of one case: every optional one present or not.
struct Case {
    s: RecurrentShape,
    x: Vec<f32>,
    r: Vec<f32>,
    bias: Option<Vec<f32>>,
    p: Option<Vec<f32>>,
    h0: Option<Vec<f32>>,
    c0: Option<Vec<f32>>,
    outputs: [bool; 3],
}

/// Output buffers pre-filled with a value no call writes, so a write to
/// the other direction's rows shows.
const UNTOUCHED: f32 = 12345.0;

impl Case {
    fn new(s: RecurrentShape, seed: u64, optional: bool) -> Case {
        let (n, cols) = (s.hidden, s.gate_cols());
        let lstm = s.cell == RecurrentCell::Lstm;
        let state_len = s.dirs * s.batch * n;
        let r_rows = values(cols * n, seed + 1, 0.6);
        Case {
            s,
            x: values(s.seq * s.batch * s.dirs * cols, seed, 2.0),
            r: s.cell.pack_r(&r_rows, n),
            bias: optional.then(|| values(cols, seed + 2, 0.5)),
            p: (optional && lstm).then(|| values(3 * n, seed + 3, 0.5)),
            h0: optional.then(|| values(state_len, seed + 4, 1.0)),
            c0: (optional && lstm).then(|| values(state_len, seed + 5, 1.0)),
            outputs: [true, true, lstm],
        }
    }

    fn output_lens(&self) -> [usize; 3] {
        let s = &self.s;
        let state = s.dirs * s.batch * s.hidden;
        [s.seq * state, state, state]
    }

    /// The entry's outputs.
    fn run(&self, par: bool) -> [Vec<f32>; 3] {
        let lens = self.output_lens();
        let mut outs = lens.map(|len| vec![UNTOUCHED; len]);
        let scratch_len = RecurrentShape::scratch_elems(self.s.cell, self.s.batch, self.s.hidden).unwrap();
        let mut scratch = vec![f32::NAN; scratch_len];
        let ptr = |v: &Option<Vec<f32>>| v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
        let [y, y_h, y_c] = &mut outs;
        let out = |v: &mut Vec<f32>, on: bool| if on { v.as_mut_ptr() } else { std::ptr::null_mut() };
        // SAFETY: every buffer has the length the entry's contract asks
        // for, and they are separate allocations.
        unsafe {
            recurrent_f32(
                self.x.as_ptr(),
                self.r.as_ptr(),
                ptr(&self.bias),
                ptr(&self.p),
                ptr(&self.h0),
                ptr(&self.c0),
                out(y, self.outputs[0]),
                out(y_h, self.outputs[1]),
                out(y_c, self.outputs[2]),
                &self.s,
                scratch.as_mut_ptr(),
                par,
            )
        };
        outs
    }

    /// The reference's outputs.
    fn reference(&self) -> [Vec<f32>; 3] {
        let mut outs = self.output_lens().map(|len| vec![UNTOUCHED; len]);
        let inputs = Inputs {
            x: &self.x,
            r: &self.r,
            bias: self.bias.as_deref(),
            p: self.p.as_deref(),
            h0: self.h0.as_deref(),
            c0: self.c0.as_deref(),
        };
        let [y, y_h, y_c] = &mut outs;
        fn pick(v: &mut [f32], on: bool) -> Option<&mut [f32]> {
            on.then_some(v)
        }
        let out =
            Outputs { y: pick(y, self.outputs[0]), y_h: pick(y_h, self.outputs[1]), y_c: pick(y_c, self.outputs[2]) };
        scalar::recurrent(&self.s, &inputs, out);
        outs
    }
}

fn shape(cell: RecurrentCell, seq: usize, batch: usize, hidden: usize) -> RecurrentShape {
    RecurrentShape {
        cell,
        seq,
        batch,
        hidden,
        dirs: 1,
        dir: 0,
        reverse: false,
        batch_major: false,
        clip: f32::INFINITY,
        act_f: ActKind::Sigmoid,
        act_g: ActKind::Tanh,
        act_h: ActKind::Tanh,
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_same(case: &Case, what: &str) {
    let want = case.reference();
    for par in [false, true] {
        let got = case.run(par);
        for (k, name) in ["y", "y_h", "y_c"].iter().enumerate() {
            assert_eq!(bits(&got[k]), bits(&want[k]), "{what}: `{name}` differs (par {par}), s = {:?}", case.s);
        }
    }
}

#[test]
fn every_cell_matches_the_reference_over_awkward_sizes() {
    let sizes = [(1, 1, 1), (3, 1, 7), (2, 3, 16), (4, 2, 17), (1, 2, 33), (5, 1, 8), (0, 2, 5)];
    for cell in CELLS {
        for (k, &(seq, batch, hidden)) in sizes.iter().enumerate() {
            for optional in [false, true] {
                let case = Case::new(shape(cell, seq, batch, hidden), k as u64 * 31, optional);
                assert_same(&case, &format!("{cell:?} seq {seq} batch {batch} hidden {hidden} optional {optional}"));
            }
        }
    }
}

#[test]
fn directions_layouts_and_clip_match_the_reference() {
    for cell in CELLS {
        for (dir, reverse) in [(0, false), (0, true), (1, true)] {
            for batch_major in [false, true] {
                for clip in [f32::INFINITY, 0.75] {
                    let s = RecurrentShape { dirs: 2, dir, reverse, batch_major, clip, ..shape(cell, 4, 3, 9) };
                    let case = Case::new(s, 7 + dir as u64, true);
                    assert_same(&case, &format!("{cell:?} dir {dir} reverse {reverse} batch_major {batch_major}"));
                    // This direction's rows only: the other stays untouched.
                    let [y, y_h, _] = case.run(false);
                    let untouched = |v: &[f32]| v.iter().filter(|&&x| x == UNTOUCHED).count();
                    assert_eq!(untouched(&y), y.len() / 2);
                    assert_eq!(untouched(&y_h), y_h.len() / 2);
                }
            }
        }
    }
}

#[test]
fn other_activations_missing_outputs_and_a_long_k_match_the_reference() {
    for cell in CELLS {
        let s = RecurrentShape {
            act_f: ActKind::Relu,
            act_g: ActKind::Sigmoid,
            act_h: ActKind::Relu,
            ..shape(cell, 3, 2, 5)
        };
        let mut case = Case::new(s, 3, true);
        assert_same(&case, &format!("{cell:?} relu/sigmoid"));
        case.outputs = [false, true, false];
        assert_same(&case, &format!("{cell:?} y_h only"));
        // Past one 256-deep pass of the GEMM over `k`.
        let case = Case::new(shape(cell, 2, 2, 260), 11, true);
        assert_same(&case, &format!("{cell:?} hidden 260"));
    }
}

#[test]
fn empty_batch_or_hidden_writes_nothing() {
    for (batch, hidden) in [(0, 4), (3, 0)] {
        let case = Case::new(shape(RecurrentCell::Lstm, 2, batch, hidden), 1, true);
        let [y, y_h, y_c] = case.run(false);
        assert!(y.is_empty() && y_h.is_empty() && y_c.is_empty());
    }
}

#[test]
fn hand_computed_steps() {
    // RNN, hidden 1, R = 0.5, projections 1 and 2, tanh: h1 = tanh(1),
    // h2 = tanh(2 + 0.5 * h1).
    let s = RecurrentShape { act_f: ActKind::Tanh, ..shape(RecurrentCell::Rnn, 2, 1, 1) };
    let mut case = Case::new(s, 0, false);
    case.x = vec![1.0, 2.0];
    case.r = RecurrentCell::Rnn.pack_r(&[0.5], 1);
    let [y, y_h, _] = case.run(false);
    let h1 = 1.0f32.tanh();
    let h2 = (2.0 + 0.5 * h1).tanh();
    assert_eq!(y, vec![h1, h2]);
    assert_eq!(y_h, vec![h2]);
    // LSTM, hidden 1, R = 0, every projection 0: i = o = f = 1/2, g = 0, so
    // C halves each step and H = tanh(C) / 2.
    let mut case = Case::new(shape(RecurrentCell::Lstm, 2, 1, 1), 0, false);
    case.x = vec![0.0; 8];
    case.r = RecurrentCell::Lstm.pack_r(&[0.0; 4], 1);
    case.c0 = Some(vec![1.0]);
    let [_, y_h, y_c] = case.run(false);
    assert_eq!(y_c, vec![0.25]);
    assert_eq!(y_h, vec![0.5 * 0.25f32.tanh()]);
}

#[test]
fn gates_run_the_fast_activation_path() {
    // RNN, R = 0, one step: `y = f(x)` element by element, so every gate
    // value is the activation family's fast path for its input, at every
    // position of a row longer than two vectors, with a tail.
    for act in [ActKind::Tanh, ActKind::Sigmoid, ActKind::Relu] {
        let n = 37;
        let s = RecurrentShape { act_f: act, ..shape(RecurrentCell::Rnn, 1, 1, n) };
        let mut case = Case::new(s, 5, false);
        case.x = values(n, 9, 6.0);
        case.r = RecurrentCell::Rnn.pack_r(&vec![0.0; n * n], n);
        let [y, _, _] = case.run(false);
        for (j, (&got, &x)) in y.iter().zip(&case.x).enumerate() {
            let want = crate::kernels::activation::act_f32_fast(act, x);
            assert_eq!(got.to_bits(), want.to_bits(), "{act:?} at {j} (x = {x})");
            // Within a few ulp of `math` whichever path that is.
            let exact = crate::math::act_f32(act, x);
            assert!((got - exact).abs() <= 4.0 * f32::EPSILON * exact.abs().max(f32::MIN_POSITIVE), "{act:?} at {j}");
        }
    }
}
