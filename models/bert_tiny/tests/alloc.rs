//! `run()` of the `bert_tiny` model allocates nothing. A test binary of its own:
//! the counting allocator is process-wide, so no other test may run beside
//! it.

#[path = "../src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod generated;

#[global_allocator]
static ALLOC: rlx_tests::CountingAlloc = rlx_tests::CountingAlloc;

#[test]
fn run_allocates_nothing() {
    rlx_tests::models::assert_run_allocates_nothing::<generated::Model>();
}
