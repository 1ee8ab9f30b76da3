//! How many typos apart two name keys are: the optimal string alignment distance (the
//! Damerau–Levenshtein distance in which a transposed pair is not edited again), counting an
//! inserted, deleted or substituted character, or two adjacent characters swapped, as one edit.
//! Bounded: the computation stops as soon as the distance is known to exceed the limit.

/// The most typos a name of `chars` characters may have and still match: none up to 3
/// characters (a 3-letter name would otherwise match a third of all short names), one up to 7,
/// two from 8 on.
pub(super) fn allowed_typos(chars: usize) -> usize {
    match chars {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Rows of the distance table, reused from one comparison to the next.
#[derive(Debug, Default)]
pub(super) struct Rows {
    before: Vec<usize>,
    previous: Vec<usize>,
    current: Vec<usize>,
    other: Vec<char>,
}

impl Rows {
    /// The distance between `a` and `b` if it is at most `limit`. Only the cells within
    /// `limit` of the diagonal are computed (any other is more than `limit` already).
    pub(super) fn within(&mut self, a: &[char], b: &str, limit: usize) -> Option<usize> {
        self.other.clear();
        self.other.extend(b.chars());
        let b = &self.other;
        let (n, m) = (a.len(), b.len());
        if n.abs_diff(m) > limit {
            return None;
        }
        // Beyond the limit: what every cell outside the band counts as.
        let far = limit + 1;
        for row in [&mut self.before, &mut self.previous, &mut self.current] {
            row.clear();
            row.resize(m + 1, far);
        }
        for (j, cell) in self.previous.iter_mut().enumerate().take(limit + 1) {
            *cell = j;
        }
        for i in 1..=n {
            let (low, high) = (i.saturating_sub(limit).max(1), (i + limit).min(m));
            self.current[0] = if i <= limit { i } else { far };
            // The cell left of the band may hold a value of an earlier row.
            if low > 1 {
                self.current[low - 1] = far;
            }
            let mut row_min = self.current[0];
            for j in low..=high {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut value = (self.previous[j] + 1)
                    .min(self.current[j - 1] + 1)
                    .min(self.previous[j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    value = value.min(self.before[j - 2] + 1);
                }
                let value = value.min(far);
                self.current[j] = value;
                row_min = row_min.min(value);
            }
            // The cell right of the band, which the next row reads above its last cell.
            if high < m {
                self.current[high + 1] = far;
            }
            // No later row can come back under the limit (a swap reaches two rows back, but
            // only from a cell whose neighbour on this row would be within the limit too).
            if row_min > limit {
                return None;
            }
            std::mem::swap(&mut self.before, &mut self.previous);
            std::mem::swap(&mut self.previous, &mut self.current);
        }
        Some(self.previous[m]).filter(|distance| *distance <= limit)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn distance(a: &str, b: &str, limit: usize) -> Option<usize> {
        let a: Vec<char> = a.chars().collect();
        Rows::default().within(&a, b, limit)
    }

    /// The whole table, no early stop: what the bounded one must agree with.
    fn reference(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for (i, row) in d.iter_mut().enumerate() {
            row[0] = i;
        }
        for (j, cell) in d[0].iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
                }
            }
        }
        d[a.len()][b.len()]
    }

    #[test]
    fn typos_count_as_one_edit_each() {
        assert_eq!(distance("echo", "echo", 2), Some(0));
        assert_eq!(distance("ecoh", "echo", 2), Some(1)); // swapped
        assert_eq!(distance("eco", "echo", 2), Some(1)); // dropped
        assert_eq!(distance("echoo", "echo", 2), Some(1)); // doubled
        assert_eq!(distance("ekho", "echo", 2), Some(1)); // wrong
        assert_eq!(distance("getwether", "getweather", 2), Some(1));
        assert_eq!(distance("gtewether", "getweather", 2), Some(2));
        assert_eq!(distance("weatherget", "getweather", 2), None);
        assert_eq!(distance("", "abc", 2), None);
        assert_eq!(distance("", "ab", 2), Some(2));
    }

    #[test]
    fn short_names_allow_fewer_typos() {
        assert_eq!(allowed_typos(3), 0);
        assert_eq!(allowed_typos(4), 1);
        assert_eq!(allowed_typos(7), 1);
        assert_eq!(allowed_typos(8), 2);
    }

    proptest! {
        #[test]
        fn the_bounded_distance_is_the_distance_when_within_the_limit(
            a in "[abc]{0,12}", b in "[abc]{0,12}", limit in 0usize..4,
        ) {
            let full = reference(&a, &b);
            prop_assert_eq!(distance(&a, &b, limit), Some(full).filter(|d| *d <= limit));
        }
    }
}
