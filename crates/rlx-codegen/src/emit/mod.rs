//! Builds the token stream of a generated model file.
//!
//! Layout of the output, in order: buffer offset constants, `const`
//! assertions of the plan, model facts (`INFO`), the weights, the `Model`
//! struct with typed accessors and `run` (with entry points: a `run_NAME`
//! method per entry and `run_entry`), then the run parts: straight lines
//! of kernel calls, one per thunk, each preceded by a comment naming the
//! thunk and its `.sched` line.

mod call;
mod ctx;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{DType, Role, Schedule, Segment};

use crate::comments::marker;
use crate::names;
use crate::{Options, WeightsSource};
pub(crate) use ctx::Ctx;

fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// The Rust element type of a dtype, as a path.
pub(crate) fn rust_type(d: DType) -> TokenStream {
    match d {
        DType::F32 => quote!(f32),
        DType::F64 => quote!(f64),
        DType::F16 => quote!(::rlx_runtime::half::f16),
        DType::Bf16 => quote!(::rlx_runtime::half::bf16),
        DType::I8 => quote!(i8),
        DType::U8 | DType::Bool => quote!(u8),
        DType::I16 => quote!(i16),
        DType::U16 => quote!(u16),
        DType::I32 => quote!(i32),
        DType::U32 => quote!(u32),
        DType::I64 => quote!(i64),
        DType::U64 => quote!(u64),
    }
}

