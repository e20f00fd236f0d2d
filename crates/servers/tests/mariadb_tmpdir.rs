//! A managed MariaDB starts whatever `TMPDIR` says: `mariadb-install-db`'s bootstrap server
//! and the server itself use the `tmp` folder in the server's own folder, owned by the
//! server's user (managed.rs invariant 5). Before this, a `TMPDIR` the server's user could
//! not write (a root-owned 0755 scratch folder) failed the install with InnoDB's "Unable
//! to create temporary file" (errno 13), measured by hand on 2026-11-26.
//!
//! One test in its own binary, because it sets the process's `TMPDIR`. It starts its own
//! managed MariaDB (127.0.0.1, a free port, stopped by its pid on drop) and needs MariaDB
//! installed (`apt-get install mariadb-server`, README Set-up).

use mvcclab_servers::managed::{ManagedOptions, ManagedServer};
use mvcclab_servers::{mariadb, ServerKind};
use mysql::prelude::Queryable;
use mysql::OptsBuilder;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

#[test]
fn mariadb_starts_with_a_tmpdir_its_user_cannot_write() {
    let scratch = tempfile::tempdir().unwrap();
    // The server's user must reach its folder inside (tempdir makes 0700).
    std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let locked = scratch.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    // Writable by nobody but root: as root the server runs as `mysql`, which cannot write
    // it; as another user the server runs as that user, which cannot either.
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::env::set_var("TMPDIR", &locked);
    let base = scratch.path().join("servers");
    let opts = ManagedOptions {
        base_dir: Some(base.clone()),
        ..ManagedOptions::default()
    };
    let server = match ManagedServer::start(ServerKind::MariaDb, &opts) {
        Ok(s) => s,
        Err(e) => panic!("starting MariaDB with TMPDIR={}: {e}", locked.display()),
    };
    let conn_opts = OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(server.port())
        .user(Some("root"))
        .prefer_socket(false);
    let mut conn = mariadb::connect(&conn_opts.into(), Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("connect to the managed MariaDB: {e}"));
    let tmpdir: String = conn.query_first("SELECT @@tmpdir").unwrap().unwrap();
    assert!(
        std::path::Path::new(&tmpdir).starts_with(&base),
        "tmpdir {tmpdir} is not in the server's folder under {}",
        base.display()
    );
    // A sort that spills uses the tmpdir: make one by sorting more than the sort buffer.
    conn.query_drop("CREATE DATABASE scratch").unwrap();
    conn.query_drop("SET SESSION sort_buffer_size = 32768")
        .unwrap();
    let n: Option<u64> = conn
        .query_first(
            "SELECT COUNT(*) FROM (SELECT seq, MD5(seq) AS m FROM scratch.seq_1_to_20000 \
             ORDER BY m LIMIT 19999) AS t",
        )
        .unwrap();
    assert_eq!(n, Some(19_999));
    drop(conn);
    drop(server);
}
