//! The small enums thunks are parameterised by: binary and comparison
//! operators, activations, reductions, attention masks and the steps of a
//! fused elementwise chain.

/// Generates each fieldless enum of [`field_enum_table!`] with its `.sched`
/// spellings and its `ConstExpr`.
macro_rules! named_enums {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($(#[$vm:meta])* $var:ident = $s:literal),* $(,)? } )*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $var),* }

        impl crate::expr::ConstExpr for $name {
            fn const_expr(&self) -> crate::expr::Expr {
                match self {
                    $( $name::$var => crate::expr::Expr::Path(concat!("::rlx_runtime::", stringify!($name), "::", stringify!($var))), )*
                }
            }
        }

        impl $name {
            /// What a value of this enum is called in error messages.
            pub const WHAT: &'static str = $what;
            pub const ALL: &'static [$name] = &[$($name::$var),*];
            /// The spelling used in `.sched` files.
            pub const fn name(self) -> &'static str {
                match self { $($name::$var => $s),* }
            }
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($s => Some($name::$var),)* _ => None }
            }
            /// All spellings, for "expected one of" hints.
            pub fn names() -> Vec<&'static str> {
                vec![$($s),*]
            }
        }
    )*};
}

/// The fieldless enums of thunk fields, each with the noun its parse
/// errors use and its variants' `.sched` spellings: expanded here into the
/// enums (with `ConstExpr`, naming `rlx_runtime`'s re-export), in
/// `rlx-sched` into their field syntax, and by every crate that re-exports
/// them. A new enum is one entry.
#[doc(hidden)]
#[macro_export]
macro_rules! field_enum_table {
    ($m:ident) => {
        $m! {

        /// Element-wise binary operator of `BinaryFull` and fused chains.
        BinaryOp as "binary op" {
            Add = "add", Sub = "sub", Mul = "mul", Div = "div", Max = "max", Min = "min",
            Pow = "pow", Mod = "mod", Atan2 = "atan2", BitAnd = "bit_and", BitOr = "bit_or",
            BitXor = "bit_xor", Shl = "shl", Shr = "shr",
            /// Floored remainder (sign of the divisor, as Python's `%` and
            /// ONNX `Mod` with `fmod = 0`).
            FloorMod = "floor_mod",
        }

        /// Comparison operator of `Compare`.
        CmpOp as "comparison op" { Eq = "eq", Ne = "ne", Lt = "lt", Le = "le", Gt = "gt", Ge = "ge" }

        /// Reduction of `Reduce` (all) and `Pool2D` (`max`, `mean`).
        ReduceOp as "reduction" {
            Sum = "sum", Mean = "mean", Max = "max", Min = "min", Prod = "prod",
            L1 = "l1", L2 = "l2", SumSquare = "sum_square", LogSumExp = "log_sum_exp",
        }

        /// How `Resize` reads its source: linear interpolation between the two
        /// neighbours, ONNX's cubic convolution over four, or the nearest one
        /// with ONNX's rounding rule.
        ResizeMode as "resize mode" {
            Linear = "linear",
            Cubic = "cubic",
            NearestRoundPreferFloor = "nearest_round_prefer_floor",
            NearestRoundPreferCeil = "nearest_round_prefer_ceil",
            NearestFloor = "nearest_floor",
            NearestCeil = "nearest_ceil",
        }

        /// How `Resize` maps an output index to a source coordinate (ONNX's
        /// `coordinate_transformation_mode`).
        ResizeCoord as "coordinate transformation" {
            HalfPixel = "half_pixel",
            HalfPixelSymmetric = "half_pixel_symmetric",
            PytorchHalfPixel = "pytorch_half_pixel",
            AlignCorners = "align_corners",
            Asymmetric = "asymmetric",
            /// The axis' `[roi_start, roi_end]` (fractions of `in_len - 1`)
            /// stretched over the output; a coordinate outside the source gives
            /// the thunk's `extrapolation` value.
            TfCropAndResize = "tf_crop_and_resize",
        }

        /// Which extremum `ArgReduce` looks for.
        ArgOp as "arg-reduction" { Max = "max", Min = "min" }

        /// The cell a `Recurrent` thunk runs: ONNX `LSTM`, `GRU` (the reset
        /// gate applied to the state before its product with `R`, or with
        /// `linear_before_reset`, to the product) and `RNN`.
        RecurrentCell as "recurrent cell" {
            Lstm = "lstm",
            Gru = "gru",
            GruLinearBeforeReset = "gru_linear_before_reset",
            Rnn = "rnn",
        }

        /// How `GridSample` reads around a sampling point: the nearest sample
        /// (ties to even), the N-linear blend of the 2 per axis around it, or
        /// the N-cubic one of the 4 per axis (Keys, `a = -0.75`).
        GridSampleMode as "grid sample mode" { Linear = "linear", Nearest = "nearest", Cubic = "cubic" }

        /// What `GridSample` reads outside its input: zeros, the edge sample
        /// (`border`), or the sample mirrored at the edges (`reflection`).
        GridSamplePadding as "grid sample padding" { Zeros = "zeros", Border = "border", Reflection = "reflection" }

        /// What `Pad` writes outside its source along an axis: the thunk's
        /// value (`constant`), the nearest edge element (`edge`), the source
        /// mirrored about its first and last elements, which are not repeated
        /// (`reflect`), or the source repeated as on a torus (`wrap`).
        PadMode as "pad mode" { Constant = "constant", Edge = "edge", Reflect = "reflect", Wrap = "wrap" }

        /// What a pooling window computes: its largest element or the mean
        /// of its elements.
        PoolKind as "pool kind" { Max = "max", Mean = "mean" }

        /// How `ScatterElements` and `ScatterNd` combine an update with the
        /// element it lands on: `none` replaces it, the others reduce.
        ScatterReduction as "scatter reduction" { None = "none", Add = "add", Mul = "mul", Max = "max", Min = "min" }
            }
    };
}

