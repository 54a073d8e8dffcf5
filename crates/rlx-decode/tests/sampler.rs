//! Properties of the sampler over random logits and configurations.

use proptest::prelude::*;
use rlx_decode::sampler::argmax;
use rlx_decode::{Sampler, SamplerConfig};

/// Logits with many ties (small integers) or spread out (floats).
fn logits() -> impl Strategy<Value = Vec<f32>> {
    prop_oneof![
        prop::collection::vec((-3i32..=3).prop_map(|v| v as f32), 1..48),
        prop::collection::vec(-10.0f32..10.0, 1..48),
    ]
}

fn config() -> impl Strategy<Value = SamplerConfig> {
    (0.05f32..3.0, prop::option::of(1usize..60), prop::option::of(0.01f32..=1.0), any::<u64>()).prop_map(
        |(t, k, p, seed)| {
            let mut c = SamplerConfig::with_temperature(t, seed);
            (c.top_k, c.top_p) = (k, p);
            c
        },
    )
}

/// The naive argmax: first index of the largest value.
fn reference_argmax(l: &[f32]) -> u32 {
    let max = l.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    l.iter().position(|&v| v == max).unwrap() as u32
}

/// Tokens ranked strictly before `id`: larger logit, or equal and lower id.
fn ahead_of(l: &[f32], id: u32) -> impl Iterator<Item = usize> + '_ {
    let v = l[id as usize];
    (0..l.len()).filter(move |&j| l[j] > v || (l[j] == v && j < id as usize))
}

fn draw(config: SamplerConfig, l: &[f32], n: usize) -> Vec<u32> {
    let mut s = Sampler::new(config, l.len()).unwrap();
    (0..n).map(|_| s.sample(l).unwrap()).collect()
}

proptest! {
    #[test]
    fn greedy_is_argmax(l in logits()) {
        prop_assert_eq!(argmax(&l).unwrap(), reference_argmax(&l));
        prop_assert_eq!(draw(SamplerConfig::greedy(), &l, 3), vec![reference_argmax(&l); 3]);
    }

    #[test]
    fn temperature_zero_is_greedy_whatever_else(l in logits(), c in config()) {
        let c = c.temperature(0.0);
        prop_assert_eq!(draw(c, &l, 4), vec![reference_argmax(&l); 4]);
    }

    #[test]
    fn top_k_one_is_greedy(l in logits(), c in config()) {
        let c = c.top_k(1);
        prop_assert_eq!(draw(c, &l, 4), vec![reference_argmax(&l); 4]);
    }

    #[test]
    fn a_tiny_top_p_is_greedy(l in logits(), c in config()) {
        let c = c.top_p(1e-7);
        prop_assert_eq!(draw(c, &l, 4), vec![reference_argmax(&l); 4]);
    }

    #[test]
    fn samples_stay_inside_the_top_k_set(l in logits(), c in config(), k in 1usize..8) {
        let c = c.top_k(k);
        for id in draw(c, &l, 16) {
            prop_assert!(ahead_of(&l, id).count() < k, "token {} is outside the top {}", id, k);
        }
    }

    #[test]
    fn samples_stay_inside_the_top_p_set(l in logits(), c in config()) {
        let p = c.top_p.unwrap_or(0.5);
        let mut c = c.top_p(p);
        c.top_k = None;
        let t = c.temperature as f64;
        let max = l.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let w = |j: usize| ((l[j] as f64 - max) / t).exp();
        let total: f64 = (0..l.len()).map(w).sum();
        for id in draw(c, &l, 16) {
            // The mass ranked before a nucleus token is below p.
            let before: f64 = ahead_of(&l, id).map(w).sum();
            prop_assert!(before < p as f64 * total * (1.0 + 1e-9), "token {} has {} ahead of it, p {}", id, before / total, p);
        }
    }

    #[test]
    fn a_seed_gives_the_same_sequence(l in logits(), c in config()) {
        prop_assert_eq!(draw(c.clone(), &l, 20), draw(c, &l, 20));
    }

    #[test]
    fn masked_tokens_are_never_drawn(l in logits(), c in config(), mask in prop::collection::vec(any::<bool>(), 48)) {
        let mut l = l;
        for (v, m) in l.iter_mut().zip(&mask).skip(1) {
            if *m {
                *v = f32::NEG_INFINITY;
            }
        }
        // Token 0 always stays, so the row is never all masked.
        for id in draw(c, &l, 16) {
            prop_assert!(l[id as usize] > f32::NEG_INFINITY);
        }
    }
}

#[test]
fn different_seeds_give_different_sequences() {
    let l = vec![0.0f32; 32];
    let a = draw(SamplerConfig::with_temperature(1.0, 1), &l, 20);
    let b = draw(SamplerConfig::with_temperature(1.0, 2), &l, 20);
    assert_ne!(a, b);
}

#[test]
fn sampling_follows_the_distribution() {
    // Two tokens with probabilities 1/(1+e) and e/(1+e): about 27% and 73%.
    let l = [0.0f32, 1.0];
    let n = 20_000;
    let ones = draw(SamplerConfig::with_temperature(1.0, 7), &l, n).iter().filter(|&&t| t == 1).count();
    let want = std::f64::consts::E / (1.0 + std::f64::consts::E);
    assert!(((ones as f64 / n as f64) - want).abs() < 0.015, "{ones} of {n}");
}
