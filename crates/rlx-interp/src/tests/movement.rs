//! Every movement arm through `exec_thunk` against naive computations.

use rlx_runtime::kernels::movement::pad::scalar;
use rlx_sched::thunk::{
    self as kinds, Concat, CopyF64, CopyI64, Gather, GatherAxis, KvAppend, KvWrite, Narrow, Pad, Transpose,
};
use rlx_sched::{DType, Operand, PadMode, Params, Segment, Thunk};

/// An 8-byte aligned arena of `n` bytes.
struct Arena(Vec<u64>);

impl Arena {
    fn new(n: usize) -> Arena {
        Arena(vec![0; n.div_ceil(8)])
    }
    fn bytes(&mut self) -> &mut [u8] {
        let n = self.0.len() * 8;
        // SAFETY: a `Vec<u64>` is `n` initialised bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), n) }
    }
    fn put(&mut self, at: usize, data: &[u8]) {
        self.bytes()[at..at + data.len()].copy_from_slice(data);
    }
    fn get(&mut self, at: usize, n: usize) -> Vec<u8> {
        self.bytes()[at..at + n].to_vec()
    }
    fn run(&mut self, t: &Thunk<Operand>) {
        let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
        super::common::exec(self.bytes(), &[], &mut [], params, t);
    }
}

