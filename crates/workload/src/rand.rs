//! sysbench 1.0.20's random numbers (src/sb_rand.c): the xoroshiro128+ generator, the
//! `uniform`, `gaussian`, `special` and `pareto` distributions with their options
//! (`--rand-spec-iter` 12, `--rand-spec-pct` 1, `--rand-spec-res` 75, `--rand-pareto-h`
//! 0.2), `sysbench.rand.string` templates, and the `unique` sequence.
//!
//! The generator is seeded from `--rand-seed` and the thread number with SplitMix64
//! (sysbench seeds it from libc `random()`), so sequences are deterministic for a given
//! seed and thread, but not the same numbers sysbench draws. The distributions' shapes are
//! sysbench's, formula for formula.

use serde::{Deserialize, Serialize};

/// Distribution of `sysbench.rand.default` (`--rand-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RandType {
    /// Uniform over [a, b].
    Uniform,
    /// Mean of `rand_spec_iter` uniforms.
    Gaussian,
    /// sysbench's default: `rand_spec_res` % of values in the middle `rand_spec_pct` % of the
    /// range, the rest gaussian.
    Special,
    /// Pareto with shape `rand_pareto_h`.
    Pareto,
}

impl RandType {
    /// Every distribution with its `--rand-type` name.
    pub const ALL: &'static [(RandType, &'static str)] = &[
        (RandType::Uniform, "uniform"),
        (RandType::Gaussian, "gaussian"),
        (RandType::Special, "special"),
        (RandType::Pareto, "pareto"),
    ];
}

impl std::str::FromStr for RandType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(t, _)| *t)
            .ok_or_else(|| {
                format!("unknown --rand-type '{s}'; expected uniform, gaussian, special or pareto")
            })
    }
}

impl std::fmt::Display for RandType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = Self::ALL
            .iter()
            .find(|(t, _)| t == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

/// Parameters of the distributions (sysbench option names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RandOptions {
    /// --rand-type (default special).
    pub rand_type: RandType,
    /// --rand-spec-iter (12).
    pub rand_spec_iter: u32,
    /// --rand-spec-pct (1).
    pub rand_spec_pct: u32,
    /// --rand-spec-res (75).
    pub rand_spec_res: u32,
    /// --rand-pareto-h (0.2).
    pub rand_pareto_h: f64,
}

impl Default for RandOptions {
    fn default() -> Self {
        RandOptions {
            rand_type: RandType::Special,
            rand_spec_iter: 12,
            rand_spec_pct: 1,
            rand_spec_res: 75,
            rand_pareto_h: 0.2,
        }
    }
}

/// One thread's generator (sysbench keeps one xoroshiro128+ state per thread).
#[derive(Clone, Debug)]
pub struct SbRand {
    s: [u64; 2],
    opts: RandOptions,
    pareto_power: f64,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SbRand {
    /// The generator of thread `thread` for `--rand-seed seed`.
    pub fn new(seed: u64, thread: u32, opts: RandOptions) -> Self {
        let mut x = seed ^ ((thread as u64) << 32) ^ 0x5EED;
        let s = [splitmix64(&mut x), splitmix64(&mut x) | 1];
        let pareto_power = opts.rand_pareto_h.ln() / (1.0 - opts.rand_pareto_h).ln();
        SbRand {
            s,
            opts,
            pareto_power,
        }
    }

    /// xoroshiro128+ (sb_rand.h `xoroshiro_next`).
    pub fn next_u64(&mut self) -> u64 {
        let (s0, mut s1) = (self.s[0], self.s[1]);
        let r = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s[0] = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s[1] = s1.rotate_left(36);
        r
    }

    /// A double in [0, 1) (sb_rand_uniform_double).
    pub fn uniform_double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// sb_rand_uniform: uniform integer in [a, b].
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        a + (self.uniform_double() * (b as f64 - a as f64 + 1.0)) as u32
    }

    /// sb_rand_gaussian.
    pub fn gaussian(&mut self, a: u32, b: u32) -> u32 {
        let t = b as f64 - a as f64 + 1.0;
        let mut sum = 0.0;
        for _ in 0..self.opts.rand_spec_iter {
            sum += self.uniform_double() * t;
        }
        a + (sum / self.opts.rand_spec_iter as f64) as u32
    }

