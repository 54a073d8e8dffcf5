//! The weights file and `param` buffers.

use super::*;
use crate::schedule::Segment;

/// Writes `bytes` as `w.safetensors` in a fresh directory and validates
/// `body` under a header naming it with `sha`.
fn check_with_file(test: &str, bytes: &[u8], sha: &str, body: &str) -> Result<Checked, Diagnostics> {
    let dir = temp_dir(test);
    std::fs::write(dir.join("w.safetensors"), bytes).expect("write weights");
    let src =
        header(4096).replace("mask_threshold", &format!("weights \"w.safetensors\" sha256 \"{sha}\"\nmask_threshold"));
    let result = check_in(&format!("{src}\n{body}"), &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn messages_of(r: Result<Checked, Diagnostics>) -> Vec<String> {
    match r {
        Ok(_) => panic!("expected errors"),
        Err(d) => d.0.iter().map(|d| d.message.clone()).collect(),
    }
}

const USES_FC1: &str = "input x: f32[2, 4] @ arena+0\nparam fc1.weight: f32[4, 8] @ weights+0\n\
    param fc1.bias: f32[8] @ weights+128\noutput y: f32[2, 8] @ arena+64\n\n\
    Sgemm { a: x, b: fc1.weight, c: y, m: 2, k: 4, n: 8 }\n\
    BiasAdd { src: y, bias: fc1.bias, dst: y, rows: 2, cols: 8 }\n";

#[test]
fn params_matching_the_file_validate_and_record_it() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let sha = crate::sha256_hex(&bytes);
    let c = check_with_file("match", &bytes, &sha, USES_FC1).unwrap_or_else(|d| panic!("{d:#?}"));
    let w = c.schedule.weights.as_ref().expect("weights recorded");
    assert_eq!(w.path, "w.safetensors");
    assert_eq!(w.sha256, sha);
    assert_eq!(w.data_offset % 64, 0);
    assert_eq!(w.data_offset + w.data_len, bytes.len());
    let b = c.schedule.buffer("fc1.bias").expect("buffer");
    assert_eq!((b.segment, b.offset), (Segment::Weights, 128));
}

#[test]
fn a_changed_file_reports_both_hashes_and_the_fix() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let actual = crate::sha256_hex(&bytes);
    let declared = "0".repeat(64);
    let d = check_with_file("sha", &bytes, &declared, USES_FC1).unwrap_err();
    assert_eq!(d.len(), 1, "{d:#?}");
    let e = &d.0[0];
    assert_eq!(e.message, "the sha256 of weights file `w.safetensors` does not match this line");
    assert_eq!(e.label.as_deref(), Some(format!("expected {declared}").as_str()));
    let hint = e.hint.as_deref().expect("hint");
    assert!(hint.contains(&format!("sha256 \"{actual}\"")), "{hint}");
}

#[test]
fn a_missing_file_is_reported_with_its_path() {
    let d = check_with_file("missing", &[], &"0".repeat(64), "").unwrap_err();
    // The file exists but is empty: not safetensors.
    assert!(d.0.iter().any(|d| d.message.contains("is not a valid safetensors file")), "{d:#?}");
    let src = header(64).replace("mask_threshold", "weights \"nope.safetensors\" sha256 \"0000000000000000000000000000000000000000000000000000000000000000\"\nmask_threshold");
    let d = check_in(&src, Path::new("/nonexistent-dir")).unwrap_err();
    assert_eq!(d.0[0].message, "cannot read weights file `nope.safetensors`: the file does not exist");
    assert!(d.0[0].hint.as_deref().is_some_and(|h| h.contains("relative to the directory of the .sched file")));
}

#[test]
fn absolute_weights_paths_are_refused() {
    let src = header(64).replace("mask_threshold", "weights \"/etc/w.safetensors\" sha256 \"0000000000000000000000000000000000000000000000000000000000000000\"\nmask_threshold");
    let d = check_in(&src, Path::new(".")).unwrap_err();
    assert_eq!(d.0[0].message, "weights path `/etc/w.safetensors` is absolute");
}

/// A header naming `path` as the weights file.
fn header_with_weights(path: &str) -> String {
    header(64).replace("mask_threshold", &format!("weights \"{path}\" sha256 \"{}\"\nmask_threshold", "0".repeat(64)))
}

