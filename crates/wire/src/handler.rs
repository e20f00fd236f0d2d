//! The pgwire side of a connection: startup (no authentication), the simple and extended
//! query protocols and COPY FROM STDIN, each handing its statements to the connection's
//! [`Session`]. One [`Connection`] per socket: pgwire calls its handlers one message at a
//! time, so the session's lock is never contended.
//!
//! Results are encoded here, in text or binary as the client asked per column (PostgreSQL's
//! send/recv functions: int2/int4/int8 big-endian, text types as their UTF-8 bytes,
//! timestamp as microseconds since 2000-01-01 and date as days since then — the engine's
//! own representations).

use crate::catalog::Catalog;
use crate::error::SqlError;
use crate::plan::{parse_sql, plan_sql, Plan};
use crate::session::{Outcome, Param, Session};
use async_trait::async_trait;
use bytes::{BufMut, BytesMut};
use futures::{stream, Sink, SinkExt};
use mvcclab_engine::catalog::{format_timestamp, ColumnType, Row, Value};
use pgwire::api::auth::noop::NoopStartupHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::data::DataRow;
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;
use std::sync::Arc;

/// A statement prepared with Parse: its plans (one statement per Parse, as PostgreSQL's
/// extended protocol allows).
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The plan.
    pub plan: Arc<Plan>,
}

/// Plans statements for the extended protocol.
pub struct Planner {
    catalog: Arc<Catalog>,
}

fn pg_type(ty: ColumnType) -> Type {
    match ty {
        ColumnType::Integer => Type::INT4,
        ColumnType::BigInt => Type::INT8,
        ColumnType::SmallInt | ColumnType::TinyInt => Type::INT2,
        ColumnType::Char(_) => Type::BPCHAR,
        ColumnType::Varchar(_) => Type::VARCHAR,
        ColumnType::Text => Type::TEXT,
        ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6 => Type::TIMESTAMP,
        ColumnType::Date => Type::DATE,
        ColumnType::Decimal { .. } => Type::NUMERIC,
    }
}

fn schema(names: &[String], types: &[ColumnType], format: Option<&Format>) -> Vec<FieldInfo> {
    names
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (n, t))| {
            let f = format.map_or(FieldFormat::Text, |f| f.format_for(i));
            FieldInfo::new(n.clone(), None, None, pg_type(*t), f)
        })
        .collect()
}

fn plan_schema(plan: &Plan, format: Option<&Format>) -> Vec<FieldInfo> {
    match plan {
        Plan::Select(s) => schema(&s.names, &s.types, format),
        Plan::Show(n, _) => schema(std::slice::from_ref(n), &[ColumnType::Text], format),
        _ => Vec::new(),
    }
}

#[async_trait]
impl QueryParser for Planner {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut plans = plan_sql(sql, &self.catalog)?;
        if plans.len() != 1 {
            return Err(SqlError::new(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            )
            .into());
        }
        Ok(Some(Prepared {
            plan: Arc::new(plans.remove(0)),
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(vec![Type::TEXT; stmt.plan.param_count()])
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(plan_schema(&stmt.plan, column_format))
    }
}

/// One value in the text form PostgreSQL's output functions give.
fn text_of(v: &Value, ty: ColumnType) -> String {
    match v {
        Value::Text(s) => match ty {
            // bpchar's output keeps the blank padding to the declared length.
            ColumnType::Char(n) => format!("{s:<width$}", width = n as usize),
            _ => s.clone(),
        },
        Value::Timestamp(us) => format_timestamp(*us),
        Value::Date(d) => mvcclab_engine::catalog::format_date(*d),
        other => other.to_string(),
    }
}

/// Encodes rows as DataRow messages. Errors: 0A000 for a binary NUMERIC.
fn encode_rows(
    fields: &[FieldInfo],
    types: &[ColumnType],
    rows: Vec<Row>,
) -> Result<Vec<PgWireResult<DataRow>>, SqlError> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let mut buf = BytesMut::with_capacity(64);
        for (i, v) in r.iter().enumerate() {
            if v.is_null() {
                buf.put_i32(-1);
                continue;
            }
            let ty = types[i];
            if fields[i].format() == FieldFormat::Text || matches!(v, Value::Text(_)) {
                // Text types' binary form is their text too (textsend / bpcharsend).
                let s = text_of(v, ty);
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
                continue;
            }
            let fixed: Option<Vec<u8>> = match v {
                Value::Integer(x) | Value::Date(x) => Some(x.to_be_bytes().to_vec()),
                Value::BigInt(x) | Value::Timestamp(x) => Some(x.to_be_bytes().to_vec()),
                Value::SmallInt(x) => Some(x.to_be_bytes().to_vec()),
                Value::TinyInt(x) => Some((*x as i16).to_be_bytes().to_vec()),
                _ => None,
            };
            match (fixed, v) {
                (Some(b), _) => {
                    buf.put_i32(b.len() as i32);
                    buf.put_slice(&b);
                }
                (None, other) => {
                    return Err(SqlError::new(
                        "0A000",
                        format!(
                            "not supported by mvcclab serve: binary output of {}",
                            other.kind_name()
                        ),
                    ))
                }
            }
        }
        out.push(Ok(DataRow::new(buf, r.len() as i16)));
    }
    Ok(out)
}

