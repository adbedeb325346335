//! `/v1/acls` and the ACL attachments of ports and virtual ports (docs/openapi.yaml,
//! docs/acl.md).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The ACL paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/acls", get(list).post(add))
        .route("/v1/acls/{name}", axum::routing::delete(delete))
        .route("/v1/ports/{name}/acl", put(attach).delete(detach))
        .route(
            "/v1/ports/{name}/vports/{mac}/acl",
            put(attach_vport).delete(detach_vport),
        )
}

async fn list(State(c): State<Shared>) -> Answer<Json<Vec<api::Acl>>> {
    Ok(Json(c.lock().await.acl_list().await?))
}

async fn add(
    State(c): State<Shared>,
    Body(spec): Body<api::AclSpec>,
) -> Answer<(StatusCode, Json<api::Acl>)> {
    let a = c.lock().await.acl_add(spec).await?;
    Ok((StatusCode::CREATED, Json(a)))
}

async fn delete(State(c): State<Shared>, Params(name): Params<String>) -> Answer<StatusCode> {
    c.lock().await.acl_delete(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach(
    State(c): State<Shared>,
    Params(port): Params<String>,
    Body(a): Body<api::AclAttach>,
) -> Answer<StatusCode> {
    c.lock()
        .await
        .acl_attach(&port, None, Some(&a.profile))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach(State(c): State<Shared>, Params(port): Params<String>) -> Answer<StatusCode> {
    c.lock().await.acl_attach(&port, None, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach_vport(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
    Body(a): Body<api::AclAttach>,
) -> Answer<StatusCode> {
    c.lock()
        .await
        .acl_attach(&port, Some(&mac), Some(&a.profile))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach_vport(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.acl_attach(&port, Some(&mac), None).await?;
    Ok(StatusCode::NO_CONTENT)
}
