//! The listener and the two connection models.
//!
//! - **Thread per connection** (PostgreSQL's backend per connection, MariaDB's default
//!   `thread_handling=one-thread-per-connection`): every accepted socket gets an OS thread
//!   of its own, which runs the protocol (a current-thread tokio runtime) and the engine
//!   calls of that connection, and ends with it.
//! - **Pool of threads** (MariaDB's `thread_handling=pool-of-threads`, sql/threadpool_*):
//!   N worker threads (a multi-thread tokio runtime with N workers) run every connection's
//!   protocol and engine calls; a connection holds a worker only while a message of it is
//!   being handled. As in MariaDB's pool without its stall detection, a statement waiting
//!   for a row lock keeps its worker.

use crate::catalog::Catalog;
use crate::handler::{Connection, Handlers};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// How connections are mapped onto threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionModel {
    /// One OS thread per connection.
    ThreadPerConnection,
    /// A pool of this many worker threads for all connections.
    PoolOfThreads(usize),
}

impl std::str::FromStr for ConnectionModel {
    type Err = String;

    /// `thread-per-connection` (or `threads`), `pool` (one worker per CPU, MariaDB's
    /// default `thread_pool_size`), or `pool:N`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "thread-per-connection" | "threads" => Ok(ConnectionModel::ThreadPerConnection),
            "pool" | "pool-of-threads" => Ok(ConnectionModel::PoolOfThreads(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            )),
            _ => match s.strip_prefix("pool:").map(str::parse::<usize>) {
                Some(Ok(n)) if n >= 1 => Ok(ConnectionModel::PoolOfThreads(n)),
                _ => Err(format!(
                    "connection model '{s}': expected thread-per-connection, pool or pool:N (N ≥ 1)"
                )),
            },
        }
    }
}

/// A running server: its address, and counters of its connections.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// The address it listens on (127.0.0.1 and the port).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Waits until the acceptor ends (it runs until [`Server::stop`] or an accept error).
    pub fn wait(mut self) {
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }

    /// Stops accepting connections (open connections run on until their clients leave).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the blocking accept.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Starts a server for `catalog` on 127.0.0.1:`port` (0: a free port) under `model`.
///
/// Errors: the bind's (port in use, …); the pool's runtime could not be built.
pub fn serve(catalog: Arc<Catalog>, port: u16, model: ConnectionModel) -> std::io::Result<Server> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let pool = match model {
        ConnectionModel::ThreadPerConnection => None,
        ConnectionModel::PoolOfThreads(n) => Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .thread_name("mvcclab-pool")
                .enable_all()
                .build()?,
        ),
    };
    let (stop2, accepted2) = (stop.clone(), accepted.clone());
    let acceptor = std::thread::Builder::new()
        .name("mvcclab-accept".into())
        .spawn(move || {
            for s in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(s) = s else { continue };
                accepted2.fetch_add(1, Ordering::Relaxed);
                let handlers = Handlers(Connection::new(catalog.clone()));
                match &pool {
                    None => {
                        let _ = std::thread::Builder::new()
                            .name("mvcclab-backend".into())
                            .spawn(move || run_connection(s, handlers));
                    }
                    Some(rt) => {
                        rt.spawn(async move {
                            if s.set_nonblocking(true).is_ok() {
                                if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                                    let _ = pgwire::tokio::process_socket(s, None, handlers).await;
                                }
                            }
                        });
                    }
                }
            }
            if let Some(rt) = pool {
                rt.shutdown_background();
            }
        })?;
    Ok(Server {
        addr,
        stop,
        accepted,
        acceptor: Some(acceptor),
    })
}

/// A connection on its own thread: a current-thread runtime for its protocol.
fn run_connection(s: TcpStream, handlers: Handlers) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async move {
        if s.set_nonblocking(true).is_ok() {
            if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                let _ = pgwire::tokio::process_socket(s, None, handlers).await;
            }
        }
    });
}
