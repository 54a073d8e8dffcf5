//! The import budget: one bound, for the whole import, on what the
//! importer makes up beyond the model file. A few bytes of ONNX can ask
//! for a loop of 10^9 iterations, loops nested ten deep, or a transform
//! whose table would fill the disk; the budget refuses them with the node
//! and the figure before the work or the allocation, instead of running
//! for minutes or aborting.
//!
//! Two figures, each counted from the start of the import:
//!
//! - **nodes**: every node lowered: the graph's own, the parts an op is
//!   composed of, every node of every unrolled step of `Scan`, `Loop` and
//!   `If` bodies (nested ones included), and one per unrolled step. A
//!   control-flow node checks before it unrolls that its steps fit (the
//!   body's nodes, nested unrolls with a count known from the model
//!   included).
//! - **bytes**: every constant the lowering makes (folded results, copies
//!   of a body's initializers per step, the twiddle matrices of `DFT` and
//!   `STFT`, window tables, ...) and the unrolled bodies' copies. A table
//!   sized by numbers of the model is checked before it is allocated. The
//!   model's own data (initializers, `Constant` nodes, `--const` values)
//!   is not counted: it is as large as the file.

use std::fmt;
use std::str::FromStr;

use crate::error::ImportError;
use crate::lower::NodeCtx;

/// The limits of [`ImportBudget`]: `ImportLimits::default()` and the
/// `with_*` setters, or [`ImportLimits::from_str`] on
/// `nodes=N,bytes=N` (either key may be left out; the flag
/// `--import-limit` of `cargo xtask import`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportLimits {
    /// The most nodes an import lowers, every unrolled step's included.
    pub nodes: usize,
    /// The most bytes of constants and tables an import makes.
    pub bytes: usize,
}

impl ImportLimits {
    /// The default node limit: five times the 200,000-node chain of the
    /// tests, some 500 times the largest model of the benchmark zoo (1,746
    /// nodes), and a few seconds of lowering.
    pub const DEFAULT_NODES: usize = 1_000_000;
    /// The default byte limit, 4 GiB: some 90 times the most any model of
    /// the zoo makes (45 MB).
    pub const DEFAULT_BYTES: usize = 1 << 32;

    /// Sets the node limit.
    pub fn with_nodes(mut self, nodes: usize) -> Self {
        self.nodes = nodes;
        self
    }

    /// Sets the byte limit.
    pub fn with_bytes(mut self, bytes: usize) -> Self {
        self.bytes = bytes;
        self
    }
}

impl Default for ImportLimits {
    fn default() -> Self {
        ImportLimits { nodes: Self::DEFAULT_NODES, bytes: Self::DEFAULT_BYTES }
    }
}

impl FromStr for ImportLimits {
    type Err = String;

    /// `nodes=N,bytes=N`, either key optional, the other keeping its
    /// default; `N` a whole number (`_` may group digits).
    fn from_str(text: &str) -> Result<Self, String> {
        let mut limits = ImportLimits::default();
        for part in text.split(',') {
            let (key, value) = part.split_once('=').ok_or_else(|| format!("`{part}` is not KEY=N"))?;
            let n: usize =
                value.replace('_', "").parse().map_err(|_| format!("`{value}` is not a whole number (in `{part}`)"))?;
            match key.trim() {
                "nodes" => limits.nodes = n,
                "bytes" => limits.bytes = n,
                other => return Err(format!("unknown limit `{other}`; the limits are `nodes` and `bytes`")),
            }
        }
        Ok(limits)
    }
}

/// What one import has spent of its [`ImportLimits`].
#[derive(Debug)]
pub(crate) struct ImportBudget {
    limits: ImportLimits,
    nodes: usize,
    bytes: usize,
}

/// A figure the budget counts.
#[derive(Clone, Copy, Debug)]
enum Unit {
    Nodes,
    Bytes,
}

impl Unit {
    fn key(self) -> &'static str {
        match self {
            Unit::Nodes => "nodes",
            Unit::Bytes => "bytes",
        }
    }
}

impl ImportBudget {
    pub(crate) fn new(limits: ImportLimits) -> Self {
        ImportBudget { limits, nodes: 0, bytes: 0 }
    }

    /// Counts one lowered node.
    pub(crate) fn node(&mut self, ctx: &NodeCtx<'_>) -> Result<(), ImportError> {
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > self.limits.nodes {
            let needs = format!("it is node {} of the import", Grouped(self.nodes as u128));
            return Err(self.refuse(ctx, Unit::Nodes, &needs));
        }
        Ok(())
    }

