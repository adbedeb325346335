//! `/v1/flows` (docs/openapi.yaml): the flow table's rules, added and deleted in the flow
//! syntax of `ovs-ofctl`.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body};
use super::Shared;
use crate::control::Failure;

type Answer<T> = Result<T, ApiFailure>;

/// The flow paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/flows", get(list).post(add))
        .route("/v1/flows/delete", post(delete))
        .route("/v1/trace", post(trace))
}

async fn list(State(c): State<Shared>, RawQuery(query): RawQuery) -> Answer<Json<api::FlowTable>> {
    let port = port_filter(query.as_deref().unwrap_or(""))?;
    Ok(Json(c.lock().await.flows(port.as_deref()).await?))
}

async fn add(State(c): State<Shared>, Body(spec): Body<api::FlowSpec>) -> Answer<StatusCode> {
    c.lock().await.flow_add(spec).await?;
    Ok(StatusCode::CREATED)
}

async fn delete(
    State(c): State<Shared>,
    Body(d): Body<api::FlowDelete>,
) -> Answer<Json<api::FlowsDeleted>> {
    Ok(Json(c.lock().await.flow_delete(d).await?))
}

async fn trace(
    State(c): State<Shared>,
    Body(spec): Body<api::TraceSpec>,
) -> Answer<Json<api::Trace>> {
    Ok(Json(c.lock().await.trace(spec).await?))
}

/// `port=NAME` (percent-encoded, as `nvo` sends it), optional; anything else is refused by
/// name.
fn port_filter(query: &str) -> Result<Option<String>, Failure> {
    let mut port = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("port", name)) if !name.is_empty() => {
                let name = nvo_api::query::decode(name)
                    .ok_or_else(|| Failure::bad(format!("port {name:?}: bad percent-encoding")))?;
                port = Some(name);
            }
            _ => {
                return Err(Failure::bad(format!(
                    "unknown query {pair:?}; /v1/flows takes port=NAME"
                )))
            }
        }
    }
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_filter_reads_back_what_nvo_encodes() {
        let name = "veth a%1";
        let query = format!("port={}", nvo_api::query::encode(name));
        assert_eq!(port_filter(&query).unwrap().as_deref(), Some(name));
        assert_eq!(port_filter("").unwrap(), None);
        assert!(port_filter("port=a%zz").is_err());
        assert!(port_filter("table=0").is_err());
    }
}
