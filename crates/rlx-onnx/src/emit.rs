//! From lowered thunks to `.sched` text and a safetensors weights file:
//! liveness, the arena plan, the weights layout, the AST, the printer.

use std::fmt;

use rlx_sched::ast::{BufferDecl, EntryDecl, Header, OperandRef, Spanned, Target, ThunkDecl, WeightsDecl};
use rlx_sched::{Ast, DType, Role, Segment, Span};
use safetensors::tensor::{Dtype, TensorView};

use crate::error::ImportError;
use crate::lower::Lowered;
use crate::planner::{plan_memory, Interval, ALIGN};

/// What the importer produced, in numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// Thunks in the schedule.
    pub thunks: usize,
    /// Buffers declared (all roles).
    pub buffers: usize,
    /// Arena bytes of the plan.
    pub arena_bytes: usize,
    /// The planner's lower bound: the most bytes live at one thunk (inputs
    /// and outputs count throughout).
    pub peak_live_bytes: usize,
    /// Bytes of the weights file.
    pub weights_bytes: usize,
    /// Parameter tensors in the weights file.
    pub params: usize,
    /// `ToBlocked` and `FromBlocked` thunks: the conversions between the
    /// NCHW and blocked channel layouts the layout pass left.
    pub layout_conversions: usize,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ratio = if self.peak_live_bytes == 0 { 1.0 } else { self.arena_bytes as f64 / self.peak_live_bytes as f64 };
        write!(
            f,
            "{} thunks, {} buffers, arena {} bytes (peak-live lower bound {} bytes, {:.2}x), weights {} bytes in {} tensors, {} layout conversion(s)",
            self.thunks,
            self.buffers,
            self.arena_bytes,
            self.peak_live_bytes,
            ratio,
            self.weights_bytes,
            self.params,
            self.layout_conversions
        )
    }
}

fn spanned<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Span::default())
}

/// Arena offsets for every arena storage (`None` for params).
fn plan_arena(lowered: &Lowered) -> (Vec<Option<usize>>, usize, usize) {
    let n = lowered.storages.len();
    let mut first = vec![usize::MAX; n];
    let mut last = vec![0usize; n];
    for (t, lt) in lowered.thunks.iter().enumerate() {
        for (_, &id) in lt.thunk.operands() {
            // A view keeps its base alive.
            let id = lowered.storages[id].view.map_or(id, |(base, _)| base);
            first[id] = first[id].min(t);
            last[id] = last[id].max(t);
        }
    }
    let arena_ids: Vec<usize> =
        (0..n).filter(|&i| lowered.storages[i].role != Role::Param && lowered.storages[i].view.is_none()).collect();
    let items: Vec<Interval> = arena_ids
        .iter()
        .map(|&i| {
            let s = &lowered.storages[i];
            let bytes = s.shape.iter().product::<usize>() * s.dtype.size();
            let used = first[i] != usize::MAX;
            Interval {
                bytes,
                first: if used { first[i] } else { 0 },
                last: if used { last[i] } else { 0 },
                pinned: matches!(s.role, Role::Input | Role::Output | Role::State),
            }
        })
        .collect();
    let plan = plan_memory(&items);
    let mut offsets = vec![None; n];
    for (k, &i) in arena_ids.iter().enumerate() {
        offsets[i] = Some(plan.offsets[k]);
    }
    (offsets, plan.arena_bytes, plan.peak_live_bytes)
}

/// Writes the params as safetensors and returns the file with each
/// param's offset in the data section.
fn write_weights(lowered: &Lowered) -> Result<(Vec<u8>, Vec<Option<usize>>), ImportError> {
    let params: Vec<(usize, Vec<u8>)> = lowered
        .storages
        .iter()
        .enumerate()
        .filter(|(_, s)| s.role == Role::Param && s.view.is_none())
        .map(|(i, s)| (i, s.data.clone().unwrap_or_default()))
        .collect();
    let mut views = Vec::with_capacity(params.len());
    for (i, bytes) in &params {
        let s = &lowered.storages[*i];
        let dtype = match s.dtype {
            DType::F32 => Dtype::F32,
            DType::F16 => Dtype::F16,
            DType::Bf16 => Dtype::BF16,
            DType::I64 => Dtype::I64,
            DType::I32 => Dtype::I32,
            DType::Bool => Dtype::BOOL,
            DType::F64 => Dtype::F64,
            DType::I8 => Dtype::I8,
            DType::U8 => Dtype::U8,
            DType::I16 => Dtype::I16,
            DType::U16 => Dtype::U16,
            DType::U32 => Dtype::U32,
            DType::U64 => Dtype::U64,
        };
        let view = TensorView::new(dtype, s.shape.clone(), bytes)
            .map_err(|e| ImportError::Weights(format!("tensor `{}`: {e}", s.name)))?;
        views.push((s.name.clone(), view));
    }
    let file = safetensors::serialize(views, &None).map_err(|e| ImportError::Weights(e.to_string()))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&file)
        .map_err(|e| ImportError::Weights(format!("reading back: {e}")))?;
    let mut offsets = vec![None; lowered.storages.len()];
    for (i, _) in &params {
        let name = &lowered.storages[*i].name;
        let info =
            meta.info(name).ok_or_else(|| ImportError::Weights(format!("tensor `{name}` missing after writing")))?;
        offsets[*i] = Some(info.data_offsets.0);
    }
    Ok((file, offsets))
}

