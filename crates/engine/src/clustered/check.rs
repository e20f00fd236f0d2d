//! The clustered table's index check, as a crash test runs it after recovery (contrib/amcheck
//! in spirit; MariaDB's CHECK TABLE, row0sel.cc `row_check_index`): every B+tree's
//! structure, and that every secondary entry leads to a clustered record.

use super::ClusteredTable;
use crate::btree::ScanDirection;
use crate::error::Result;
use std::ops::Bound;

impl ClusteredTable {
    /// Checks the table's indexes against it: every B+tree's structure, and that every
    /// secondary entry's primary key finds a clustered record, delete-marked or not (purge
    /// removes the secondary entry first). Returns the entries checked and one line per
    /// problem found (empty when consistent). Call it on a quiet table.
    ///
    /// Errors: pool and device errors.
    pub fn check_indexes(&self) -> Result<(u64, Vec<String>)> {
        let table = self;
        let def = &table.def;
        let (mut entries, mut problems) = (0, Vec::new());
        if let Err(e) = table.clustered.verify() {
            problems.push(format!("table {} clustered index: {e}", def.name));
        }
        for (ix, tree) in def.indexes.iter().zip(table.indexes.iter()) {
            if let Err(e) = tree.verify() {
                problems.push(format!("table {} index {}: {e}", def.name, ix.name));
                continue;
            }
            let types = def.key_columns(&ix.columns)?;
            let mut keys = Vec::new();
            tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                &mut |k, _| {
                    keys.push(k.to_vec());
                    Ok(true)
                },
            )?;
            for k in keys {
                entries += 1;
                // A secondary entry is the index key followed by the primary key
                // (row0row.cc `row_build_index_entry`): its clustered record must exist,
                // delete-marked or not (purge removes the secondary entry first).
                let found = match crate::catalog::decode_key_prefix(&types, &k) {
                    Ok((_, used)) => table.clustered.get(&k[used..])?.is_some(),
                    Err(_) => false,
                };
                if !found {
                    problems.push(format!(
                        "table {} index {}: entry {k:02x?} has no clustered record",
                        def.name, ix.name
                    ));
                }
            }
        }
        Ok((entries, problems))
    }
}