field_enum_table!(named_enums);

impl BinaryOp {
    /// `op(a, b) == op(b, a)` for every input, so a reversed form is never needed.
    pub fn is_commutative(self) -> bool {
        matches!(
            self,
            BinaryOp::Add
                | BinaryOp::Mul
                | BinaryOp::Max
                | BinaryOp::Min
                | BinaryOp::BitAnd
                | BinaryOp::BitOr
                | BinaryOp::BitXor
        )
    }
}

impl RecurrentCell {
    /// Gates per hidden unit, in ONNX order: 4 (`i, o, f, c`), 3 (`z, r,
    /// h`) or 1.
    pub const fn gates(self) -> usize {
        match self {
            RecurrentCell::Lstm => 4,
            RecurrentCell::Gru | RecurrentCell::GruLinearBeforeReset => 3,
            RecurrentCell::Rnn => 1,
        }
    }

    /// Elements of a `Recurrent` thunk's packed recurrence weight for
    /// `hidden` units (`None` on overflow): `R^T` (`hidden x gates *
    /// hidden`) in the panel layout of [`crate::pack`]. For `gru` the
    /// `z, r` columns and the `h` columns are two matrices, packed one
    /// after the other: the `h` product reads `r (.) H`, known only after
    /// the first.
    pub fn packed_r_len(self, hidden: usize) -> Option<usize> {
        use crate::pack::packed_len;
        match self {
            RecurrentCell::Gru => packed_len(hidden, hidden.checked_mul(2)?)?.checked_add(packed_len(hidden, hidden)?),
            _ => packed_len(hidden, hidden.checked_mul(self.gates())?),
        }
    }

