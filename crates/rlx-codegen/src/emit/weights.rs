//! How the generated code reaches the weights: embedded in `.rodata` or
//! mapped from a side file.

use proc_macro2::TokenStream;
use quote::quote;

use super::{usize_lit, Gen};
use crate::WeightsSource;

/// The pieces of the file that depend on where the weights are.
pub(super) struct Weights {
    /// The module-level items (the static, or the side file's name).
    pub item: TokenStream,
    /// The expression for the data section's pointer inside `run`.
    pub ptr: TokenStream,
    /// The `Model` field, when mapped.
    pub field: TokenStream,
    /// Its initialiser in `try_new`, when mapped.
    pub init: TokenStream,
}

impl Gen<'_> {
    pub(super) fn weights(&self) -> Weights {
        let Some(wf) = &self.s.weights() else {
            return Weights { item: quote!(), ptr: quote!(::core::ptr::null()), field: quote!(), init: quote!() };
        };
        let data_offset = usize_lit(wf.data_offset);
        match &self.opts.weights {
            Some(WeightsSource::Mmap { file_name }) => {
                let sha = &wf.sha256;
                Weights {
                    item: quote! {
                        /// Bytes before the weights' data section (the safetensors header).
                        const WEIGHTS_DATA_OFFSET: usize = #data_offset;
                        /// The weights side file, found beside the executable (or in
                        /// `$RLX_WEIGHTS_DIR`) and memory-mapped by `Model::try_new`.
                        const WEIGHTS_FILE: &str = #file_name;
                        /// The schedule's sha256 of the weights file.
                        const WEIGHTS_SHA256: &str = #sha;
                    },
                    ptr: quote!(self.weights.data().as_ptr()),
                    field: quote!(weights: ::rlx_runtime::weights::Weights,),
                    init: quote!(weights),
                }
            }
            Some(WeightsSource::Embed { .. }) | None => {
                let path = match &self.opts.weights {
                    Some(WeightsSource::Embed { path }) => path.clone(),
                    _ => wf.path.clone(),
                };
                let file_bytes = usize_lit(wf.data_offset + wf.data_len);
                // Pad in front of the file so its data section (after the
                // safetensors header) starts on a 64-byte boundary: the kernels'
                // vector loads then never straddle cache lines needlessly.
                let pad = usize_lit((64 - wf.data_offset % 64) % 64);
                Weights {
                    item: quote! {
                        /// Bytes before the weights' data section (the safetensors header).
                        const WEIGHTS_DATA_OFFSET: usize = #data_offset;
                        /// The weights file in `.rodata`, placed so that its data
                        /// section is 64-byte aligned.
                        #[repr(C, align(64))]
                        struct WeightsImage {
                            _pad: [u8; #pad],
                            file: [u8; #file_bytes],
                        }
                        static WEIGHTS: WeightsImage = WeightsImage { _pad: [0; #pad], file: *include_bytes!(#path) };
                    },
                    ptr: quote!(WEIGHTS.file.as_ptr().wrapping_add(WEIGHTS_DATA_OFFSET)),
                    field: quote!(),
                    init: quote!(),
                }
            }
        }
    }
}
