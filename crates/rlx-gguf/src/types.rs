//! ggml's tensor types: the ids a GGUF tensor info carries and each
//! type's block geometry (ggml's `ggml_type_traits`).

use crate::quants::Block;

/// A tensor type this crate reads. Quantized types store the tensor in
/// blocks of `block_len()` values along the innermost axis, each
/// `block_bytes()` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32,
    F16,
    Bf16,
    Q4_0,
    Q4_1,
    Q8_0,
    Q4K,
    Q6K,
}

/// Values per block of the K-quants (ggml's `QK_K`).
pub const QK_K: usize = 256;

/// ggml's ids of the types this crate does not read, by name, so that a
/// refusal names the type.
const UNSUPPORTED: &[(u32, &str)] = &[
    (6, "Q5_0"),
    (7, "Q5_1"),
    (9, "Q8_1"),
    (10, "Q2_K"),
    (11, "Q3_K"),
    (13, "Q5_K"),
    (15, "Q8_K"),
    (16, "IQ2_XXS"),
    (17, "IQ2_XS"),
    (18, "IQ3_XXS"),
    (19, "IQ1_S"),
    (20, "IQ4_NL"),
    (21, "IQ3_S"),
    (22, "IQ2_S"),
    (23, "IQ4_XS"),
    (24, "I8"),
    (25, "I16"),
    (26, "I32"),
    (27, "I64"),
    (28, "F64"),
    (29, "IQ1_M"),
    (34, "TQ1_0"),
    (35, "TQ2_0"),
    (39, "MXFP4"),
];

impl GgmlType {
    pub const ALL: [GgmlType; 8] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Bf16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q8_0,
        GgmlType::Q4K,
        GgmlType::Q6K,
    ];

    /// The type of ggml id `id`; `Err` holds what to tell the user.
    pub fn from_id(id: u32) -> Result<Self, String> {
        if let Some(t) = Self::ALL.into_iter().find(|t| t.id() == id) {
            return Ok(t);
        }
        let supported: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
        let supported = supported.join(", ");
        Err(match UNSUPPORTED.iter().find(|(i, _)| *i == id) {
            Some((_, name)) => format!("type {name} is not supported (supported: {supported})"),
            None => format!("unknown type id {id} (supported: {supported})"),
        })
    }

    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q8_0 => 8,
            GgmlType::Q4K => 12,
            GgmlType::Q6K => 14,
            GgmlType::Bf16 => 30,
        }
    }

    /// ggml's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Bf16 => "BF16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q6K => "Q6_K",
        }
    }

    /// Values per block (1 for the plain float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => 1,
            GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0 => 32,
            GgmlType::Q4K | GgmlType::Q6K => QK_K,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::Bf16 => 2,
            GgmlType::Q4_0 => crate::quants::BlockQ4_0::BYTES,
            GgmlType::Q4_1 => crate::quants::BlockQ4_1::BYTES,
            GgmlType::Q8_0 => crate::quants::BlockQ8_0::BYTES,
            GgmlType::Q4K => crate::quants::BlockQ4K::BYTES,
            GgmlType::Q6K => crate::quants::BlockQ6K::BYTES,
        }
    }

    /// Bytes of a tensor of `elements` values whose innermost axis is
    /// `row` long; `None` when the row is not whole blocks or the size
    /// overflows.
    pub fn tensor_bytes(self, row: usize, elements: usize) -> Option<usize> {
        if !row.is_multiple_of(self.block_len()) {
            return None;
        }
        (elements / self.block_len()).checked_mul(self.block_bytes())
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