    /// Packs one direction's ONNX recurrence weight `r` (`[gates *
    /// hidden, hidden]`, row-major) into the layout of
    /// [`RecurrentCell::packed_r_len`].
    ///
    /// # Panics
    ///
    /// When `r.len() != gates * hidden * hidden`.
    pub fn pack_r(self, r: &[f32], hidden: usize) -> Vec<f32> {
        use crate::pack::pack_b;
        let cols = self.gates() * hidden;
        assert_eq!(r.len(), cols * hidden, "pack_r: {} values for {cols} x {hidden}", r.len());
        match self {
            // `R` is stored `[n, k]`: the transposed storage of `R^T`.
            RecurrentCell::Gru => {
                let (zr, h) = r.split_at(2 * hidden * hidden);
                let mut out = pack_b(zr, hidden, 2 * hidden, true);
                out.extend(pack_b(h, hidden, hidden, true));
                out
            }
            _ => pack_b(r, hidden, cols, true),
        }
    }
}

/// An element-wise activation. Parameterised kinds are written as calls in
/// `.sched` files: `leaky_relu(0.01)`, `clip(0.0, 6.0)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ActKind {
    Identity,
    Relu,
    /// Exact GELU: `x * 0.5 * (1 + erf(x / sqrt(2)))`.
    Gelu,
    /// The tanh approximation of GELU.
    GeluTanh,
    Silu,
    Sigmoid,
    Tanh,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Neg,
    Abs,
    Recip,
    Square,
    Erf,
    Softplus,
    Mish,
    HardSwish,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Floor,
    Ceil,
    /// Round half to even, as ONNX `Round`.
    Round,
    Sign,
    /// `x / (1 + |x|)`.
    Softsign,
    /// Logical not of a 0/1 value held in f32: `x == 0 ? 1 : 0`.
    Not,
    LeakyRelu {
        alpha: f32,
    },
    Elu {
        alpha: f32,
    },
    /// `gamma * x` for `x > 0`, else `gamma * alpha * (exp(x) - 1)`.
    Selu {
        alpha: f32,
        gamma: f32,
    },
    /// `x` for `x > 0`, else `alpha * (exp(x / alpha) - 1)`.
    Celu {
        alpha: f32,
    },
    /// `x` for `x > alpha`, else 0 (NaN gives 0, as the ONNX formula).
    ThresholdedRelu {
        alpha: f32,
    },
    /// `x - bias` for `x > lambd`, `x + bias` for `x < -lambd`, else 0.
    Shrink {
        bias: f32,
        lambd: f32,
    },
    /// `max(0, min(1, alpha * x + beta))`.
    HardSigmoid {
        alpha: f32,
        beta: f32,
    },
    Clip {
        min: f32,
        max: f32,
    },
}

