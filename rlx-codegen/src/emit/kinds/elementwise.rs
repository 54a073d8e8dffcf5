//! Elementwise family: `BinaryFull` and `Compare` (broadcast path chosen at
//! gen time), `Where`, `Fma`, activations, and `ElementwiseRegion` inlined
//! as one fused loop.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rlx_sched::plan::{binary_path, compare_path, parallel, BinaryPath};
use rlx_sched::{ActKind, BinaryOp, CmpOp, Operand, Step, StepArg};

use super::{act, f32_lit, lit, lits, Ctx};

const E: &str = "::rlx_runtime::kernels::elementwise";

fn e() -> TokenStream {
    E.parse().expect("a path")
}

/// The call for one broadcast path. `prefix` is `binary` or `compare`,
/// `suffix` the dtype suffix of binary entries (empty for compare), and
/// `generics` the turbofish contents.
fn path_call(
    prefix: &str,
    suffix: &str,
    generics: TokenStream,
    path: &BinaryPath,
    args: [TokenStream; 3],
    len: usize,
    par: bool,
) -> TokenStream {
    let e = e();
    let [l, r, d] = args;
    let len = lit(len);
    let name = |p: &str| format_ident!("{prefix}_{p}{suffix}");
    match path {
        BinaryPath::SameShape => {
            let f = name("same");
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, #par); }
        }
        BinaryPath::ScalarLhs => {
            let f = name("scalar_lhs");
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, #par); }
        }
        BinaryPath::ScalarRhs => {
            let f = name("scalar_rhs");
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, #par); }
        }
        BinaryPath::RowRhs { row } | BinaryPath::RowLhs { row } | BinaryPath::ColRhs { row } | BinaryPath::ColLhs { row } => {
            let which = match path {
                BinaryPath::RowRhs { .. } => "row_rhs",
                BinaryPath::RowLhs { .. } => "row_lhs",
                BinaryPath::ColRhs { .. } => "col_rhs",
                _ => "col_lhs",
            };
            let f = name(which);
            let row = lit(*row);
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, #row, #par); }
        }
        BinaryPath::Modular { lhs_len, rhs_len } => {
            let f = name("modular");
            let (ll, rl) = (lit(*lhs_len), lit(*rhs_len));
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, #ll, #rl, #par); }
        }
        BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
            let f = name("strided");
            let (dd, ls, rs) = (lits(dims), lits(lhs_strides), lits(rhs_strides));
            quote! { #e::#f::<#generics>(#l, #r, #d, #len, &[#dd], &[#ls], &[#rs], #par); }
        }
    }
}

