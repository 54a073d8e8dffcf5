//! Picking the next token from a row of logits: greedy, temperature,
//! top-k and top-p (nucleus), seeded.
//!
//! Order of operations (the one Hugging Face `generate` uses): divide the
//! logits by the temperature, keep the `top_k` largest, softmax over what
//! is kept, keep the smallest prefix (most probable first) whose mass
//! reaches `top_p`, then draw from that set in proportion to the
//! probabilities. Temperature 0 is greedy whatever `top_k` and `top_p` say.
//!
//! Reproducible across platforms: the random stream is ChaCha8 (a stream
//! `rand_chacha` keeps stable across releases and targets), the
//! exponential is computed here from IEEE `+ - * /` alone (the platform's
//! `exp` may differ in the last bit between libms), and candidates are
//! ordered by a total order (logit descending, then token id ascending), so
//! ties never depend on sort stability.
//!
//! Non-finite logits: NaN and `+inf` are an error ([`SampleError::NonFinite`]),
//! in every mode, because a model that produces them is broken and a token
//! picked from them would be noise. `-inf` is a legal mask (probability 0);
//! a row of nothing but `-inf` is an error.

use std::cmp::Ordering;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How to sample. `Default` is greedy with seed 0.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplerConfig {
    /// Divides the logits; 0 means greedy (argmax, lowest id on ties).
    pub temperature: f32,
    /// Keep only the `k` most likely tokens (at least 1).
    pub top_k: Option<usize>,
    /// Keep the smallest most-likely set whose probability reaches `p`,
    /// `0 < p <= 1`.
    pub top_p: Option<f32>,
    /// Seed of the random stream.
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig { temperature: 0.0, top_k: None, top_p: None, seed: 0 }
    }
}

impl SamplerConfig {
    /// Greedy decoding.
    pub fn greedy() -> Self {
        Self::default()
    }

    /// Sampling at `temperature` with the given seed, no top-k or top-p.
    pub fn with_temperature(temperature: f32, seed: u64) -> Self {
        SamplerConfig { temperature, seed, ..Self::default() }
    }

    /// This configuration with the given temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature;
        self
    }

    /// This configuration keeping only the `k` most likely tokens.
    pub fn top_k(mut self, k: usize) -> Self {
        self.top_k = Some(k);
        self
    }

    /// This configuration with nucleus sampling at `p`.
    pub fn top_p(mut self, p: f32) -> Self {
        self.top_p = Some(p);
        self
    }

    /// This configuration with the given seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks the ranges; [`Sampler::new`] calls it.
    pub fn validate(&self) -> Result<(), SampleError> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(SampleError::Temperature(self.temperature));
        }
        if self.top_k == Some(0) {
            return Err(SampleError::TopK);
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(SampleError::TopP(p));
            }
        }
        Ok(())
    }
}

/// Why a token could not be sampled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error("temperature {0} is not allowed: give a finite value >= 0 (0 is greedy)")]
    Temperature(f32),
    #[error("top-k 0 is not allowed: give at least 1")]
    TopK,
    #[error("top-p {0} is not allowed: give a value in (0, 1]")]
    TopP(f32),
    #[error("the vocabulary is empty")]
    EmptyVocab,
    #[error("logit {index} is {value}: the model produced a non-finite logit")]
    NonFinite { index: usize, value: f32 },
    #[error("every logit is -inf: no token can be sampled")]
    AllMasked,
    #[error("{found} logits given to a sampler sized for a vocabulary of {vocab}")]
    Length { found: usize, vocab: usize },
}

/// A seeded sampler with its buffers sized once from the vocabulary:
/// [`Sampler::sample`] never allocates.
#[derive(Debug)]
pub struct Sampler {
    config: SamplerConfig,
    rng: ChaCha8Rng,
    /// Candidate token ids, reordered in place each step.
    ids: Vec<u32>,
    /// Unnormalised probabilities of `ids[..n]`, same order.
    weights: Vec<f64>,
}

impl Sampler {
    /// A sampler for rows of `vocab` logits.
    pub fn new(config: SamplerConfig, vocab: usize) -> Result<Self, SampleError> {
        config.validate()?;
        if vocab == 0 {
            return Err(SampleError::EmptyVocab);
        }
        // Token ids are u32 everywhere in the tokenizer; a larger vocabulary
        // is not a real model.
        assert!(vocab <= u32::MAX as usize, "vocabulary of {vocab} does not fit u32 ids");
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Ok(Sampler { config, rng, ids: Vec::with_capacity(vocab), weights: Vec::with_capacity(vocab) })
    }

