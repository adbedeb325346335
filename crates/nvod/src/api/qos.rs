//! `/v1/qos` and the QoS attachments of ports and virtual ports (docs/openapi.yaml).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The QoS paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/qos", get(list).post(add))
        .route("/v1/qos/{name}", axum::routing::delete(delete))
        .route("/v1/ports/{name}/qos", put(attach).delete(detach))
        .route(
            "/v1/ports/{name}/vports/{mac}/qos",
            put(attach_vport).delete(detach_vport),
        )
}

async fn list(State(c): State<Shared>) -> Answer<Json<Vec<api::Qos>>> {
    Ok(Json(c.lock().await.qos_list().await?))
}

async fn add(
    State(c): State<Shared>,
    Body(spec): Body<api::QosSpec>,
) -> Answer<(StatusCode, Json<api::Qos>)> {
    let q = c.lock().await.qos_add(spec).await?;
    Ok((StatusCode::CREATED, Json(q)))
}

async fn delete(State(c): State<Shared>, Params(name): Params<String>) -> Answer<StatusCode> {
    c.lock().await.qos_delete(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach(
    State(c): State<Shared>,
    Params(port): Params<String>,
    Body(a): Body<api::QosAttach>,
) -> Answer<StatusCode> {
    c.lock()
        .await
        .qos_attach(&port, None, Some(&a.profile))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach(State(c): State<Shared>, Params(port): Params<String>) -> Answer<StatusCode> {
    c.lock().await.qos_attach(&port, None, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach_vport(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
    Body(a): Body<api::QosAttach>,
) -> Answer<StatusCode> {
    c.lock()
        .await
        .qos_attach(&port, Some(&mac), Some(&a.profile))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach_vport(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.qos_attach(&port, Some(&mac), None).await?;
    Ok(StatusCode::NO_CONTENT)
}
