//! Hostile inputs for the fuzz targets (`tests/tests/api/fuzz.rs`): a seed
//! (a described example, a valid cursor, a valid key) changed a few random
//! ways at a time. Structure-aware for JSON (a field's type swapped, a
//! string made long, odd or full of control characters, a number at the
//! edge of what DynamoDB or `f64` holds, an object nested deep, a field
//! dropped or added) and byte-level for everything (truncated, bytes
//! flipped, a piece repeated). Reproducible: every input comes from a seed
//! that a failure prints.

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use serde_json::{Map, Value, json};

pub struct Mutator {
    rng: StdRng,
}

/// Strings that have broken parsers and validators elsewhere.
const NASTY: &[&str] = &[
    "",
    " ",
    "\u{0}",
    "\u{1e}",
    "\u{7f}",
    "\u{feff}",
    "\u{200b}",
    "\u{202e}",
    "\u{fffd}",
    "\u{10ffff}",
    "\n\r\t",
    "e\u{301}",
    "💩",
    "../../etc/passwd",
    "%00",
    "%",
    "%zz",
    "'; DROP TABLE t; --",
    "<script>alert(1)</script>",
    "${jndi:ldap://x}",
    "NaN",
    "-0",
    "1e309",
    "0x10",
    "true",
    "null",
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "2025-02-30",
    "2025-13-01T25:61:61Z",
    "-999999-01-01",
    "+358",
    "+0000000000000000000000",
    "user@",
    "@example.com",
    "http://127.0.0.1/",
    "http://[::1]:80/",
    "https://169.254.169.254/latest/meta-data/",
    "javascript:alert(1)",
    "image/png",
    "uploads/../waybills/x.png",
];

const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1e-131",
    "1e126",
    "9.99e125",
    "1e308",
    "-1e308",
    "5e-324",
    "9007199254740993",
    "18446744073709551616",
    "-9223372036854775809",
    "0.1",
    "123456789.123456789123456789",
    "90.0000000001",
    "-180.0000001",
    "1e2",
    "2147483648",
];

impl Mutator {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.rng.random_range(0..n)
        }
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    /// `seed` changed one to three times, as JSON text. Sometimes the text
    /// itself is then cut or scrambled, so parsers see broken JSON too.
    pub fn json(&mut self, seed: &Value) -> Vec<u8> {
        let mut value = seed.clone();
        for _ in 0..=self.below(3) {
            self.mutate_value(&mut value, 0);
        }
        let text = value.to_string().into_bytes();
        if self.chance(0.15) {
            self.bytes(&text)
        } else {
            text
        }
    }

    fn mutate_value(&mut self, value: &mut Value, depth: usize) {
        // Go down into a child now and then, else change this value.
        let children = match value {
            Value::Object(map) => map.len(),
            Value::Array(items) => items.len(),
            _ => 0,
        };
        if children > 0 && depth < 8 && self.chance(0.6) {
            let at = self.below(children);
            match value {
                Value::Object(map) => {
                    if let Some(child) = map.values_mut().nth(at) {
                        self.mutate_value(child, depth + 1);
                    }
                }
                Value::Array(items) => self.mutate_value(&mut items[at], depth + 1),
                _ => {}
            }
            return;
        }
        match (value, self.below(6)) {
            (Value::Object(map), 0) if !map.is_empty() => {
                let key = map
                    .keys()
                    .nth(self.below(map.len()))
                    .cloned()
                    .unwrap_or_default();
                map.remove(&key);
            }
            (Value::Object(map), 1) => {
                let name = self.string();
                let field = self.any_value(2);
                map.insert(name, field);
            }
            (value, _) => *value = self.any_value(3),
        }
    }

    /// Any JSON value, nested at most `depth` more levels (and now and
    /// then far deeper).
    pub fn any_value(&mut self, depth: usize) -> Value {
        match self.below(if depth == 0 { 5 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(0.5)),
            2 => self.number(),
            3 | 4 => Value::String(self.string()),
            5 => {
                let n = self.below(4);
                Value::Array((0..n).map(|_| self.any_value(depth - 1)).collect())
            }
            6 => {
                let mut map = Map::new();
                for _ in 0..self.below(4) {
                    let name = self.string();
                    let field = self.any_value(depth - 1);
                    map.insert(name, field);
                }
                Value::Object(map)
            }
            _ => self.deep(),
        }
    }

    fn number(&mut self) -> Value {
        let text = match self.below(3) {
            0 => EDGE_NUMBERS[self.below(EDGE_NUMBERS.len())].to_owned(),
            1 => self.rng.random::<i64>().to_string(),
            _ => format!(
                "{}",
                self.rng.random::<f64>() * 10f64.powi(self.below(40) as i32 - 20)
            ),
        };
        serde_json::from_str(&text).unwrap_or_else(|_| json!(0))
    }

    /// Nested arrays or objects, 1 to 300 levels.
    fn deep(&mut self) -> Value {
        let levels = 1 + self.below(300);
        let array = self.chance(0.5);
        let mut value = Value::Null;
        for _ in 0..levels {
            value = if array {
                json!([value])
            } else {
                json!({ "a": value })
            };
        }
        value
    }

    pub fn string(&mut self) -> String {
        match self.below(6) {
            0 => NASTY[self.below(NASTY.len())].to_owned(),
            1 => {
                let unit = NASTY[self.below(NASTY.len())];
                let unit = if unit.is_empty() { "x" } else { unit };
                unit.repeat(1 + self.below(3000))
            }
            2 => {
                // Random characters, control characters and all.
                let n = self.below(40);
                (0..n)
                    .map(|_| {
                        char::from_u32(self.rng.random_range(0..0x11_0000)).unwrap_or('\u{fffd}')
                    })
                    .collect()
            }
            3 => {
                let n = self.below(600);
                (0..n)
                    .map(|_| char::from(self.rng.random_range(0u8..0x80)))
                    .collect()
            }
            4 => uuid::Uuid::from_u128(self.rng.random()).to_string(),
            _ => "a".repeat(self.below(10_000)),
        }
    }

    /// `seed` with one to three byte-level changes.
    pub fn bytes(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut out = seed.to_vec();
        for _ in 0..=self.below(3) {
            match self.below(6) {
                0 => out.truncate(self.below(out.len() + 1)),
                1 if !out.is_empty() => {
                    let at = self.below(out.len());
                    out[at] = self.rng.random();
                }
                2 => {
                    let at = self.below(out.len() + 1);
                    let mut noise = vec![0u8; self.below(16)];
                    self.rng.fill_bytes(&mut noise);
                    out.splice(at..at, noise);
                }
                3 if !out.is_empty() => {
                    let from = self.below(out.len());
                    let to = from + self.below(out.len() - from + 1);
                    let piece = out[from..to].to_vec();
                    let at = self.below(out.len() + 1);
                    for _ in 0..self.below(8) {
                        out.splice(at..at, piece.iter().copied());
                    }
                }
                4 => {
                    let at = self.below(out.len() + 1);
                    let nasty = NASTY[self.below(NASTY.len())].as_bytes().to_vec();
                    out.splice(at..at, nasty);
                }
                _ => {
                    let at = self.below(out.len() + 1);
                    out.splice(at..at, br"\ud800".iter().copied());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let seed = json!({"name": "Yard", "lat": 60.1, "metadata": {"a": "b"}});
        let a: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50).map(|_| m.json(&seed)).collect()
        };
        let b: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50).map(|_| m.json(&seed)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().any(|x| x != &seed.to_string().into_bytes()));
    }
}
