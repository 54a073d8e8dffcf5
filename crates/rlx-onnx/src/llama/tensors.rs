//! The step's storages: checkpoint tensors read as f32 (checked against
//! the shape the config gives), transposed for the products, split where
//! a family fuses several products into one tensor.

use std::ops::Range;

use rlx_sched::{DType, Role, Thunk};
use safetensors::SafeTensors;

use super::fields::tensor_err;
use crate::error::ImportError;
use crate::lower::{Lowered, LoweredThunk, Storage};

/// Builds the step's storages and thunks.
pub(super) struct Builder<'a> {
    pub lowered: Lowered,
    tensors: &'a SafeTensors<'a>,
}

pub(super) fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl<'a> Builder<'a> {
    pub fn new(tensors: &'a SafeTensors<'a>) -> Self {
        Builder { lowered: Lowered { storages: Vec::new(), thunks: Vec::new(), entries: Vec::new() }, tensors }
    }

    pub fn storage(&mut self, name: &str, shape: Vec<usize>, role: Role, dtype: DType, data: Option<Vec<u8>>) -> usize {
        self.lowered.storages.push(Storage {
            name: name.to_string(),
            shape,
            dtype,
            role,
            data,
            view: None,
            viewed: false,
        });
        self.lowered.storages.len() - 1
    }

    pub fn arena(&mut self, name: &str, shape: Vec<usize>, role: Role) -> usize {
        self.storage(name, shape, role, DType::F32, None)
    }

    /// The stored dtype of checkpoint tensor `name`, if it is there.
    pub fn dtype_of(&self, name: &str) -> Option<safetensors::Dtype> {
        self.tensors.tensor(name).ok().map(|t| t.dtype())
    }

    /// Checkpoint tensor `name` as f32 (f16 and bf16 widened), checked
    /// against `shape`.
    pub fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ImportError> {
        let t = self.shaped(name, shape)?;
        let data = t.data();
        let values = match t.dtype() {
            safetensors::Dtype::F32 => {
                data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            safetensors::Dtype::F16 => {
                data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
            }
            safetensors::Dtype::BF16 => {
                data.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
            }
            other => return Err(tensor_err(format!("tensor `{name}`: dtype {other:?} is not a float"))),
        };
        Ok(values)
    }

    /// Checkpoint tensor `name`, checked to have `shape`.
    pub fn shaped(&self, name: &str, shape: &[usize]) -> Result<safetensors::tensor::TensorView<'_>, ImportError> {
        let t = self.tensors.tensor(name).map_err(|_| tensor_err(format!("tensor `{name}` is missing")))?;
        if t.shape() != shape {
            return Err(tensor_err(format!("tensor `{name}`: shape {:?}, expected {shape:?}", t.shape())));
        }
        Ok(t)
    }

    /// A param from checkpoint tensor `src` as stored (`shape`), each value
    /// plus `offset` (computed in f32).
    pub fn vector(&mut self, name: &str, src: &str, shape: &[usize], offset: f32) -> Result<usize, ImportError> {
        let mut v = self.tensor(src, shape)?;
        if offset != 0.0 {
            v.iter_mut().for_each(|x| *x += offset);
        }
        Ok(self.storage(name, shape.to_vec(), Role::Param, DType::F32, Some(f32_bytes(&v))))
    }

    /// A product's weight from checkpoint tensor `src` (torch's `Linear`,
    /// `[rows, cols]` = `[out, in]`), transposed to `[cols, rows]`.
    pub fn linear(&mut self, name: &str, src: &str, shape: [usize; 2]) -> Result<usize, ImportError> {
        Ok(self.linear_parts(&[(name, 0..shape[0])], src, shape)?[0])
    }

    /// Product weights from row ranges of one checkpoint `Linear` tensor
    /// `src` (`[rows, cols]`, read once), each transposed to `[cols,
    /// rows in its range]`: a family's fused projection split into the
    /// products the step runs.
    pub fn linear_parts(
        &mut self,
        parts: &[(&str, Range<usize>)],
        src: &str,
        shape: [usize; 2],
    ) -> Result<Vec<usize>, ImportError> {
        let v = self.tensor(src, &shape)?;
        let cols = shape[1];
        let mut ids = Vec::with_capacity(parts.len());
        for (name, rows) in parts {
            let n = rows.len();
            let mut t = vec![0.0f32; n * cols];
            for (r, row) in rows.clone().enumerate() {
                for c in 0..cols {
                    t[c * n + r] = v[row * cols + c];
                }
            }
            ids.push(self.storage(name, vec![cols, n], Role::Param, DType::F32, Some(f32_bytes(&t))));
        }
        Ok(ids)
    }

    pub fn thunk(&mut self, comment: impl Into<String>, thunk: Thunk<usize>) {
        self.lowered.thunks.push(LoweredThunk { thunk, comment: comment.into() });
    }
}
