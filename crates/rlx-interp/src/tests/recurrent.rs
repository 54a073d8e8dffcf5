//! `Recurrent` through lowering and `exec_thunk`, against the kernel's
//! scalar reference (`rlx_runtime::kernels::recurrent::scalar`): both
//! directions of a bidirectional layer as two thunks writing their halves
//! of the same outputs, with the weights in the weights segment, for every
//! cell and both layouts.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_runtime::arena::Arena;
use rlx_runtime::kernels::recurrent::scalar::{self, Inputs, Outputs};
use rlx_runtime::kernels::recurrent::RecurrentShape;
use rlx_sched::thunk::Recurrent;
use rlx_sched::{ActKind, Operand, Params, RecurrentCell, Segment, Thunk};

fn at(segment: Segment, offset: usize) -> Operand {
    Operand { segment, offset, buffer: None }
}

fn put(seg: &mut Arena, off: usize, data: &[f32]) {
    for (i, x) in data.iter().enumerate() {
        seg.as_mut_slice()[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

fn get(seg: &Arena, off: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| f32::from_le_bytes(seg.as_slice()[off + 4 * i..off + 4 * i + 4].try_into().unwrap())).collect()
}

fn random(n: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

fn run(arena: &mut Arena, weights: &Arena, t: &Thunk<Operand>) {
    // Exactly what the plan reserves for this thunk.
    let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
    let mut scratch = Arena::new(rlx_core::lower::scratch_bytes(t, &params).max(64));
    super::common::exec(arena.as_mut_slice(), weights.as_slice(), scratch.as_mut_slice(), params, t);
}

#[test]
fn bidirectional_layers_match_the_reference_in_both_layouts() {
    let (seq, batch, hidden) = (5, 3, 6);
    let cells = [RecurrentCell::Lstm, RecurrentCell::Gru, RecurrentCell::GruLinearBeforeReset, RecurrentCell::Rnn];
    for (k, cell) in cells.into_iter().enumerate() {
        for batch_major in [false, true] {
            let mut rng = StdRng::seed_from_u64(k as u64 * 2 + batch_major as u64);
            let lstm = cell == RecurrentCell::Lstm;
            let cols = cell.gates() * hidden;
            let state = 2 * batch * hidden;
            let x = random(seq * batch * 2 * cols, &mut rng);
            let h0 = random(state, &mut rng);
            let c0 = random(state, &mut rng);
            // Per direction: packed R, bias, peepholes in the weights.
            let r: Vec<Vec<f32>> = (0..2).map(|_| cell.pack_r(&random(cols * hidden, &mut rng), hidden)).collect();
            let bias: Vec<Vec<f32>> = (0..2).map(|_| random(cols, &mut rng)).collect();
            let p: Vec<Vec<f32>> = (0..2).map(|_| random(3 * hidden, &mut rng)).collect();
            let mut weights = Arena::new(64 * 1024);
            let mut w_at = Vec::new();
            let mut off = 0;
            for d in 0..2 {
                let at3 = [off, off + r[d].len() * 4, off + (r[d].len() + cols) * 4];
                put(&mut weights, at3[0], &r[d]);
                put(&mut weights, at3[1], &bias[d]);
                put(&mut weights, at3[2], &p[d]);
                off = at3[2] + 3 * hidden * 4;
                w_at.push(at3);
            }
            // Arena: x, h0, c0, y, y_h, y_c.
            let offs: Vec<usize> = [x.len(), state, state, seq * state, state, state]
                .iter()
                .scan(0, |acc, &len| {
                    let o = *acc;
                    *acc += len * 4;
                    Some(o)
                })
                .collect();
            let mut arena = Arena::new(offs[5] + state * 4);
            put(&mut arena, offs[0], &x);
            put(&mut arena, offs[1], &h0);
            put(&mut arena, offs[2], &c0);
            let shape = |dir: usize| RecurrentShape {
                cell,
                seq,
                batch,
                hidden,
                dirs: 2,
                dir,
                reverse: dir == 1,
                batch_major,
                clip: 3.0,
                act_f: ActKind::Sigmoid,
                act_g: ActKind::Tanh,
                act_h: ActKind::Tanh,
            };
            let mut want = [vec![0.0; seq * state], vec![0.0; state], vec![0.0; state]];
            for dir in 0..2 {
                let s = shape(dir);
                let (a, w) =
                    (|i: usize| Some(at(Segment::Arena, offs[i])), |i: usize| at(Segment::Weights, w_at[dir][i]));
                let t = Thunk::Recurrent(Recurrent {
                    x: at(Segment::Arena, offs[0]),
                    r: w(0),
                    bias: Some(w(1)),
                    p: lstm.then(|| w(2)),
                    h0: a(1),
                    c0: if lstm { a(2) } else { None },
                    y: a(3),
                    y_h: a(4),
                    y_c: if lstm { a(5) } else { None },
                    cell,
                    seq,
                    batch,
                    hidden,
                    dirs: 2,
                    dir,
                    reverse: s.reverse,
                    batch_major,
                    clip: s.clip,
                    act_f: s.act_f,
                    act_g: s.act_g,
                    act_h: s.act_h,
                });
                run(&mut arena, &weights, &t);
                let inputs = Inputs {
                    x: &x,
                    r: &r[dir],
                    bias: Some(&bias[dir]),
                    p: lstm.then_some(p[dir].as_slice()),
                    h0: Some(&h0),
                    c0: lstm.then_some(c0.as_slice()),
                };
                let [y, y_h, y_c] = &mut want;
                let y_c = lstm.then_some(y_c.as_mut_slice());
                scalar::recurrent(&s, &inputs, Outputs { y: Some(y), y_h: Some(y_h), y_c });
            }
            let what = format!("{cell:?} batch_major {batch_major}");
            assert_eq!(get(&arena, offs[3], seq * state), want[0], "{what}: y");
            assert_eq!(get(&arena, offs[4], state), want[1], "{what}: y_h");
            if lstm {
                assert_eq!(get(&arena, offs[5], state), want[2], "{what}: y_c");
            }
            // The last step of each direction is its final state: step
            // `seq - 1` forward, step 0 in reverse.
            let y = &want[0];
            for b in 0..batch {
                for dir in 0..2 {
                    let t = if dir == 0 { seq - 1 } else { 0 };
                    let y_row = if batch_major { (b * seq + t) * 2 + dir } else { (t * 2 + dir) * batch + b };
                    let h_row = if batch_major { b * 2 + dir } else { dir * batch + b };
                    assert_eq!(y[y_row * hidden..][..hidden], want[1][h_row * hidden..][..hidden], "{what}");
                }
            }
        }
    }
}