    /// Checks, without counting them, that `nodes` more nodes fit (`None`:
    /// more than `usize` holds); `needs` says what needs them, and the
    /// message follows it with `: N nodes`.
    pub(crate) fn reserve_nodes(
        &self,
        ctx: &NodeCtx<'_>,
        needs: &str,
        nodes: Option<usize>,
    ) -> Result<(), ImportError> {
        match nodes {
            Some(n) if n <= self.limits.nodes.saturating_sub(self.nodes) => Ok(()),
            _ => Err(self.refuse(ctx, Unit::Nodes, &format!("{needs}: {}", figure(nodes, Unit::Nodes)))),
        }
    }

    /// Checks, before allocating it, that a table of `bytes` (`None`: more
    /// than `usize` holds) fits; `what` names it. Counting happens when
    /// the table becomes a value ([`ImportBudget::add_bytes`]).
    pub(crate) fn reserve_bytes(&self, ctx: &NodeCtx<'_>, what: &str, bytes: Option<usize>) -> Result<(), ImportError> {
        match bytes {
            Some(n) if n <= self.limits.bytes.saturating_sub(self.bytes) => Ok(()),
            _ => Err(self.refuse(ctx, Unit::Bytes, &format!("{what} needs {}", figure(bytes, Unit::Bytes)))),
        }
    }

    /// Counts bytes the lowering made; [`ImportBudget::check_bytes`]
    /// reports going past the limit.
    pub(crate) fn add_bytes(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// Errors once the bytes counted are past the limit, naming the node
    /// that went past it.
    pub(crate) fn check_bytes(&self, ctx: &NodeCtx<'_>) -> Result<(), ImportError> {
        if self.bytes > self.limits.bytes {
            let needs = format!("its constants bring the import's total to {}", figure(Some(self.bytes), Unit::Bytes));
            return Err(self.refuse(ctx, Unit::Bytes, &needs));
        }
        Ok(())
    }

    fn refuse(&self, ctx: &NodeCtx<'_>, unit: Unit, needs: &str) -> ImportError {
        let (limit, used) = match unit {
            Unit::Nodes => (self.limits.nodes, self.nodes),
            Unit::Bytes => (self.limits.bytes, self.bytes),
        };
        let left = limit.saturating_sub(used);
        ImportError::Budget {
            op: ctx.node.op_type.clone(),
            node: ctx.label.clone(),
            message: format!(
                "{needs}; the import budget allows {} in all, {} left (raise it with --import-limit {}=N)",
                figure(Some(limit), unit),
                Grouped(left as u128),
                unit.key()
            ),
        }
    }
}

/// `n` nodes or bytes, grouped by thousands; `None` is past `usize`.
fn figure(n: Option<usize>, unit: Unit) -> String {
    match n {
        Some(1) => format!("1 {}", unit.key().trim_end_matches('s')),
        Some(n) => format!("{} {}", Grouped(n as u128), unit.key()),
        None => format!("more than {} {}", Grouped(usize::MAX as u128), unit.key()),
    }
}

/// A number printed with `,` between groups of three digits.
pub(crate) struct Grouped(pub u128);

impl fmt::Display for Grouped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.0.to_string();
        let mut out = String::with_capacity(digits.len() * 4 / 3);
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        f.write_str(&out)
    }
}

/// `a * b`, `None` past `usize`.
pub(crate) fn product(factors: &[usize]) -> Option<usize> {
    factors.iter().try_fold(1usize, |acc, &f| acc.checked_mul(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(Grouped(0).to_string(), "0");
        assert_eq!(Grouped(999).to_string(), "999");
        assert_eq!(Grouped(1000).to_string(), "1,000");
        assert_eq!(Grouped(1_000_000_000).to_string(), "1,000,000,000");
        assert_eq!(Grouped(18_446_744_073_709_551_615).to_string(), "18,446,744,073,709,551,615");
    }

    #[test]
    fn limits_parse_from_the_flag() {
        let d = ImportLimits::default();
        assert_eq!("nodes=5".parse(), Ok(d.with_nodes(5)));
        assert_eq!("bytes=1_000,nodes=7".parse(), Ok(d.with_nodes(7).with_bytes(1000)));
        assert!("nodes".parse::<ImportLimits>().unwrap_err().contains("not KEY=N"));
        assert!("nodes=-1".parse::<ImportLimits>().unwrap_err().contains("not a whole number"));
        assert!("steps=3".parse::<ImportLimits>().unwrap_err().contains("unknown limit `steps`"));
    }
}
