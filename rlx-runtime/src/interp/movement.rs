//! Interpreter arms for the movement family.
//!
//! Each arm takes its decisions (transpose path, serial or parallel) from
//! `rlx_sched::plan` and calls the kernel entry the code generator emits
//! for the same decision.

use super::Memory;
use crate::kernels::movement::{self as mv, Elem};
use rlx_sched::plan::{copy_parallel, narrow_parallel, parallel, transpose_path};
use rlx_sched::{DType, Operand, Thunk};

pub(super) fn copy(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Copy { src, dst, len } = t else { unreachable!("copy arm got {:?}", t.kind()) };
    let par = copy_parallel(src, dst, *len, 4);
    // SAFETY: validated extents; `par` only when the ranges are disjoint.
    unsafe { mv::copy_f32(mem.ptr(*src), mem.ptr(*dst), *len, par) }
}

pub(super) fn copy_f64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::CopyF64 { src, dst, len } = t else { unreachable!("copy_f64 arm got {:?}", t.kind()) };
    let par = copy_parallel(src, dst, *len, 8);
    // SAFETY: as in `copy`.
    unsafe { mv::copy_f64(mem.ptr(*src), mem.ptr(*dst), *len, par) }
}

pub(super) fn copy_i64(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::CopyI64 { src, dst, len } = t else { unreachable!("copy_i64 arm got {:?}", t.kind()) };
    let par = copy_parallel(src, dst, *len, 8);
    // SAFETY: as in `copy`.
    unsafe { mv::copy_i64(mem.ptr(*src), mem.ptr(*dst), *len, par) }
}

pub(super) fn narrow(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } = t else {
        unreachable!("narrow arm got {:?}", t.kind())
    };
    let par = narrow_parallel(*outer, *inner, *dst_stride);
    // SAFETY: validated extents; source and destination do not overlap.
    unsafe { mv::narrow(mem.ptr(*src), mem.ptr(*dst), *outer, *src_stride, *dst_stride, *inner, *elem_bytes, par) }
}

pub(super) fn transpose(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } = t else {
        unreachable!("transpose arm got {:?}", t.kind())
    };
    let computed;
    let path = match mem.prepared_transpose() {
        Some(p) => p,
        None => {
            computed = transpose_path(out_dims, in_strides, *elem_bytes, *in_total);
            &computed
        }
    };
    let par = parallel(out_dims.iter().product());
    let (s, d) = (mem.ptr::<u8>(*src), mem.ptr::<u8>(*dst));
    /// Runs the path for one element type.
    ///
    /// # Safety
    /// As `mv::transpose`.
    unsafe fn run<T: Elem>(s: *mut u8, d: *mut u8, path: &rlx_sched::plan::TransposePath, par: bool) {
        // SAFETY: forwarded contract.
        unsafe { mv::transpose::<T>(s.cast(), d.cast(), path, par) }
    }
    // SAFETY: validated extents (every read below `in_total`, checked by
    // `plan::transpose_reads_within`); the validator admits only these
    // element sizes and no overlap.
    unsafe {
        match elem_bytes {
            1 => run::<u8>(s, d, path, par),
            2 => run::<u16>(s, d, path, par),
            4 => run::<u32>(s, d, path, par),
            8 => run::<u64>(s, d, path, par),
            16 => run::<[u64; 2]>(s, d, path, par),
            other => unreachable!("transpose of {other}-byte elements passed validation"),
        }
    }
}

pub(super) fn concat(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Concat { inputs, dst, outer, inner, elem_bytes } = t else {
        unreachable!("concat arm got {:?}", t.kind())
    };
    let par = parallel(outer * inner.iter().sum::<usize>());
    // Input pointers on the stack, so a run allocates nothing; only a
    // concatenation of more than `CONCAT_INLINE` inputs takes a `Vec`.
    const CONCAT_INLINE: usize = 32;
    if inputs.len() <= CONCAT_INLINE {
        let mut ptrs = [std::ptr::null::<u8>(); CONCAT_INLINE];
        for (p, op) in ptrs.iter_mut().zip(inputs) {
            *p = mem.ptr::<u8>(*op).cast_const();
        }
        // SAFETY: validated extents; no input overlaps the output.
        unsafe { mv::concat(&ptrs[..inputs.len()], mem.ptr(*dst), *outer, inner, *elem_bytes, par) }
    } else {
        let ptrs: Vec<*const u8> = inputs.iter().map(|op| mem.ptr::<u8>(*op).cast_const()).collect();
        // SAFETY: as above.
        unsafe { mv::concat(&ptrs, mem.ptr(*dst), *outer, inner, *elem_bytes, par) }
    }
}