    /// The configuration this sampler was built with.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// The vocabulary size the buffers were sized for.
    pub fn vocab(&self) -> usize {
        self.ids.capacity()
    }

    /// Whether every call is an argmax (no random draw).
    pub fn is_greedy(&self) -> bool {
        self.config.temperature == 0.0 || self.config.top_k == Some(1)
    }

    /// Picks the next token from one row of logits.
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32, SampleError> {
        let vocab = self.vocab();
        if logits.len() != vocab {
            return Err(SampleError::Length { found: logits.len(), vocab });
        }
        let best = argmax(logits)?;
        if self.is_greedy() {
            return Ok(best);
        }
        let inv_t = 1.0 / self.config.temperature as f64;
        let max = logits[best as usize] as f64;

        self.ids.clear();
        self.ids.extend(0..vocab as u32);
        let by_rank = |a: &u32, b: &u32| rank_order(logits, *a, *b);
        let mut n = vocab;
        let top_k = self.config.top_k.filter(|&k| k < vocab);
        if let Some(k) = top_k {
            // Partition: O(V), in place.
            self.ids.select_nth_unstable_by(k - 1, by_rank);
            n = k;
        }
        let kept = &mut self.ids[..n];
        // The nucleus is a prefix in probability order; and the order the
        // partition leaves is the standard library's choice, which may
        // change between releases, so the kept set is put in rank order
        // before a draw maps onto it. The order is total (ids break ties):
        // the unstable sort has one possible result.
        if top_k.is_some() || self.config.top_p.is_some() {
            kept.sort_unstable_by(by_rank);
        }

        self.weights.clear();
        let mut total = 0.0f64;
        for &id in kept.iter() {
            let w = exp_nonpositive((logits[id as usize] as f64 - max) * inv_t);
            self.weights.push(w);
            total += w;
        }
        if let Some(p) = self.config.top_p {
            let target = p as f64 * total;
            let mut mass = 0.0;
            let mut keep = 0;
            for &w in &self.weights {
                mass += w;
                keep += 1;
                if mass >= target {
                    break;
                }
            }
            self.weights.truncate(keep);
            total = mass;
        }

        // 53 random bits: a uniform double in [0, 1), the same on every target.
        let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let target = u * total;
        let mut acc = 0.0;
        for (i, &w) in self.weights.iter().enumerate() {
            acc += w;
            if target < acc {
                return Ok(self.ids[i]);
            }
        }
        // Rounding left `target` at the top edge: the last token with any
        // weight (the best one has weight exactly 1, so one exists).
        let last = self.weights.iter().rposition(|&w| w > 0.0).unwrap_or(0);
        Ok(self.ids[last])
    }
}

/// The order candidates are ranked in: larger logit first, lower id on ties.
fn rank_order(logits: &[f32], a: u32, b: u32) -> Ordering {
    let (la, lb) = (logits[a as usize], logits[b as usize]);
    lb.partial_cmp(&la).unwrap_or(Ordering::Equal).then(a.cmp(&b))
}

/// Index of the largest logit, the lowest one on ties; checks every value
/// (NaN and `+inf` are errors, an all `-inf` row is an error).
pub fn argmax(logits: &[f32]) -> Result<u32, SampleError> {
    let mut best = 0usize;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v.is_nan() || v == f32::INFINITY {
            return Err(SampleError::NonFinite { index: i, value: v });
        }
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    if logits.is_empty() {
        return Err(SampleError::EmptyVocab);
    }
    if best_v == f32::NEG_INFINITY {
        return Err(SampleError::AllMasked);
    }
    Ok(best as u32)
}

