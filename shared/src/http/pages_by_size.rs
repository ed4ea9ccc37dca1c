//! Lists without a page size (sites, receiving points, factories, trucks,
//! members, grants, a site's people, a load's log): answered whole while
//! they fit Lambda's response, in pages by size beyond it. A page ends at
//! the last row that fits (`payload::fitting_json`); its
//! `meta.next_cursor` names that row's place in the list's order, so the
//! next page starts after it whatever was added or removed meanwhile, and
//! `null` says the list is whole. A list that fits (every list of an
//! ordinary organization) reads no cursor key at all.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::envelope::Page;
use super::{Ctx, Json, payload};
use crate::error::ApiResult;

/// The `cursor` query parameter of a list paged by size: the previous
/// page's `meta.next_cursor`.
#[derive(Debug, Default, Deserialize)]
pub struct PageAt {
    #[serde(default)]
    pub cursor: Option<String>,
}

/// The rows of `rows` from the first whose place comes after `after`
/// (all without one) that fit one answer, and the place of the last one
/// when rows are left after it.
pub fn page_of<T: Serialize, P: Ord>(
    mut rows: Vec<T>,
    after: Option<&P>,
    place: impl Fn(usize, &T) -> P,
) -> (Vec<T>, Option<P>) {
    let start = after.map_or(0, |after| {
        rows.iter()
            .enumerate()
            .position(|(index, row)| place(index, row) > *after)
            .unwrap_or(rows.len())
    });
    let mut page = rows.split_off(start);
    let fit = payload::fitting_json(&page).min(page.len());
    let next = (fit < page.len()).then(|| place(start + fit - 1, &page[fit - 1]));
    page.truncate(fit);
    (page, next)
}

impl<S> Ctx<S> {
    /// The page of `rows` (the whole list, in its order) that `at` asks
    /// for. `place` gives each row's place in the list (from the row and
    /// its index), rising over the list: an id, a name with its id, or the
    /// index of a log that only grows. `list` names the list and its
    /// filters (`sites?status=all`): a cursor of another list, filter or
    /// organization is 422 `invalid_cursor`.
    pub async fn page_by_size<T, P>(
        &self,
        list: String,
        at: PageAt,
        rows: Vec<T>,
        place: impl Fn(usize, &T) -> P,
    ) -> ApiResult<Json<Page<T>>>
    where
        T: Serialize,
        P: Ord + Serialize + DeserializeOwned,
    {
        let mut listing = None;
        let after = match at.cursor.as_deref() {
            None => None,
            Some(cursor) => {
                let listing =
                    listing.insert(self.cursors.listing(self.org_id, list.clone()).await?);
                listing.start::<P>(Some(cursor)).await?
            }
        };
        let (rows, next) = page_of(rows, after.as_ref(), place);
        let next_cursor = match (next, listing) {
            (None, _) => None,
            (next, Some(listing)) => listing.next(next),
            (next, None) => self.cursors.listing(self.org_id, list).await?.next(next),
        };
        Ok(Json(Page { rows, next_cursor }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::payload::LAMBDA_RESPONSE_LIMIT;

    /// Rows of about `size` bytes each, their places their numbers.
    fn rows(count: usize, size: usize) -> Vec<(u32, String)> {
        (0..count as u32).map(|n| (n, "x".repeat(size))).collect()
    }

    #[test]
    fn a_list_that_fits_is_one_page_and_says_so() {
        let (page, next) = page_of(rows(3, 10), None, |_, row| row.0);
        assert_eq!(page.len(), 3);
        assert_eq!(next, None);
        let (page, next) = page_of(Vec::<(u32, String)>::new(), None, |_, row| row.0);
        assert!(page.is_empty());
        assert_eq!(next, None);
    }

    #[test]
    fn pages_hold_every_row_once_each_within_the_limit() {
        let all = rows(40, 400_000);
        let mut after = None;
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let (page, next) = page_of(all.clone(), after.as_ref(), |_, row| row.0);
            let size = serde_json::to_vec(&page).unwrap().len();
            assert!(size < LAMBDA_RESPONSE_LIMIT, "{size}");
            seen.extend(page.iter().map(|row| row.0));
            pages += 1;
            match next {
                Some(last) => {
                    assert_eq!(Some(&last), seen.last());
                    after = Some(last);
                }
                None => break,
            }
        }
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
        // 15 rows of 400 KB fit 6 MB with its room, not 16.
        assert_eq!(pages, 3);
    }

    #[test]
    fn a_page_starts_after_its_cursors_row_even_when_that_row_is_gone() {
        let mut all = rows(10, 10);
        all.remove(4);
        let (page, next) = page_of(all, Some(&4), |_, row| row.0);
        assert_eq!(page.first().map(|row| row.0), Some(5));
        assert_eq!(next, None);
        let (page, _) = page_of(rows(3, 10), Some(&7), |_, row| row.0);
        assert!(page.is_empty());
    }

    #[test]
    fn a_growing_log_pages_by_index() {
        let (first, next) = page_of(rows(30, 400_000), None, |index, _| index);
        assert_eq!(next, Some(first.len() - 1));
        let (second, _) = page_of(rows(31, 400_000), next.as_ref(), |index, _| index);
        assert_eq!(second.first().map(|row| row.0), Some(first.len() as u32));
    }
}