fn op_type(op: BinaryOp) -> TokenStream {
    let e = e();
    let t = format_ident!("{}", format!("{op:?}"));
    quote!(#e::ops::#t)
}

fn cmp_type(op: CmpOp) -> TokenStream {
    let e = e();
    let t = format_ident!("{}", format!("{op:?}"));
    quote!(#e::ops::#t)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn binary_full(
    cx: &Ctx<'_>,
    lhs: &Operand,
    rhs: &Operand,
    dst: &Operand,
    len: usize,
    lhs_len: usize,
    rhs_len: usize,
    op: BinaryOp,
    dims: &[usize],
    lstr: &[usize],
    rstr: &[usize],
    elem_bytes: usize,
) -> TokenStream {
    let path = binary_path(len, lhs_len, rhs_len, dims, lstr, rstr);
    let par = parallel(len);
    let (t, suffix) = if elem_bytes == 8 { (quote!(i64), "_i64") } else { (quote!(f32), "_f32") };
    let args = [cx.ptr(lhs, t.clone()), cx.ptr(rhs, t.clone()), cx.ptr(dst, t)];
    path_call("binary", suffix, op_type(op), &path, args, len, par)
}

/// The input element type of a `Compare`.
fn cmp_input(elem_bytes: usize, i64_: bool) -> TokenStream {
    match (elem_bytes, i64_) {
        (1, _) => quote!(u8),
        (4, false) => quote!(f32),
        (4, true) => quote!(i32),
        (8, true) => quote!(i64),
        _ => quote!(f64),
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn compare(
    cx: &Ctx<'_>,
    lhs: &Operand,
    rhs: &Operand,
    dst: &Operand,
    len: usize,
    op: CmpOp,
    inputs_i64: bool,
    inputs_elem_bytes: usize,
    dst_elem_bytes: usize,
    scalars: (bool, bool),
    dims: &[usize],
    lstr: &[usize],
    rstr: &[usize],
) -> TokenStream {
    let path = compare_path(len, scalars.0, scalars.1, dims, lstr, rstr);
    let par = parallel(len);
    let t = cmp_input(inputs_elem_bytes, inputs_i64);
    let d = if dst_elem_bytes == 1 { quote!(u8) } else { quote!(f32) };
    let c = cmp_type(op);
    let args = [cx.ptr(lhs, t.clone()), cx.ptr(rhs, t.clone()), cx.ptr(dst, d.clone())];
    path_call("compare", "", quote!(#c, #t, #d), &path, args, len, par)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn select(
    cx: &Ctx<'_>,
    cond: &Operand,
    on_true: &Operand,
    on_false: &Operand,
    dst: &Operand,
    len: usize,
    elem_bytes: usize,
    cond_elem_bytes: usize,
    flags: (bool, bool, bool),
) -> TokenStream {
    let e = e();
    let c = match cond_elem_bytes {
        1 => quote!(u8),
        4 => quote!(f32),
        _ => quote!(i64),
    };
    let v = if elem_bytes == 8 { quote!(u64) } else { quote!(u32) };
    let par = parallel(len);
    let (cp, tp, fp, dp) = (cx.ptr(cond, c.clone()), cx.ptr(on_true, v.clone()), cx.ptr(on_false, v.clone()), cx.ptr(dst, v.clone()));
    let (cs, ts, fs) = flags;
    let n = lit(len);
    quote! { #e::select::<#c, #v>(#cp, #tp, #fp, #dp, #n, #cs, #ts, #fs, #par); }
}

pub(super) fn fma(cx: &Ctx<'_>, ops: [&Operand; 4], len: usize, elem_bytes: usize) -> TokenStream {
    let e = e();
    let (t, f) = if elem_bytes == 8 { (quote!(f64), quote!(fma_f64)) } else { (quote!(f32), quote!(fma_f32)) };
    let [a, b, c, d] = ops.map(|o| cx.ptr(o, t.clone()));
    let par = parallel(len);
    let n = lit(len);
    quote! { #e::#f(#a, #b, #c, #d, #n, #par); }
}

pub(super) fn activation(cx: &Ctx<'_>, src: &Operand, dst: Option<&Operand>, len: usize, kind: ActKind) -> TokenStream {
    let par = parallel(len);
    let a = act(kind);
    let n = lit(len);
    let sp = cx.f32(src);
    match dst {
        None => quote! { ::rlx_runtime::kernels::activation::act_in_place_f32(#a, #sp, #n, #par); },
        Some(d) => {
            let dp = cx.f32(d);
            quote! { ::rlx_runtime::kernels::activation::act_f32_slice(#a, #sp, #dp, #n, #par); }
        }
    }
}

/// One step of a fused chain as an expression of `acc` and the inputs
/// `in0..inN` (pointers) at element `i`.
fn step_expr(step: &Step) -> TokenStream {
    match step {
        Step::Act(kind) => {
            let f = format_ident!("{}", kind.name());
            let params = kind.params().into_iter().map(f32_lit);
            quote! { acc = ::rlx_runtime::math::#f(acc #(, #params)*); }
        }
        Step::Binary { op, arg, reversed } => {
            let f = format_ident!("{}_f32", op.name());
            let v = match arg {
                StepArg::Input(j) => {
                    let p = format_ident!("in{j}");
                    quote!(*#p.add(i))
                }
                StepArg::Const(c) => f32_lit(*c),
            };
            if *reversed {
                quote! { acc = ::rlx_runtime::math::#f(#v, acc); }
            } else {
                quote! { acc = ::rlx_runtime::math::#f(acc, #v); }
            }
        }
    }
}

/// `ElementwiseRegion` as one loop of inline arithmetic. Inputs may alias
/// `dst`, so the loop reads and writes through raw pointers; above the
/// parallel threshold the same loop body runs per chunk on the pool.
pub(super) fn region(cx: &Ctx<'_>, inputs: &[Operand], dst: &Operand, len: usize, steps: &[Step]) -> TokenStream {
    if len == 0 || inputs.is_empty() {
        return quote!();
    }
    let names: Vec<_> = (0..inputs.len()).map(|j| format_ident!("in{j}")).collect();
    let ptrs: Vec<_> = inputs.iter().map(|op| cx.f32(op)).collect();
    let dp = cx.f32(dst);
    let body: Vec<_> = steps.iter().map(step_expr).collect();
    let n = lit(len);
    let acc = if steps.is_empty() { quote!(acc) } else { quote!(mut acc) };
    if parallel(len) {
        let chunk = lit(rlx_sched::plan::PAR_MIN_ELEMS / 4);
        quote! {
            {
                // Addresses, not pointers, cross into the workers.
                #(let #names = #ptrs as usize;)*
                let out = #dp as usize;
                ::rlx_runtime::threads::par_for(#n, #chunk, &|start, count| {
                    #(let #names = #names as *const f32;)*
                    let out = out as *mut f32;
                    for i in start..start + count {
                        let #acc = *in0.add(i);
                        #(#body)*
                        *out.add(i) = acc;
                    }
                });
            }
        }
    } else {
        quote! {
            {
                #(let #names = #ptrs;)*
                let out = #dp;
                for i in 0..#n {
                    let #acc = *in0.add(i);
                    #(#body)*
                    *out.add(i) = acc;
                }
            }
        }
    }
}
