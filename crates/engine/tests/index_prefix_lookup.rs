//! Lookups by a leading part of a secondary index key (TPC-C's customer by last name on
//! `idx_customer (c_w_id, c_d_id, c_last, c_first)`) and `SET col = col + decimal`, in both
//! presets: the rows whose key starts with the given values, in index order, each once,
//! none of another prefix; a version moved by an update is found under its new key only.

mod common;
use common::*;
use mvcclab_engine::catalog::{Column, ColumnType, Decimal, IndexDef, TableDef, Value};
use mvcclab_engine::db::Assign;

fn customer_def() -> TableDef {
    TableDef {
        name: "customer".into(),
        columns: vec![
            Column::not_null("c_id", ColumnType::Integer),
            Column::not_null("c_d_id", ColumnType::TinyInt),
            Column::nullable("c_first", ColumnType::Varchar(16)),
            Column::nullable("c_last", ColumnType::Varchar(16)),
            Column::nullable(
                "c_balance",
                ColumnType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
        ],
        primary_key: vec![1, 0],
        indexes: vec![IndexDef {
            name: "idx_customer".into(),
            columns: vec![1, 3, 2],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

fn dec(s: &str) -> Value {
    Value::Decimal(s.parse::<Decimal>().unwrap())
}

#[test]
fn leading_part_lookup_and_decimal_add() {
    for design in designs() {
        let name = design.name.clone();
        let db = open_db(design, 256);
        let t = db.create_table(customer_def()).unwrap();
        let mut tx = db.begin();
        for d in 1..=2i8 {
            for c in 1..=40 {
                let last = ["BARBAR", "OUGHTABLE", "ESE"][(c % 3) as usize];
                tx.insert(
                    t,
                    vec![
                        Value::Integer(c),
                        Value::TinyInt(d),
                        Value::text(format!("first{:02}", 40 - c)),
                        Value::text(last),
                        dec("-10.00"),
                    ],
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();

        let mut tx = db.begin();
        let rows = tx
            .get_by_index(t, 0, &[Value::TinyInt(2), Value::text("ESE")])
            .unwrap();
        // c % 3 == 2: 13 customers of district 2, ordered by c_first (descending c_id).
        let ids: Vec<i32> = rows
            .iter()
            .map(|r| match r[0] {
                Value::Integer(c) => c,
                _ => panic!("{name}: c_id {:?}", r[0]),
            })
            .collect();
        let mut want: Vec<i32> = (1..=40).filter(|c| c % 3 == 2).collect();
        want.reverse();
        assert_eq!(ids, want, "{name}");
        assert!(rows.iter().all(|r| r[1] == Value::TinyInt(2)), "{name}");
        assert_eq!(
            tx.get_by_index(t, 0, &[Value::TinyInt(1)]).unwrap().len(),
            40,
            "{name}"
        );
        // The whole key still works; too many values is an error.
        assert_eq!(
            tx.get_by_index(
                t,
                0,
                &[
                    Value::TinyInt(1),
                    Value::text("ESE"),
                    Value::text("first38")
                ]
            )
            .unwrap()
            .len(),
            1,
            "{name}"
        );
        tx.commit().unwrap();
        let mut tx = db.begin();
        let too_many = [
            Value::TinyInt(1),
            Value::text("ESE"),
            Value::text("x"),
            Value::Integer(1),
        ];
        assert!(tx.get_by_index(t, 0, &too_many).is_err(), "{name}");

        // Move one customer to another last name and add to its balance.
        let mut tx = db.begin();
        assert!(tx
            .update(
                t,
                &[Value::TinyInt(2), Value::Integer(2)],
                &[
                    Assign::Set(3, Value::text("BARBAR")),
                    Assign::AddDecimal(4, "25.5".parse().unwrap()),
                ],
            )
            .unwrap());
        tx.commit().unwrap();
        let mut tx = db.begin();
        let ese = tx
            .get_by_index(t, 0, &[Value::TinyInt(2), Value::text("ESE")])
            .unwrap();
        assert_eq!(ese.len(), 12, "{name}");
        let bar = tx
            .get_by_index(t, 0, &[Value::TinyInt(2), Value::text("BARBAR")])
            .unwrap();
        assert_eq!(bar.len(), 14, "{name}");
        let row = tx
            .get(t, &[Value::TinyInt(2), Value::Integer(2)])
            .unwrap()
            .unwrap();
        assert_eq!(row[4], dec("15.50"), "{name}");
        // A decimal with more fraction digits than the column is refused, not rounded.
        assert!(tx
            .update(
                t,
                &[Value::TinyInt(2), Value::Integer(2)],
                &[Assign::AddDecimal(4, "0.001".parse().unwrap())],
            )
            .is_err());
        db.close().unwrap();
    }
}
