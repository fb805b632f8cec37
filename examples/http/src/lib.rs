//! `http-module`: the Go http module's `http_server`, `http_request`,
//! `http_auth_parse`, `promql_query` and `logql_query`, written with tiny, on hyper.
//!
//! Port names, settings keys and message fields are Go's, so a flow built for the Go
//! module loads unchanged. Where Go's behaviour is a trap, tiny does better and says
//! so in the README: a flow that does not answer in `writeTimeout` gets
//! `504 Gateway Timeout` (Go drops the connection), an oversized body gets `413`
//! (Go silently truncates it), and `start` returns at once (Go holds the call for the
//! server's whole life).

pub mod address;
pub mod auth_parse;
pub mod client;
pub mod headers;
pub mod logql;
pub mod promql;
pub mod query;
pub mod server;

/// Every component of the module.
pub fn registry() -> tiny_sdk::engine::Registry {
    let mut r = tiny_sdk::engine::Registry::default();
    r.register::<server::HttpServer>()
        .register::<client::HttpRequest>()
        .register::<auth_parse::HttpAuthParse>()
        .register::<promql::PromqlQuery>()
        .register::<logql::LogqlQuery>();
    r
}
