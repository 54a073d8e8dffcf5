use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::{ArgOp, BinaryOp, DType, Operand, Params, ReduceOp, Segment, Thunk};

use rlx_runtime::arena::Arena;
use rlx_sched::thunk::{ArgReduce, Cumulative, Reduce, TopK};

fn a(offset: usize) -> Operand {
    Operand { segment: Segment::Arena, offset, buffer: None }
}

fn put(seg: &mut Arena, off: usize, data: &[f32]) {
    for (i, x) in data.iter().enumerate() {
        seg.as_mut_slice()[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

fn get_f32(seg: &Arena, off: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| f32::from_le_bytes(seg.as_slice()[off + 4 * i..off + 4 * i + 4].try_into().unwrap())).collect()
}

fn get_i64(seg: &Arena, off: usize, len: usize) -> Vec<i64> {
    (0..len).map(|i| i64::from_le_bytes(seg.as_slice()[off + 8 * i..off + 8 * i + 8].try_into().unwrap())).collect()
}

fn run(arena: &mut Arena, scratch_bytes: usize, t: &Thunk<Operand>) {
    let weights = Arena::new(64);
    let mut scratch = Arena::new(scratch_bytes.max(64));
    let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
    super::common::exec(arena.as_mut_slice(), weights.as_slice(), scratch.as_mut_slice(), params, t);
}

fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-3i32..4) as f32 * 0.5).collect()
}

#[test]
fn reduce_rows_and_columns() {
    // Values are multiples of 0.5 with small sums, so every op but the
    // transcendental ones is exact in any order.
    for (outer, n, inner) in [(3, 17, 1), (2, 5, 70)] {
        let x = data(outer * n * inner, 3);
        let out_off = x.len() * 4;
        let mut arena = Arena::new(out_off + outer * inner * 4);
        put(&mut arena, 0, &x);
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::SumSquare, ReduceOp::L1, ReduceOp::Mean] {
            run(&mut arena, 0, &Thunk::Reduce(Reduce { src: a(0), dst: a(out_off), outer, axis_dim: n, inner, op }));
            let got = get_f32(&arena, out_off, outer * inner);
            for o in 0..outer {
                for i in 0..inner {
                    let col: Vec<f32> = (0..n).map(|j| x[(o * n + j) * inner + i]).collect();
                    let want = match op {
                        ReduceOp::Sum => col.iter().sum::<f32>(),
                        ReduceOp::Max => col.iter().cloned().fold(f32::NEG_INFINITY, f32::max),
                        ReduceOp::Min => col.iter().cloned().fold(f32::INFINITY, f32::min),
                        ReduceOp::SumSquare => col.iter().map(|v| v * v).sum(),
                        ReduceOp::L1 => col.iter().map(|v| v.abs()).sum(),
                        _ => col.iter().sum::<f32>() / n as f32,
                    };
                    assert_eq!(got[o * inner + i], want, "{op:?} ({outer},{n},{inner}) o={o} i={i}");
                }
            }
        }
    }
}