fn at(offset: usize) -> Operand {
    Operand { segment: Segment::Arena, offset, buffer: None }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn copies_including_overlap() {
    let data = pattern(800, 1);
    for (kind, eb) in [("f32", 4), ("f64", 8), ("i64", 8)] {
        let len = 40;
        let mk = |src, dst| match kind {
            "f32" => Thunk::Copy(kinds::Copy { src: at(src), dst: at(dst), len }),
            "f64" => Thunk::CopyF64(CopyF64 { src: at(src), dst: at(dst), len }),
            _ => Thunk::CopyI64(CopyI64 { src: at(src), dst: at(dst), len }),
        };
        // Disjoint, then overlapping forward (dst after src) as a memmove.
        for (src, dst) in [(0, 400), (0, 8), (16, 0)] {
            let mut a = Arena::new(800);
            a.put(0, &data);
            a.run(&mk(src, dst));
            let mut want = data.clone();
            want.copy_within(src..src + len * eb, dst);
            assert_eq!(a.get(0, 800), want, "{kind} {src}->{dst}");
        }
    }
}

#[test]
fn narrow_rows() {
    let mut a = Arena::new(256);
    let src = pattern(120, 3);
    a.put(0, &src);
    // 4 rows of 5 two-byte elements, source stride 15, destination 6.
    a.run(&Thunk::Narrow(Narrow {
        src: at(4),
        dst: at(128),
        outer: 4,
        src_stride: 15,
        dst_stride: 6,
        inner: 5,
        elem_bytes: 2,
    }));
    let mut want = vec![0u8; 4 * 12];
    for o in 0..4 {
        want[o * 12..o * 12 + 10].copy_from_slice(&src[4 + o * 30..4 + o * 30 + 10]);
    }
    assert_eq!(a.get(128, 48), want);
}

#[test]
fn transpose_every_element_size() {
    // [2, 3, 4] -> permutation (2, 0, 1), plus a broadcast of the middle axis.
    let cases: [(Vec<usize>, Vec<usize>, usize); 3] =
        [(vec![4, 2, 3], vec![1, 12, 4], 24), (vec![2, 5, 4], vec![12, 0, 1], 24), (vec![3, 8], vec![1, 3], 24)];
    for eb in [1usize, 2, 4, 8, 16] {
        for (dims, strides, in_total) in &cases {
            let input = pattern(in_total * eb, eb as u8);
            let total: usize = dims.iter().product();
            let mut want = vec![0u8; total * eb];
            for o in 0..total {
                let (mut rem, mut s) = (o, 0);
                for d in (0..dims.len()).rev() {
                    s += (rem % dims[d]) * strides[d];
                    rem /= dims[d];
                }
                want[o * eb..(o + 1) * eb].copy_from_slice(&input[s * eb..(s + 1) * eb]);
            }
            // Input below 512, output (at most 40 x 16 bytes) above.
            let mut a = Arena::new(512 + 40 * 16);
            a.put(0, &input);
            a.run(&Thunk::Transpose(Transpose {
                src: at(0),
                dst: at(512),
                in_total: *in_total,
                out_dims: dims.clone(),
                in_strides: strides.clone(),
                elem_bytes: eb,
            }));
            assert_eq!(a.get(512, total * eb), want, "eb {eb} dims {dims:?}");
        }
    }
}

#[test]
fn concat_rows() {
    let (x, y) = (pattern(2 * 3 * 4, 1), pattern(2 * 2 * 4, 9));
    let mut a = Arena::new(128);
    a.put(0, &x);
    a.put(32, &y);
    a.run(&Thunk::Concat(Concat {
        inputs: vec![at(0), at(32)],
        dst: at(64),
        outer: 2,
        inner: vec![3, 2],
        elem_bytes: 4,
    }));
    let want: Vec<u8> = [&x[..12], &y[..8], &x[12..], &y[8..]].concat();
    assert_eq!(a.get(64, 40), want);
}

/// `Pad` of every mode through the lowering: f32 with a value in the
/// arena (constant) against the kernel's reference, i64 with the zero
/// default, and an output past the parallel threshold.
#[test]
fn pad_every_mode_against_the_reference() {
    let (dims, before, after) = (vec![2, 3, 5], vec![1, 0, 2], vec![0, 2, 1]);
    let out = 3 * 5 * 8;
    let x: Vec<f32> = (0..30).map(|i| i as f32 * 0.5 - 3.0).collect();
    let ids: Vec<i64> = (0..30).map(|i| (i - 15) << 40).collect();
    for mode in PadMode::ALL.iter().copied() {
        let constant = mode == PadMode::Constant;
        let pad = |src, value: Option<usize>, dst, elem_bytes| {
            Thunk::Pad(Pad {
                src: at(src),
                value: value.map(at),
                dst: at(dst),
                dims: dims.clone(),
                before: before.clone(),
                after: after.clone(),
                mode,
                elem_bytes,
            })
        };
        let mut a = Arena::new(4096);
        a.put(0, &f32_bytes(&x));
        a.put(128, &f32_bytes(&[7.5]));
        a.run(&pad(0, constant.then_some(128), 256, 4));
        let want = scalar::pad(&x, if constant { 7.5 } else { 0.0 }, &dims, &before, &after, mode);
        assert_eq!(a.get(256, out * 4), f32_bytes(&want), "f32 {mode:?}");
        a.put(1024, &i64_bytes(&ids));
        a.run(&pad(1024, None, 2048, 8));
        let want = scalar::pad(&ids, 0, &dims, &before, &after, mode);
        assert_eq!(a.get(2048, out * 8), i64_bytes(&want), "i64 {mode:?}");
    }
    // 8 x 66 x 66 outputs: split over threads by rows.
    let (dims, before, after) = (vec![8, 64, 64], vec![0, 1, 1], vec![0, 1, 1]);
    let big: Vec<f32> = (0..8 * 64 * 64).map(|i| i as f32).collect();
    let thunk = Thunk::Pad(Pad {
        src: at(0),
        value: None,
        dst: at(big.len() * 4),
        dims: dims.clone(),
        before: before.clone(),
        after: after.clone(),
        mode: PadMode::Reflect,
        elem_bytes: 4,
    });
    let call =
        rlx_sched::lower(&thunk, &Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 }).expect("a call");
    assert!(call.name() == "Pad" && call.parallel(), "{call:?}");
    let mut a = Arena::new(big.len() * 4 + 8 * 66 * 66 * 4);
    a.put(0, &f32_bytes(&big));
    a.run(&thunk);
    let want = scalar::pad(&big, 0.0, &dims, &before, &after, PadMode::Reflect);
    assert_eq!(a.get(big.len() * 4, want.len() * 4), f32_bytes(&want));
}

