//! The read-only weights segment: the data section of a safetensors file,
//! either embedded in the binary or memory-mapped from a side file.
//!
//! Embedding goes through [`AlignedBytes`], because `include_bytes!` alone
//! guarantees no alignment and kernels read f32/f64 through raw pointers:
//!
//! ```
//! use rlx_runtime::weights::{AlignedBytes, Weights};
//!
//! // In generated code this is `*include_bytes!("weights.safetensors")`.
//! static FILE: &AlignedBytes<[u8]> = &AlignedBytes(*b"\x00\x00\x00\x00\x00\x00\x00\x00");
//!
//! let w = Weights::from_static(FILE.as_bytes(), 8, 0).unwrap();
//! assert!(w.data().is_empty());
//! ```
//!
//! [`include_aligned!`](crate::include_aligned) wraps that pattern.

use std::fs::File;
use std::path::{Path, PathBuf};

/// Alignment the data section must have: the largest element alignment a
/// kernel reads (f64/i64).
pub const DATA_ALIGN: usize = 8;

/// Bytes aligned to 64, for embedding a weights file with
/// `include_bytes!`: `static W: &AlignedBytes<[u8]> =
/// &AlignedBytes(*include_bytes!("w.safetensors"));`. Generic over an
/// unsized `B` so the array coerces to a slice behind the reference.
#[repr(C, align(64))]
pub struct AlignedBytes<B: ?Sized>(pub B);

impl<B: ?Sized + AsRef<[u8]>> AlignedBytes<B> {
    /// The wrapped bytes; their first byte is 64-byte aligned.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_ref()
    }
}

impl<B: ?Sized> std::fmt::Debug for AlignedBytes<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AlignedBytes(..)")
    }
}

/// `include_bytes!` with the result 64-byte aligned: evaluates to a
/// `&'static [u8]`. The path is resolved like `include_bytes!`'s.
#[macro_export]
macro_rules! include_aligned {
    ($path:expr) => {{
        static ALIGNED: &$crate::weights::AlignedBytes<[u8]> = &$crate::weights::AlignedBytes(*include_bytes!($path));
        ALIGNED.as_bytes()
    }};
}

/// Why a weights segment could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("cannot open weights file {}: {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    /// The side file of a generated model, looked for beside the
    /// executable or in `$RLX_WEIGHTS_DIR`.
    #[error(
        "cannot open weights file {}: {source} (a model looks for it beside its executable, \
         or in the directory RLX_WEIGHTS_DIR names when that is set)",
        path.display()
    )]
    NotBesideExe { path: PathBuf, source: std::io::Error },
    /// A FIFO, a device or a directory: never opened, as reading one may
    /// never end.
    #[error("cannot open weights file {}: not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("cannot map weights file {}: {source}", path.display())]
    Map { path: PathBuf, source: std::io::Error },
    /// WebAssembly has no memory mapping: a model built for it must
    /// embed its weights.
    #[error(
        "cannot map weights file {}: this target ({}) has no memory mapping; \
         build the model with its weights embedded",
        path.display(),
        std::env::consts::ARCH
    )]
    NoMmap { path: PathBuf },
    #[error("{origin}: data section {offset}..{end} lies outside the {len}-byte file", end = offset.saturating_add(*data_len))]
    OutOfRange { origin: String, offset: usize, data_len: usize, len: usize },
    #[error("{origin}: data section at byte {offset} is not {DATA_ALIGN}-byte aligned in memory")]
    Misaligned { origin: String, offset: usize },
    #[error("{origin}: sha256 is {found}, the schedule expects {expected}")]
    Checksum { origin: String, expected: String, found: String },
}

enum Source {
    Static(&'static [u8]),
    Mapped { map: memmap2::Mmap, path: PathBuf },
}

/// A weights file held for reading, with its data section located.
pub struct Weights {
    source: Source,
    data_offset: usize,
    data_len: usize,
}

impl Weights {
    /// Weights embedded in the binary. `data_offset` and `data_len` are the
    /// schedule's (`WeightsFile`), locating the safetensors data section.
    pub fn from_static(file: &'static [u8], data_offset: usize, data_len: usize) -> Result<Weights, WeightsError> {
        Weights::checked(Source::Static(file), data_offset, data_len)
    }

    /// Maps a weights file read-only.
    ///
    /// The file must not be modified while mapped: the kernels read it
    /// through raw pointers and would see the change (or fault if it
    /// shrinks). The schedule's sha256 can be checked with
    /// [`Weights::verify_sha256`].
    pub fn open(path: &Path, data_offset: usize, data_len: usize) -> Result<Weights, WeightsError> {
        if cfg!(target_family = "wasm") {
            return Err(WeightsError::NoMmap { path: path.to_path_buf() });
        }
        let open_err = |source| WeightsError::Open { path: path.to_path_buf(), source };
        // Before opening: opening a FIFO for reading blocks until a writer comes.
        if !std::fs::metadata(path).map_err(open_err)?.is_file() {
            return Err(WeightsError::NotAFile { path: path.to_path_buf() });
        }
        let file = File::open(path).map_err(open_err)?;
        // SAFETY: read-only private mapping; the contract above documents
        // that the file is not modified while mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|source| WeightsError::Map { path: path.to_path_buf(), source })?;
        Weights::checked(Source::Mapped { map, path: path.to_path_buf() }, data_offset, data_len)
    }

