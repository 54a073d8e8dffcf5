//! The gather and scatter kinds through lowering and `exec_thunk`, against
//! the kernels' scalar reference (`rlx_runtime::kernels::gather_scatter::
//! scalar`): the element type chosen by the lowering, every reduction, in
//! place, i32 indices, out-of-range and negative indices, empty shapes.

use rlx_runtime::kernels::cast::Bool;
use rlx_runtime::kernels::gather_scatter::scalar;
use rlx_sched::thunk::{GatherElements, GatherNd, ScatterElements, ScatterNd};
use rlx_sched::{DType, Operand, Params, ScatterReduction, Segment, Thunk};

const REDUCTIONS: [ScatterReduction; 5] = [
    ScatterReduction::None,
    ScatterReduction::Add,
    ScatterReduction::Mul,
    ScatterReduction::Max,
    ScatterReduction::Min,
];

/// A 16-byte aligned arena of `n` bytes.
fn arena(n: usize) -> Vec<u128> {
    vec![0; n.div_ceil(16)]
}

fn bytes(a: &mut [u128]) -> &mut [u8] {
    let n = a.len() * 16;
    // SAFETY: a `[u128]` is `n` initialised bytes.
    unsafe { std::slice::from_raw_parts_mut(a.as_mut_ptr().cast(), n) }
}

fn at(offset: usize) -> Operand {
    Operand { segment: Segment::Arena, offset, buffer: None }
}

fn run(a: &mut [u128], t: &Thunk<Operand>) {
    let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
    super::common::exec(bytes(a), &[], &mut [], params, t);
}

/// Indices as stored bytes of `dtype` (i64 or i32).
fn index_bytes(idx: &[i64], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::I32 => idx.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect(),
        _ => idx.iter().flat_map(|&i| i.to_le_bytes()).collect(),
    }
}

/// A deterministic byte pattern.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed)).collect()
}

/// Offsets of four operand regions of `cap` bytes each.
const CAP: usize = 4096;

#[test]
fn gather_elements_matches_the_reference() {
    for (data_dims, index_dims, axis, idx) in [
        (vec![3usize, 4], vec![3usize, 2], 1usize, vec![0i64, -1, 3, 4, -5, 1]),
        (vec![1], vec![1], 0, vec![0]),
        (vec![2, 3, 5], vec![2, 2, 7], 2, (0..28).map(|i| (i % 9) - 3).collect()),
        (vec![2, 0], vec![2, 0], 1, vec![]),
    ] {
        for (eb, dtype) in [(1, DType::I64), (4, DType::I32), (8, DType::I64), (16, DType::I32)] {
            let data = pattern(data_dims.iter().product::<usize>() * eb, 3);
            let want = scalar::gather_elements(&data, &idx, &data_dims, &index_dims, axis, eb);
            let mut a = arena(3 * CAP);
            bytes(&mut a)[..data.len()].copy_from_slice(&data);
            let ib = index_bytes(&idx, dtype);
            bytes(&mut a)[CAP..CAP + ib.len()].copy_from_slice(&ib);
            bytes(&mut a)[2 * CAP..3 * CAP].fill(0xEE);
            run(
                &mut a,
                &Thunk::GatherElements(GatherElements {
                    data: at(0),
                    indices: at(CAP),
                    dst: at(2 * CAP),
                    data_dims: data_dims.clone(),
                    index_dims: index_dims.clone(),
                    axis,
                    elem_bytes: eb,
                    index_dtype: dtype,
                }),
            );
            assert_eq!(&bytes(&mut a)[2 * CAP..2 * CAP + want.len()], want, "{data_dims:?} {index_dims:?} eb {eb}");
        }
    }
}