/// `e^x` for `x <= 0` from `+ - * /` only, so every platform gets the same
/// bits (relative error about 1e-15; exactly 1 at 0, 0 below -745).
pub fn exp_nonpositive(x: f64) -> f64 {
    if x.is_nan() || x < -745.0 {
        return 0.0;
    }
    debug_assert!(x <= 0.0, "exp_nonpositive({x})");
    // x = k ln2 + r with |r| <= ln2 / 2; ln2 split in two so k ln2 is exact.
    // fdlibm's split: LN2_HI has its low 32 bits zero.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const INV_LN2: f64 = std::f64::consts::LOG2_E;
    let kf = (x * INV_LN2 - 0.5).ceil();
    let r = (x - kf * LN2_HI) - kf * LN2_LO;
    // Taylor series to r^13: |r| <= 0.347, the remainder is below 1e-17.
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=13 {
        term = term * r / i as f64;
        sum += term;
    }
    let k = kf as i64;
    // 2^k, split in two factors so subnormal results (k < -1022) stay exact
    // powers of two.
    let half = k / 2;
    sum * pow2(half) * pow2(k - half)
}

/// `2^k` for `-1022 <= k <= 1023`.
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_matches_std_closely() {
        for i in 0..=7450 {
            let x = -(i as f64) * 0.1;
            let (ours, std) = (exp_nonpositive(x), x.exp());
            let rel = if std == 0.0 { ours } else { ((ours - std) / std).abs() };
            assert!(rel < 1e-13 || (std < 1e-300 && (ours - std).abs() < 1e-310), "x={x}: {ours} vs {std}");
        }
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-1000.0), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn argmax_takes_the_lowest_index_on_ties() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0]), Ok(1));
        assert_eq!(argmax(&[f32::NEG_INFINITY, -5.0]), Ok(1));
        assert_eq!(argmax(&[-0.0, 0.0]), Ok(0));
    }

    #[test]
    fn nan_and_plus_inf_are_errors_in_every_mode() {
        for config in [
            SamplerConfig::greedy(),
            SamplerConfig::with_temperature(1.0, 3),
            SamplerConfig { top_k: Some(2), ..SamplerConfig::with_temperature(0.7, 1) },
        ] {
            let mut s = Sampler::new(config, 3).unwrap();
            // `NaN != NaN`, so this one is matched rather than compared.
            assert!(
                matches!(s.sample(&[0.0, f32::NAN, 1.0]), Err(SampleError::NonFinite { index: 1, value }) if value.is_nan())
            );
            assert_eq!(
                s.sample(&[0.0, 1.0, f32::INFINITY]),
                Err(SampleError::NonFinite { index: 2, value: f32::INFINITY })
            );
            assert_eq!(s.sample(&[f32::NEG_INFINITY; 3]), Err(SampleError::AllMasked));
            // -inf is a mask: never drawn.
            for _ in 0..50 {
                assert_eq!(s.sample(&[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]), Ok(1));
            }
        }
    }

    #[test]
    fn bad_configs_are_rejected() {
        let bad = [
            SamplerConfig::with_temperature(-1.0, 0),
            SamplerConfig::with_temperature(f32::NAN, 0),
            SamplerConfig::with_temperature(f32::INFINITY, 0),
            SamplerConfig { top_k: Some(0), ..SamplerConfig::default() },
            SamplerConfig { top_p: Some(0.0), ..SamplerConfig::default() },
            SamplerConfig { top_p: Some(1.5), ..SamplerConfig::default() },
            SamplerConfig { top_p: Some(f32::NAN), ..SamplerConfig::default() },
        ];
        for c in bad {
            assert!(Sampler::new(c.clone(), 4).is_err(), "{c:?}");
        }
        assert_eq!(Sampler::new(SamplerConfig::default(), 0).unwrap_err(), SampleError::EmptyVocab);
        let mut s = Sampler::new(SamplerConfig::default(), 4).unwrap();
        assert_eq!(s.sample(&[0.0; 3]), Err(SampleError::Length { found: 3, vocab: 4 }));
    }

    /// The stream is part of the contract: a seed gives these tokens on
    /// every platform and every release (a change here breaks users'
    /// reproducible runs and needs a note in docs/decoding.md).
    #[test]
    fn a_seed_gives_a_pinned_sequence() {
        let logits: Vec<f32> = (0..16).map(|i| ((i * 7) % 5) as f32 * 0.5).collect();
        let mut s = Sampler::new(SamplerConfig::with_temperature(1.0, 42), logits.len()).unwrap();
        let got: Vec<u32> = (0..12).map(|_| s.sample(&logits).unwrap()).collect();
        assert_eq!(got, PINNED);
    }

    const PINNED: [u32; 12] = [11, 14, 7, 9, 4, 2, 4, 12, 12, 3, 7, 14];
}