/// Builds the `.sched` text and the weights file.
pub(crate) fn emit(lowered: &Lowered, model: &str, weights_path: &str) -> Result<Emitted, ImportError> {
    let origin = format!("imported from ONNX by rlx-onnx {}", env!("CARGO_PKG_VERSION"));
    emit_with(lowered, model, weights_path, &origin)
}

/// What an import writes: the `.sched` text and the weights file.
pub(crate) struct Emitted {
    pub sched_text: String,
    pub weights: Vec<u8>,
    pub report: ImportReport,
}

/// [`emit`] with the first comment line of the schedule (where it came from).
pub(crate) fn emit_with(
    lowered: &Lowered,
    model: &str,
    weights_path: &str,
    origin: &str,
) -> Result<Emitted, ImportError> {
    let (arena_offsets, mut arena_bytes, peak_live_bytes) = plan_arena(lowered);
    // Buffers with no elements still live in the arena, which the format
    // wants non-empty then.
    if arena_bytes == 0 && arena_offsets.iter().any(Option::is_some) {
        arena_bytes = ALIGN;
    }
    // The validator's limit: the arena plus its alignment in one allocation.
    if arena_bytes > isize::MAX as usize - ALIGN {
        return Err(ImportError::ArenaTooLarge(arena_bytes));
    }
    let (weights, weight_offsets) = write_weights(lowered)?;
    let header = Header {
        version: spanned(1),
        model: spanned(model.to_string()),
        arena_size: spanned(arena_bytes),
        arena_align: spanned(ALIGN),
        weights: Some(WeightsDecl {
            path: spanned(weights_path.to_string()),
            sha256: spanned(rlx_sched::sha256_hex(&weights)),
            span: Span::default(),
        }),
        mask_threshold: spanned(0.5),
        mask_neg_inf: spanned(-1e9),
        score_skip: spanned(0.0),
        leading_comments: vec![origin.to_string()],
    };
    let mut buffers = Vec::new();
    for role in [Role::Input, Role::Output, Role::State, Role::Param, Role::Scratch] {
        for (i, s) in lowered.storages.iter().enumerate() {
            if s.role != role || s.view.is_some() {
                continue;
            }
            let (segment, offset) = match role {
                Role::Param => (Segment::Weights, weight_offsets[i]),
                _ => (Segment::Arena, arena_offsets[i]),
            };
            let offset = offset.ok_or_else(|| ImportError::Invalid {
                pass: "memory planning",
                report: format!("buffer `{}` was not placed", s.name),
            })?;
            buffers.push(BufferDecl {
                role,
                name: spanned(s.name.clone()),
                dtype: spanned(s.dtype),
                shape: spanned(s.shape.clone()),
                segment,
                offset: spanned(offset),
                span: Span::default(),
                line: 0,
                leading_comments: Vec::new(),
            });
        }
    }
    let mut thunks = Vec::with_capacity(lowered.thunks.len());
    for lt in &lowered.thunks {
        let thunk = lt
            .thunk
            .clone()
            .map_operands(&mut |_, id: usize| {
                let (id, offset) = lowered.storages[id].view.unwrap_or((id, 0));
                Ok::<_, std::convert::Infallible>(OperandRef {
                    target: Target::Buffer { name: lowered.storages[id].name.clone(), offset },
                    span: Span::default(),
                })
            })
            .map_err(|_| ImportError::Invalid { pass: "emit", report: "operand mapping failed".to_string() })?;
        thunks.push(ThunkDecl {
            thunk,
            span: Span::default(),
            kind_span: Span::default(),
            field_spans: Vec::new(),
            line: 0,
            leading_comments: vec![lt.comment.clone()],
            alias: None,
        });
    }
    let report = ImportReport {
        thunks: thunks.len(),
        buffers: buffers.len(),
        arena_bytes,
        peak_live_bytes,
        weights_bytes: weights.len(),
        params: weight_offsets.iter().flatten().count(),
        layout_conversions: lowered
            .thunks
            .iter()
            .filter(|lt| matches!(lt.thunk, rlx_sched::Thunk::ToBlocked(_) | rlx_sched::Thunk::FromBlocked(_)))
            .count(),
    };
    let entries = lowered
        .entries
        .iter()
        .map(|e| EntryDecl {
            name: spanned(e.name.clone()),
            inputs: e.inputs.iter().cloned().map(spanned).collect(),
            outputs: e.outputs.iter().cloned().map(spanned).collect(),
            first_thunk: e.first_thunk,
            span: Span::default(),
            line: 0,
            leading_comments: Vec::new(),
        })
        .collect();
    let ast = Ast { header, buffers, thunks, entries, trailing_comments: Vec::new() };
    Ok(Emitted { sched_text: rlx_sched::print(&ast), weights, report })
}
