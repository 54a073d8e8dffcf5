//! The `Model` struct, its accessors and entry methods, and its
//! `GeneratedModel` impl (`INFO`, `new`, `run`).

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{Entry, Role, Schedule};

use super::{allow_non_snake, dtype_path, rust_type, usize_lit, Gen};

impl Gen<'_> {
    /// `pub struct Model`: the arena, the scratch and (when mapped) the
    /// weights.
    pub(super) fn model_struct(&self, weights_field: &TokenStream) -> TokenStream {
        let doc = format!(" The `{}` model, compiled from `{}`.", self.s.model(), self.opts.sched_path);
        quote! {
            #[doc = #doc]
            pub struct Model {
                arena: ::rlx_runtime::arena::Arena,
                scratch: ::rlx_runtime::arena::Arena,
                #weights_field
            }
        }
    }

    /// `impl Model`: the typed accessors and, with entry points, a
    /// `run_NAME` method per entry.
    pub(super) fn inherent_impl(&self, run_bodies: &[TokenStream]) -> TokenStream {
        let accessors = self.accessors();
        let methods = self.entry_methods(run_bodies);
        quote! {
            impl Model {
                #(#accessors)*
                #(#methods)*
            }
        }
    }

    /// `input_NAME(&mut self) -> &mut [T; N]` and `output_NAME(&self) -> &[T; N]`.
    fn accessors(&self) -> Vec<TokenStream> {
        let buffers = self.s.buffers().iter().enumerate();
        let io = buffers.filter(|(_, b)| matches!(b.role, Role::Input | Role::Output));
        io.map(|(i, b)| {
            let off = self.const_ident(i);
            let ty = rust_type(b.dtype);
            let n = usize_lit(b.elems());
            let name = &self.accessor_names[i];
            if b.role == Role::Input {
                let f = format_ident!("input_{name}");
                let allow = allow_non_snake(&f);
                let doc = format!(" Input `{}`: {}{:?}.", b.name, b.dtype, b.shape);
                let safety =
                    self.comment("SAFETY: in bounds and aligned (asserted above); the arena is borrowed mutably.");
                quote! {
                    #[doc = #doc]
                    #allow
                    pub fn #f(&mut self) -> &mut [#ty; #n] {
                        #safety
                        unsafe { &mut *self.arena.as_mut_ptr().add(#off).cast::<[#ty; #n]>() }
                    }
                }
            } else {
                let f = format_ident!("output_{name}");
                let allow = allow_non_snake(&f);
                let doc = format!(" Output `{}`: {}{:?}.", b.name, b.dtype, b.shape);
                let safety = self.comment("SAFETY: in bounds and aligned (asserted above).");
                quote! {
                    #[doc = #doc]
                    #allow
                    pub fn #f(&self) -> &[#ty; #n] {
                        #safety
                        unsafe { &*self.arena.as_ptr().add(#off).cast::<[#ty; #n]>() }
                    }
                }
            }
        })
        .collect()
    }

    /// `run_NAME(&mut self)` per named entry; none without `entry` lines.
    fn entry_methods(&self, run_bodies: &[TokenStream]) -> Vec<TokenStream> {
        if !self.s.has_named_entries() {
            return Vec::new();
        }
        named_entries(self.s)
            .zip(run_bodies)
            .map(|((e, name), body)| {
                let method = format_ident!("run_{name}");
                let allow = allow_non_snake(&method);
                let doc = format!(
                    " Runs entry point `{name}` (`{}:{}`) once. Allocates nothing.",
                    self.opts.sched_path, e.line
                );
                quote! {
                    #[doc = #doc]
                    #allow
                    pub fn #method(&mut self) {
                        #body
                    }
                }
            })
            .collect()
    }

    /// `impl GeneratedModel for Model`.
    pub(super) fn trait_impl(&self, weights_init: &TokenStream, run_bodies: &[TokenStream]) -> TokenStream {
        let info = self.info();
        let constructors = self.constructors(weights_init);
        let run = self.run_items(run_bodies);
        quote! {
            impl ::rlx_runtime::model::GeneratedModel for Model {
                const PROFILED: bool = cfg!(feature = "profile");
                #info

                #constructors

                #run

                fn arena(&self) -> &[u8] {
                    self.arena.as_slice()
                }

                fn arena_mut(&mut self) -> &mut [u8] {
                    self.arena.as_mut_slice()
                }
            }
        }
    }

    /// `const INFO`: what the shared CLI and the tests read about the model.
    fn info(&self) -> TokenStream {
        let s = self.s;
        let entries = s.entries();
        let inputs = self.tensor_list(entries[0].inputs.iter().copied());
        let outputs = self.tensor_list(entries[0].outputs.iter().copied());
        let states = self.tensor_list((0..s.buffers().len()).filter(|&i| s.buffers()[i].role == Role::State));
        let entry_infos = named_entries(s).map(|(e, name)| {
            let ins = self.tensor_list(e.inputs.iter().copied());
            let outs = self.tensor_list(e.outputs.iter().copied());
            let line = Literal::u32_unsuffixed(e.line);
            quote! { ::rlx_runtime::model::EntryInfo { name: #name, inputs: #ins, outputs: #outs, line: #line } }
        });
        let thunk_infos = s.nodes().iter().map(|n| {
            let kind = n.thunk.kind().name();
            let line = Literal::u32_unsuffixed(n.line);
            quote! { ::rlx_runtime::model::ThunkInfo { kind: #kind, line: #line } }
        });
        let (model_name, sched_path, sha) = (s.model(), &self.opts.sched_path, s.source_sha256());
        quote! {
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
        }
    }

    /// `&[TensorInfo { .. }, ..]` of the buffers `indices`.
    fn tensor_list(&self, indices: impl Iterator<Item = usize>) -> TokenStream {
        let items = indices.map(|i| {
            let b = &self.s.buffers()[i];
            let ident = self.const_ident(i);
            let bname = &b.name;
            let dt = dtype_path(b.dtype);
            let shape = b.shape.iter().map(|&d| usize_lit(d));
            let bytes = usize_lit(b.bytes());
            quote! {
                ::rlx_runtime::model::TensorInfo { name: #bname, dtype: #dt, shape: &[#(#shape),*], offset: #ident, bytes: #bytes }
            }
        });
        quote! { &[#(#items),*] }
    }

    /// `new`, and with mapped weights (`weights_init` is their field's
    /// initialiser) `try_new`, which can fail.
    fn constructors(&self, weights_init: &TokenStream) -> TokenStream {
        if weights_init.is_empty() {
            return quote! {
                fn new() -> Self {
                    Model {
                        arena: ::rlx_runtime::arena::Arena::new(ARENA_BYTES),
                        scratch: ::rlx_runtime::arena::Arena::new(SCRATCH_BYTES),
                    }
                }
            };
        }
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
    }

    /// The trait's `run`: the body itself without `entry` lines; with them,
    /// a call of the first entry's method, and `run_entry` over all.
    fn run_items(&self, run_bodies: &[TokenStream]) -> TokenStream {
        if !self.s.has_named_entries() {
            let body = &run_bodies[0];
            return quote! { fn run(&mut self) { #body } };
        }
        let methods: Vec<_> = named_entries(self.s).map(|(_, n)| format_ident!("run_{n}")).collect();
        let first = &methods[0];
        let arms = methods.iter().enumerate().map(|(i, m)| {
            let i = usize_lit(i);
            quote! { #i => self.#m(), }
        });
        let model_name = self.s.model();
        quote! {
            fn run(&mut self) {
                self.#first();
            }

            fn run_entry(&mut self, index: usize) {
                match index {
                    #(#arms)*
                    _ => panic!("model `{}` has no entry point {index}", #model_name),
                }
            }
        }
    }
}

/// The named entries with their names (none without `entry` lines).
fn named_entries(s: &Schedule) -> impl Iterator<Item = (&Entry, &str)> {
    s.entries().iter().filter_map(|e| Some((e, e.name.as_deref()?)))
}