#[test]
fn gather_nd_matches_the_reference() {
    for (batch, lookups, data_dims, slice, idx) in [
        (1usize, 3usize, vec![4usize], 3usize, vec![0i64, -1, 4]),
        (2, 2, vec![2, 3], 2, vec![1, 2, 0, -1, -2, 0, 2, 0]),
        (1, 2, vec![], 5, vec![]),
        (2, 0, vec![3], 4, vec![]),
    ] {
        for (eb, dtype) in [(2, DType::I64), (4, DType::I32), (8, DType::I64)] {
            let data = pattern(batch * data_dims.iter().product::<usize>() * slice * eb, 9);
            let want = scalar::gather_nd(&data, &idx, batch, lookups, &data_dims, slice, eb);
            let mut a = arena(3 * CAP);
            bytes(&mut a)[..data.len()].copy_from_slice(&data);
            let ib = index_bytes(&idx, dtype);
            bytes(&mut a)[CAP..CAP + ib.len()].copy_from_slice(&ib);
            bytes(&mut a)[2 * CAP..3 * CAP].fill(0xEE);
            run(
                &mut a,
                &Thunk::GatherNd(GatherNd {
                    data: at(0),
                    indices: at(CAP),
                    dst: at(2 * CAP),
                    batch,
                    lookups,
                    data_dims: data_dims.clone(),
                    slice_len: slice,
                    elem_bytes: eb,
                    index_dtype: dtype,
                }),
            );
            assert_eq!(&bytes(&mut a)[2 * CAP..2 * CAP + want.len()], want, "{batch} {lookups} {data_dims:?} eb {eb}");
        }
    }
}

/// A scatter's data as the reference's values and as bytes.
trait Data: rlx_runtime::kernels::gather_scatter::ScatterValue + PartialEq + std::fmt::Debug {
    const DTYPE: DType;
    fn make(i: usize) -> Self;
    fn to_bytes(v: &[Self]) -> Vec<u8>;
}