    /// sb_rand_special.
    pub fn special(&mut self, a: u32, b: u32) -> u32 {
        let t = b as f64 - a as f64;
        let res_mult = 100.0 / (100.0 - self.opts.rand_spec_res as f64);
        let range_size = t * res_mult;
        let rnd = self.uniform_double();
        let res = rnd * range_size;
        if res < t {
            let mut sum = 0.0;
            for _ in 0..self.opts.rand_spec_iter {
                sum += self.uniform_double();
            }
            return a + (sum * t / self.opts.rand_spec_iter as f64) as u32;
        }
        let d = t * self.opts.rand_spec_pct as f64 / 100.0;
        let mut res = rnd * (d + 1.0);
        res += t / 2.0 - t * self.opts.rand_spec_pct as f64 / 200.0;
        a + res as u32
    }

    /// sb_rand_pareto.
    pub fn pareto(&mut self, a: u32, b: u32) -> u32 {
        a + ((b as f64 - a as f64 + 1.0) * self.uniform_double().powf(self.pareto_power)) as u32
    }

    /// sysbench.rand.default: the `--rand-type` distribution over [a, b].
    pub fn default_dist(&mut self, a: u32, b: u32) -> u32 {
        match self.opts.rand_type {
            RandType::Uniform => self.uniform(a, b),
            RandType::Gaussian => self.gaussian(a, b),
            RandType::Special => self.special(a, b),
            RandType::Pareto => self.pareto(a, b),
        }
    }

    /// sb_rand_str: `#` becomes a digit, `@` a lower-case letter, anything else stays.
    pub fn string(&mut self, template: &str) -> String {
        template
            .bytes()
            .map(|c| match c {
                b'#' => self.uniform(b'0' as u32, b'9' as u32) as u8 as char,
                b'@' => self.uniform(b'a' as u32, b'z' as u32) as u8 as char,
                other => other as char,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_thread() {
        let o = RandOptions::default();
        let a: Vec<u32> = (0..5)
            .map({
                let mut r = SbRand::new(1, 0, o.clone());
                move |_| r.uniform(1, 100)
            })
            .collect();
        let b: Vec<u32> = (0..5)
            .map({
                let mut r = SbRand::new(1, 0, o.clone());
                move |_| r.uniform(1, 100)
            })
            .collect();
        let c: Vec<u32> = (0..5)
            .map({
                let mut r = SbRand::new(1, 1, o.clone());
                move |_| r.uniform(1, 100)
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn distributions_stay_in_range_and_have_their_shapes() {
        for t in [
            RandType::Uniform,
            RandType::Gaussian,
            RandType::Special,
            RandType::Pareto,
        ] {
            let mut r = SbRand::new(
                7,
                0,
                RandOptions {
                    rand_type: t,
                    ..Default::default()
                },
            );
            let n = 200_000;
            let mut middle = 0; // values in the middle 1 % of [1, 10000]
            let mut low = 0; // values in the lowest 10 %
            for _ in 0..n {
                let v = r.default_dist(1, 10_000);
                assert!((1..=10_000).contains(&v), "{t:?}: {v}");
                if (4950..=5050).contains(&v) {
                    middle += 1;
                }
                if v <= 1000 {
                    low += 1;
                }
            }
            let (mid, lo) = (middle as f64 / n as f64, low as f64 / n as f64);
            match t {
                RandType::Uniform => assert!(
                    (0.008..0.012).contains(&mid) && (0.09..0.11).contains(&lo),
                    "{mid} {lo}"
                ),
                // special: 75 % of values land in the middle 1 % of the range.
                RandType::Special => assert!(mid > 0.74, "{mid}"),
                // mean of 12 uniforms: sd = range / 12, so ~4.8 % within ±50 of the centre.
                RandType::Gaussian => assert!(mid > 0.04 && lo < 0.001, "{mid} {lo}"),
                // pareto h=0.2: 80 % of values in the lowest 20 %, most of them far lower.
                RandType::Pareto => assert!(lo > 0.6, "{lo}"),
            }
        }
    }

    #[test]
    fn string_templates() {
        let mut r = SbRand::new(3, 0, RandOptions::default());
        let s = r.string("###-@@");
        assert_eq!(s.len(), 6);
        assert!(
            s[..3].bytes().all(|b| b.is_ascii_digit())
                && &s[3..4] == "-"
                && s[4..].bytes().all(|b| b.is_ascii_lowercase()),
            "{s}"
        );
    }
}