impl ActKind {
    /// `(name, parameter names)` of every kind, in declaration order.
    pub const SPELLINGS: &'static [(&'static str, &'static [&'static str])] = &[
        ("identity", &[]),
        ("relu", &[]),
        ("gelu", &[]),
        ("gelu_tanh", &[]),
        ("silu", &[]),
        ("sigmoid", &[]),
        ("tanh", &[]),
        ("exp", &[]),
        ("log", &[]),
        ("sqrt", &[]),
        ("rsqrt", &[]),
        ("neg", &[]),
        ("abs", &[]),
        ("recip", &[]),
        ("square", &[]),
        ("erf", &[]),
        ("softplus", &[]),
        ("mish", &[]),
        ("hard_swish", &[]),
        ("sin", &[]),
        ("cos", &[]),
        ("tan", &[]),
        ("asin", &[]),
        ("acos", &[]),
        ("atan", &[]),
        ("sinh", &[]),
        ("cosh", &[]),
        ("asinh", &[]),
        ("acosh", &[]),
        ("atanh", &[]),
        ("floor", &[]),
        ("ceil", &[]),
        ("round", &[]),
        ("sign", &[]),
        ("softsign", &[]),
        ("not", &[]),
        ("leaky_relu", &["alpha"]),
        ("elu", &["alpha"]),
        ("selu", &["alpha", "gamma"]),
        ("celu", &["alpha"]),
        ("thresholded_relu", &["alpha"]),
        ("shrink", &["bias", "lambd"]),
        ("hard_sigmoid", &["alpha", "beta"]),
        ("clip", &["min", "max"]),
    ];

    pub fn name(self) -> &'static str {
        match self {
            ActKind::Identity => "identity",
            ActKind::Relu => "relu",
            ActKind::Gelu => "gelu",
            ActKind::GeluTanh => "gelu_tanh",
            ActKind::Silu => "silu",
            ActKind::Sigmoid => "sigmoid",
            ActKind::Tanh => "tanh",
            ActKind::Exp => "exp",
            ActKind::Log => "log",
            ActKind::Sqrt => "sqrt",
            ActKind::Rsqrt => "rsqrt",
            ActKind::Neg => "neg",
            ActKind::Abs => "abs",
            ActKind::Recip => "recip",
            ActKind::Square => "square",
            ActKind::Erf => "erf",
            ActKind::Softplus => "softplus",
            ActKind::Mish => "mish",
            ActKind::HardSwish => "hard_swish",
            ActKind::Sin => "sin",
            ActKind::Cos => "cos",
            ActKind::Tan => "tan",
            ActKind::Asin => "asin",
            ActKind::Acos => "acos",
            ActKind::Atan => "atan",
            ActKind::Sinh => "sinh",
            ActKind::Cosh => "cosh",
            ActKind::Asinh => "asinh",
            ActKind::Acosh => "acosh",
            ActKind::Atanh => "atanh",
            ActKind::Floor => "floor",
            ActKind::Ceil => "ceil",
            ActKind::Round => "round",
            ActKind::Sign => "sign",
            ActKind::Softsign => "softsign",
            ActKind::Not => "not",
            ActKind::LeakyRelu { .. } => "leaky_relu",
            ActKind::Elu { .. } => "elu",
            ActKind::Selu { .. } => "selu",
            ActKind::Celu { .. } => "celu",
            ActKind::ThresholdedRelu { .. } => "thresholded_relu",
            ActKind::Shrink { .. } => "shrink",
            ActKind::HardSigmoid { .. } => "hard_sigmoid",
            ActKind::Clip { .. } => "clip",
        }
    }

    /// The kind's parameters, in `.sched` order.
    pub fn params(self) -> Vec<f32> {
        match self {
            ActKind::LeakyRelu { alpha }
            | ActKind::Elu { alpha }
            | ActKind::Celu { alpha }
            | ActKind::ThresholdedRelu { alpha } => vec![alpha],
            ActKind::HardSigmoid { alpha, beta } => vec![alpha, beta],
            ActKind::Selu { alpha, gamma } => vec![alpha, gamma],
            ActKind::Shrink { bias, lambd } => vec![bias, lambd],
            ActKind::Clip { min, max } => vec![min, max],
            _ => vec![],
        }
    }

    /// Builds a kind from its name and parameters; `None` when the name is
    /// unknown or the parameter count is wrong.
    pub fn from_parts(name: &str, p: &[f32]) -> Option<ActKind> {
        let k = match (name, p) {
            ("identity", []) => ActKind::Identity,
            ("relu", []) => ActKind::Relu,
            ("gelu", []) => ActKind::Gelu,
            ("gelu_tanh", []) => ActKind::GeluTanh,
            ("silu", []) => ActKind::Silu,
            ("sigmoid", []) => ActKind::Sigmoid,
            ("tanh", []) => ActKind::Tanh,
            ("exp", []) => ActKind::Exp,
            ("log", []) => ActKind::Log,
            ("sqrt", []) => ActKind::Sqrt,
            ("rsqrt", []) => ActKind::Rsqrt,
            ("neg", []) => ActKind::Neg,
            ("abs", []) => ActKind::Abs,
            ("recip", []) => ActKind::Recip,
            ("square", []) => ActKind::Square,
            ("erf", []) => ActKind::Erf,
            ("softplus", []) => ActKind::Softplus,
            ("mish", []) => ActKind::Mish,
            ("hard_swish", []) => ActKind::HardSwish,
            ("sin", []) => ActKind::Sin,
            ("cos", []) => ActKind::Cos,
            ("tan", []) => ActKind::Tan,
            ("asin", []) => ActKind::Asin,
            ("acos", []) => ActKind::Acos,
            ("atan", []) => ActKind::Atan,
            ("sinh", []) => ActKind::Sinh,
            ("cosh", []) => ActKind::Cosh,
            ("asinh", []) => ActKind::Asinh,
            ("acosh", []) => ActKind::Acosh,
            ("atanh", []) => ActKind::Atanh,
            ("floor", []) => ActKind::Floor,
            ("ceil", []) => ActKind::Ceil,
            ("round", []) => ActKind::Round,
            ("sign", []) => ActKind::Sign,
            ("softsign", []) => ActKind::Softsign,
            ("not", []) => ActKind::Not,
            ("leaky_relu", [a]) => ActKind::LeakyRelu { alpha: *a },
            ("elu", [a]) => ActKind::Elu { alpha: *a },
            ("selu", [a, g]) => ActKind::Selu { alpha: *a, gamma: *g },
            ("celu", [a]) => ActKind::Celu { alpha: *a },
            ("thresholded_relu", [a]) => ActKind::ThresholdedRelu { alpha: *a },
            ("shrink", [b, l]) => ActKind::Shrink { bias: *b, lambd: *l },
            ("hard_sigmoid", [a, b]) => ActKind::HardSigmoid { alpha: *a, beta: *b },
            ("clip", [lo, hi]) => ActKind::Clip { min: *lo, max: *hi },
            _ => return None,
        };
        Some(k)
    }

    /// Number of parameters the named kind takes, `None` if unknown.
    pub fn arity(name: &str) -> Option<usize> {
        Self::SPELLINGS.iter().find(|(n, _)| *n == name).map(|(_, p)| p.len())
    }
}

