//! The fill factor switches: `fillfactor` leaves heap pages part empty (postgres), and
//! `index_fillfactor` sets the leaf fill of ascending inserts into the rightmost leaf and
//! of sorted builds in heap indexes (PostgreSQL's B-tree fillfactor) and of sorted
//! secondary builds in the clustered design (innodb_fill_factor): lower values, more pages.

mod common;
use common::*;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::Database;
use mvcclab_engine::design::DesignConfig;

/// (table pages, index pages) after 3,000 ascending sbtest rows loaded with the `k` index
/// built afterwards by sorting.
fn pages(design: DesignConfig) -> (u64, u64) {
    let db: Database = Database::open(quiet_db_config(design, 512)).unwrap();
    let t = db.create_table_for_load(sbtest_def("sbtest1")).unwrap();
    let mut tx = db.begin();
    for id in 1..=3000 {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::Integer(id * 7 % 3000),
                Value::text("c".repeat(120)),
                Value::text("p".repeat(60)),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    db.build_secondary_indexes(t).unwrap();
    let p = db.table_pages(t).unwrap();
    db.close().unwrap();
    p
}

#[test]
fn lower_fill_factors_give_more_pages() {
    let pg = pages(DesignConfig::postgres());
    let pg75 = pages(DesignConfig {
        fillfactor: 75,
        index_fillfactor: 75,
        ..DesignConfig::postgres()
    });
    // Heap: 100 % → 75 % fill is a third more pages (within a page of rounding).
    assert!(
        pg75.0 * 3 >= pg.0 * 4 - 6 && pg75.0 > pg.0,
        "{pg:?} {pg75:?}"
    );
    // Indexes (primary key by ascending inserts, k by sorted build): 90 % → 75 %.
    assert!(pg75.1 > pg.1, "{pg:?} {pg75:?}");
    let inno = pages(DesignConfig::innodb());
    let inno50 = pages(DesignConfig {
        index_fillfactor: 50,
        ..DesignConfig::innodb()
    });
    // innodb_fill_factor: the clustered index (ascending inserts) is unchanged, the
    // sorted-built secondary index about twice as large.
    assert_eq!(inno.0, inno50.0);
    assert!(inno50.1 >= inno.1 * 3 / 2, "{inno:?} {inno50:?}");
}
