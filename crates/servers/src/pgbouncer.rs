//! PgBouncer 1.18 (Debian's `pgbouncer`) in front of a managed PostgreSQL: the connection
//! pooler PostgreSQL's users put between many clients and a process-per-connection
//! server, for `experiment connection_storm`.
//!
//! Started as a managed process like the servers (managed.rs invariants 1–4): a direct
//! child of mvcclab, in a process group of its own, with its parent-death signal set, as
//! the `postgres` system user when mvcclab is root (PgBouncer refuses to run as root),
//! on 127.0.0.1 and a free port, from a configuration file of its own
//! (PgBouncer docs "config.md"): `auth_type = trust` with the user in `auth_file`,
//! `pool_mode = transaction` (a server connection is lent for one transaction, so U
//! clients share `default_pool_size` backends; with the default `session` mode each
//! client would hold a backend for its whole connection and the pool could not serve U
//! persistent clients), `max_client_conn` sized for the storm, `listen_backlog` as large
//! (up to 4096; with its default 128 a full accept queue makes the kernel drop new
//! connections' SYNs, and the clients' retries, a second and more apart, would pace the
//! storm instead of the pooler), no Unix socket. Stopped by its pid with SIGTERM
//! (immediate shutdown), SIGKILL after 10 s.

use crate::managed::{
    chown, command, free_port, is_root, log_tail, require, stop_child, system_user, wait_listening,
};
use crate::ServerError;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

/// Debian's PgBouncer binary.
const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

/// A PgBouncer process mvcclab started; stopped on [`PgBouncer::stop`] or drop.
pub struct PgBouncer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    _scratch: tempfile::TempDir,
}

impl PgBouncer {
    /// Starts PgBouncer in a new folder under `base`, forwarding every database to the
    /// PostgreSQL at 127.0.0.1:`pg_port` as user `user`, taking up to `max_client_conn`
    /// clients onto at most `pool_size` server connections per database and user.
    /// Waits (up to 30 s) until it listens.
    ///
    /// Errors: [`ServerError::NotInstalled`] without the package or the `postgres` user;
    /// [`ServerError::Start`] with its log's tail; [`ServerError::Io`].
    pub fn start(
        base: &Path,
        pg_port: u16,
        user: &str,
        max_client_conn: u32,
        pool_size: u32,
    ) -> Result<PgBouncer, ServerError> {
        let program = require(PGBOUNCER, "pgbouncer")?;
        let owner = if is_root() {
            Some(
                system_user("postgres").ok_or_else(|| ServerError::NotInstalled {
                    program: "system user 'postgres'".into(),
                    package: "postgresql-15".into(),
                })?,
            )
        } else {
            None
        };
        fs::create_dir_all(base)
            .map_err(|e| ServerError::io(&format!("creating {}", base.display()), e))?;
        let scratch = tempfile::Builder::new()
            .prefix("mvcclab-pgbouncer-")
            .tempdir_in(base)
            .map_err(|e| ServerError::io("creating PgBouncer's folder", e))?;
        let dir = scratch.path().to_path_buf();
        chown(&dir, owner)?;
        let port = free_port()?;
        let userlist = dir.join("userlist.txt");
        fs::write(&userlist, format!("\"{user}\" \"\"\n"))
            .map_err(|e| ServerError::io("writing PgBouncer's auth_file", e))?;
        let log = dir.join("pgbouncer.log");
        let ini = dir.join("pgbouncer.ini");
        fs::write(
            &ini,
            format!(
                "[databases]\n* = host=127.0.0.1 port={pg_port}\n\n[pgbouncer]\n\
                 listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
                 auth_type = trust\nauth_file = {}\npool_mode = transaction\n\
                 max_client_conn = {max_client_conn}\ndefault_pool_size = {pool_size}\n\
                 listen_backlog = {backlog}\n\
                 logfile = {}\nlog_connections = 0\nlog_disconnections = 0\n\
                 ignore_startup_parameters = extra_float_digits\n",
                userlist.display(),
                log.display(),
                backlog = max_client_conn.clamp(128, 4096),
            ),
        )
        .map_err(|e| ServerError::io("writing pgbouncer.ini", e))?;
        for f in [&userlist, &ini] {
            chown(f, owner)?;
        }
        let out = dir.join("stderr.log");
        let err = fs::File::create(&out)
            .map_err(|e| ServerError::io("creating PgBouncer's stderr log", e))?;
        chown(&out, owner)?;
        let child = command(&program, owner, libc::SIGTERM)
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| ServerError::io("starting pgbouncer", e))?;
        let mut b = PgBouncer {
            child: Some(child),
            port,
            dir,
            _scratch: scratch,
        };
        wait_listening(
            &mut b.child,
            port,
            Duration::from_secs(30),
            "pgbouncer",
            &|| format!("{}\n{}", log_tail(&out), log_tail(&log)),
        )?;
        Ok(b)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Its folder (configuration and log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops it by its pid: SIGTERM, SIGKILL after 10 s.
    ///
    /// Errors: [`ServerError::Io`] when it cannot be waited for.
    pub fn stop(&mut self) -> Result<(), ServerError> {
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c, libc::SIGTERM, Duration::from_secs(10), "pgbouncer")?;
        }
        Ok(())
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
