use crate::sysbench::*;

const LUA_DIR: &str = "/usr/share/sysbench";

fn lua(name: &str) -> String {
    std::fs::read_to_string(format!("{LUA_DIR}/{name}.lua")).unwrap_or_else(|e| {
        panic!("{LUA_DIR}/{name}.lua: {e}; install Debian's sysbench (apt-get install -y sysbench), as README.md's set-up does")
    })
}

fn is_digit_groups(s: &str, groups: usize) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == groups
        && parts
            .iter()
            .all(|p| p.len() == 11 && p.bytes().all(|b| b.is_ascii_digit()))
}

#[test]
fn templates_and_defaults_match_sysbench_lua() {
    let common = lua("oltp_common");
    let norm: String = common.split_whitespace().collect::<Vec<_>>().join(" ");
    let c_lua = C_TEMPLATE
        .split('-')
        .map(|_| "###########")
        .collect::<Vec<_>>()
        .join("-");
    assert_eq!(C_TEMPLATE, c_lua);
    // The Lua builds the templates from quoted pieces joined with '..': compare the pieces.
    let pieces = |name: &str| -> String {
        let start = norm
            .find(&format!("local {name} ="))
            .unwrap_or_else(|| panic!("{name} not in oltp_common.lua"));
        let rest = &norm[start..];
        let end = rest
            .find("local ")
            .map(|e| {
                if e == 0 {
                    rest[6..].find("local ").map_or(rest.len(), |x| x + 6)
                } else {
                    e
                }
            })
            .unwrap_or(rest.len());
        rest[..end].split('"').skip(1).step_by(2).collect()
    };
    assert_eq!(pieces("c_value_template"), C_TEMPLATE);
    assert_eq!(pieces("pad_value_template"), PAD_TEMPLATE);
    let d = SysbenchOptions::default();
    let common = |opt: &'static str, val: String| ("oltp_common", opt, val);
    for (script, opt, val) in [
        common("table_size", d.table_size.to_string()),
        common("range_size", d.range_size.to_string()),
        common("tables", d.tables.to_string()),
        common("point_selects", d.point_selects.to_string()),
        common("simple_ranges", d.simple_ranges.to_string()),
        common("sum_ranges", d.sum_ranges.to_string()),
        common("order_ranges", d.order_ranges.to_string()),
        common("distinct_ranges", d.distinct_ranges.to_string()),
        common("index_updates", d.index_updates.to_string()),
        common("non_index_updates", d.non_index_updates.to_string()),
        common("delete_inserts", d.delete_inserts.to_string()),
        common("range_selects", d.range_selects.to_string()),
        common("skip_trx", d.skip_trx.to_string()),
        common("auto_inc", d.auto_inc.to_string()),
        (
            "select_random_points",
            "random_points",
            d.random_points.to_string(),
        ),
        (
            "select_random_ranges",
            "number_of_ranges",
            d.number_of_ranges.to_string(),
        ),
        ("select_random_ranges", "delta", d.delta.to_string()),
    ] {
        assert_eq!(option_default(script, opt), val, "{script} --{opt}");
    }
}

/// The default of option `opt` in `script`'s `sysbench.cmdline.options` table: the last
/// element of `opt = {"description", default}`.
fn option_default(script: &str, opt: &str) -> String {
    let norm: String = lua(script).split_whitespace().collect::<Vec<_>>().join(" ");
    let at = norm
        .find(&format!("{opt} = {{"))
        .unwrap_or_else(|| panic!("{opt} not in {script}.lua"));
    norm[at..]
        .split('}')
        .next()
        .unwrap()
        .rsplit(',')
        .next()
        .unwrap()
        .trim()
        .to_string()
}

fn events(kind: WorkloadKind, opts: &SysbenchOptions, n: usize) -> Vec<Vec<Op>> {
    let mut g = Generator::new(kind, opts.clone(), 42, 1, 4);
    (0..n).map(|_| g.next_event()).collect()
}

fn count(ev: &[Op], kind: &str) -> usize {
    ev.iter().filter(|o| o.kind() == kind).count()
}