/// An outcome as a pgwire response; `format` is the portal's result format (None for the
/// simple protocol: text).
fn response(outcome: Outcome, format: Option<&Format>) -> Result<Response, SqlError> {
    Ok(match outcome {
        Outcome::Rows { names, types, rows } => {
            let fields = schema(&names, &types, format);
            let encoded = encode_rows(&fields, &types, rows)?;
            Response::Query(QueryResponse::new(Arc::new(fields), stream::iter(encoded)))
        }
        Outcome::Done(tag, None) => Response::Execution(Tag::new(&tag)),
        Outcome::Done(tag, Some(n)) => Response::Execution(Tag::new(&tag).with_rows(n)),
        Outcome::Began => Response::TransactionStart(Tag::new("BEGIN")),
        Outcome::Ended(tag) => Response::TransactionEnd(Tag::new(tag)),
        Outcome::CopyIn(n) => Response::CopyIn(CopyResponse::new(0, n, stream::empty())),
    })
}

/// One client connection's handlers and session.
pub struct Connection {
    session: parking_lot::Mutex<Session>,
    planner: Arc<Planner>,
}

impl Connection {
    /// A connection to the server with `catalog`.
    pub fn new(catalog: Arc<Catalog>) -> Arc<Self> {
        Arc::new(Connection {
            session: parking_lot::Mutex::new(Session::new(catalog.clone())),
            planner: Arc::new(Planner { catalog }),
        })
    }
}

impl NoopStartupHandler for Connection {}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut session = self.session.lock();
        let mut out = Vec::new();
        let parsed = match parse_sql(query) {
            Ok(p) => p,
            Err(e) => {
                // A statement that cannot run fails the block, as in PostgreSQL.
                session.fail_block();
                return Ok(vec![Response::Error(Box::new(e.info()))]);
            }
        };
        for p in &parsed {
            let r = match p.plan(session.catalog()) {
                Ok(plan) => session.execute(&plan, &[]),
                Err(e) => {
                    session.fail_block();
                    Err(e)
                }
            };
            match r.and_then(|o| response(o, None)) {
                Ok(r) => out.push(r),
                Err(e) => {
                    out.push(Response::Error(Box::new(e.info())));
                    break;
                }
            }
        }
        Ok(out)
    }
}

/// Decodes a portal's parameters: binary int2/int4/int8 by the declared type, everything
/// else as UTF-8 text. Errors: 22P03 for a binary value of the wrong width, 22021 for
/// text that is not UTF-8.
fn decode_params(portal: &Portal<Prepared>) -> Result<Vec<Param>, SqlError> {
    let types = &portal.statement.parameter_types;
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let Some(b) = p else {
                return Ok(Param::Null);
            };
            if portal.parameter_format.is_binary(i) {
                let ty = types.get(i).cloned().flatten();
                let bad = || {
                    SqlError::new(
                        "22P03",
                        format!("incorrect binary data format in bind parameter {}", i + 1),
                    )
                };
                return match (ty, b.len()) {
                    (Some(t), 2) if t == Type::INT2 => {
                        Ok(Param::Int(i16::from_be_bytes([b[0], b[1]]) as i64))
                    }
                    (Some(t), 4) if t == Type::INT4 => Ok(Param::Int(i32::from_be_bytes(
                        b[..4].try_into().map_err(|_| bad())?,
                    ) as i64)),
                    (Some(t), 8) if t == Type::INT8 => Ok(Param::Int(i64::from_be_bytes(
                        b[..8].try_into().map_err(|_| bad())?,
                    ))),
                    (Some(t), _) if t == Type::INT2 || t == Type::INT4 || t == Type::INT8 => {
                        Err(bad())
                    }
                    _ => std::str::from_utf8(b)
                        .map(|s| Param::Text(s.to_string()))
                        .map_err(|_| SqlError::new("22021", "parameter is not valid UTF-8")),
                };
            }
            std::str::from_utf8(b)
                .map(|s| Param::Text(s.to_string()))
                .map_err(|_| SqlError::new("22021", "parameter is not valid UTF-8"))
        })
        .collect()
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = Planner;

    fn query_parser(&self) -> Arc<Planner> {
        self.planner.clone()
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let params = decode_params(portal)?;
        let mut session = self.session.lock();
        let outcome = session.execute(&portal.statement.statement.plan, &params)?;
        Ok(response(outcome, Some(&portal.result_column_format))?)
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.session.lock().copy_data(&copy_data.data);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let n = self.session.lock().copy_done()?;
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                format!("COPY {n}"),
            )))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.session.lock().copy_fail();
        SqlError::new("57014", format!("COPY from stdin failed: {}", fail.message)).into()
    }
}

/// The handlers of one connection, for pgwire's `process_socket`.
pub struct Handlers(pub Arc<Connection>);

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.0.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.0.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.0.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.0.clone()
    }
}
