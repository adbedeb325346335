//! `/v1/meters`: flow-table meters (docs/openapi.yaml).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The meter paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/meters", get(list).post(add))
        .route("/v1/meters/{id}", axum::routing::delete(delete))
}

async fn list(State(c): State<Shared>) -> Answer<Json<Vec<api::Meter>>> {
    Ok(Json(c.lock().await.meter_list().await?))
}

async fn add(
    State(c): State<Shared>,
    Body(spec): Body<api::MeterSpec>,
) -> Answer<(StatusCode, Json<api::Meter>)> {
    let m = c.lock().await.meter_add(spec).await?;
    Ok((StatusCode::CREATED, Json(m)))
}

async fn delete(State(c): State<Shared>, Params(id): Params<u32>) -> Answer<StatusCode> {
    c.lock().await.meter_delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}
