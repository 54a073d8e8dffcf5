//! Lowering an ONNX graph to thunks over storages, inferring static shapes
//! node by node and folding constant shape arithmetic on the way.
//!
//! A *storage* is a future `.sched` buffer. A *value* is what an ONNX
//! tensor name refers to: a view of a storage with its own shape (so
//! `Reshape`, `Flatten`, `Squeeze`, `Unsqueeze` and `Identity` cost
//! nothing: the output names the input's storage), or a constant known at
//! import time (initializers, `Constant` nodes and folded shape
//! arithmetic). An f32 constant read by a thunk becomes a `param` storage
//! the first time it is read.
//!
//! The layers:
//! - [`arith`]: pure shape and constant arithmetic (broadcasting, axes,
//!   strides, reshape targets, constant folding); adds no storage or thunk.
//! - the [`Lowerer`] (this module): storages, values, attributes, and
//!   `lower_part`, which lowers a sub-node through the dispatcher.
//! - [`build`]: the builders the families share: helpers that allocate
//!   storages and push thunks (broadcast, slice, cast, concat, window
//!   geometry, quantization steps, inlined subgraphs); a composed step
//!   re-enters the dispatcher as `lower_part` does.
//! - [`ops`]: one module per op family. A family never imports another;
//!   it reuses another op through the builders or the dispatcher
//!   (`tests/lower_layers.rs` checks this).
//! - [`dispatch`]: the one table from op name to family function, expanded
//!   into the dispatch `match` and into [`SUPPORTED_OPS`]; [`promote`]
//!   widens narrow integer inputs before it.

mod arith;
mod attributes;
mod build;
mod dispatch;
mod ops;
mod promote;

use std::collections::{BTreeMap, BTreeSet};

use rlx_sched::{DType, Role, Thunk};

use crate::budget::{ImportBudget, ImportLimits};
use crate::error::ImportError;
use crate::names::NameTable;
use crate::proto::{AttributeProto, AttributeType, GraphProto, NodeProto};
use crate::tensor::ConstTensor;

pub use dispatch::{const_inputs, op_attributes, SUPPORTED_OPS};

/// A future `.sched` buffer, or a view into one.
#[derive(Clone, Debug)]
pub(crate) struct Storage {
    /// Its `.sched` identifier.
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub role: Role,
    /// The little-endian bytes of a `param` storage.
    pub data: Option<Vec<u8>>,
    /// `Some((base, byte_offset))`: not a buffer of its own but the bytes
    /// of storage `base` from `byte_offset` on (a zero-copy `Slice` or
    /// `Split`); operands name it `base+offset`. `base` is never a view.
    pub view: Option<(usize, usize)>,
    /// Some view reads this storage's bytes.
    pub viewed: bool,
}

impl Storage {
    /// Neither a view nor viewed: passes may merge it with another storage.
    pub(crate) fn is_plain(&self) -> bool {
        self.view.is_none() && !self.viewed
    }
}

/// What an ONNX tensor name refers to.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// A storage seen with `shape` (same element count as the storage).
    Data { storage: usize, shape: Vec<usize> },
    /// A constant known at import time.
    Const(ConstTensor),
}

/// A thunk over storage indices, with the comment printed above it.
#[derive(Clone, Debug)]
pub(crate) struct LoweredThunk {
    pub thunk: Thunk<usize>,
    pub comment: String,
}

/// The result of lowering a graph.
#[derive(Clone, Debug)]
pub(crate) struct Lowered {
    pub storages: Vec<Storage>,
    pub thunks: Vec<LoweredThunk>,
    /// Entry points (`entry` lines), in order; empty for one implicit
    /// entry. Only the Llama front end makes them, and only
    /// [`crate::optimize::prepack`] runs on them, which removes thunks
    /// through [`Lowered::remove_thunks`] so the boundaries stay right.
    pub entries: Vec<LoweredEntry>,
}

/// An entry point: its inputs and outputs by storage name (names survive
/// the passes' renumbering of storages) and its first thunk.
#[derive(Clone, Debug)]
pub(crate) struct LoweredEntry {
    pub name: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub first_thunk: usize,
}

