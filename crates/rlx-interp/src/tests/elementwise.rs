//! Every elementwise kind through `exec_thunk` on an arena, against
//! naive computations.

use rlx_runtime::math;
use rlx_sched::thunk::{Activation, BinaryFull, Compare, ElementwiseRegion, Fma, Where};
use rlx_sched::{ActKind, BinaryOp, CmpOp, Operand, Params, Segment, Step, StepArg, Thunk};

/// An 8-byte-aligned arena with typed access by byte offset.
pub(crate) struct Arena(Vec<u64>);

impl Arena {
    pub(crate) fn new(bytes: usize) -> Self {
        Arena(vec![0; bytes.div_ceil(8)])
    }

    fn bytes(&mut self) -> &mut [u8] {
        let n = self.0.len() * 8;
        // SAFETY: a u64 buffer viewed as its bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), n) }
    }

    pub(crate) fn put<T: Copy>(&mut self, off: usize, vals: &[T]) {
        let n = std::mem::size_of_val(vals);
        // SAFETY: plain-old-data values copied as bytes.
        let src = unsafe { std::slice::from_raw_parts(vals.as_ptr().cast::<u8>(), n) };
        self.bytes()[off..off + n].copy_from_slice(src);
    }

    pub(crate) fn get<T: Copy + Default>(&mut self, off: usize, count: usize) -> Vec<T> {
        let mut out = vec![T::default(); count];
        let n = count * std::mem::size_of::<T>();
        let bytes = self.bytes()[off..off + n].to_vec();
        // SAFETY: `out` holds exactly `n` bytes of plain-old-data.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr().cast::<u8>(), n) };
        out
    }

    pub(crate) fn run(&mut self, t: Thunk<Operand>) {
        let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
        let mut scratch = [0u8; 0];
        super::common::exec(self.bytes(), &[], &mut scratch, params, &t);
    }

    /// Executes one kernel call directly (it must need no scratch).
    pub(crate) fn call(&mut self, call: &rlx_sched::KernelCall, _params: Params) {
        let mut scratch = [0u8; 0];
        let mem = rlx_runtime::exec::Memory::new(self.bytes(), &[], &mut scratch);
        // SAFETY: the callers size the arena for the call's extents.
        unsafe { rlx_runtime::exec::execute(call, &mem) }
    }
}

/// An arena operand at a byte offset.
pub(crate) fn at(offset: usize) -> Operand {
    Operand { segment: Segment::Arena, offset, buffer: None }
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 100.0 - 10.0).collect()
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn binary(
    lhs: usize,
    rhs: usize,
    dst: usize,
    len: usize,
    ll: usize,
    rl: usize,
    op: BinaryOp,
    dims: &[usize],
    ls: &[usize],
    rs: &[usize],
    eb: usize,
) -> Thunk<Operand> {
    Thunk::BinaryFull(BinaryFull {
        lhs: at(lhs),
        rhs: at(rhs),
        dst: at(dst),
        len,
        lhs_len: ll,
        rhs_len: rl,
        op,
        out_dims_bcast: dims.to_vec(),
        bcast_lhs_strides: ls.to_vec(),
        bcast_rhs_strides: rs.to_vec(),
        elem_bytes: eb,
    })
}

#[test]
fn binary_full_f32_broadcasts_like_the_definition() {
    // [2, 3, 4] - [2, 1, 4]: a middle-axis broadcast (strided path).
    let (l, r) = (values(24, 1), values(8, 2));
    let mut a = Arena::new(256);
    a.put(0, &l);
    a.put(96, &r);
    a.run(binary(0, 96, 128, 24, 24, 8, BinaryOp::Sub, &[2, 3, 4], &[12, 4, 1], &[4, 0, 1], 4));
    let got = a.get::<f32>(128, 24);
    for (i, g) in got.iter().enumerate() {
        let (b, k) = (i / 12, i % 4);
        assert!(same(*g, l[i] - r[b * 4 + k]), "at {i}");
    }
    // Flat form: a row of 4 tiled over 24, in place over the lhs.
    a.put(0, &l);
    a.run(binary(0, 96, 0, 24, 24, 4, BinaryOp::Max, &[], &[], &[], 4));
    let got = a.get::<f32>(0, 24);
    for i in 0..24 {
        assert!(same(got[i], math::max_f32(l[i], r[i % 4])), "row at {i}");
    }
    // A scalar lhs: pow(2, x).
    a.put(0, &[2.0f32]);
    a.put(96, &r);
    a.run(binary(0, 96, 128, 8, 1, 8, BinaryOp::Pow, &[], &[], &[], 4));
    let got = a.get::<f32>(128, 8);
    for i in 0..8 {
        assert!(same(got[i], 2f32.powf(r[i])), "pow at {i}");
    }
}