#[test]
fn weights_paths_stay_below_the_schedule_by_default() {
    let dir = temp_dir("parent");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("sub dir");
    let bytes = safetensors(&fixture_tensors(), 64);
    std::fs::write(dir.join("w.safetensors"), &bytes).expect("write weights");
    let src = header_with_weights("../w.safetensors");
    let d = check_in(&src, &sub).unwrap_err();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d.0[0].message, "weights path `../w.safetensors` leaves the directory of the .sched file");
    assert!(d.0[0].hint.as_deref().is_some_and(|h| h.contains("--allow-outside-weights")), "{d:#?}");
    // `a/../w` leaves nothing, but is refused the same way: the rule is on
    // the path as written.
    assert!(check_in(&header_with_weights("sub/../w.safetensors"), &dir).is_err());
    // Allowed, the file is read (and its sha256 checked).
    let ast = parse(&src).expect("parses");
    let opts = ValidateOptions::new(String::new(), &sub)
        .with_policy(crate::validate::Policy::default().with_allow_parent_weights(true));
    let d = validate(&ast, &opts).unwrap_err();
    assert!(d.0[0].message.starts_with("the sha256 of weights file `../w.safetensors` does not match"), "{d:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn weights_must_be_a_regular_file() {
    let dir = temp_dir("special");
    std::fs::create_dir_all(dir.join("w.safetensors")).expect("a directory");
    let d = check_in(&header_with_weights("w.safetensors"), &dir).unwrap_err();
    assert_eq!(d.0[0].message, "weights path `w.safetensors` is a directory, not a regular file");
    #[cfg(unix)]
    {
        // `/dev/zero` never ends; a FIFO blocks its reader until a writer
        // comes. Both are refused before being opened.
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).expect("symlink");
        let d = check_in(&header_with_weights("zero"), &dir).unwrap_err();
        assert_eq!(d.0[0].message, "weights path `zero` is a character device, not a regular file");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
        if made {
            let d = check_in(&header_with_weights("fifo"), &dir).unwrap_err();
            assert_eq!(d.0[0].message, "weights path `fifo` is a FIFO, not a regular file");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A front end validates what it is about to write against the weights
/// bytes it holds: the same checks as against the file, no file needed.
#[test]
fn weights_bytes_in_memory_are_checked_as_the_file_would_be() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let sha = crate::sha256_hex(&bytes);
    let src =
        header(4096).replace("mask_threshold", &format!("weights \"w.safetensors\" sha256 \"{sha}\"\nmask_threshold"));
    let body = "param emb: f32[4, 5] @ weights+256\n";
    let text = format!("{src}\n{body}");
    let ast = crate::parse(&text).expect("parses");
    let nowhere = Path::new("/nonexistent-dir-for-rlx-tests");
    let in_memory = |bytes: &[u8]| {
        let opts = ValidateOptions::new(crate::sha256_hex(text.as_bytes()), nowhere).with_weights_bytes(bytes);
        validate(&ast, &opts).map(drop).map_err(|d| d.0.iter().map(|d| d.message.clone()).collect::<Vec<_>>())
    };
    assert_eq!(
        in_memory(&bytes).unwrap_err(),
        ["buffer `emb` has shape [4, 5], but the weights file's tensor has [5, 4]"]
    );
    let mut other = bytes.clone();
    *other.last_mut().unwrap() ^= 1;
    let errors = in_memory(&other).unwrap_err();
    assert!(errors[0].starts_with("the sha256 of weights file `w.safetensors` does not match"), "{errors:?}");
}

#[test]
fn only_regular_files_are_read() {
    let dir = temp_dir("regular");
    std::fs::write(dir.join("a"), b"abc").expect("write");
    assert_eq!(crate::read_regular_file(&dir.join("a")).expect("a file"), b"abc");
    let refused = |p: &Path| crate::read_regular_file(p).expect_err("refused").to_string();
    assert_eq!(refused(&dir), "it is a directory, not a regular file");
    #[cfg(unix)]
    {
        assert_eq!(refused(Path::new("/dev/zero")), "it is a character device, not a regular file");
        let fifo = dir.join("fifo");
        if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            assert_eq!(refused(&fifo), "it is a FIFO, not a regular file");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn params_are_checked_against_their_tensors() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let sha = crate::sha256_hex(&bytes);
    let body = "param fc1.weigth: f32[4, 8] @ weights+0\nparam fc1.bias: f16[8] @ weights+128\n\
                param emb: f32[4, 5] @ weights+256\nparam norm.g: f32[4] @ weights+0\nparam ghost: f32[1] @ weights+0\n";
    let msgs = messages_of(check_with_file("tensors", &bytes, &sha, body));
    assert_eq!(
        msgs,
        [
            "tensor `fc1.weigth` is not in weights file `w.safetensors`",
            "buffer `fc1.bias` is f16, but the weights file stores it as F32",
            "buffer `emb` has shape [4, 5], but the weights file's tensor has [5, 4]",
            "buffer `norm.g` is at weights+0, but the weights file's tensor starts at data offset 384",
            "tensor `ghost` is not in weights file `w.safetensors`",
        ]
    );
    let d = check_with_file("tensors2", &bytes, &sha, body).unwrap_err();
    assert_eq!(d.0[0].hint.as_deref(), Some("did you mean `fc1.weight`?"));
    assert_eq!(d.0[1].hint.as_deref(), Some("write `f32` instead"));
    assert_eq!(d.0[3].hint.as_deref(), Some("write `weights+384` instead"));
}

#[test]
fn file_offsets_must_be_aligned_for_include_bytes() {
    // Unpadded: the data section starts wherever the JSON ends.
    let bytes = safetensors(&fixture_tensors(), 1);
    let sha = crate::sha256_hex(&bytes);
    let data_offset = 8 + u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    assert_ne!(data_offset % 4, 0, "the fixture must leave the data section misaligned");
    let msgs = messages_of(check_with_file("unaligned", &bytes, &sha, "param fc1.bias: f32[8] @ weights+128\n"));
    assert_eq!(
        msgs,
        [format!("buffer `fc1.bias` at weights file offset {} is not aligned to 4 bytes (f32)", data_offset + 128)]
    );
}

#[test]
fn weights_are_read_only_and_bounded() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let sha = crate::sha256_hex(&bytes);
    let body = "input x: f32[8] @ arena+0\nparam fc1.bias: f32[8] @ weights+128\n\n\
                Copy { src: x, dst: fc1.bias, len: 8 }\nCopy { src: fc1.bias+16, dst: x, len: 8 }\n";
    let msgs = messages_of(check_with_file("readonly", &bytes, &sha, body));
    assert_eq!(
        msgs,
        [
            "`dst` writes to the weights segment, which is read-only",
            "`src` reads 32 bytes from byte 16 of buffer `fc1.bias`, which has 32",
        ]
    );
}