impl Lowered {
    /// Removes every thunk `removed` marks, in one pass, keeping every
    /// entry's first thunk in place.
    pub(crate) fn remove_thunks(&mut self, removed: &[bool]) {
        let before = |t: usize| removed[..t].iter().filter(|&&r| r).count();
        for e in &mut self.entries {
            e.first_thunk -= before(e.first_thunk.min(removed.len()));
        }
        let mut t = 0;
        self.thunks.retain(|_| {
            t += 1;
            !removed[t - 1]
        });
    }
}

/// A graph input with its resolved static shape.
#[derive(Clone, Debug)]
pub(crate) struct GraphInput {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

/// The node being lowered, for messages.
pub(crate) struct NodeCtx<'a> {
    pub node: &'a NodeProto,
    pub label: String,
}

impl NodeCtx<'_> {
    pub(crate) fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::Node { op: self.node.op_type.clone(), node: self.label.clone(), message: message.into() }
    }

    pub(crate) fn bad_attr(&self, attr: &str, message: impl Into<String>) -> ImportError {
        ImportError::BadAttribute {
            op: self.node.op_type.clone(),
            node: self.label.clone(),
            attr: attr.to_string(),
            message: message.into(),
        }
    }

    fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    pub(crate) fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// The attribute `name` when present, checked to be of type `want`:
    /// an attribute of another type is an error naming both types, never
    /// read as a default.
    fn typed_attr(&self, name: &str, want: AttributeType) -> Result<Option<&AttributeProto>, ImportError> {
        let Some(a) = self.attr(name) else { return Ok(None) };
        match attr_type(a) {
            Some(found) if found != want => {
                Err(self
                    .bad_attr(name, format!("has type {}, expected {}", attr_type_name(found), attr_type_name(want))))
            }
            // Of the wanted type, or unset with every field empty (a zero).
            _ => Ok(Some(a)),
        }
    }

    pub(crate) fn int_attr(&self, name: &str, default: i64) -> Result<i64, ImportError> {
        Ok(self.typed_attr(name, AttributeType::Int)?.map_or(default, |a| a.i))
    }

    pub(crate) fn float_attr(&self, name: &str, default: f32) -> Result<f32, ImportError> {
        Ok(self.typed_attr(name, AttributeType::Float)?.map_or(default, |a| a.f))
    }

    /// `epsilon` of a normalisation: finite and not negative, as the
    /// schedule's kinds require (a negative one would turn `var + eps`
    /// negative and rows into NaN).
    pub(crate) fn epsilon_attr(&self) -> Result<f32, ImportError> {
        let eps = self.float_attr("epsilon", 1e-5)?;
        if eps.is_finite() && eps >= 0.0 {
            Ok(eps)
        } else {
            Err(self.bad_attr("epsilon", format!("is {eps:e}; it must be finite and not negative")))
        }
    }

    pub(crate) fn ints_attr(&self, name: &str) -> Result<Option<&[i64]>, ImportError> {
        Ok(self.typed_attr(name, AttributeType::Ints)?.map(|a| a.ints.as_slice()))
    }

    /// A string attribute, lossily decoded.
    pub(crate) fn string_attr(&self, name: &str) -> Result<Option<String>, ImportError> {
        Ok(self.typed_attr(name, AttributeType::String)?.map(|a| String::from_utf8_lossy(&a.s).into_owned()))
    }

    /// A list-of-strings attribute, each lossily decoded.
    pub(crate) fn strings_attr(&self, name: &str) -> Result<Option<Vec<String>>, ImportError> {
        Ok(self
            .typed_attr(name, AttributeType::Strings)?
            .map(|a| a.strings.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect()))
    }

    /// A `GRAPH` attribute (a control-flow op's body or branch).
    pub(crate) fn graph_attr(&self, name: &str) -> Result<Option<&GraphProto>, ImportError> {
        Ok(self.typed_attr(name, AttributeType::Graph)?.and_then(|a| a.g.as_ref()))
    }

    pub(crate) fn tensor_attr(&self, name: &str) -> Result<Option<&crate::proto::TensorProto>, ImportError> {
        Ok(self.typed_attr(name, AttributeType::Tensor)?.and_then(|a| a.t.as_ref()))
    }

    /// The `i`th input name, `None` when absent or empty (an omitted
    /// optional input).
    pub(crate) fn input_name(&self, i: usize) -> Option<&str> {
        self.node.input.get(i).map(String::as_str).filter(|s| !s.is_empty())
    }

    pub(crate) fn expect_arity(&self, min_in: usize, max_in: usize) -> Result<(), ImportError> {
        let n = self.node.input.len();
        if n < min_in || n > max_in {
            let want = if min_in == max_in { format!("{min_in}") } else { format!("{min_in} to {max_in}") };
            return Err(self.err(format!("expects {want} inputs, has {n}")));
        }
        if self.node.output.is_empty() {
            return Err(self.err("has no output"));
        }
        Ok(())
    }
}