fn dtype_path(d: DType) -> TokenStream {
    let v = format_ident!("{}", format!("{d:?}"));
    quote!(::rlx_runtime::DType::#v)
}

/// A comment marker, or nothing when markers are off (the proc-macro).
fn comment(opts: &Options, text: &str) -> TokenStream {
    if opts.markers {
        marker(text)
    } else {
        TokenStream::new()
    }
}

/// The whole generated file, before formatting.
pub fn emit(s: &Schedule, opts: &Options) -> TokenStream {
    let const_names = names::const_names(s.buffers().iter().map(|b| b.name.as_str()));
    // Accessors are `input_*`/`output_*` methods: nothing else has those names.
    let accessor_names = names::dedup(s.buffers().iter().map(|b| names::snake_name(&b.name)));
    // Every thunk lowered once: the calls printed below and the scratch
    // they share.
    let calls: Vec<_> = s.nodes().iter().map(|n| rlx_sched::lower::lower(&n.thunk, &s.params())).collect();
    let scratch_bytes = calls.iter().flatten().map(|c| c.scratch_bytes()).max().unwrap_or(0).div_ceil(64) * 64;
    let weights_len = s.weights().as_ref().map_or(0, |w| w.data_len);

    let offsets = s.buffers().iter().zip(&const_names).map(|(b, name)| {
        let ident = format_ident!("{name}");
        let off = usize_lit(b.offset);
        let doc = format!(" `{}`: {}{:?} in the {} ({}).", b.name, b.dtype, b.shape, b.segment.name(), b.role.name());
        quote! { #[doc = #doc] pub const #ident: usize = #off; }
    });

    // A hand-edited constant that breaks the plan fails `cargo build`.
    let asserts = s.buffers().iter().zip(&const_names).map(|(b, name)| {
        let ident = format_ident!("{name}");
        let bytes = usize_lit(b.bytes());
        let align = usize_lit(b.dtype.align());
        let limit = match b.segment {
            Segment::Arena => quote!(ARENA_BYTES),
            Segment::Weights => quote!(WEIGHTS_BYTES),
        };
        quote! { const _: () = assert!(#ident + #bytes <= #limit && #ident % #align == 0); }
    });

    let tensor_list = |indices: &mut dyn Iterator<Item = usize>| {
        let items = indices.map(|i| {
            let b = &s.buffers()[i];
            let ident = format_ident!("{}", const_names[i]);
            let bname = &b.name;
            let dt = dtype_path(b.dtype);
            let shape = b.shape.iter().map(|&d| usize_lit(d));
            let bytes = usize_lit(b.bytes());
            quote! {
                ::rlx_runtime::model::TensorInfo { name: #bname, dtype: #dt, shape: &[#(#shape),*], offset: #ident, bytes: #bytes }
            }
        });
        quote! { &[#(#items),*] }
    };
    let entries = s.entries();
    let inputs = tensor_list(&mut entries[0].inputs.iter().copied());
    let outputs = tensor_list(&mut entries[0].outputs.iter().copied());
    let states = tensor_list(&mut (0..s.buffers().len()).filter(|&i| s.buffers()[i].role == Role::State));
    let entry_infos = named_entries(s).map(|(e, name)| {
        let (ins, outs) = (tensor_list(&mut e.inputs.iter().copied()), tensor_list(&mut e.outputs.iter().copied()));
        let line = Literal::u32_unsuffixed(e.line);
        quote! { ::rlx_runtime::model::EntryInfo { name: #name, inputs: #ins, outputs: #outs, line: #line } }
    });
    let thunk_infos = s.nodes().iter().map(|n| {
        let kind = n.thunk.kind().name();
        let line = Literal::u32_unsuffixed(n.line);
        quote! { ::rlx_runtime::model::ThunkInfo { kind: #kind, line: #line } }
    });

    let accessors = s
        .buffers()
        .iter()
        .zip(&const_names)
        .zip(&accessor_names)
        .filter(|((b, _), _)| matches!(b.role, Role::Input | Role::Output))
        .map(|((b, cname), aname)| {
            let off = format_ident!("{cname}");
            let ty = rust_type(b.dtype);
            let n = usize_lit(b.elems());
            if b.role == Role::Input {
                let f = format_ident!("input_{aname}");
                let doc = format!(" Input `{}`: {}{:?}.", b.name, b.dtype, b.shape);
                let safety =
                    comment(opts, "SAFETY: in bounds and aligned (asserted above); the arena is borrowed mutably.");
                quote! {
                    #[doc = #doc]
                    pub fn #f(&mut self) -> &mut [#ty; #n] {
                        #safety
                        unsafe { &mut *self.arena.as_mut_ptr().add(#off).cast::<[#ty; #n]>() }
                    }
                }
            } else {
                let f = format_ident!("output_{aname}");
                let doc = format!(" Output `{}`: {}{:?}.", b.name, b.dtype, b.shape);
                let safety = comment(opts, "SAFETY: in bounds and aligned (asserted above).");
                quote! {
                    #[doc = #doc]
                    pub fn #f(&self) -> &[#ty; #n] {
                        #safety
                        unsafe { &*self.arena.as_ptr().add(#off).cast::<[#ty; #n]>() }
                    }
                }
            }
        });

    let (weights_item, weights_ptr, weights_field, weights_init) = weights_tokens(s, opts);
    let constructors = if weights_field.is_empty() {
        quote! {
            fn new() -> Self {
                Model {
                    arena: ::rlx_runtime::arena::Arena::new(ARENA_BYTES),
                    scratch: ::rlx_runtime::arena::Arena::new(SCRATCH_BYTES),
                }
            }
        }
    } else {
        quote! {
            fn new() -> Self {
                match Self::try_new() {
                    Ok(model) => model,
                    Err(e) => panic!("{e}"),
                }
            }

            fn try_new() -> Result<Self, ::rlx_runtime::weights::WeightsError> {
                let weights = ::rlx_runtime::weights::Weights::open_beside_exe(WEIGHTS_FILE, WEIGHTS_DATA_OFFSET, WEIGHTS_BYTES)?;
                weights.verify_sha256(WEIGHTS_SHA256)?;
                Ok(Model {
                    arena: ::rlx_runtime::arena::Arena::new(ARENA_BYTES),
                    scratch: ::rlx_runtime::arena::Arena::new(SCRATCH_BYTES),
                    #weights_init
                })
            }
        }
    };
    let blank = comment(opts, "");

    let ctx = Ctx::new(s, &const_names);
    // Each entry's thunks in parts of `thunks_per_fn`: straight-line
    // functions small enough for rustc, never spanning two entries.
    let mut parts = Vec::new();
    let mut run_bodies = Vec::with_capacity(entries.len());
    for entry in entries {
        let nodes: Vec<_> = entry.nodes.clone().map(|i| (i, &s.nodes()[i])).collect();
        let chunks: Vec<_> = nodes.chunks(opts.thunks_per_fn.max(1)).collect();
        let prefix = entry.name.as_ref().map_or_else(|| "run_part".to_string(), |n| format!("run_{n}_part"));
        let part_names: Vec<_> = (0..chunks.len()).map(|i| format_ident!("{prefix}_{i}")).collect();
        parts.extend(chunks.iter().zip(&part_names).map(|(chunk, fname)| {
            let first = chunk.first().map_or(0, |(i, _)| *i);
            let last = chunk.last().map_or(0, |(i, _)| *i);
            let doc = format!(" Thunks #{first} to #{last}.");
            let stmts = chunk.iter().enumerate().map(|(j, (i, node))| {
                let gap = if j > 0 { comment(opts, "") } else { TokenStream::new() };
                let m = comment(opts, &format!("#{i} {}  {}:{}", node.thunk.kind().name(), opts.sched_path, node.line));
                let call = calls[*i].as_ref().map(|c| call::print(&ctx, c)).unwrap_or_default();
                let idx = usize_lit(*i);
                quote! {
                    #gap
                    #m
                    #call
                    #[cfg(feature = "profile")]
                    ::rlx_runtime::profile::mark(#idx);
                }
            });
            quote! {
                #[doc = #doc]
                ///
                /// # Safety
                ///
                /// `a` must point to the model's arena, `w` to the weights' data
                /// section and `s` to its scratch, as set up by `Model::new`.
                #[allow(unused_variables)]
                unsafe fn #fname(a: *mut u8, w: *const u8, s: *mut u8) {
                    unsafe {
                        #(#stmts)*
                    }
                }
            }
        }));
        // An entry with a parallel call runs inside the pool (one hand-off
        // per run rather than one per parallel call); one without never
        // touches it.
        let in_pool = entry.nodes.clone().any(|i| calls[i].as_ref().is_some_and(|c| c.parallel()));
        run_bodies.push(run_body(opts, &weights_ptr, &part_names, in_pool));
    }

    let model_name = &s.model();
    let sched_path = &opts.sched_path;
    let sha = &s.source_sha256();
    let arena_bytes = usize_lit(s.arena_size());
    let scratch_lit = usize_lit(scratch_bytes);
    let weights_lit = usize_lit(weights_len);
    let doc = format!(" The `{}` model, compiled from `{}`.", s.model(), opts.sched_path);
    // Without `entry` lines the body is `run` itself; with them each entry
    // is a `run_NAME` method, `run` the first and `run_entry` all of them.
    let (run_items, entry_methods) = if s.has_named_entries() {
        let names: Vec<_> = named_entries(s).map(|(_, n)| format_ident!("run_{n}")).collect();
        let methods: Vec<_> = named_entries(s)
            .zip(&names)
            .zip(&run_bodies)
            .map(|(((e, name), method), body)| {
                let doc =
                    format!(" Runs entry point `{name}` (`{}:{}`) once. Allocates nothing.", opts.sched_path, e.line);
                quote! {
                    #[doc = #doc]
                    pub fn #method(&mut self) {
                        #body
                    }
                }
            })
            .collect();
        let first = &names[0];
        let arms = names.iter().enumerate().map(|(i, m)| {
            let i = usize_lit(i);
            quote! { #i => self.#m(), }
        });
        let items = quote! {
            fn run(&mut self) {
                self.#first();
            }

            fn run_entry(&mut self, index: usize) {
                match index {
                    #(#arms)*
                    _ => panic!("model `{}` has no entry point {index}", #model_name),
                }
            }
        };
        (items, methods)
    } else {
        let body = &run_bodies[0];
        (quote! { fn run(&mut self) { #body } }, Vec::new())
    };
    let offsets_title = comment(opts, "Byte offsets of every buffer in its segment.");
    let asserts_title = comment(opts, "The plan, checked by the compiler: editing an offset by hand fails the build.");

    quote! {
        /// Arena bytes.
        pub const ARENA_BYTES: usize = #arena_bytes;
        /// Scratch bytes (aliasing temporaries, attention scores, im2col).
        pub const SCRATCH_BYTES: usize = #scratch_lit;
        /// Bytes of the weights' data section.
        pub const WEIGHTS_BYTES: usize = #weights_lit;
        #blank
        #offsets_title
        #(#offsets)*
        #blank
        #asserts_title
        #(#asserts)*
        #blank
        #weights_item
        #blank
        #[doc = #doc]
        pub struct Model {
            arena: ::rlx_runtime::arena::Arena,
            scratch: ::rlx_runtime::arena::Arena,
            #weights_field
        }

        #blank
        impl Model {
            #(#accessors)*
            #(#entry_methods)*
        }
        #blank
        impl ::rlx_runtime::model::GeneratedModel for Model {
            const PROFILED: bool = cfg!(feature = "profile");
            const INFO: ::rlx_runtime::model::ModelInfo = ::rlx_runtime::model::ModelInfo {
                name: #model_name,
                sched_path: #sched_path,
                sched_sha256: #sha,
                arena_bytes: ARENA_BYTES,
                scratch_bytes: SCRATCH_BYTES,
                weights_bytes: WEIGHTS_BYTES,
                inputs: #inputs,
                outputs: #outputs,
                entries: &[#(#entry_infos),*],
                states: #states,
                thunks: &[#(#thunk_infos),*],
            };

            #constructors

            #run_items

            fn arena(&self) -> &[u8] {
                self.arena.as_slice()
            }

            fn arena_mut(&mut self) -> &mut [u8] {
                self.arena.as_mut_slice()
            }
        }

        #(#blank #parts)*
    }
}

/// The named entries with their names (none without `entry` lines).
fn named_entries(s: &Schedule) -> impl Iterator<Item = (&rlx_sched::Entry, &str)> {
    s.entries().iter().filter_map(|e| Some((e, e.name.as_deref()?)))
}

/// The body of a run method: the parts in order, inside the pool when
/// `in_pool`.
fn run_body(
    opts: &Options,
    weights_ptr: &TokenStream,
    part_names: &[proc_macro2::Ident],
    in_pool: bool,
) -> TokenStream {
    let safety = comment(
        opts,
        if in_pool {
            "SAFETY: the validator proved every access in bounds and aligned; the parts capture only pointers that outlive the call."
        } else {
            "SAFETY: the validator proved every access in bounds and aligned."
        },
    );
    let calls = if in_pool {
        quote! {
            unsafe {
                ::rlx_runtime::threads::run_in_pool(&mut || {
                    #(#part_names(a, w, s);)*
                });
            }
        }
    } else {
        quote! {
            unsafe {
                #(#part_names(a, w, s);)*
            }
        }
    };
    quote! {
        let a = self.arena.as_mut_ptr();
        let s = self.scratch.as_mut_ptr();
        let w: *const u8 = #weights_ptr;
        #[cfg(feature = "profile")]
        ::rlx_runtime::profile::start();
        #safety
        #calls
    }
}

/// The weights static (or field), the expression for the data pointer, and
/// the struct field and its initialiser when mmapped.
fn weights_tokens(s: &Schedule, opts: &Options) -> (TokenStream, TokenStream, TokenStream, TokenStream) {
    let Some(wf) = &s.weights() else {
        return (quote!(), quote!(::core::ptr::null()), quote!(), quote!());
    };
    let data_offset = usize_lit(wf.data_offset);
    let file_bytes = usize_lit(wf.data_offset + wf.data_len);
    match &opts.weights {
        Some(WeightsSource::Mmap { file_name }) => {
            let sha = &wf.sha256;
            (
                quote! {
                    /// Bytes before the weights' data section (the safetensors header).
                    const WEIGHTS_DATA_OFFSET: usize = #data_offset;
                    /// The weights side file, found beside the executable (or in
                    /// `$RLX_WEIGHTS_DIR`) and memory-mapped by `Model::try_new`.
                    const WEIGHTS_FILE: &str = #file_name;
                    /// The schedule's sha256 of the weights file.
                    const WEIGHTS_SHA256: &str = #sha;
                },
                quote!(self.weights.data().as_ptr()),
                quote!(weights: ::rlx_runtime::weights::Weights,),
                quote!(weights),
            )
        }
        Some(WeightsSource::Embed { .. }) | None => {
            let path = match &opts.weights {
                Some(WeightsSource::Embed { path }) => path.clone(),
                _ => wf.path.clone(),
            };
            // Pad in front of the file so its data section (after the
            // safetensors header) starts on a 64-byte boundary: the kernels'
            // vector loads then never straddle cache lines needlessly.
            let pad = usize_lit((64 - wf.data_offset % 64) % 64);
            (
                quote! {
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
                quote!(WEIGHTS.file.as_ptr().wrapping_add(WEIGHTS_DATA_OFFSET)),
                quote!(),
                quote!(),
            )
        }
    }
}

#[cfg(test)]
mod tests;
