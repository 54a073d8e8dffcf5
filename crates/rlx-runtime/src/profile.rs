//! Per-thunk timing for `--profile`. Generated code calls [`mark`] after
//! each thunk only when the model crate's `profile` feature is on, so a
//! normal build carries no timing code at all.

use std::sync::Mutex;
use std::time::{Duration, Instant};

struct State {
    last: Option<Instant>,
    totals: Vec<Duration>,
}

static STATE: Mutex<State> = Mutex::new(State { last: None, totals: Vec::new() });

/// Starts timing a run.
pub fn start() {
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    s.last = Some(Instant::now());
}

/// Records the time since the previous mark against thunk `index`.
pub fn mark(index: usize) {
    let now = Instant::now();
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(last) = s.last {
        if s.totals.len() <= index {
            s.totals.resize(index + 1, Duration::ZERO);
        }
        s.totals[index] += now - last;
    }
    s.last = Some(now);
}

/// Takes the accumulated per-thunk totals and resets them.
pub fn take() -> Vec<Duration> {
    let mut s = STATE.lock().unwrap_or_else(|e| e.into_inner());
    s.last = None;
    std::mem::take(&mut s.totals)
}