/// An attribute's type: its `type` field, or for a model that leaves it
/// unset (`UNDEFINED`, before IR version 3), the one field that holds a
/// value; `None` when unset and every field is empty.
fn attr_type(a: &AttributeProto) -> Option<AttributeType> {
    match AttributeType::try_from(a.r#type) {
        Ok(AttributeType::Undefined) => {}
        Ok(t) => return Some(t),
        // An unknown type number is no type we read.
        Err(_) => return Some(AttributeType::Undefined),
    }
    let held = [
        (a.f != 0.0, AttributeType::Float),
        (a.i != 0, AttributeType::Int),
        (!a.s.is_empty(), AttributeType::String),
        (a.t.is_some(), AttributeType::Tensor),
        (!a.floats.is_empty(), AttributeType::Floats),
        (!a.ints.is_empty(), AttributeType::Ints),
        (!a.strings.is_empty(), AttributeType::Strings),
        (!a.tensors.is_empty(), AttributeType::Tensors),
        (a.g.is_some(), AttributeType::Graph),
    ];
    let mut set = held.iter().filter(|(on, _)| *on).map(|&(_, t)| t);
    match (set.next(), set.next()) {
        (Some(t), None) => Some(t),
        (None, _) => None,
        // Several fields set and no type: ambiguous, so never the wanted one.
        (Some(_), Some(_)) => Some(AttributeType::Undefined),
    }
}

/// ONNX's name of an attribute type (`INT`, `FLOATS`, ...).
fn attr_type_name(t: AttributeType) -> &'static str {
    match t {
        AttributeType::Undefined => "UNDEFINED",
        AttributeType::Float => "FLOAT",
        AttributeType::Int => "INT",
        AttributeType::String => "STRING",
        AttributeType::Tensor => "TENSOR",
        AttributeType::Graph => "GRAPH",
        AttributeType::SparseTensor => "SPARSE_TENSOR",
        AttributeType::TypeProto => "TYPE_PROTO",
        AttributeType::Floats => "FLOATS",
        AttributeType::Ints => "INTS",
        AttributeType::Strings => "STRINGS",
        AttributeType::Tensors => "TENSORS",
        AttributeType::Graphs => "GRAPHS",
        AttributeType::SparseTensors => "SPARSE_TENSORS",
        AttributeType::TypeProtos => "TYPE_PROTOS",
    }
}

/// Adds a view of `shape` into the bytes of `storage` from `byte_offset`
/// (which must lie inside it, with room for the view), named `base+offset`
/// after the storage it ultimately views; returns its index.
pub(crate) fn push_view(storages: &mut Vec<Storage>, storage: usize, byte_offset: usize, shape: Vec<usize>) -> usize {
    let (base, base_offset) = storages[storage].view.unwrap_or((storage, 0));
    let dtype = storages[storage].dtype;
    debug_assert!(
        byte_offset + shape.iter().product::<usize>() * dtype.size()
            <= storages[storage].shape.iter().product::<usize>() * dtype.size()
    );
    storages[base].viewed = true;
    let b = &storages[base];
    let view = Storage {
        name: format!("{}+{}", b.name, base_offset + byte_offset),
        shape,
        dtype,
        role: b.role,
        data: None,
        view: Some((base, base_offset + byte_offset)),
        viewed: false,
    };
    storages.push(view);
    storages.len() - 1
}