impl Data for f32 {
    const DTYPE: DType = DType::F32;
    fn make(i: usize) -> Self {
        (i as f32 * 0.37).sin() * 4.0
    }
    fn to_bytes(v: &[Self]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

impl Data for i64 {
    const DTYPE: DType = DType::I64;
    fn make(i: usize) -> Self {
        (i as i64 * 7919) % 201 - 100
    }
    fn to_bytes(v: &[Self]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

impl Data for i32 {
    const DTYPE: DType = DType::I32;
    fn make(i: usize) -> Self {
        (i as i32 * 104_729) % 1001 - 500
    }
    fn to_bytes(v: &[Self]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

impl Data for Bool {
    const DTYPE: DType = DType::Bool;
    fn make(i: usize) -> Self {
        Bool(u8::from(i % 3 == 1))
    }
    fn to_bytes(v: &[Self]) -> Vec<u8> {
        v.iter().map(|b| b.0).collect()
    }
}

/// Runs `thunk(data, indices, updates, dst)` with the operands at the
/// given offsets and returns the bytes of `dst`.
fn run_scatter<T: Data>(
    data: &[T],
    idx: &[i64],
    upd: &[T],
    dtype: DType,
    in_place: bool,
    thunk: impl Fn(Operand, Operand, Operand, Operand) -> Thunk<Operand>,
) -> Vec<u8> {
    let mut a = arena(4 * CAP);
    let db = T::to_bytes(data);
    let dst = if in_place { 0 } else { 3 * CAP };
    bytes(&mut a)[..db.len()].copy_from_slice(&db);
    let ib = index_bytes(idx, dtype);
    bytes(&mut a)[CAP..CAP + ib.len()].copy_from_slice(&ib);
    let ub = T::to_bytes(upd);
    bytes(&mut a)[2 * CAP..2 * CAP + ub.len()].copy_from_slice(&ub);
    run(&mut a, &thunk(at(0), at(CAP), at(2 * CAP), at(dst)));
    bytes(&mut a)[dst..dst + db.len()].to_vec()
}

fn scatter_elements_case<T: Data>() {
    let (data_dims, index_dims, axis) = (vec![3usize, 4], vec![2usize, 4], 0usize);
    let data: Vec<T> = (0..12).map(T::make).collect();
    let upd: Vec<T> = (0..8).map(|i| T::make(i + 50)).collect();
    // Duplicates, negatives and out-of-range entries.
    let idx = [1i64, 1, -1, 3, 1, -4, 2, 0];
    for red in REDUCTIONS {
        let want = T::to_bytes(&scalar::scatter_elements(&data, &idx, &upd, &data_dims, &index_dims, axis, red));
        for (dtype, in_place) in [(DType::I64, false), (DType::I32, true)] {
            let got = run_scatter(&data, &idx, &upd, dtype, in_place, |d, i, u, o| {
                Thunk::ScatterElements(ScatterElements {
                    data: d,
                    indices: i,
                    updates: u,
                    dst: o,
                    data_dims: data_dims.clone(),
                    index_dims: index_dims.clone(),
                    axis,
                    reduction: red,
                    dtype: T::DTYPE,
                    index_dtype: dtype,
                })
            });
            assert_eq!(got, want, "{:?} {red:?} in place {in_place}", T::DTYPE);
        }
    }
}

fn scatter_nd_case<T: Data>() {
    let (data_dims, slice) = (vec![3usize, 2], 3usize);
    let data: Vec<T> = (0..18).map(T::make).collect();
    let upd: Vec<T> = (0..12).map(|i| T::make(i + 90)).collect();
    let idx = [2i64, 1, -1, -2, 2, 1, 3, 0];
    for red in REDUCTIONS {
        let want = T::to_bytes(&scalar::scatter_nd(&data, &idx, &upd, 4, &data_dims, slice, red));
        for (dtype, in_place) in [(DType::I32, false), (DType::I64, true)] {
            let got = run_scatter(&data, &idx, &upd, dtype, in_place, |d, i, u, o| {
                Thunk::ScatterNd(ScatterNd {
                    data: d,
                    indices: i,
                    updates: u,
                    dst: o,
                    lookups: 4,
                    data_dims: data_dims.clone(),
                    slice_len: slice,
                    reduction: red,
                    dtype: T::DTYPE,
                    index_dtype: dtype,
                })
            });
            assert_eq!(got, want, "{:?} {red:?} in place {in_place}", T::DTYPE);
        }
    }
}

#[test]
fn scatter_elements_matches_the_reference() {
    scatter_elements_case::<f32>();
    scatter_elements_case::<i64>();
    scatter_elements_case::<i32>();
    scatter_elements_case::<Bool>();
}

#[test]
fn scatter_nd_matches_the_reference() {
    scatter_nd_case::<f32>();
    scatter_nd_case::<i64>();
    scatter_nd_case::<i32>();
    scatter_nd_case::<Bool>();
}

#[test]
fn a_replacing_scatter_moves_any_type_as_bits() {
    // f16 data with reduction `none`: two-byte words, bits kept.
    let data: Vec<u16> = (0..6).map(|i| 0x3C00 + i).collect();
    let mut a = arena(4 * CAP);
    bytes(&mut a)[..12].copy_from_slice(&data.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
    bytes(&mut a)[CAP..CAP + 16].copy_from_slice(&index_bytes(&[5, -6], DType::I64));
    bytes(&mut a)[2 * CAP..2 * CAP + 4].copy_from_slice(&[0xFF, 0x7F, 0x01, 0x80]);
    run(
        &mut a,
        &Thunk::ScatterNd(ScatterNd {
            data: at(0),
            indices: at(CAP),
            updates: at(2 * CAP),
            dst: at(3 * CAP),
            lookups: 2,
            data_dims: vec![6],
            slice_len: 1,
            reduction: ScatterReduction::None,
            dtype: DType::F16,
            index_dtype: DType::I64,
        }),
    );
    let got: Vec<u16> =
        bytes(&mut a)[3 * CAP..3 * CAP + 12].chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    assert_eq!(got, [0x8001, 0x3C01, 0x3C02, 0x3C03, 0x3C04, 0x7FFF]);
}
