//! Identity policy's paths (docs/openapi.yaml): labels of ports and addresses, a network's
//! policy with its counters, and the trace of a made-up packet.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The policy paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/labels", get(labels))
        .route("/v1/ports/{name}/labels", put(label_port))
        .route(
            "/v1/networks/{vni}/labels/{ip}",
            put(label_addr).delete(unlabel_addr),
        )
        .route("/v1/policies", get(policies))
        .route(
            "/v1/networks/{vni}/policy",
            get(show).put(apply).delete(delete),
        )
        .route("/v1/networks/{vni}/policy/trace", post(trace))
}

async fn labels(State(c): State<Shared>) -> Json<api::LabelsView> {
    Json(c.lock().await.labels())
}

async fn label_port(
    State(c): State<Shared>,
    Params(name): Params<String>,
    Body(map): Body<api::LabelMap>,
) -> Answer<Json<api::LabelMap>> {
    Ok(Json(c.lock().await.label_port(&name, map).await?))
}

async fn label_addr(
    State(c): State<Shared>,
    Params((vni, ip)): Params<(String, String)>,
    Body(map): Body<api::LabelMap>,
) -> Answer<Json<api::LabelMap>> {
    Ok(Json(c.lock().await.label_addr(&vni, &ip, map).await?))
}

async fn unlabel_addr(
    State(c): State<Shared>,
    Params((vni, ip)): Params<(String, String)>,
) -> Answer<StatusCode> {
    let empty = api::LabelMap::new();
    c.lock().await.label_addr(&vni, &ip, empty).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn policies(State(c): State<Shared>) -> Answer<Json<Vec<api::PolicyView>>> {
    Ok(Json(c.lock().await.policies().await?))
}

async fn show(
    State(c): State<Shared>,
    Params(vni): Params<String>,
) -> Answer<Json<api::PolicyView>> {
    Ok(Json(c.lock().await.policy_show(&vni).await?))
}

async fn apply(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(doc): Body<api::PolicyDoc>,
) -> Answer<Json<api::PolicyView>> {
    Ok(Json(c.lock().await.policy_apply(&vni, doc).await?))
}

async fn delete(State(c): State<Shared>, Params(vni): Params<String>) -> Answer<StatusCode> {
    c.lock().await.policy_delete(&vni).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn trace(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(req): Body<api::TraceRequest>,
) -> Answer<Json<api::TraceAnswer>> {
    Ok(Json(c.lock().await.policy_trace(&vni, req).await?))
}