/// Lowering state.
pub(crate) struct Lowerer {
    pub storages: Vec<Storage>,
    pub thunks: Vec<LoweredThunk>,
    values: BTreeMap<String, Value>,
    /// The param storage of each f32 constant already read by a thunk.
    params: BTreeMap<String, usize>,
    names: NameTable,
    graph_outputs: BTreeSet<String>,
    /// The output storage written directly by the node producing a graph
    /// output.
    output_storage: BTreeMap<String, usize>,
    /// Version of the default (`ai.onnx`) opset.
    pub opset: i64,
    /// Every value name the graph defines (node outputs), so names the
    /// lowering makes up for its own values never collide with one.
    graph_names: BTreeSet<String>,
    /// The i64 copy of each narrow integer value already widened
    /// (`promote`): graph name -> the copy's value name.
    widened: BTreeMap<String, String>,
    /// The readers of each top-level `Pad`, and the pads left to them
    /// (`build::pad_fold`).
    pad_readers: build::pad_fold::PadReaders,
    folded_pads: BTreeMap<String, build::pad_fold::FoldedPad>,
    /// What the import has spent of its limits (`crate::budget`).
    pub budget: ImportBudget,
    /// How many control-flow bodies the node being lowered sits in (0: a
    /// node of the graph itself).
    pub depth: usize,
}

impl Lowerer {
    fn new(opset: i64, graph_outputs: BTreeSet<String>, limits: ImportLimits) -> Self {
        Lowerer {
            storages: Vec::new(),
            thunks: Vec::new(),
            values: BTreeMap::new(),
            params: BTreeMap::new(),
            names: NameTable::default(),
            graph_outputs,
            output_storage: BTreeMap::new(),
            opset,
            graph_names: BTreeSet::new(),
            widened: BTreeMap::new(),
            pad_readers: Default::default(),
            folded_pads: BTreeMap::new(),
            budget: ImportBudget::new(limits),
            depth: 0,
        }
    }

    /// A value name for the lowering's own use: `name.what`, suffixed
    /// `_2`, `_3`, ... if the graph or the lowering already uses it.
    pub(crate) fn internal_name(&self, name: &str, what: &str) -> String {
        let base = format!("{name}.{what}");
        let mut candidate = base.clone();
        let mut n = 2;
        while self.values.contains_key(&candidate) || self.graph_names.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        candidate
    }

    fn add_storage(
        &mut self,
        onnx_name: &str,
        shape: Vec<usize>,
        role: Role,
        dtype: DType,
        data: Option<Vec<u8>>,
    ) -> Result<usize, ImportError> {
        let bytes = arith::shape::checked_numel(&shape).and_then(|n| n.checked_mul(dtype.size()));
        if bytes.is_none_or(|b| b > isize::MAX as usize) {
            return Err(ImportError::tensor(onnx_name, format!("shape {shape:?} is too large")));
        }
        let name = self.names.fresh(onnx_name);
        self.storages.push(Storage { name, shape, dtype, role, data, view: None, viewed: false });
        Ok(self.storages.len() - 1)
    }

    /// A view of `shape` into the bytes of `storage` from `byte_offset`
    /// (which must lie inside it, with room for the view).
    pub(crate) fn add_view(&mut self, storage: usize, byte_offset: usize, shape: Vec<usize>) -> usize {
        push_view(&mut self.storages, storage, byte_offset, shape)
    }

    /// The value an input name refers to.
    pub(crate) fn value(&self, ctx: &NodeCtx<'_>, name: &str) -> Result<&Value, ImportError> {
        self.values.get(name).ok_or_else(|| {
            ctx.err(format!("input `{name}` is not a graph input, an initializer or the output of an earlier node"))
        })
    }

    /// The value of input `i`, which must be present.
    pub(crate) fn input(&self, ctx: &NodeCtx<'_>, i: usize) -> Result<(String, Value), ImportError> {
        let name = ctx.input_name(i).ok_or_else(|| ctx.err(format!("input {i} is missing")))?;
        Ok((name.to_string(), self.value(ctx, name)?.clone()))
    }

    /// Input `i` as f32 data in a storage: a constant becomes a `param`.
    pub(crate) fn data_input(&mut self, ctx: &NodeCtx<'_>, i: usize) -> Result<(usize, Vec<usize>), ImportError> {
        let (id, shape, dtype) = self.typed_input(ctx, i)?;
        if dtype != DType::F32 {
            let name = ctx.input_name(i).unwrap_or_default();
            return Err(ctx.err(format!("input `{name}` is {} data; this op supports f32 data only", dtype.name())));
        }
        Ok((id, shape))
    }

