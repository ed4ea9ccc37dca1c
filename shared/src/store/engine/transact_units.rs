//! The least a transaction of writes consumes. DynamoDB writes every item
//! of a `TransactWriteItems` twice (prepare, commit): each action, a
//! `ConditionCheck` too, consumes at least 2 write units, and each index
//! entry an action writes 2 more. DynamoDB Local reports a transaction as
//! if it held its one last item, whatever it holds (a transaction of three
//! puts: 2 units), so what the call counter adds up (`make cost`) and the
//! capacity trace (`make capacity`) take the reported figure or this floor,
//! whichever is more. In AWS the report is never below the floor, and this
//! changes nothing.
//!
//! The floor is raised part by part (the table, each index), so the call
//! counter asks a transaction for each index's figure (`INDEXES`): what
//! the body shows is an index entry written, not whether it moved. An
//! entry whose key changes (a load delivered leaves its `open` list for
//! `delivered`) is two writes, a delete and a put, and the engine reports
//! those; against the total alone that went unseen (a delivery's
//! transaction 14 units for 16).

use aws_sdk_dynamodb::types::{Capacity, ConsumedCapacity};

use crate::store::engine::schema;
use crate::store::engine::trace::Touch;

/// Write units per item write in a transaction.
const PER_WRITE: f64 = 2.0;

/// A transaction's floor: its table's actions and each index's writes, by
/// the partitions it touches (`trace::touches`).
#[derive(Clone, Debug, PartialEq)]
pub(in crate::store) struct TransactFloor {
    table: f64,
    indexes: Vec<(&'static str, f64)>,
}

impl aws_smithy_types::config_bag::Storable for TransactFloor {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

impl TransactFloor {
    /// The floor of a transaction that touches `touches`.
    pub fn of(touches: &[Touch]) -> Self {
        let writes =
            |index: &str| PER_WRITE * touches.iter().filter(|t| t.index == index).count() as f64;
        TransactFloor {
            table: writes("table"),
            indexes: schema::GSIS
                .into_iter()
                .map(|gsi| (gsi, writes(gsi)))
                .filter(|(_, units)| *units > 0.0)
                .collect(),
        }
    }

    fn total(&self) -> f64 {
        self.table + self.indexes.iter().map(|(_, units)| units).sum::<f64>()
    }

    /// `consumed` (one table's) raised to the floor: the total, and the
    /// table's and each index's figure where they are reported apart.
    pub fn apply(&self, consumed: &mut [ConsumedCapacity]) {
        let [consumed] = consumed else {
            return;
        };
        let raised = |reported: Option<f64>, floor: f64| reported.unwrap_or(0.0).max(floor);
        if let Some(table) = &consumed.table {
            consumed.table = Some(capacity(raised(table.capacity_units, self.table)));
            let indexes = consumed.global_secondary_indexes.get_or_insert_default();
            for (gsi, floor) in &self.indexes {
                let reported = indexes.get(*gsi).and_then(|c| c.capacity_units);
                indexes.insert((*gsi).to_owned(), capacity(raised(reported, *floor)));
            }
            let total = consumed.table.iter().chain(indexes.values());
            consumed.capacity_units = Some(total.filter_map(|c| c.capacity_units).sum());
        } else {
            consumed.capacity_units = Some(raised(consumed.capacity_units, self.total()));
        }
    }
}

fn capacity(units: f64) -> Capacity {
    Capacity::builder().capacity_units(units).build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::engine::trace::touches;
    use serde_json::json;

    /// A load's creation as the store sends it: the load (with its two
    /// list keys) and its site's check.
    fn creation() -> Vec<Touch> {
        touches(&json!({"TransactItems": [
            {"Put": {"Item": {"pk": {"S": "ORG#a#SHARD1"}, "sk": {"S": "SURPLUS#b"},
                              "gsi1pk": {"S": "SGROUP#a#open#SHARD1"},
                              "gsi2pk": {"S": "SSITE#a#c#SHARD1"}}}},
            {"ConditionCheck": {"Key": {"pk": {"S": "ORG#a#SHARD2"}, "sk": {"S": "SITE#c"}}}}
        ]}))
    }

    fn reported(total: f64, table: Option<f64>, gsis: &[(&str, f64)]) -> ConsumedCapacity {
        let mut consumed = ConsumedCapacity::builder()
            .table_name("t")
            .capacity_units(total)
            .build();
        if let Some(table) = table {
            consumed.table = Some(capacity(table));
            consumed.global_secondary_indexes = Some(
                gsis.iter()
                    .map(|(gsi, units)| ((*gsi).to_owned(), capacity(*units)))
                    .collect(),
            );
        }
        consumed
    }

    #[test]
    fn a_transaction_reported_as_one_item_is_raised_to_each_of_its_writes() {
        let floor = TransactFloor::of(&creation());
        // DynamoDB Local's report of it: the load alone.
        let mut local = [reported(6.0, Some(2.0), &[("gsi1", 2.0), ("gsi2", 2.0)])];
        floor.apply(&mut local);
        assert_eq!(local[0].capacity_units, Some(8.0));
        assert_eq!(local[0].table.as_ref().unwrap().capacity_units, Some(4.0));
        let mut total = [reported(6.0, None, &[])];
        floor.apply(&mut total);
        assert_eq!(total[0].capacity_units, Some(8.0));
    }

    #[test]
    fn a_report_above_the_floor_is_kept() {
        // Items over 1 KB: AWS reports more than 2 units a write.
        let floor = TransactFloor::of(&creation());
        let mut aws = [reported(12.0, Some(8.0), &[("gsi1", 2.0), ("gsi2", 2.0)])];
        floor.apply(&mut aws);
        assert_eq!(aws[0].capacity_units, Some(12.0));
        assert_eq!(aws[0].table.as_ref().unwrap().capacity_units, Some(8.0));
    }
}
