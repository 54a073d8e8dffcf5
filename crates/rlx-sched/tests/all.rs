//! The schedule format's integration tests, one binary: parsing, printing,
//! validation cases, aliases and fuzzing.

mod aliases;
mod cases;
mod many_errors;
mod parse_fuzz;
mod roundtrip;
mod run_cases;
mod validate_cases;
mod validate_fuzz;