    /// Input `i` in a storage, of any carried type: a constant becomes a
    /// `param` (once per name).
    pub(crate) fn typed_input(
        &mut self,
        ctx: &NodeCtx<'_>,
        i: usize,
    ) -> Result<(usize, Vec<usize>, DType), ImportError> {
        let (name, value) = self.input(ctx, i)?;
        match value {
            Value::Data { storage, shape } => Ok((storage, shape, self.storages[storage].dtype)),
            Value::Const(c) => {
                let dtype = c.data.dtype();
                if let Some(&id) = self.params.get(&name) {
                    return Ok((id, c.shape, dtype));
                }
                let id = self.add_param(&name, &c)?;
                self.params.insert(name, id);
                Ok((id, c.shape, dtype))
            }
        }
    }

    /// A `param` storage holding a constant.
    pub(crate) fn add_param(&mut self, name: &str, c: &ConstTensor) -> Result<usize, ImportError> {
        self.add_storage(name, c.shape.clone(), Role::Param, c.data.dtype(), Some(c.data.to_le_bytes()))
    }

    /// Input `i` as a constant, when it is one (`None` for data and for
    /// an omitted optional input).
    pub(crate) fn const_input(&self, ctx: &NodeCtx<'_>, i: usize) -> Result<Option<ConstTensor>, ImportError> {
        let Some(name) = ctx.input_name(i) else { return Ok(None) };
        Ok(match self.value(ctx, name)? {
            Value::Const(c) => Some(c.clone()),
            Value::Data { .. } => None,
        })
    }

    /// A new scratch storage for a temporary the lowering needs.
    pub(crate) fn scratch_storage(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        dtype: DType,
    ) -> Result<usize, ImportError> {
        self.add_storage(name, shape, Role::Scratch, dtype, None)
    }

    /// Input `i` as an integer constant.
    pub(crate) fn const_ints(&self, ctx: &NodeCtx<'_>, i: usize) -> Result<(Vec<usize>, Vec<i64>), ImportError> {
        let (name, value) = self.input(ctx, i)?;
        match value {
            Value::Const(ConstTensor { shape, data }) if data.ints().is_some() => {
                Ok((shape, data.ints().expect("checked")))
            }
            _ => Err(ctx.err(format!(
                "input `{name}` must be an integer constant known at import time (an initializer, a `Constant` or folded shape arithmetic)"
            ))),
        }
    }

    /// A new storage for output `i` of the node: the graph output buffer
    /// when the output is a graph output, else scratch.
    pub(crate) fn output_storage(
        &mut self,
        ctx: &NodeCtx<'_>,
        i: usize,
        shape: Vec<usize>,
    ) -> Result<usize, ImportError> {
        self.output_storage_typed(ctx, i, shape, DType::F32)
    }

    /// As [`Lowerer::output_storage`], of element type `dtype`.
    pub(crate) fn output_storage_typed(
        &mut self,
        ctx: &NodeCtx<'_>,
        i: usize,
        shape: Vec<usize>,
        dtype: DType,
    ) -> Result<usize, ImportError> {
        let name = ctx.node.output.get(i).ok_or_else(|| ctx.err(format!("output {i} is missing")))?.clone();
        let is_output = self.graph_outputs.contains(&name) && !self.output_storage.contains_key(&name);
        let role = if is_output { Role::Output } else { Role::Scratch };
        let id = self.add_storage(&name, shape, role, dtype, None)?;
        if is_output {
            self.output_storage.insert(name, id);
        }
        Ok(id)
    }

    /// Binds output `i` of the node to a value. A constant counts against
    /// the import budget, unless it is a `Constant` node of the graph
    /// itself (the model's own data).
    pub(crate) fn define(&mut self, ctx: &NodeCtx<'_>, i: usize, value: Value) -> Result<(), ImportError> {
        let name = ctx.node.output.get(i).ok_or_else(|| ctx.err(format!("output {i} is missing")))?;
        if let Value::Const(c) = &value {
            if !(ctx.node.op_type == "Constant" && self.depth == 0) {
                self.budget.add_bytes(const_bytes(c));
            }
        }
        if self.values.insert(name.clone(), value).is_some() {
            return Err(ctx.err(format!("output `{name}` is produced twice")));
        }
        Ok(())
    }

    /// Defines a constant under a fresh internal name (`base.what`) for a
    /// composed op's parts to read; returns the name. It counts against
    /// the import budget (the dispatcher reports going past it after the
    /// node; a large table is checked before it is built:
    /// [`Lowerer::reserve_table`]).
    pub(crate) fn constant(&mut self, base: &str, what: &str, c: ConstTensor) -> String {
        self.budget.add_bytes(const_bytes(&c));
        let name = self.internal_name(base, what);
        self.values.insert(name.clone(), Value::Const(c));
        name
    }