/// Attention masking. `SlidingWindow(w)` lets a query see the `w` keys
/// before it and itself; `Custom` reads a `[batch, kv_seq]` key-padding
/// mask compared with the schedule's `mask_threshold`; `Bias` adds a
/// `[batch, heads, seq, kv_seq]` tensor to the scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    None,
    Causal,
    SlidingWindow(usize),
    Custom,
    Bias,
}

impl MaskKind {
    pub fn name(self) -> &'static str {
        match self {
            MaskKind::None => "none",
            MaskKind::Causal => "causal",
            MaskKind::SlidingWindow(_) => "sliding_window",
            MaskKind::Custom => "custom",
            MaskKind::Bias => "bias",
        }
    }

    pub const NAMES: &'static [&'static str] = &["none", "causal", "sliding_window(W)", "custom", "bias"];

    /// Whether the kind reads the `mask` operand.
    pub fn reads_mask(self) -> bool {
        matches!(self, MaskKind::Custom | MaskKind::Bias)
    }
}

/// The right-hand argument of a binary step in a fused chain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepArg {
    /// `in<N>`: element `i` of the region's N-th input.
    Input(usize),
    Const(f32),
}

/// One step of an `ElementwiseRegion` chain. The accumulator starts as
/// element `i` of input 0; each step replaces it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// `acc = act(acc)`, written as the activation: `relu`, `clip(0.0, 6.0)`.
    Act(ActKind),
    /// `acc = op(acc, arg)`, written `add(in1)`, `mul(0.5)`; with
    /// `reversed`, `acc = op(arg, acc)`, written `rsub(1.0)`.
    Binary { op: BinaryOp, arg: StepArg, reversed: bool },
}
