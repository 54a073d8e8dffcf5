//! The reference interpreter allocates nothing per run after construction
//! (its arena and scratch are sized once in `Interpreter::new`). A test
//! binary of its own: the counting allocator is process-wide.

use std::path::Path;

use rlx_interp::Interpreter;
use rlx_tests::CASES;

#[global_allocator]
static ALLOC: rlx_tests::CountingAlloc = rlx_tests::CountingAlloc;

#[test]
fn interpreter_runs_allocate_nothing() {
    let mut offenders = Vec::new();
    for case in CASES {
        let path = Path::new(case.sched);
        let (s, weights) = rlx_tests::load_with_weights(path);
        let mut interp = Interpreter::new(s, &weights).unwrap();
        interp.run(); // warm-up: thread pool, thread-locals
        let before = rlx_tests::allocations();
        interp.run();
        let made = rlx_tests::allocations() - before;
        if made > 0 {
            offenders.push(format!("{} ({made})", case.name));
        }
    }
    assert!(offenders.is_empty(), "interpreter runs that allocate: {}", offenders.join(", "));
}
