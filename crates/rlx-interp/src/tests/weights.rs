//! The safe constructor refuses weights it cannot read soundly.

use crate::{InterpError, Interpreter};

/// `validate_weights_embed.sched` and its weights' data section, copied
/// into 8-byte aligned storage with spare bytes after it, so a test can
/// hand out a slice of the right length aligned or one byte off.
fn aligned_data_and_spare() -> (rlx_sched::Schedule, Vec<u64>, usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/ok");
    let checked = rlx_sched::load(&dir.join("validate_weights_embed.sched")).expect("a valid schedule");
    let wf = checked.schedule.weights().cloned().expect("the schedule has weights");
    let file = std::fs::read(dir.join("validate_weights.safetensors")).expect("its weights file");
    let data = &file[wf.data_offset..wf.data_offset + wf.data_len];
    let mut words = vec![0u64; wf.data_len / 8 + 2];
    // SAFETY: `words` holds at least `data_len + 8` bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
    bytes[..data.len()].copy_from_slice(data);
    (checked.schedule, words, wf.data_len)
}

#[test]
fn misaligned_weights_are_refused_not_read() {
    let (schedule, words, len) = aligned_data_and_spare();
    // SAFETY: `words` holds at least `len + 8` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    assert!(Interpreter::new(schedule.clone(), &bytes[..len]).is_ok());
    match Interpreter::new(schedule, &bytes[1..=len]) {
        Err(InterpError::MisalignedWeights { align: 8 }) => {}
        Err(e) => panic!("expected a misalignment error, got {e}"),
        Ok(_) => panic!("a misaligned weights slice was accepted"),
    }
}

#[test]
fn short_weights_are_refused() {
    let (schedule, words, len) = aligned_data_and_spare();
    // SAFETY: `words` holds at least `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) };
    assert!(matches!(
        Interpreter::new(schedule, &bytes[..len - 1]),
        Err(InterpError::WeightsTooShort { needed, given }) if needed == len && given == len - 1
    ));
}