#[test]
fn binary_full_i64_wraps_and_divides_by_zero_to_zero() {
    let l = [i64::MAX, 7, -7, i64::MIN];
    let r = [1i64, 0, 2, -1];
    let mut a = Arena::new(128);
    a.put(0, &l);
    a.put(32, &r);
    for (op, want) in [
        (BinaryOp::Add, [i64::MIN, 7, -5, i64::MAX]),
        (BinaryOp::Div, [i64::MAX, 0, -3, i64::MIN]),
        (BinaryOp::Mod, [0, 0, -1, 0]),
        (BinaryOp::FloorMod, [0, 0, 1, 0]),
        (BinaryOp::Pow, [i64::MAX, 1, 49, 1]),
    ] {
        a.run(binary(0, 32, 64, 4, 4, 4, op, &[], &[], &[], 8));
        assert_eq!(a.get::<i64>(64, 4), want, "{}", op.name());
    }
    // Column broadcast through dims: [2, 2] op [2, 1].
    a.run(binary(0, 32, 64, 4, 4, 2, BinaryOp::Mul, &[2, 2], &[2, 1], &[1, 0], 8));
    // Row 0 times rhs[0] = 1, row 1 times rhs[1] = 0.
    assert_eq!(a.get::<i64>(64, 4), [i64::MAX, 7, 0, 0]);
}

#[test]
fn elementwise_region_runs_the_chain_in_step_order() {
    let (x, y) = (values(300, 3), values(300, 4));
    let steps = vec![
        Step::Binary { op: BinaryOp::Mul, arg: StepArg::Input(1), reversed: false },
        Step::Act(ActKind::Gelu),
        Step::Binary { op: BinaryOp::Sub, arg: StepArg::Const(1.0), reversed: true },
        Step::Binary { op: BinaryOp::Add, arg: StepArg::Input(0), reversed: false },
    ];
    let mut a = Arena::new(4096);
    a.put(0, &x);
    a.put(1200, &y);
    // dst aliases input 1.
    a.run(Thunk::ElementwiseRegion(ElementwiseRegion {
        inputs: vec![at(0), at(1200)],
        dst: at(1200),
        len: 300,
        steps,
    }));
    let got = a.get::<f32>(1200, 300);
    for i in 0..300 {
        // The activation step is the unfused `Activation`'s function: the
        // fast path (a GELU polynomial on AVX2), bounded in the activation tests.
        let gelu = rlx_runtime::kernels::activation::act_f32_fast(ActKind::Gelu, x[i] * y[i]);
        let want = math::add_f32(math::sub_f32(1.0, gelu), x[i]);
        assert!(same(got[i], want), "at {i}: {} vs {want}", got[i]);
    }
}

