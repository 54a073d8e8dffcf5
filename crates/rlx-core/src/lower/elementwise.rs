//! Elementwise family: the broadcast path of `BinaryFull` and `Compare`
//! (`plan::binary_path`), element types, `Where`, `Fma` and fused chains.

use super::Lower;
use crate::call::{CmpInput, CmpOutput, KernelCall as K, SelectCond, SelectValue};
use crate::operand::{Operand, Params};
use crate::plan::{binary_path, compare_path, parallel, BinaryPath};
use crate::thunk::{BinaryFull, Compare, ElementwiseRegion, Fma, Where};

/// The call of one broadcast path: `$prefix` names the variants (e.g.
/// `Binary` + `SameF32` → `BinarySameF32` is spelled out per family below),
/// `$extra` the type-argument fields.
macro_rules! path_call {
    ($path:expr, [$same:ident, $slhs:ident, $srhs:ident, $rrhs:ident, $rlhs:ident, $crhs:ident, $clhs:ident, $modular:ident, $strided:ident],
     { $($extra:ident: $val:expr),* }, $lhs:expr, $rhs:expr, $dst:expr, $len:expr, $par:expr) => {{
        let (lhs, rhs, dst, len, par) = ($lhs, $rhs, $dst, $len, $par);
        match $path {
            BinaryPath::SameShape => K::$same { $($extra: $val,)* lhs, rhs, dst, len, par },
            BinaryPath::ScalarLhs => K::$slhs { $($extra: $val,)* lhs, rhs, dst, len, par },
            BinaryPath::ScalarRhs => K::$srhs { $($extra: $val,)* lhs, rhs, dst, len, par },
            BinaryPath::RowRhs { row } => K::$rrhs { $($extra: $val,)* lhs, rhs, dst, len, row, par },
            BinaryPath::RowLhs { row } => K::$rlhs { $($extra: $val,)* lhs, rhs, dst, len, row, par },
            BinaryPath::ColRhs { row } => K::$crhs { $($extra: $val,)* lhs, rhs, dst, len, row, par },
            BinaryPath::ColLhs { row } => K::$clhs { $($extra: $val,)* lhs, rhs, dst, len, row, par },
            BinaryPath::Modular { lhs_len, rhs_len } => K::$modular { $($extra: $val,)* lhs, rhs, dst, len, lhs_len, rhs_len, par },
            BinaryPath::Strided { dims, lhs_strides, rhs_strides } => {
                K::$strided { $($extra: $val,)* lhs, rhs, dst, len, dims, lhs_strides, rhs_strides, par }
            }
        }
    }};
}

impl Lower for BinaryFull<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BinaryFull {
            lhs,
            rhs,
            dst,
            len,
            lhs_len,
            rhs_len,
            op,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
            elem_bytes,
        } = self;
        let path = binary_path(*len, *lhs_len, *rhs_len, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides);
        let (par, op) = (parallel(*len), *op);
        Some(if *elem_bytes == 8 {
            path_call!(path, [BinarySameI64, BinaryScalarLhsI64, BinaryScalarRhsI64, BinaryRowRhsI64, BinaryRowLhsI64,
                BinaryColRhsI64, BinaryColLhsI64, BinaryModularI64, BinaryStridedI64], { op: op }, *lhs, *rhs, *dst, *len, par)
        } else {
            path_call!(path, [BinarySameF32, BinaryScalarLhsF32, BinaryScalarRhsF32, BinaryRowRhsF32, BinaryRowLhsF32,
                BinaryColRhsF32, BinaryColLhsF32, BinaryModularF32, BinaryStridedF32], { op: op }, *lhs, *rhs, *dst, *len, par)
        })
    }
}

impl Lower for Compare<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Compare {
            lhs,
            rhs,
            dst,
            len,
            op,
            inputs_i64,
            inputs_elem_bytes,
            dst_elem_bytes,
            lhs_scalar,
            rhs_scalar,
            lhs_len: _,
            rhs_len: _,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
        } = self;
        let path = compare_path(*len, *lhs_scalar, *rhs_scalar, out_dims_bcast, bcast_lhs_strides, bcast_rhs_strides);
        let input = match (*inputs_elem_bytes, *inputs_i64) {
            (1, _) => CmpInput::U8,
            (4, false) => CmpInput::F32,
            (4, true) => CmpInput::I32,
            (8, true) => CmpInput::I64,
            _ => CmpInput::F64,
        };
        let output = if *dst_elem_bytes == 1 { CmpOutput::U8 } else { CmpOutput::F32 };
        Some(path_call!(path, [CompareSame, CompareScalarLhs, CompareScalarRhs, CompareRowRhs, CompareRowLhs,
            CompareColRhs, CompareColLhs, CompareModular, CompareStrided],
            { op: *op, input: input, output: output }, *lhs, *rhs, *dst, *len, parallel(*len)))
    }
}

impl Lower for Where<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Where {
            cond,
            on_true,
            on_false,
            dst,
            len,
            elem_bytes,
            cond_elem_bytes,
            cond_scalar,
            true_scalar,
            false_scalar,
        } = self;
        Some(K::Select {
            cond_elem: match cond_elem_bytes {
                1 => SelectCond::U8,
                4 => SelectCond::F32,
                _ => SelectCond::I64,
            },
            value: if *elem_bytes == 8 { SelectValue::U64 } else { SelectValue::U32 },
            cond: *cond,
            on_true: *on_true,
            on_false: *on_false,
            dst: *dst,
            len: *len,
            cond_scalar: *cond_scalar,
            true_scalar: *true_scalar,
            false_scalar: *false_scalar,
            par: parallel(*len),
        })
    }
}

impl Lower for Fma<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Fma { a, b, c, dst, len, elem_bytes } = *self;
        let par = parallel(len);
        Some(if elem_bytes == 8 { K::FmaF64 { a, b, c, dst, len, par } } else { K::FmaF32 { a, b, c, dst, len, par } })
    }
}

impl Lower for ElementwiseRegion<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let ElementwiseRegion { inputs, dst, len, steps } = self;
        if *len == 0 || inputs.is_empty() {
            return None;
        }
        Some(K::RegionF32 { inputs: inputs.clone(), dst: *dst, len: *len, steps: steps.clone(), par: parallel(*len) })
    }
}