#[test]
fn statement_mix_per_event_matches_each_script() {
    let o = SysbenchOptions {
        tables: 3,
        table_size: 1000,
        ..Default::default()
    };
    // oltp_read_write event(): BEGIN, 10 point, 1 of each range, 1 index update, 1 non-index
    // update, 1 delete + 1 insert, COMMIT.
    let want: &[(WorkloadKind, &[(&str, usize)])] = &[
        (
            WorkloadKind::OltpReadWrite,
            &[
                ("begin", 1),
                ("point_select", 10),
                ("simple_range", 1),
                ("sum_range", 1),
                ("order_range", 1),
                ("distinct_range", 1),
                ("index_update", 1),
                ("non_index_update", 1),
                ("delete", 1),
                ("insert", 1),
                ("commit", 1),
            ],
        ),
        (
            WorkloadKind::OltpReadOnly,
            &[
                ("begin", 1),
                ("point_select", 10),
                ("simple_range", 1),
                ("sum_range", 1),
                ("order_range", 1),
                ("distinct_range", 1),
                ("index_update", 0),
                ("delete", 0),
                ("commit", 1),
            ],
        ),
        (
            WorkloadKind::OltpWriteOnly,
            &[
                ("begin", 1),
                ("point_select", 0),
                ("simple_range", 0),
                ("index_update", 1),
                ("non_index_update", 1),
                ("delete", 1),
                ("insert", 1),
                ("commit", 1),
            ],
        ),
        (
            WorkloadKind::OltpPointSelect,
            &[("begin", 0), ("point_select", 1), ("commit", 0)],
        ),
        (
            WorkloadKind::OltpUpdateIndex,
            &[("begin", 0), ("index_update", 1)],
        ),
        (
            WorkloadKind::OltpUpdateNonIndex,
            &[("begin", 0), ("non_index_update", 1)],
        ),
        (WorkloadKind::OltpInsert, &[("begin", 0), ("insert", 1)]),
        (WorkloadKind::OltpDelete, &[("begin", 0), ("delete", 1)]),
        (WorkloadKind::SelectRandomPoints, &[("random_points", 1)]),
        (WorkloadKind::SelectRandomRanges, &[("random_ranges", 1)]),
    ];
    // Every sysbench 1.0.20 workload; tpcc (one transaction per event) is checked in
    // tpcc.rs and crates/workload/tests/tpcc_embedded.rs.
    assert_eq!(
        want.len(),
        WorkloadKind::ALL.len() - 1,
        "every workload is checked"
    );
    for (kind, counts) in want {
        let evs = events(*kind, &o, 300);
        for ev in &evs {
            for (k, n) in counts.iter() {
                assert_eq!(count(ev, k), *n, "{} {k}", kind.name());
            }
            assert!(!ev.is_empty());
        }
        // Order inside a read/write transaction: as the script calls them.
        if *kind == WorkloadKind::OltpReadWrite {
            let order: Vec<&str> = evs[0].iter().map(|o| o.kind()).collect();
            let mut dedup = order.clone();
            dedup.dedup();
            assert_eq!(
                dedup,
                [
                    "begin",
                    "point_select",
                    "simple_range",
                    "sum_range",
                    "order_range",
                    "distinct_range",
                    "index_update",
                    "non_index_update",
                    "delete",
                    "insert",
                    "commit"
                ]
            );
        }
    }
    // Option counts are honoured; --skip-trx drops BEGIN/COMMIT; --range-selects=off drops ranges.
    let o2 = SysbenchOptions {
        point_selects: 3,
        index_updates: 4,
        delete_inserts: 2,
        skip_trx: true,
        range_selects: false,
        ..o.clone()
    };
    let ev = &events(WorkloadKind::OltpReadWrite, &o2, 1)[0];
    assert_eq!(
        (
            count(ev, "begin"),
            count(ev, "point_select"),
            count(ev, "simple_range"),
            count(ev, "index_update"),
            count(ev, "delete"),
            count(ev, "insert")
        ),
        (0, 3, 0, 4, 2, 2)
    );
}

