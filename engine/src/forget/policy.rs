//! Forgetting policies: stage boundaries by age, and per stage the JPEG quality and scale of
//! pages, whether photo originals are kept and the precision item vectors are kept at. The
//! five built-ins are ScrapMem's Table 2 (pages) with memdb's vector precisions; user policies
//! are TOML (SPEC.md §5.5).
//!
//! Invariants (checked by [`Policy::validate`]): one to eight stages; each stage but the last
//! ends at an age in days greater than the previous one's, the last has no end; quality
//! (1–100), scale (0 < S ≤ 1) and vector precision never rise from one stage to the next, nor
//! does keeping originals come back once a stage drops them — so forgetting is monotone by
//! construction.

use memdb_vectors::Precision;
use serde::Deserialize;

use crate::error::PolicyError;

/// One stage of a policy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageRule {
    /// Its name in reports (`recent`, `mid`, `old`).
    pub name: String,
    /// Pages younger than this many days are in this stage; absent on the last stage.
    #[serde(default)]
    pub until_days: Option<u32>,
    /// JPEG quality of pages in this stage.
    pub quality: u8,
    /// Scale of pages in this stage, relative to their composed size.
    pub scale: f32,
    /// Whether photo originals are kept in this stage (otherwise the page is the memory).
    /// Kept unless a policy says otherwise: dropping a person's originals is never a default.
    #[serde(default = "keep")]
    pub keep_originals: bool,
    /// Precision the item vectors of this stage's pages are kept at (`f32`, `f16` or `i8`;
    /// f32 when absent). Coarser than the store's vectors: they are re-quantized.
    #[serde(default = "full_precision", deserialize_with = "precision_by_name")]
    pub vectors: Precision,
}

fn keep() -> bool {
    true
}

fn full_precision() -> Precision {
    Precision::F32
}

fn precision_by_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Precision, D::Error> {
    let name = String::deserialize(d)?;
    Precision::from_name(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "vectors = \"{name}\": expected \"f32\", \"f16\" or \"i8\""
        ))
    })
}

/// A forgetting policy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Its name.
    pub name: String,
    /// Its stages, youngest first.
    #[serde(rename = "stage")]
    pub stages: Vec<StageRule>,
}

/// Names of the built-in policies, mildest first.
pub const BUILTIN_POLICIES: [&str; 5] = [
    "no-forget",
    "very-soft",
    "softer-old",
    "timed-gentle",
    "boundary-365",
];

fn three(name: &str, q: [u8; 3], s: [f32; 3], t: [u32; 2]) -> Policy {
    // Forgetting policies keep Mid-stage vectors at f16 and Old-stage ones at i8 (recall@10
    // of i8 against f32 exact ≥ 0.99, bench `vectors`); no-forget keeps f32.
    let vectors = if q == [100; 3] {
        [Precision::F32; 3]
    } else {
        [Precision::F32, Precision::F16, Precision::I8]
    };
    // Originals stay while a page is Recent (ScrapMem's pages are the memory after that);
    // no-forget keeps every one.
    let forgets = q != [100; 3];
    let stage = |i: usize, stage: &str, until: Option<u32>| StageRule {
        name: stage.to_owned(),
        until_days: until,
        quality: q[i],
        scale: s[i],
        keep_originals: i == 0 || !forgets,
        vectors: vectors[i],
    };
    Policy {
        name: name.to_owned(),
        stages: vec![
            stage(0, "recent", Some(t[0])),
            stage(1, "mid", Some(t[1])),
            stage(2, "old", None),
        ],
    }
}

impl Policy {
    /// A built-in policy (ScrapMem Table 2). Built-ins keep photo originals while a page is
    /// Recent and drop them from Mid on, where — as in ScrapMem — the page (photos at 1024 px
    /// on the long side) is the memory; no-forget keeps every original.
    pub fn builtin(name: &str) -> Result<Policy, PolicyError> {
        Ok(match name {
            "no-forget" => three(name, [100, 100, 100], [1.0, 1.0, 1.0], [180, 730]),
            "very-soft" => three(name, [95, 82, 70], [1.0, 0.95, 0.85], [180, 730]),
            "softer-old" => three(name, [90, 75, 60], [1.0, 0.90, 0.80], [180, 730]),
            "timed-gentle" => three(name, [90, 70, 40], [1.0, 0.85, 0.60], [180, 730]),
            "boundary-365" => three(name, [95, 75, 55], [1.0, 0.90, 0.75], [365, 900]),
            other => return Err(PolicyError::Unknown(other.to_owned())),
        })
    }

