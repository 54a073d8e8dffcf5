//! The `extern "C"` functions behind the header (`src/capi.rs` of a model
//! crate, compiled under its `capi` feature): one thin function per C
//! name over `rlx_runtime::capi`, which checks pointers and catches panics.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rlx_sched::Schedule;

use super::{generated_note, rust_c_type, CModel, Tensor};

/// The whole `capi.rs` for `s`; `sched_path` as in [`crate::Options`].
pub fn generate_bindings(s: &Schedule, sched_path: &str) -> String {
    let m = CModel::new(s);
    let items = [common(&m), inputs(&m), outputs(&m)];
    let file: syn::File = syn::parse2(quote! { #(#items)* }).expect("the C bindings are valid Rust");
    let mut out = generated_note(s, sched_path, "//");
    out.push('\n');
    out.push_str(&prettyplease::unparse(&file));
    out
}

/// The module doc, imports, and the functions every model has.
fn common(m: &CModel) -> TokenStream {
    let p = &m.prefix;
    let doc = format!(" The C ABI of the `{}` model: the functions `include/{p}.h` declares.", p);
    let [message, threads, create, destroy, run] =
        ["error_message", "set_threads", "create", "destroy", "run"].map(|f| format_ident!("{p}_{f}"));
    quote! {
        #![doc = #doc]

        use ::std::ffi::{c_char, c_int};

        use ::rlx_runtime::capi;

        use crate::Model;

        #[no_mangle]
        pub extern "C" fn #message(status: c_int) -> *const c_char {
            capi::error_message(status)
        }

        #[no_mangle]
        pub extern "C" fn #threads(threads: usize) -> c_int {
            capi::set_threads(threads)
        }

        /// # Safety
        ///
        /// `out` is null or valid for writing one pointer.
        #[no_mangle]
        pub unsafe extern "C" fn #create(out: *mut *mut Model) -> c_int {
            unsafe { capi::create::<Model>(out) }
        }

        /// # Safety
        ///
        /// `model` is null or a handle from `create`, not destroyed, used by no other call.
        #[no_mangle]
        pub unsafe extern "C" fn #destroy(model: *mut Model) {
            unsafe { capi::destroy::<Model>(model) }
        }

        /// # Safety
        ///
        /// `model` is null or a live handle used by no other call meanwhile.
        #[no_mangle]
        pub unsafe extern "C" fn #run(model: *mut Model) -> c_int {
            unsafe { capi::run::<Model>(model) }
        }
    }
}

fn index_lit(t: &Tensor) -> proc_macro2::Literal {
    proc_macro2::Literal::usize_unsuffixed(t.index)
}

/// `NAME_input_X` and `NAME_set_input_X` per input.
fn inputs(m: &CModel) -> TokenStream {
    let items = m.inputs.iter().map(|t| {
        let (ptr, set) =
            (format_ident!("{}_input_{}", m.prefix, t.ident), format_ident!("{}_set_input_{}", m.prefix, t.ident));
        let (ty, i) = (rust_c_type(t.dtype), index_lit(t));
        quote! {
            /// # Safety
            ///
            /// `model` is null or a live handle.
            #[no_mangle]
            pub unsafe extern "C" fn #ptr(model: *mut Model) -> *mut #ty {
                unsafe { capi::input_ptr::<Model>(model, #i) }.cast()
            }

            /// # Safety
            ///
            /// `model` is null or a live handle used by no other call meanwhile; `data` is null or
            /// valid for reading `elements` values.
            #[no_mangle]
            pub unsafe extern "C" fn #set(model: *mut Model, data: *const #ty, elements: usize) -> c_int {
                unsafe { capi::set_input::<Model>(model, #i, data.cast(), elements) }
            }
        }
    });
    quote! { #(#items)* }
}

/// `NAME_output_X` and `NAME_get_output_X` per output.
fn outputs(m: &CModel) -> TokenStream {
    let items = m.outputs.iter().map(|t| {
        let (ptr, get) =
            (format_ident!("{}_output_{}", m.prefix, t.ident), format_ident!("{}_get_output_{}", m.prefix, t.ident));
        let (ty, i) = (rust_c_type(t.dtype), index_lit(t));
        quote! {
            /// # Safety
            ///
            /// `model` is null or a live handle.
            #[no_mangle]
            pub unsafe extern "C" fn #ptr(model: *const Model) -> *const #ty {
                unsafe { capi::output_ptr::<Model>(model, #i) }.cast()
            }

            /// # Safety
            ///
            /// `model` is null or a live handle; `data` is null or valid for writing `elements`
            /// values outside the model.
            #[no_mangle]
            pub unsafe extern "C" fn #get(model: *const Model, data: *mut #ty, elements: usize) -> c_int {
                unsafe { capi::get_output::<Model>(model, #i, data.cast(), elements) }
            }
        }
    });
    quote! { #(#items)* }
}
