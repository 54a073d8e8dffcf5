//! `Where`: every condition type, value size and scalar-flag combination,
//! plus in-place use, against a naive loop.

use crate::kernels::elementwise::select;

fn check<C: crate::kernels::elementwise::Cond + Copy, T: Copy + PartialEq + std::fmt::Debug + Send + Sync + 'static>(
    cond: &[C],
    truthy: &[bool],
    a: &[T],
    b: &[T],
) {
    let len = cond.len();
    for flags in 0..8u8 {
        let (cs, ts, fs) = (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
        for par in [false, true] {
            let mut o = vec![b[0]; len];
            // SAFETY: `cond`, `a` and `b` hold `len >= 1` elements (so index 0 too)
            // and `o` holds `len`, distinct from the inputs.
            unsafe { select(cond.as_ptr(), a.as_ptr(), b.as_ptr(), o.as_mut_ptr(), len, cs, ts, fs, par) };
            for i in 0..len {
                let c = truthy[if cs { 0 } else { i }];
                let want = if c { a[if ts { 0 } else { i }] } else { b[if fs { 0 } else { i }] };
                assert_eq!(o[i], want, "flags {flags} at {i}");
            }
        }
    }
}

#[test]
fn select_matches_naive_for_every_type_and_flag() {
    for len in [1usize, 8, 37] {
        let truthy: Vec<bool> = (0..len).map(|i| i % 3 != 1).collect();
        let c_u8: Vec<u8> = truthy.iter().enumerate().map(|(i, &t)| if t { 1 + (i % 200) as u8 } else { 0 }).collect();
        // NaN and -0.0: NaN != 0 is true, -0.0 != 0 is false.
        let c_f32: Vec<f32> = truthy
            .iter()
            .enumerate()
            .map(|(i, &t)| match (t, i % 2) {
                (true, 0) => f32::NAN,
                (true, _) => -2.5,
                (false, 0) => -0.0,
                _ => 0.0,
            })
            .collect();
        let c_i64: Vec<i64> = truthy.iter().map(|&t| if t { i64::MIN } else { 0 }).collect();
        let a32: Vec<u32> = (0..len as u32).map(|i| 0x7fc0_0001 + i).collect();
        let b32: Vec<u32> = (0..len as u32).map(|i| 0x8000_0000 | i).collect();
        let a64: Vec<u64> = (0..len as u64).map(|i| u64::MAX - i).collect();
        let b64: Vec<u64> = (0..len as u64).map(|i| i << 40).collect();
        check(&c_u8, &truthy, &a32, &b32);
        check(&c_f32, &truthy, &a32, &b32);
        check(&c_i64, &truthy, &a32, &b32);
        check(&c_u8, &truthy, &a64, &b64);
        check(&c_f32, &truthy, &a64, &b64);
        check(&c_i64, &truthy, &a64, &b64);
    }
}

#[test]
fn select_in_place_over_each_non_scalar_operand() {
    let len = 50;
    let cond: Vec<f32> = (0..len).map(|i| (i % 2) as f32).collect();
    let a: Vec<u32> = (0..len as u32).map(|i| 1000 + i).collect();
    let b: Vec<u32> = (0..len as u32).map(|i| 2000 + i).collect();
    let want: Vec<u32> = (0..len).map(|i| if i % 2 == 1 { a[i] } else { b[i] }).collect();
    let mut x = a.clone();
    // SAFETY: all operands hold `len` elements; the output is `x`, a
    // non-scalar operand of its size, exactly.
    unsafe { select(cond.as_ptr(), x.as_ptr(), b.as_ptr(), x.as_mut_ptr(), len, false, false, false, false) };
    assert_eq!(x, want);
    let mut y = b.clone();
    // SAFETY: all operands hold `len` elements; the output is `y`, a
    // non-scalar operand of its size, exactly.
    unsafe { select(cond.as_ptr(), a.as_ptr(), y.as_ptr(), y.as_mut_ptr(), len, false, false, false, false) };
    assert_eq!(y, want);
    // The condition itself (f32, 4 bytes) as the output.
    let mut c = cond.clone();
    let (af, bf): (Vec<f32>, Vec<f32>) =
        ((0..len).map(|i| i as f32).collect(), (0..len).map(|i| -(i as f32)).collect());
    // SAFETY: all operands hold `len` 4-byte elements; the output is the
    // condition `c` (f32, the size of the values) exactly.
    unsafe { select(c.as_ptr(), af.as_ptr(), bf.as_ptr(), c.as_mut_ptr(), len, false, false, false, false) };
    for i in 0..len {
        assert_eq!(c[i], if i % 2 == 1 { af[i] } else { bf[i] });
    }
}