    /// Reads and validates a policy written in TOML.
    pub fn from_toml(text: &str) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text).map_err(|e| PolicyError::Toml(e.to_string()))?;
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the invariants of the module header.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let fail = |reason: String| PolicyError::Invalid {
            policy: self.name.clone(),
            reason,
        };
        if self.stages.is_empty() || self.stages.len() > 8 {
            return Err(fail(format!(
                "has {} stages; 1 to 8 are allowed",
                self.stages.len()
            )));
        }
        let last = self.stages.len() - 1;
        let mut previous: Option<&StageRule> = None;
        for (i, stage) in self.stages.iter().enumerate() {
            let at = format!("stage `{}`", stage.name);
            if !(1..=100).contains(&stage.quality) {
                return Err(fail(format!(
                    "{at}: quality {} is not in 1..=100",
                    stage.quality
                )));
            }
            if !(stage.scale > 0.0 && stage.scale <= 1.0) {
                return Err(fail(format!(
                    "{at}: scale {} is not in (0, 1]",
                    stage.scale
                )));
            }
            match (i == last, stage.until_days) {
                (true, Some(_)) => {
                    return Err(fail(format!("{at}: the last stage has no until_days")));
                }
                (false, None) => return Err(fail(format!("{at}: until_days is missing"))),
                _ => {}
            }
            if let Some(prev) = previous {
                if stage.quality > prev.quality || stage.scale > prev.scale {
                    return Err(fail(format!(
                        "{at}: quality and scale may not rise from one stage to the next"
                    )));
                }
                if stage.vectors.bits_per_value() > prev.vectors.bits_per_value() {
                    return Err(fail(format!(
                        "{at}: vectors at {} after {}: precision may not rise",
                        stage.vectors, prev.vectors
                    )));
                }
                if stage.keep_originals && !prev.keep_originals {
                    return Err(fail(format!(
                        "{at}: originals dropped earlier cannot come back"
                    )));
                }
                if let (Some(a), Some(b)) = (prev.until_days, stage.until_days)
                    && b <= a
                {
                    return Err(fail(format!("{at}: until_days {b} is not after {a}")));
                }
            }
            previous = Some(stage);
        }
        Ok(())
    }

    /// The stage a page `age_days` old is in.
    pub fn stage_for(&self, age_days: i64) -> usize {
        self.stages
            .iter()
            .position(|s| s.until_days.is_some_and(|t| age_days < i64::from(t)))
            .unwrap_or(self.stages.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_valid_and_match_scrapmem_table_2() {
        for name in BUILTIN_POLICIES {
            Policy::builtin(name).unwrap().validate().unwrap();
        }
        let tg = Policy::builtin("timed-gentle").unwrap();
        let qs: Vec<(u8, f32)> = tg.stages.iter().map(|s| (s.quality, s.scale)).collect();
        assert_eq!(qs, vec![(90, 1.0), (70, 0.85), (40, 0.60)]);
        let vectors: Vec<Precision> = tg.stages.iter().map(|s| s.vectors).collect();
        assert_eq!(vectors, [Precision::F32, Precision::F16, Precision::I8]);
        let none = Policy::builtin("no-forget").unwrap();
        assert!(none.stages.iter().all(|s| s.vectors == Precision::F32));
        // Originals: no-forget keeps every one; the others keep them while Recent.
        assert!(none.stages.iter().all(|s| s.keep_originals));
        for name in &BUILTIN_POLICIES[1..] {
            let keeps: Vec<bool> = Policy::builtin(name)
                .unwrap()
                .stages
                .iter()
                .map(|s| s.keep_originals)
                .collect();
            assert_eq!(keeps, [true, false, false], "{name}");
        }
        assert_eq!(
            (tg.stage_for(0), tg.stage_for(179), tg.stage_for(180)),
            (0, 0, 1)
        );
        assert_eq!(
            (tg.stage_for(729), tg.stage_for(730), tg.stage_for(-5)),
            (1, 2, 0)
        );
        assert!(matches!(
            Policy::builtin("gentle"),
            Err(PolicyError::Unknown(_))
        ));
    }

    #[test]
    fn toml_policies_parse_and_bad_ones_say_why() {
        let good = r#"
            name = "mine"
            [[stage]]
            name = "fresh"
            until_days = 30
            quality = 92
            scale = 1.0
            [[stage]]
            name = "faded"
            quality = 50
            scale = 0.5
            keep_originals = false
        "#;
        let p = Policy::from_toml(good).unwrap();
        assert_eq!(p.stages.len(), 2);
        // Kept unless the policy says otherwise.
        assert!(p.stages[0].keep_originals && !p.stages[1].keep_originals);
        assert_eq!(p.stages[1].vectors, Precision::F32);
        let quantized = good.replace("scale = 0.5", "scale = 0.5\nvectors = \"i8\"");
        assert_eq!(
            Policy::from_toml(&quantized).unwrap().stages[1].vectors,
            Precision::I8
        );
        let finer = good.replace("scale = 1.0", "scale = 1.0\nvectors = \"f16\"");
        assert!(
            Policy::from_toml(&finer)
                .unwrap_err()
                .to_string()
                .contains("precision may not rise")
        );
        let unknown = good.replace("scale = 0.5", "scale = 0.5\nvectors = \"u4\"");
        assert!(
            Policy::from_toml(&unknown)
                .unwrap_err()
                .to_string()
                .contains("expected \"f32\"")
        );
        let rising = good.replace("quality = 50", "quality = 99");
        assert!(
            Policy::from_toml(&rising)
                .unwrap_err()
                .to_string()
                .contains("may not rise")
        );
        let back = good
            .replace("keep_originals = false", "keep_originals = true")
            .replace("scale = 1.0", "scale = 1.0\nkeep_originals = false");
        assert!(
            Policy::from_toml(&back)
                .unwrap_err()
                .to_string()
                .contains("cannot come back")
        );
        let open_end = good.replace("name = \"faded\"", "name = \"faded\"\nuntil_days = 90");
        assert!(
            Policy::from_toml(&open_end)
                .unwrap_err()
                .to_string()
                .contains("last stage")
        );
        assert!(matches!(
            Policy::from_toml("name = 3"),
            Err(PolicyError::Toml(_))
        ));
        let typo = good.replace("quality = 92", "qualty = 92");
        assert!(matches!(
            Policy::from_toml(&typo),
            Err(PolicyError::Toml(_))
        ));
        let zero = good.replace("scale = 0.5", "scale = 0.0");
        assert!(Policy::from_toml(&zero).is_err());
    }
}
