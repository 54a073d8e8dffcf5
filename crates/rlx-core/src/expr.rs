//! Constant values as Rust expressions, for the code generator.
//!
//! A kernel call's value arguments (an activation, a shape struct, a
//! fused chain's steps) are printed into generated code as literals. Each
//! type describes itself once, here, as an [`Expr`] naming the
//! `::rlx_runtime` path the generated code sees; `rlx-codegen` turns an
//! `Expr` into tokens. This crate stays free of syn and quote. The
//! fieldless enums of `field_enum_table!` get theirs where they are
//! declared (`crate::ops`).

use crate::ops::{ActKind, MaskKind, Step, StepArg};

/// A constant Rust expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Usize(usize),
    /// Printed so that it parses back to the same bits (non-finite values
    /// as `f32::NAN` and the like).
    F32(f32),
    Bool(bool),
    /// A path: a unit variant or a constant.
    Path(&'static str),
    /// `path { field: expr, ... }`: a struct or a struct variant.
    Struct(&'static str, Vec<(&'static str, Expr)>),
    /// `path(expr, ...)`: a tuple variant.
    Tuple(&'static str, Vec<Expr>),
    /// `&[expr, ...]`.
    Slice(Vec<Expr>),
}

/// A value that can be written into generated code.
pub trait ConstExpr {
    fn const_expr(&self) -> Expr;
}

impl ConstExpr for usize {
    fn const_expr(&self) -> Expr {
        Expr::Usize(*self)
    }
}

impl ConstExpr for f32 {
    fn const_expr(&self) -> Expr {
        Expr::F32(*self)
    }
}

impl ConstExpr for bool {
    fn const_expr(&self) -> Expr {
        Expr::Bool(*self)
    }
}

impl<T: ConstExpr> ConstExpr for [T] {
    fn const_expr(&self) -> Expr {
        Expr::Slice(self.iter().map(ConstExpr::const_expr).collect())
    }
}

/// `ConstExpr` for fieldless enums: each variant is a path.
macro_rules! unit_variants {
    ($ty:ident at $path:literal { $($var:ident),* $(,)? }) => {
        impl ConstExpr for $ty {
            fn const_expr(&self) -> Expr {
                match self {
                    $( $ty::$var => Expr::Path(concat!($path, "::", stringify!($var))), )*
                }
            }
        }
    };
}
pub(crate) use unit_variants;

impl ConstExpr for MaskKind {
    fn const_expr(&self) -> Expr {
        match self {
            MaskKind::None => Expr::Path("::rlx_runtime::MaskKind::None"),
            MaskKind::Causal => Expr::Path("::rlx_runtime::MaskKind::Causal"),
            MaskKind::SlidingWindow(w) => Expr::Tuple("::rlx_runtime::MaskKind::SlidingWindow", vec![Expr::Usize(*w)]),
            MaskKind::Custom => Expr::Path("::rlx_runtime::MaskKind::Custom"),
            MaskKind::Bias => Expr::Path("::rlx_runtime::MaskKind::Bias"),
        }
    }
}

impl ConstExpr for ActKind {
    fn const_expr(&self) -> Expr {
        use ActKind::*;
        macro_rules! path {
            ($var:ident) => {
                Expr::Path(concat!("::rlx_runtime::ActKind::", stringify!($var)))
            };
        }
        match *self {
            Identity => path!(Identity),
            Relu => path!(Relu),
            Gelu => path!(Gelu),
            GeluTanh => path!(GeluTanh),
            Silu => path!(Silu),
            Sigmoid => path!(Sigmoid),
            Tanh => path!(Tanh),
            Exp => path!(Exp),
            Log => path!(Log),
            Sqrt => path!(Sqrt),
            Rsqrt => path!(Rsqrt),
            Neg => path!(Neg),
            Abs => path!(Abs),
            Recip => path!(Recip),
            Square => path!(Square),
            Erf => path!(Erf),
            Softplus => path!(Softplus),
            Mish => path!(Mish),
            HardSwish => path!(HardSwish),
            Sin => path!(Sin),
            Cos => path!(Cos),
            Tan => path!(Tan),
            Asin => path!(Asin),
            Acos => path!(Acos),
            Atan => path!(Atan),
            Sinh => path!(Sinh),
            Cosh => path!(Cosh),
            Asinh => path!(Asinh),
            Acosh => path!(Acosh),
            Atanh => path!(Atanh),
            Floor => path!(Floor),
            Ceil => path!(Ceil),
            Round => path!(Round),
            Sign => path!(Sign),
            Softsign => path!(Softsign),
            Not => path!(Not),
            LeakyRelu { alpha } => Expr::Struct("::rlx_runtime::ActKind::LeakyRelu", vec![("alpha", Expr::F32(alpha))]),
            Elu { alpha } => Expr::Struct("::rlx_runtime::ActKind::Elu", vec![("alpha", Expr::F32(alpha))]),
            Selu { alpha, gamma } => Expr::Struct(
                "::rlx_runtime::ActKind::Selu",
                vec![("alpha", Expr::F32(alpha)), ("gamma", Expr::F32(gamma))],
            ),
            Celu { alpha } => Expr::Struct("::rlx_runtime::ActKind::Celu", vec![("alpha", Expr::F32(alpha))]),
            ThresholdedRelu { alpha } => {
                Expr::Struct("::rlx_runtime::ActKind::ThresholdedRelu", vec![("alpha", Expr::F32(alpha))])
            }
            Shrink { bias, lambd } => Expr::Struct(
                "::rlx_runtime::ActKind::Shrink",
                vec![("bias", Expr::F32(bias)), ("lambd", Expr::F32(lambd))],
            ),
            HardSigmoid { alpha, beta } => Expr::Struct(
                "::rlx_runtime::ActKind::HardSigmoid",
                vec![("alpha", Expr::F32(alpha)), ("beta", Expr::F32(beta))],
            ),
            Clip { min, max } => {
                Expr::Struct("::rlx_runtime::ActKind::Clip", vec![("min", Expr::F32(min)), ("max", Expr::F32(max))])
            }
        }
    }
}

impl ConstExpr for StepArg {
    fn const_expr(&self) -> Expr {
        match *self {
            StepArg::Input(i) => Expr::Tuple("::rlx_runtime::StepArg::Input", vec![Expr::Usize(i)]),
            StepArg::Const(c) => Expr::Tuple("::rlx_runtime::StepArg::Const", vec![Expr::F32(c)]),
        }
    }
}

impl ConstExpr for Step {
    fn const_expr(&self) -> Expr {
        match self {
            Step::Act(a) => Expr::Tuple("::rlx_runtime::Step::Act", vec![a.const_expr()]),
            Step::Binary { op, arg, reversed } => Expr::Struct(
                "::rlx_runtime::Step::Binary",
                vec![("op", op.const_expr()), ("arg", arg.const_expr()), ("reversed", Expr::Bool(*reversed))],
            ),
        }
    }
}