pub(super) fn gather(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } = t else {
        unreachable!("gather arm got {:?}", t.kind())
    };
    let (tp, ip, dp) = (mem.ptr::<f32>(*table), mem.ptr::<u8>(*indices), mem.ptr::<f32>(*dst));
    let (n, row, vocab) = (*num_indices, *row_len, *vocab);
    let par = parallel(n * row);
    // SAFETY: validated extents; the output overlaps no input.
    unsafe {
        match index_dtype {
            DType::I64 => mv::gather_f32::<i64>(tp, ip.cast(), dp, n, row, vocab, par),
            DType::I32 => mv::gather_f32::<i32>(tp, ip.cast(), dp, n, row, vocab, par),
            DType::F32 => mv::gather_f32::<f32>(tp, ip.cast(), dp, n, row, vocab, par),
            other => unreachable!("Gather with {} indices passed validation", other.name()),
        }
    }
}

pub(super) fn gather_axis(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } = t
    else {
        unreachable!("gather_axis arm got {:?}", t.kind())
    };
    let (sp, ip, dp) = (mem.ptr::<u8>(*src), mem.ptr::<u8>(*indices), mem.ptr::<u8>(*dst));
    let (outer, axis, inner, n, eb) = (*outer, *axis_dim, *inner, *num_indices, *elem_bytes);
    let par = parallel(outer * n * inner);
    // SAFETY: validated extents; the output overlaps no input.
    unsafe {
        match index_dtype {
            DType::I64 => mv::gather_axis::<i64>(sp, ip.cast(), dp, outer, axis, inner, n, eb, par),
            DType::I32 => mv::gather_axis::<i32>(sp, ip.cast(), dp, outer, axis, inner, n, eb, par),
            DType::F32 => mv::gather_axis::<f32>(sp, ip.cast(), dp, outer, axis, inner, n, eb, par),
            other => unreachable!("GatherAxis with {} indices passed validation", other.name()),
        }
    }
}

pub(super) fn kv_append(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } = t else {
        unreachable!("kv_append arm got {:?}", t.kind())
    };
    let par = parallel(batch * new_len * row);
    // SAFETY: validated extents; source and cache do not overlap.
    unsafe { mv::kv_append(mem.ptr(*src), mem.ptr(*cache), *batch, *new_len, *max_len, *row, *pos, *elem_bytes, par) }
}

#[cfg(test)]
mod tests {
    //! Every movement arm through `exec_thunk` against naive computations.

    use rlx_sched::{DType, Operand, Params, Segment, Thunk};

    use crate::interp::{exec_thunk, Memory};

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
            let mut mem = Memory::new(self.bytes(), &[], &mut [], params);
            exec_thunk(&mut mem, t);
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
                "f32" => Thunk::Copy { src: at(src), dst: at(dst), len },
                "f64" => Thunk::CopyF64 { src: at(src), dst: at(dst), len },
                _ => Thunk::CopyI64 { src: at(src), dst: at(dst), len },
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
        a.run(&Thunk::Narrow {
            src: at(4),
            dst: at(128),
            outer: 4,
            src_stride: 15,
            dst_stride: 6,
            inner: 5,
            elem_bytes: 2,
        });
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
                a.run(&Thunk::Transpose {
                    src: at(0),
                    dst: at(512),
                    in_total: *in_total,
                    out_dims: dims.clone(),
                    in_strides: strides.clone(),
                    elem_bytes: eb,
                });
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
        a.run(&Thunk::Concat { inputs: vec![at(0), at(32)], dst: at(64), outer: 2, inner: vec![3, 2], elem_bytes: 4 });
        let want: Vec<u8> = [&x[..12], &y[..8], &x[12..], &y[8..]].concat();
        assert_eq!(a.get(64, 40), want);
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
            a.run(&Thunk::Gather {
                table: at(0),
                indices: at(64),
                dst: at(128),
                num_indices: idx.len(),
                row_len: row,
                vocab,
                index_dtype: dtype,
            });
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
        a.run(&Thunk::GatherAxis {
            src: at(0),
            indices: at(128),
            dst: at(192),
            outer,
            axis_dim: axis,
            inner,
            num_indices: idx.len(),
            elem_bytes: eb,
            index_dtype: DType::I64,
        });
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
        a.run(&Thunk::KvAppend { src: at(0), cache: at(128), batch, new_len, max_len, row, pos, elem_bytes: eb });
        assert_eq!(a.get(128, cache.len()), want);
    }
}
