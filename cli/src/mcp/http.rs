//! `memdb mcp STORE --http ADDR`: the same tools over MCP's Streamable HTTP transport (with SSE
//! streams where the client asks for them), for OpenMemory's clients and others that speak
//! HTTP. One route, `/mcp`, served by hyper's HTTP/1 server on a loopback address only.
//!
//! Invariants:
//! - The listener binds a loopback address or the server does not start: nothing leaves the
//!   device, and rmcp's Host check (localhost, 127.0.0.1, ::1) refuses DNS-rebinding requests.
//! - Every session shares the one [`State`]: calls from all clients run one at a time.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service as _;

use super::{MemoryServer, State};
use crate::error::{CliError, Result};

/// The one path the server answers.
pub(crate) const PATH: &str = "/mcp";

/// Serves until the process is stopped.
pub(super) async fn serve(
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    tools: ToolRouter<MemoryServer>,
) -> Result<()> {
    if !addr.ip().is_loopback() {
        return Err(CliError::flag(
            "--http",
            format!(
                "{addr} is not a loopback address: memdb serves only this device (use 127.0.0.1:PORT)"
            ),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| CliError::Mcp(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| CliError::Mcp(format!("cannot read the address listened on: {e}")))?;
    // The line a script waits for (the port, when 0 asked the system for one).
    eprintln!("memdb mcp: listening on http://{bound}{PATH}");
    let service = StreamableHttpService::new(
        move || {
            Ok(MemoryServer {
                state: state.clone(),
                tool_router: tools.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                eprintln!("memdb mcp: accept failed: {e}");
                continue;
            }
        };
        let service = service.clone();
        tokio::spawn(async move {
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let mut service = service.clone();
                async move {
                    if request.uri().path() != PATH {
                        return Ok(not_found());
                    }
                    service.call(request).await
                }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), route)
                .await
            {
                eprintln!("memdb mcp: connection ended with an error: {e}");
            }
        });
    }
}

/// The answer to any path but [`PATH`].
fn not_found() -> Response<BoxBody<Bytes, std::convert::Infallible>> {
    let mut response =
        Response::new(Full::new(Bytes::from_static(b"memdb serves MCP at /mcp\n")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
