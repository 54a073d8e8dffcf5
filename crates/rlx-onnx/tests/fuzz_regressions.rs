//! Inputs the fuzzers found (`tests/fuzz-regressions/onnx/`, see
//! `docs/fuzzing.md`): each imports to a schedule that validates or is a
//! clean error; none is an importer bug ("does not validate").

use std::path::Path;

use rlx_onnx::{import, ImportError, ImportOptions};

fn regression(name: &str) -> Result<rlx_onnx::Imported, ImportError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-regressions/onnx").join(name);
    import(&path, &ImportOptions::new("weights.safetensors"))
}

#[test]
fn a_negative_layernorm_epsilon_is_an_error_naming_the_attribute() {
    let err = regression("layernorm_negative_epsilon.onnx").expect_err("refused").to_string();
    assert!(err.contains("attribute `epsilon` is -2.5e-13; it must be finite and not negative"), "{err}");
}

#[test]
fn a_newline_in_a_node_name_stays_inside_its_comment() {
    let imported = regression("newline_in_node_name.onnx").expect("imports");
    let text = &imported.sched_text;
    assert!(text.contains("// MatMul `q\\nproj` + Add `q_bias`"), "{text}");
    // The importer validated it; parsing again must agree.
    assert!(rlx_sched::parse(text).is_ok());
}

#[test]
fn a_constant_over_the_fold_limit_is_refused_before_it_is_built() {
    let start = std::time::Instant::now();
    let err = regression("constant_of_shape_14m_elements.onnx").expect_err("refused").to_string();
    assert!(err.contains("the i64 constant it computes, of shape [14221316], is larger than the fold limit"), "{err}");
    // Refused from the shape alone: nothing of 14M elements is built.
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "took {:?}", start.elapsed());
}

#[test]
fn a_folded_chain_over_the_limit_is_refused_at_its_first_constant() {
    // `tiny_bert.onnx` with the `ConstantOfShape` feeding its mask chain
    // made 7.9M elements: folding the chain took 3 s under the old limit.
    let start = std::time::Instant::now();
    let err = regression("constant_of_shape_7m_elements_chain.onnx").expect_err("refused").to_string();
    assert!(err.contains("of shape [7864324], is larger than the fold limit"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "took {:?}", start.elapsed());
}

#[test]
fn an_infinite_constant_in_a_fused_chain_prints_as_a_step_that_parses() {
    // `tiny_bert.onnx` with the GELU's `1.0` made +inf.
    let imported = regression("gelu_constant_inf_in_steps.onnx").expect("imports");
    let text = &imported.sched_text;
    assert!(text.contains("add(inf)"), "{text}");
    let reparsed = rlx_sched::parse(text).expect("parses");
    assert_eq!(rlx_sched::print(&reparsed), *text);
}

#[test]
fn pool_pads_not_smaller_than_the_kernel_are_an_error() {
    let err = regression("pool_pads_not_smaller_than_kernel.onnx").expect_err("refused").to_string();
    assert!(err.contains("attribute `pads`") && err.contains("must be smaller than the kernel (2)"), "{err}");
}

#[test]
fn an_empty_tensor_with_huge_dims_transposes_without_overflow() {
    // An empty input whose other dims, reshaped, multiply past `usize`:
    // whatever the importer decides, it decides without panicking.
    if let Err(e) = regression("transpose_empty_tensor_huge_dims.onnx") {
        assert!(!e.to_string().contains("does not validate"), "{e}");
    }
}

#[test]
fn every_found_input_is_a_schedule_or_a_clean_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-regressions/onnx");
    for entry in std::fs::read_dir(&dir).expect("regressions directory") {
        let name = entry.expect("entry").file_name().into_string().expect("utf-8 name");
        match regression(&name) {
            Ok(_) => {}
            Err(e) => assert!(!e.to_string().contains("does not validate"), "{name}: importer bug: {e}"),
        }
    }
}