#[test]
fn arg_reduce_writes_i64_or_f32() {
    let (outer, n, inner) = (2, 6, 3);
    let x = data(outer * n * inner, 4);
    let out_off = 512;
    let mut arena = Arena::new(out_off + outer * inner * 8);
    put(&mut arena, 0, &x);
    for op in [ArgOp::Max, ArgOp::Min] {
        for last in [false, true] {
            for i64_out in [true, false] {
                let t = Thunk::ArgReduce(ArgReduce {
                    src: a(0),
                    dst: a(out_off),
                    outer,
                    axis_dim: n,
                    inner,
                    op,
                    select_last: last,
                    indices_i64: i64_out,
                });
                run(&mut arena, 0, &t);
                let got: Vec<i64> = if i64_out {
                    get_i64(&arena, out_off, outer * inner)
                } else {
                    get_f32(&arena, out_off, outer * inner).iter().map(|&v| v as i64).collect()
                };
                for o in 0..outer {
                    for i in 0..inner {
                        let col: Vec<f32> = (0..n).map(|j| x[(o * n + j) * inner + i]).collect();
                        let best = match op {
                            ArgOp::Max => col.iter().cloned().fold(f32::NEG_INFINITY, f32::max),
                            ArgOp::Min => col.iter().cloned().fold(f32::INFINITY, f32::min),
                        };
                        let want = if last {
                            col.iter().rposition(|&v| v == best)
                        } else {
                            col.iter().position(|&v| v == best)
                        };
                        assert_eq!(got[o * inner + i], want.unwrap() as i64, "{op:?} last={last} col={col:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn cumulative_products_and_i64_sums_through_the_call_table() {
    // f32 products of halves (exact), from the end, exclusive.
    let (outer, n, inner) = (2, 4, 3);
    let x = data(outer * n * inner, 8);
    let mut arena = Arena::new(x.len() * 4 * 2);
    put(&mut arena, 0, &x);
    let dst = x.len() * 4;
    let t = Thunk::Cumulative(Cumulative {
        src: a(0),
        dst: a(dst),
        outer,
        axis_dim: n,
        inner,
        op: BinaryOp::Mul,
        dtype: DType::F32,
        exclusive: true,
        reverse: true,
    });
    run(&mut arena, 0, &t);
    let got = get_f32(&arena, dst, x.len());
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = 1.0f32;
            for j in (0..n).rev() {
                let at = (o * n + j) * inner + i;
                assert_eq!(got[at], acc, "f32 product at {at}");
                acc *= x[at];
            }
        }
    }
    // i64 sums past 2^53 (exact, where f32 or f64 would round) and wrapping.
    let xi = [i64::MAX - 1, 1, 1, 3, 1 << 60, 1 << 60, 5, 7];
    let mut arena = Arena::new(64);
    for (k, v) in xi.iter().enumerate() {
        arena.as_mut_slice()[8 * k..8 * k + 8].copy_from_slice(&v.to_le_bytes());
    }
    let t = Thunk::Cumulative(Cumulative {
        src: a(0),
        dst: a(0),
        outer: 2,
        axis_dim: 4,
        inner: 1,
        op: BinaryOp::Add,
        dtype: DType::I64,
        exclusive: false,
        reverse: false,
    });
    run(&mut arena, 0, &t);
    let got = get_i64(&arena, 0, 8);
    assert_eq!(
        got,
        vec![i64::MAX - 1, i64::MAX, i64::MIN, i64::MIN + 3, 1 << 60, 1 << 61, (1 << 61) + 5, (1 << 61) + 12]
    );
}

#[test]
fn running_sums_in_place_exclusive_reverse() {
    let (outer, n, inner) = (2, 5, 3);
    let x = data(outer * n * inner, 5);
    for (exclusive, reverse) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut arena = Arena::new(x.len() * 4);
        put(&mut arena, 0, &x);
        let t = Cumulative {
            src: a(0),
            dst: a(0),
            outer,
            axis_dim: n,
            inner,
            op: BinaryOp::Add,
            dtype: DType::F32,
            exclusive,
            reverse,
        };
        run(&mut arena, 0, &Thunk::Cumulative(t));
        let got = get_f32(&arena, 0, x.len());
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = 0.0f32;
                let order: Vec<usize> = if reverse { (0..n).rev().collect() } else { (0..n).collect() };
                for j in order {
                    let at = (o * n + j) * inner + i;
                    let before = acc;
                    acc += x[at];
                    assert_eq!(got[at], if exclusive { before } else { acc }, "ex={exclusive} rev={reverse}");
                }
            }
        }
    }
}

#[test]
fn top_k_with_and_without_values() {
    let (outer, n, k) = (3, 10, 4);
    let x = data(outer * n, 6);
    let (idx_off, val_off) = (256, 512);
    for largest in [true, false] {
        for (i64_out, with_values) in [(true, true), (false, false)] {
            let mut arena = Arena::new(1024);
            put(&mut arena, 0, &x);
            let t = Thunk::TopK(TopK {
                src: a(0),
                dst: a(idx_off),
                values: with_values.then(|| a(val_off)),
                outer,
                axis_dim: n,
                k,
                largest,
                indices_i64: i64_out,
            });
            // The plan's reservation: axis_dim * 5 bytes.
            run(&mut arena, n * 5, &t);
            let idx: Vec<i64> = if i64_out {
                get_i64(&arena, idx_off, outer * k)
            } else {
                get_f32(&arena, idx_off, outer * k).iter().map(|&v| v as i64).collect()
            };
            let vals = get_f32(&arena, val_off, outer * k);
            for o in 0..outer {
                let row = &x[o * n..(o + 1) * n];
                let mut order: Vec<usize> = (0..n).collect();
                // Stable: ties keep the lower index first.
                order.sort_by(|&p, &q| if largest { row[q].total_cmp(&row[p]) } else { row[p].total_cmp(&row[q]) });
                let got: Vec<usize> = idx[o * k..(o + 1) * k].iter().map(|&i| i as usize).collect();
                assert_eq!(got, order[..k].to_vec(), "largest={largest} row={row:?}");
                if with_values {
                    let want: Vec<f32> = order[..k].iter().map(|&i| row[i]).collect();
                    assert_eq!(&vals[o * k..(o + 1) * k], &want[..]);
                } else {
                    assert!(vals.iter().all(|&v| v == 0.0), "values written without a values operand");
                }
            }
        }
    }
}