#[test]
fn activations_in_place_and_out_of_place() {
    let x = values(100, 5);
    let mut a = Arena::new(1024);
    a.put(0, &x);
    a.run(Thunk::Activation(Activation { src: at(0), dst: at(0), len: 100, act: ActKind::Silu }));
    let got = a.get::<f32>(0, 100);
    // The Activation thunks run the fast path: for silu the vector form
    // (within 3 ulp of the exact function) where AVX2 exists, `math` elsewhere.
    let fast = |x: f32| rlx_runtime::kernels::activation::act_f32_fast(ActKind::Silu, x);
    assert!(got.iter().zip(&x).all(|(g, x)| same(*g, fast(*x))));
    let near = |g: f32, w: f32| (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(f32::MIN_POSITIVE);
    assert!(got.iter().zip(&x).all(|(g, x)| near(*g, math::silu(*x))));
    a.put(0, &x);
    let act = ActKind::Clip { min: -1.0, max: 2.0 };
    a.run(Thunk::Activation(Activation { src: at(0), dst: at(400), len: 100, act }));
    let got = a.get::<f32>(400, 100);
    assert!(got.iter().zip(&x).all(|(g, x)| *g == x.clamp(-1.0, 2.0)));
    a.run(Thunk::Activation(Activation { src: at(0), dst: at(0), len: 100, act: ActKind::Relu }));
    let got = a.get::<f32>(0, 100);
    assert!(got.iter().zip(&x).all(|(g, x)| *g == x.max(0.0)));
}

#[test]
fn fma_f32_and_f64() {
    let (x, y, z) = (values(20, 6), values(20, 7), values(20, 8));
    let mut a = Arena::new(1024);
    a.put(0, &x);
    a.put(80, &y);
    a.put(160, &z);
    a.run(Thunk::Fma(Fma { a: at(0), b: at(80), c: at(160), dst: at(160), len: 20, elem_bytes: 4 }));
    let got = a.get::<f32>(160, 20);
    for i in 0..20 {
        assert_eq!(got[i].to_bits(), x[i].mul_add(y[i], z[i]).to_bits());
    }
    let (x, y, z): (Vec<f64>, Vec<f64>, Vec<f64>) = (
        x.iter().map(|v| f64::from(*v) / 3.0).collect(),
        y.iter().map(|v| f64::from(*v)).collect(),
        z.iter().map(|v| f64::from(*v)).collect(),
    );
    a.put(0, &x);
    a.put(160, &y);
    a.put(320, &z);
    a.run(Thunk::Fma(Fma { a: at(0), b: at(160), c: at(320), dst: at(480), len: 20, elem_bytes: 8 }));
    let got = a.get::<f64>(480, 20);
    for i in 0..20 {
        assert_eq!(got[i].to_bits(), x[i].mul_add(y[i], z[i]).to_bits());
    }
}

fn compare(
    lhs: usize,
    rhs: usize,
    dst: usize,
    len: usize,
    op: CmpOp,
    in_eb: usize,
    i64s: bool,
    dst_eb: usize,
    ls: bool,
    rs: bool,
    dims: &[usize],
    lst: &[usize],
    rst: &[usize],
) -> Thunk<Operand> {
    Thunk::Compare(Compare {
        lhs: at(lhs),
        rhs: at(rhs),
        dst: at(dst),
        len,
        op,
        inputs_i64: i64s,
        inputs_elem_bytes: in_eb,
        dst_elem_bytes: dst_eb,
        lhs_scalar: ls,
        rhs_scalar: rs,
        lhs_len: 0,
        rhs_len: 0,
        out_dims_bcast: dims.to_vec(),
        bcast_lhs_strides: lst.to_vec(),
        bcast_rhs_strides: rst.to_vec(),
    })
}

#[test]
fn compare_every_input_and_output_type() {
    let mut a = Arena::new(512);
    // f32 against a scalar, to bool.
    let x = [1.0f32, f32::NAN, -2.0, 0.5, 0.5];
    a.put(0, &x);
    a.put(64, &[0.5f32]);
    a.run(compare(0, 64, 128, 5, CmpOp::Ge, 4, false, 1, false, true, &[], &[], &[]));
    assert_eq!(a.get::<u8>(128, 5), [1, 0, 0, 1, 1]);
    // i64 broadcast [2, 3] < [1, 3], to f32.
    a.put(0, &[1i64, 5, 9, -4, 0, 20]);
    a.put(64, &[2i64, 5, 8]);
    a.run(compare(0, 64, 128, 6, CmpOp::Lt, 8, true, 4, false, false, &[2, 3], &[3, 1], &[0, 1]));
    assert_eq!(a.get::<f32>(128, 6), [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
    // bool bytes, scalar lhs, in place over the rhs.
    a.put(0, &[1u8]);
    a.put(64, &[0u8, 1, 2, 1]);
    a.run(compare(0, 64, 64, 4, CmpOp::Eq, 1, false, 1, true, false, &[], &[], &[]));
    assert_eq!(a.get::<u8>(64, 4), [0, 1, 0, 1]);
    // f32 in place, f32 output.
    a.put(0, &[3.0f32, -1.0]);
    a.put(64, &[3.0f32, 1.0]);
    a.run(compare(0, 64, 0, 2, CmpOp::Ne, 4, false, 4, false, false, &[], &[], &[]));
    assert_eq!(a.get::<f32>(0, 2), [0.0, 1.0]);
}

#[test]
fn where_every_condition_and_value_size() {
    let mut a = Arena::new(512);
    // bool condition, f32 values, scalar on_true.
    a.put(0, &[1u8, 0, 5, 0]);
    a.put(64, &[9.5f32]);
    a.put(128, &[1.0f32, 2.0, 3.0, 4.0]);
    let w = |cond, ceb, t, f, dst, eb, cs, ts, fs| {
        Thunk::Where(Where {
            cond: at(cond),
            on_true: at(t),
            on_false: at(f),
            dst: at(dst),
            len: 4,
            elem_bytes: eb,
            cond_elem_bytes: ceb,
            cond_scalar: cs,
            true_scalar: ts,
            false_scalar: fs,
        })
    };
    a.run(w(0, 1, 64, 128, 192, 4, false, true, false));
    assert_eq!(a.get::<f32>(192, 4), [9.5, 2.0, 9.5, 4.0]);
    // f32 condition (NaN is true), in place over on_false.
    a.put(0, &[0.0f32, f32::NAN, -0.0, 2.0]);
    a.run(w(0, 4, 64, 128, 128, 4, false, true, false));
    assert_eq!(a.get::<f32>(128, 4), [1.0, 9.5, 3.0, 9.5]);
    // i64 condition and i64 values, scalar condition.
    a.put(0, &[0i64]);
    a.put(64, &[10i64, 11, 12, 13]);
    a.put(128, &[-1i64, -2, -3, -4]);
    a.run(w(0, 8, 64, 128, 192, 8, true, false, false));
    assert_eq!(a.get::<i64>(192, 4), [-1, -2, -3, -4]);
    a.put(0, &[0i64, 3, 0, i64::MIN]);
    a.run(w(0, 8, 64, 128, 192, 8, false, false, false));
    assert_eq!(a.get::<i64>(192, 4), [-1, 11, -3, 13]);
}
