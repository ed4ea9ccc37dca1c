//! Exact volumes: whole litres (a load's volume is kept to 0.001 m³), so
//! sums over any number of loads are integer additions, converted to m³
//! once, at the end.

use std::iter::Sum;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// A volume in litres (1 m³ = 1,000 l).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Litres(pub u64);

impl Litres {
    /// The litres of a validated volume in m³ (at most 3 decimals).
    pub fn from_m3(m3: f64) -> Self {
        Litres((m3 * 1000.0).round().max(0.0) as u64)
    }

    /// The volume in m³, exact (the nearest `f64` of a number with at most
    /// three decimals prints as that number).
    pub fn m3(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Whole m³, rounded up (billing counts each started cubic metre).
    pub fn whole_m3_up(self) -> u64 {
        self.0.div_ceil(1000)
    }

    /// `self` times a coefficient given in thousandths, in m³-units of the
    /// coefficient, exact: `(litres × milli) / 10⁶`.
    pub fn times_milli(self, milli: u64) -> f64 {
        (u128::from(self.0) * u128::from(milli)) as f64 / 1_000_000.0
    }
}

impl Add for Litres {
    type Output = Litres;
    fn add(self, other: Litres) -> Litres {
        Litres(self.0 + other.0)
    }
}

impl AddAssign for Litres {
    fn add_assign(&mut self, other: Litres) {
        self.0 += other.0;
    }
}

impl Sum for Litres {
    fn sum<I: Iterator<Item = Litres>>(iter: I) -> Litres {
        iter.fold(Litres(0), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_tenths_of_a_cubic_metre_are_exactly_a_thousand() {
        let sum: Litres = (0..10_000).map(|_| Litres::from_m3(0.1)).sum();
        assert_eq!(sum.m3(), 1000.0);
        // What adding the floats would have given.
        let naive: f64 = (0..10_000).map(|_| 0.1).sum();
        assert_ne!(naive, 1000.0);
    }

    #[test]
    fn conversions_are_exact_to_the_litre() {
        assert_eq!(Litres::from_m3(7.256), Litres(7256));
        assert_eq!(Litres::from_m3(0.001), Litres(1));
        assert_eq!(Litres(1_234_567).m3(), 1234.567);
        assert_eq!(Litres(1_234_567).m3().to_string(), "1234.567");
    }

    #[test]
    fn billing_rounds_each_started_cubic_metre_up() {
        assert_eq!(Litres(1).whole_m3_up(), 1);
        assert_eq!(Litres(1000).whole_m3_up(), 1);
        assert_eq!(Litres(1001).whole_m3_up(), 2);
        assert_eq!(Litres(0).whole_m3_up(), 0);
    }

    #[test]
    fn coefficients_in_thousandths_stay_exact() {
        // 1234.567 m³ × 0.175 km/m³ = 216.049225 km.
        assert_eq!(Litres(1_234_567).times_milli(175), 216.049225);
        assert_eq!(Litres(1_000).times_milli(72_000), 72.0);
    }
}
