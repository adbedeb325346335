//! `/v1/ports/{port}/vports`: the virtual ports per MAC of a shared port (docs/openapi.yaml).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The virtual-port paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/ports/{name}/vports", get(list).post(add))
        .route(
            "/v1/ports/{name}/vports/{mac}",
            axum::routing::delete(delete),
        )
}

async fn list(
    State(c): State<Shared>,
    Params(port): Params<String>,
) -> Answer<Json<Vec<api::Vport>>> {
    Ok(Json(c.lock().await.vports(&port).await?))
}

async fn add(
    State(c): State<Shared>,
    Params(port): Params<String>,
    Body(spec): Body<api::VportSpec>,
) -> Answer<(StatusCode, Json<api::Vport>)> {
    let vport = c.lock().await.add_vport(&port, spec).await?;
    Ok((StatusCode::CREATED, Json(vport)))
}

async fn delete(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.delete_vport(&port, &mac).await?;
    Ok(StatusCode::NO_CONTENT)
}