    /// Maps `file_name` from `$RLX_WEIGHTS_DIR` when that is set, else from
    /// the directory of the running executable: how generated models whose
    /// weights are too large to embed find their side file.
    pub fn open_beside_exe(file_name: &str, data_offset: usize, data_len: usize) -> Result<Weights, WeightsError> {
        let dir = match std::env::var_os("RLX_WEIGHTS_DIR") {
            Some(d) => PathBuf::from(d),
            None => std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        Weights::open(&dir.join(file_name), data_offset, data_len).map_err(|e| match e {
            WeightsError::Open { path, source } => WeightsError::NotBesideExe { path, source },
            other => other,
        })
    }

    /// An empty segment, for schedules without weights.
    pub fn empty() -> Weights {
        Weights { source: Source::Static(&[]), data_offset: 0, data_len: 0 }
    }

    fn checked(source: Source, data_offset: usize, data_len: usize) -> Result<Weights, WeightsError> {
        let w = Weights { source, data_offset, data_len };
        let file = w.file_bytes();
        match data_offset.checked_add(data_len) {
            Some(end) if end <= file.len() => {}
            _ => {
                return Err(WeightsError::OutOfRange {
                    origin: w.origin(),
                    offset: data_offset,
                    data_len,
                    len: file.len(),
                })
            }
        }
        if data_len > 0 && (file.as_ptr() as usize + data_offset) & (DATA_ALIGN - 1) != 0 {
            return Err(WeightsError::Misaligned { origin: w.origin(), offset: data_offset });
        }
        Ok(w)
    }

    fn origin(&self) -> String {
        match &self.source {
            Source::Static(_) => "embedded weights".to_owned(),
            Source::Mapped { path, .. } => path.display().to_string(),
        }
    }

    /// The whole file.
    pub fn file_bytes(&self) -> &[u8] {
        match &self.source {
            Source::Static(b) => b,
            Source::Mapped { map, .. } => map,
        }
    }

    /// The data section: the bytes `weights+OFFSET` operands address.
    pub fn data(&self) -> &[u8] {
        &self.file_bytes()[self.data_offset..self.data_offset + self.data_len]
    }

    /// Checks the whole file against the lower-case hex sha256 a schedule
    /// records.
    pub fn verify_sha256(&self, expected: &str) -> Result<(), WeightsError> {
        let found = sha256_hex(self.file_bytes());
        if found == expected {
            Ok(())
        } else {
            Err(WeightsError::Checksum { origin: self.origin(), expected: expected.to_owned(), found })
        }
    }
}

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("origin", &self.origin())
            .field("data_offset", &self.data_offset)
            .field("data_len", &self.data_len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static FILE: &AlignedBytes<[u8]> = &AlignedBytes(*b"01234567abcdefghXYZ");

    #[test]
    fn aligned_bytes_are_aligned() {
        assert_eq!(FILE.as_bytes().as_ptr() as usize % 64, 0);
        let bytes: &'static [u8] = crate::include_aligned!("../Cargo.toml");
        assert_eq!(bytes.as_ptr() as usize % 64, 0);
        assert!(bytes.starts_with(b"[package]"));
    }

    #[test]
    fn static_weights_locate_the_data_section() {
        let w = Weights::from_static(FILE.as_bytes(), 8, 8).unwrap();
        assert_eq!(w.data(), b"abcdefgh");
        assert_eq!(Weights::empty().data(), b"");
    }

    #[test]
    fn bad_sections_are_errors() {
        let e = Weights::from_static(FILE.as_bytes(), 16, 8).unwrap_err();
        assert_eq!(e.to_string(), "embedded weights: data section 16..24 lies outside the 19-byte file");
        let e = Weights::from_static(FILE.as_bytes(), usize::MAX, 2).unwrap_err();
        assert!(matches!(e, WeightsError::OutOfRange { .. }), "{e}");
        let e = Weights::from_static(FILE.as_bytes(), 3, 4).unwrap_err();
        assert_eq!(e.to_string(), "embedded weights: data section at byte 3 is not 8-byte aligned in memory");
    }

    #[test]
    fn mapped_weights_and_checksum() {
        let dir = std::env::temp_dir().join(format!("rlx-weights-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.bin");
        std::fs::write(&path, FILE.as_bytes()).unwrap();
        let w = Weights::open(&path, 8, 11).unwrap();
        assert_eq!(w.data(), b"abcdefghXYZ");
        w.verify_sha256(&sha256_hex(FILE.as_bytes())).unwrap();
        let e = w.verify_sha256("00").unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: sha256 is ", path.display())), "{e}");
        let missing = dir.join("missing.bin");
        let e = Weights::open(&missing, 0, 0).unwrap_err();
        assert!(e.to_string().starts_with(&format!("cannot open weights file {}", missing.display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A generated model's missing side file names where it was looked
    /// for and how to point elsewhere.
    #[test]
    fn a_missing_side_file_names_where_it_was_looked_for() {
        let e = Weights::open_beside_exe("no-such-weights-file.safetensors", 0, 0).unwrap_err().to_string();
        assert!(e.starts_with("cannot open weights file "), "{e}");
        assert!(e.contains("no-such-weights-file.safetensors"), "{e}");
        assert!(
            e.ends_with(
                "(a model looks for it beside its executable, or in the directory RLX_WEIGHTS_DIR names when that is set)"
            ),
            "{e}"
        );
    }

    #[test]
    fn special_files_are_refused_before_opening() {
        // A directory everywhere; `/dev/zero` (never ends) on unix.
        let e = Weights::open(&std::env::temp_dir(), 0, 0).unwrap_err();
        assert!(matches!(e, WeightsError::NotAFile { .. }), "{e}");
        if cfg!(unix) {
            let e = Weights::open(Path::new("/dev/zero"), 0, 0).unwrap_err();
            assert_eq!(e.to_string(), "cannot open weights file /dev/zero: not a regular file");
        }
    }
}