    /// Lowers a node the lowering of `ctx` composes its op from: `op` over
    /// the named values, defining `outputs`, with `ctx`'s name (so its
    /// thunks' comments and messages name the original node).
    pub(crate) fn lower_part(
        &mut self,
        ctx: &NodeCtx<'_>,
        op: &str,
        inputs: &[&str],
        outputs: &[&str],
        attribute: Vec<AttributeProto>,
    ) -> Result<(), ImportError> {
        let node = NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            name: ctx.node.name.clone(),
            op_type: op.to_string(),
            attribute,
            ..Default::default()
        };
        dispatch::lower_node(self, &NodeCtx { node: &node, label: ctx.label.clone() })
    }

    /// Checks, before it is built, that a table of `dims` elements of
    /// `elem_bytes` each fits the import budget; `what` names it
    /// ("the twiddle matrix").
    pub(crate) fn reserve_table(
        &self,
        ctx: &NodeCtx<'_>,
        what: &str,
        dims: &[usize],
        elem_bytes: usize,
    ) -> Result<(), ImportError> {
        let bytes = crate::budget::product(dims).and_then(|n| n.checked_mul(elem_bytes));
        self.budget.reserve_bytes(ctx, &format!("{what} ({dims:?}, {elem_bytes} bytes each)"), bytes)
    }

    /// As [`Lowerer::reserve_table`], and counts the table: for one that
    /// becomes a `param` (an [`Lowerer::add_param`] is not counted).
    pub(crate) fn count_table(
        &mut self,
        ctx: &NodeCtx<'_>,
        what: &str,
        dims: &[usize],
        elem_bytes: usize,
    ) -> Result<(), ImportError> {
        self.reserve_table(ctx, what, dims, elem_bytes)?;
        self.budget.add_bytes(dims.iter().product::<usize>() * elem_bytes);
        Ok(())
    }

    pub(crate) fn emit(&mut self, ctx: &NodeCtx<'_>, thunk: Thunk<usize>) {
        let comment = format!("{} `{}`", ctx.node.op_type, ctx.label);
        self.thunks.push(LoweredThunk { thunk, comment });
    }
}

/// Lowers `graph` given its resolved inputs and constants.
pub(crate) fn lower_graph(
    graph: &GraphProto,
    inputs: &[GraphInput],
    constants: Vec<(String, ConstTensor)>,
    opset: i64,
    limits: ImportLimits,
) -> Result<Lowered, ImportError> {
    // A 2-byte float output is narrowed from its f32 value at the end
    // (`bind_graph_output`), so no producer writes it directly.
    let outputs: BTreeSet<String> =
        graph.output.iter().filter(|o| half_interface(o).is_none()).map(|o| o.name.clone()).collect();
    let mut lw = Lowerer::new(opset, outputs, limits);
    lw.graph_names = graph.node.iter().flat_map(|n| n.output.iter().cloned()).collect();
    lw.pad_readers = build::pad_fold::PadReaders::of(graph);
    for input in inputs {
        let id = lw.add_storage(&input.name, input.shape.clone(), Role::Input, input.dtype, None)?;
        let storage = match input.dtype {
            // 2-byte floats and f64 are computed in f32: converted once, on
            // the way in.
            DType::F16 | DType::Bf16 | DType::F64 => {
                let wide = lw.add_storage(
                    &format!("{}.f32", input.name),
                    input.shape.clone(),
                    Role::Scratch,
                    DType::F32,
                    None,
                )?;
                let len = input.shape.iter().product();
                let thunk = build::cast_thunk(id, wide, len, input.dtype, DType::F32);
                lw.thunks.push(LoweredThunk { thunk, comment: format!("input `{}` converted to f32", input.name) });
                wide
            }
            _ => id,
        };
        lw.values.insert(input.name.clone(), Value::Data { storage, shape: input.shape.clone() });
    }
    for (name, c) in constants {
        lw.values.insert(name, Value::Const(c));
    }
    for (index, node) in graph.node.iter().enumerate() {
        let ctx = NodeCtx { node, label: build::pad_fold::node_label(index, &node.name) };
        dispatch::lower_node(&mut lw, &ctx)?;
    }
    for out in &graph.output {
        bind_graph_output(&mut lw, &out.name, out)?;
    }
    Ok(Lowered { storages: lw.storages, thunks: lw.thunks, entries: Vec::new() })
}

