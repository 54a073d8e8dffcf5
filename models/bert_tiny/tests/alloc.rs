//! `run()` of the `bert_tiny` model allocates nothing. A test binary of its own:
//! the counting allocator is process-wide, so no other test may run beside
//! it.

#[global_allocator]
static ALLOC: rlx_testkit::CountingAlloc = rlx_testkit::CountingAlloc;

#[test]
fn run_allocates_nothing() {
    rlx_testkit::models::assert_run_allocates_nothing::<bert_tiny::Model>();
}
