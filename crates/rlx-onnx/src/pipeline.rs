//! The importer's passes as one pipeline, and the check that what it
//! writes is a valid schedule.
//!
//! Every schedule an importer returns has passed the validator users run
//! (`cargo xtask check-sched`), with the weights it is written with. One
//! that does not is an importer bug: the pipeline is then run again from
//! the lowering, checking the schedule after each pass, so the error
//! names the first pass whose output is invalid.

use std::path::Path;

use crate::emit::Emitted;
use crate::error::ImportError;
use crate::lower::Lowered;

/// A pass over the lowered thunks, with the name an error gives it.
pub(crate) struct Pass<'a> {
    pub name: &'static str,
    pub run: Box<dyn Fn(&mut Lowered) + 'a>,
}

impl<'a> Pass<'a> {
    pub(crate) fn new(name: &'static str, run: impl Fn(&mut Lowered) + 'a) -> Self {
        Pass { name, run: Box::new(run) }
    }
}

/// Lowers (`lower`), runs `passes` in order and emits the result
/// (`emit`), checked. `lower` is called a second time, only when the
/// emitted schedule is invalid, to find the pass at fault.
pub(crate) fn run(
    lower: impl Fn() -> Result<Lowered, ImportError>,
    passes: &[Pass<'_>],
    emit: impl Fn(&Lowered) -> Result<Emitted, ImportError>,
) -> Result<Emitted, ImportError> {
    let mut lowered = lower()?;
    for pass in passes {
        (pass.run)(&mut lowered);
    }
    let emitted = emit(&lowered)?;
    let Err(report) = check(&emitted) else {
        return Ok(emitted);
    };
    drop(lowered);
    Err(ImportError::Invalid { pass: first_failing_pass(&lower, passes, &emit).unwrap_or("emit"), report })
}

/// The name of the first stage whose output does not validate: the
/// lowering itself, or a pass. `None` when every stage's output does
/// (only the final emit is then at fault).
fn first_failing_pass(
    lower: &impl Fn() -> Result<Lowered, ImportError>,
    passes: &[Pass<'_>],
    emit: &impl Fn(&Lowered) -> Result<Emitted, ImportError>,
) -> Option<&'static str> {
    let invalid = |l: &Lowered| emit(l).map_or(true, |e| check(&e).is_err());
    let mut lowered = lower().ok()?;
    if invalid(&lowered) {
        return Some("lowering");
    }
    passes.iter().find_map(|pass| {
        (pass.run)(&mut lowered);
        invalid(&lowered).then_some(pass.name)
    })
}

/// Validates an emitted schedule against the weights it comes with:
/// `Err` holds the first error, rendered against the text.
pub(crate) fn check(emitted: &Emitted) -> Result<(), String> {
    let text = &emitted.sched_text;
    let render = |d: rlx_sched::Diagnostics| {
        let errors: Vec<_> = d.0.iter().filter(|d| d.is_error()).collect();
        let first = errors.first().map_or_else(String::new, |e| e.render("model.sched", text));
        match errors.len() {
            0 | 1 => first.trim_end().to_string(),
            n => format!("{}\n(and {} more errors)", first.trim_end(), n - 1),
        }
    };
    let ast = rlx_sched::parse(text).map_err(render)?;
    let opts = rlx_sched::ValidateOptions::new(rlx_sched::sha256_hex(text.as_bytes()), Path::new("."))
        .with_weights_bytes(&emitted.weights);
    rlx_sched::validate(&ast, &opts).map(drop).map_err(render)
}

#[cfg(test)]
mod tests {
    use rlx_sched::thunk::Activation;
    use rlx_sched::{ActKind, DType, Role, Thunk};

    use super::*;
    use crate::lower::{LoweredThunk, Storage};

    /// `y = relu(x)` over four f32.
    fn relu() -> Result<Lowered, ImportError> {
        let storage = |name: &str, role| Storage {
            name: name.to_string(),
            shape: vec![4],
            dtype: DType::F32,
            role,
            data: None,
            view: None,
            viewed: false,
        };
        let thunk = Thunk::Activation(Activation { src: 0, dst: 1, len: 4, act: ActKind::Relu });
        Ok(Lowered {
            storages: vec![storage("x", Role::Input), storage("y", Role::Output)],
            thunks: vec![LoweredThunk { thunk, comment: "relu".to_string() }],
            entries: Vec::new(),
        })
    }

    fn emit(l: &Lowered) -> Result<Emitted, ImportError> {
        crate::emit::emit(l, "m", "weights.safetensors")
    }

    #[test]
    fn a_valid_pipeline_returns_its_schedule() {
        let passes = [Pass::new("nothing", |_: &mut Lowered| {})];
        let emitted = run(relu, &passes, emit).unwrap();
        assert!(emitted.sched_text.contains("Activation"), "{}", emitted.sched_text);
    }

    #[test]
    fn an_invalid_schedule_is_an_internal_error_naming_the_first_pass_at_fault() {
        // The second pass makes the activation read past its source.
        let grow = |l: &mut Lowered| {
            if let Thunk::Activation(a) = &mut l.thunks[0].thunk {
                a.len = 8;
            }
        };
        let passes = [Pass::new("fine", |_: &mut Lowered| {}), Pass::new("grow", grow), Pass::new("after", |_| {})];
        let Err(e) = run(relu, &passes, emit) else { panic!("an invalid schedule is an error") };
        let text = e.to_string();
        assert!(matches!(e, ImportError::Invalid { pass: "grow", .. }), "{text}");
        assert!(text.starts_with("internal error: the importer's `grow` pass"), "{text}");
        assert!(text.contains("model.sched:"), "the validator's error, located: {text}");
    }
}