/// The bytes a constant holds in memory.
fn const_bytes(c: &ConstTensor) -> usize {
    c.data.len().saturating_mul(c.data.dtype().size())
}

/// The float type other than f32 (computed in f32) a graph input or output
/// is declared with, if any.
fn half_interface(info: &crate::proto::ValueInfoProto) -> Option<DType> {
    let elem = info.r#type.as_ref().and_then(|t| t.tensor_type.as_ref()).map_or(0, |t| t.elem_type);
    crate::tensor::interface_dtype_of(elem).filter(|d| matches!(d, DType::F16 | DType::Bf16 | DType::F64))
}

/// Makes sure graph output `name` ends in its own `output` buffer: a value
/// that lives elsewhere (a view of another buffer, an input, a constant)
/// is copied there.
fn bind_graph_output(lw: &mut Lowerer, name: &str, info: &crate::proto::ValueInfoProto) -> Result<(), ImportError> {
    let value = lw
        .values
        .get(name)
        .cloned()
        .ok_or_else(|| ImportError::tensor(name, "is a graph output but no node produces it"))?;
    let shape = match &value {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    if let Some(declared) = crate::graph::static_dims(info) {
        if declared != shape {
            return Err(ImportError::tensor(
                name,
                format!("the model declares shape {declared:?}, inference gives {shape:?}"),
            ));
        }
    }
    if let Some(half) = half_interface(info) {
        // Computed in f32, handed over in the declared 2-byte type.
        let src = match &value {
            Value::Const(c) => lw.add_param(&format!("{name}.value"), c)?,
            Value::Data { storage, .. } => *storage,
        };
        if lw.storages[src].dtype != DType::F32 {
            return Err(ImportError::tensor(name, format!("is declared a {half} output but holds no floats")));
        }
        let dst = lw.add_storage(name, shape.clone(), Role::Output, half, None)?;
        // The output buffer keeps the ONNX name; its f32 producer takes
        // the fresh one.
        if lw.storages[src].role == Role::Scratch && lw.storages[src].name == crate::names::sanitize(name) {
            let (a, b) = (lw.storages[src].name.clone(), lw.storages[dst].name.clone());
            (lw.storages[src].name, lw.storages[dst].name) = (b, a);
        }
        lw.output_storage.insert(name.to_string(), dst);
        let thunk = build::cast_thunk(src, dst, shape.iter().product(), DType::F32, half);
        lw.thunks.push(LoweredThunk { thunk, comment: format!("output `{name}` converted to {}", half.name()) });
        return Ok(());
    }
    if let Value::Data { storage, .. } = value {
        if lw.output_storage.get(name) == Some(&storage) {
            return Ok(());
        }
        // A view (Reshape, Flatten, ...) of an intermediate: that buffer
        // becomes the output, so its producer writes the output directly.
        if lw.storages[storage].role == Role::Scratch && lw.storages[storage].view.is_none() {
            let renamed = lw.names.fresh(name);
            let s = &mut lw.storages[storage];
            s.role = Role::Output;
            s.name = renamed;
            s.shape = shape;
            lw.output_storage.insert(name.to_string(), storage);
            return Ok(());
        }
    }
    let node = NodeProto {
        input: vec![name.to_string()],
        output: vec![name.to_string()],
        name: format!("output {name}"),
        op_type: "Identity".to_string(),
        ..Default::default()
    };
    let ctx = NodeCtx { node: &node, label: node.name.clone() };
    // A constant output is copied from a param named after it, so the
    // output buffer keeps the ONNX name.
    let (src, shape, dtype) = match &value {
        Value::Const(c) => (lw.add_param(&format!("{name}.value"), c)?, c.shape.clone(), c.data.dtype()),
        Value::Data { .. } => lw.typed_input(&ctx, 0)?,
    };
    lw.graph_outputs.insert(name.to_string());
    lw.output_storage.remove(name);
    let dst = lw.output_storage_typed(&ctx, 0, shape.clone(), dtype)?;
    let copy = build::copy_thunk(src, dst, &shape, dtype);
    lw.emit(&ctx, copy);
    Ok(())
}