#[test]
fn gather_all_index_types() {
    let (vocab, row) = (4, 3);
    let table: Vec<f32> = (0..vocab * row).map(|i| i as f32 * 1.5 - 2.0).collect();
    // Naive: negative from the end, out of range gives zeros.
    let pick = |i: i64| -> Vec<f32> {
        let i = if i < 0 { i + vocab as i64 } else { i };
        if (0..vocab as i64).contains(&i) {
            table[i as usize * row..(i as usize + 1) * row].to_vec()
        } else {
            vec![0.0; row]
        }
    };
    let idx = [3i64, -1, 4, -5, 0];
    let want: Vec<f32> = idx.iter().flat_map(|&i| pick(i)).collect();
    let encodings: [(DType, Vec<u8>); 3] = [
        (DType::I64, i64_bytes(&idx)),
        (DType::I32, idx.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect()),
        (DType::F32, f32_bytes(&idx.iter().map(|&i| i as f32 + 0.25 * i.signum() as f32).collect::<Vec<_>>())),
    ];
    for (dtype, bytes) in encodings {
        let mut a = Arena::new(256);
        a.put(0, &f32_bytes(&table));
        a.put(64, &bytes);
        a.put(128, &[0xFF; 60]);
        a.run(&Thunk::Gather(Gather {
            table: at(0),
            indices: at(64),
            dst: at(128),
            num_indices: idx.len(),
            row_len: row,
            vocab,
            index_dtype: dtype,
        }));
        assert_eq!(a.get(128, 60), f32_bytes(&want), "{dtype:?}");
    }
}

#[test]
fn gather_axis_middle() {
    let (outer, axis, inner, eb) = (2, 3, 2, 8);
    let src = pattern(outer * axis * inner * eb, 5);
    let idx = [2i64, -3, 3, 1];
    let rb = inner * eb;
    let mut want = vec![0u8; outer * idx.len() * rb];
    for o in 0..outer {
        for (j, &i) in idx.iter().enumerate() {
            let k = if i < 0 { i + axis as i64 } else { i };
            if (0..axis as i64).contains(&k) {
                let from = (o * axis + k as usize) * rb;
                want[(o * idx.len() + j) * rb..][..rb].copy_from_slice(&src[from..from + rb]);
            }
        }
    }
    let mut a = Arena::new(512);
    a.put(0, &src);
    a.put(128, &i64_bytes(&idx));
    a.put(192, &vec![0xEE; want.len()]);
    a.run(&Thunk::GatherAxis(GatherAxis {
        src: at(0),
        indices: at(128),
        dst: at(192),
        outer,
        axis_dim: axis,
        inner,
        num_indices: idx.len(),
        elem_bytes: eb,
        index_dtype: DType::I64,
    }));
    assert_eq!(a.get(192, want.len()), want);
}

#[test]
fn kv_append_at_position() {
    let (batch, new_len, max_len, row, pos, eb) = (2, 2, 5, 3, 2, 4);
    let src = pattern(batch * new_len * row * eb, 7);
    let cache = pattern(batch * max_len * row * eb, 100);
    let mut want = cache.clone();
    for b in 0..batch {
        let n = new_len * row * eb;
        let to = (b * max_len + pos) * row * eb;
        want[to..to + n].copy_from_slice(&src[b * n..(b + 1) * n]);
    }
    let mut a = Arena::new(512);
    a.put(0, &src);
    a.put(128, &cache);
    a.run(&Thunk::KvAppend(KvAppend { src: at(0), cache: at(128), batch, new_len, max_len, row, pos, elem_bytes: eb }));
    assert_eq!(a.get(128, cache.len()), want);
}

#[test]
fn kv_write_at_run_time_position() {
    let (new_len, max_len, row, eb) = (2, 5, 3, 4);
    let src = pattern(new_len * row * eb, 7);
    let cache = pattern(max_len * row * eb, 100);
    for pos in [0i64, 1, 3, 4, -1, i64::MAX] {
        let mut want = cache.clone();
        if let Some(p) = usize::try_from(pos).ok().filter(|p| p + new_len <= max_len) {
            let to = p * row * eb;
            want[to..to + src.len()].copy_from_slice(&src);
        }
        let mut a = Arena::new(512);
        a.put(0, &src);
        a.put(64, &pos.to_le_bytes());
        a.put(128, &cache);
        a.run(&Thunk::KvWrite(KvWrite {
            src: at(0),
            cache: at(128),
            pos: at(64),
            new_len,
            max_len,
            row,
            elem_bytes: eb,
        }));
        assert_eq!(a.get(128, cache.len()), want, "pos {pos}");
    }
}