#[test]
fn values_and_key_ranges_follow_the_scripts() {
    let o = SysbenchOptions {
        tables: 3,
        table_size: 1000,
        ..Default::default()
    };
    for ev in events(WorkloadKind::OltpReadWrite, &o, 500) {
        let tables: std::collections::BTreeSet<u32> = ev
            .iter()
            .filter_map(|op| match op {
                Op::PointSelect { table, .. }
                | Op::IndexUpdate { table, .. }
                | Op::Delete { table, .. } => Some(*table),
                _ => None,
            })
            .collect();
        assert!(tables.iter().all(|t| (1..=3).contains(t)));
        for op in &ev {
            match op {
                Op::PointSelect { id, .. } | Op::IndexUpdate { id, .. } | Op::Delete { id, .. } => {
                    assert!((1..=1000).contains(id))
                }
                Op::SimpleRange { lo, hi, .. }
                | Op::SumRange { lo, hi, .. }
                | Op::OrderRange { lo, hi, .. }
                | Op::DistinctRange { lo, hi, .. } => {
                    assert!((1..=1000).contains(lo));
                    assert_eq!(hi - lo, 99, "id BETWEEN id AND id + range_size - 1");
                }
                Op::NonIndexUpdate { c, id, .. } => {
                    assert!(is_digit_groups(c, 10), "{c}");
                    assert!((1..=1000).contains(id));
                }
                Op::Insert { id, k, c, pad, .. } => {
                    let id = id.expect("delete/insert pairs give the id");
                    assert!((1..=1000).contains(&id) && (1..=1000).contains(k));
                    assert!(is_digit_groups(c, 10) && is_digit_groups(pad, 5));
                }
                _ => {}
            }
        }
        // delete/insert pairs use the same id.
        let dels: Vec<i32> = ev
            .iter()
            .filter_map(|o| {
                if let Op::Delete { id, .. } = o {
                    Some(*id)
                } else {
                    None
                }
            })
            .collect();
        let ins: Vec<i32> = ev
            .iter()
            .filter_map(|o| {
                if let Op::Insert { id, .. } = o {
                    *id
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(dels, ins);
    }
    // The load: ids 1..=table_size, k from the default distribution, c/pad from templates.
    let mut rng = crate::rand::SbRand::new(1, 0, o.rand.clone());
    for id in 1..=100 {
        let (i, k, c, pad) = load_row(&mut rng, &o, id);
        assert_eq!(i, id as i32);
        assert!((1..=1000).contains(&k));
        assert!(
            is_digit_groups(&c, 10)
                && c.len() == 119
                && is_digit_groups(&pad, 5)
                && pad.len() == 59
        );
    }
    // select_random_*: each thread stays in its slice of table_size / threads.
    let o = SysbenchOptions {
        table_size: 1000,
        ..Default::default()
    };
    for ev in events(WorkloadKind::SelectRandomPoints, &o, 200) {
        let Op::RandomPoints { ks } = &ev[0] else {
            panic!()
        };
        assert_eq!(ks.len(), 10);
        assert!(
            ks.iter().all(|k| (250..=500).contains(k)),
            "thread 1 of 4: [250, 500]: {ks:?}"
        );
    }
    for ev in events(WorkloadKind::SelectRandomRanges, &o, 200) {
        let Op::RandomRanges { ranges } = &ev[0] else {
            panic!()
        };
        assert_eq!(ranges.len(), 10);
        assert!(ranges
            .iter()
            .all(|(a, b)| b - a == 5 && (250..=500).contains(a)));
    }
    // oltp_insert: the table's AUTO_INCREMENT by default; with --auto-inc=off, unique
    // client ids (and prepare loads nothing).
    assert!(lua("oltp_insert").contains("sysbench.opt.auto_inc"));
    for ev in events(WorkloadKind::OltpInsert, &o, 100) {
        assert!(matches!(&ev[0], Op::Insert { id: None, .. }));
    }
    assert_eq!(o.prepare_rows(WorkloadKind::OltpInsert), 1000);
    let off = SysbenchOptions {
        auto_inc: false,
        ..o.clone()
    };
    assert_eq!(off.prepare_rows(WorkloadKind::OltpInsert), 0);
    assert_eq!(off.prepare_rows(WorkloadKind::OltpReadWrite), 1000);
    let mut ids = std::collections::HashSet::new();
    for ev in events(WorkloadKind::OltpInsert, &off, 5000) {
        let Op::Insert { id: Some(id), .. } = &ev[0] else {
            panic!("--auto-inc=off gives ids")
        };
        assert!(ids.insert(*id), "duplicate insert id {id}");
    }
}

#[test]
fn workload_names_parse_and_unknown_ones_are_named() {
    for (k, n) in WorkloadKind::ALL {
        assert_eq!(n.parse::<WorkloadKind>().unwrap(), *k);
        assert_eq!(format!("{n}.lua").parse::<WorkloadKind>().unwrap(), *k);
    }
    for (t, n) in crate::rand::RandType::ALL {
        assert_eq!(n.parse::<crate::rand::RandType>().unwrap(), *t);
        assert_eq!(t.to_string(), *n);
    }
    assert!("zipf"
        .parse::<crate::rand::RandType>()
        .unwrap_err()
        .contains("zipf"));
    let e = "oltp_everything".parse::<WorkloadKind>().unwrap_err();
    assert!(
        e.contains("oltp_everything") && e.contains("oltp_read_write"),
        "{e}"
    );
}

/// Options a script overrides in its own `prepare_statements()` (`sysbench.opt.NAME=N`).
fn script_overrides(script: &str) -> Vec<(String, usize)> {
    let text = lua(script);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("sysbench.opt.")?;
            let (name, v) = rest.split_once('=')?;
            Some((name.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn options_a_script_overrides_are_overridden_whatever_the_flag_says() {
    let mut found = Vec::new();
    // tpcc.lua is not one of sysbench's own scripts (Percona-Lab/sysbench-tpcc).
    for &(kind, name) in WorkloadKind::ALL
        .iter()
        .filter(|(k, _)| *k != WorkloadKind::Tpcc)
    {
        for (opt, n) in script_overrides(name) {
            found.push(format!("{name}:{opt}"));
            match opt.as_str() {
                // oltp_point_select.lua prepare_statements(): one point select per event.
                "point_selects" => {
                    for flag in [1, 10, 25] {
                        let o = SysbenchOptions {
                            point_selects: flag,
                            ..Default::default()
                        };
                        for ev in events(kind, &o, 20) {
                            assert_eq!(
                                count(&ev, "point_select"),
                                n,
                                "{name} --point-selects {flag}"
                            );
                        }
                    }
                }
                // oltp_insert.lua's prepare command with --auto-inc=off: empty tables.
                "table_size" => {
                    let o = SysbenchOptions {
                        auto_inc: false,
                        ..Default::default()
                    };
                    assert_eq!(o.prepare_rows(kind) as usize, n, "{name}");
                }
                _ => panic!("{name} overrides {opt}: model it"),
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        ["oltp_insert:table_size", "oltp_point_select:point_selects"]
    );
}
