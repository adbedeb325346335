//! Identity policy's paths (docs/openapi.yaml): labels of ports and addresses, a network's
//! policy with its counters, and the trace of a made-up packet.

use axum::extract::{DefaultBodyLimit, State};
use axum::http::Method;
use axum::http::StatusCode;
use axum::routing::{get, post, put};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body, Params};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;

/// The largest policy document nvod reads (`PUT /v1/networks/{vni}/policy`): 4096 rules and
/// 1024 groups take a few hundred KiB of JSON, more than every other request's
/// [`super::error::MAX_BODY`].
pub const MAX_POLICY_BODY: usize = 1024 * 1024;

/// The body bound of a request: [`MAX_POLICY_BODY`] for a policy document, else `default`
/// (a bound of 0, for paths that take no body, stays 0).
pub fn body_limit(method: &Method, path: &str, default: usize) -> usize {
    let policy = method == Method::PUT
        && path
            .strip_prefix("/v1/networks/")
            .and_then(|rest| rest.strip_suffix("/policy"))
            .is_some_and(|vni| !vni.is_empty() && !vni.contains('/'));
    if policy && default > 0 {
        MAX_POLICY_BODY
    } else {
        default
    }
}

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
            get(show)
                .put(apply)
                .delete(delete)
                .layer(DefaultBodyLimit::max(MAX_POLICY_BODY)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_policy_document_gets_the_larger_bound() {
        let put = Method::PUT;
        assert_eq!(
            body_limit(&put, "/v1/networks/100/policy", 65536),
            MAX_POLICY_BODY
        );
        assert_eq!(body_limit(&put, "/v1/networks/100", 65536), 65536);
        assert_eq!(
            body_limit(&put, "/v1/networks/100/policy/trace", 65536),
            65536
        );
        assert_eq!(body_limit(&put, "/v1/networks//policy", 65536), 65536);
        assert_eq!(body_limit(&put, "/v1/networks/1/2/policy", 65536), 65536);
        assert_eq!(
            body_limit(&Method::POST, "/v1/networks/100/policy", 65536),
            65536
        );
        assert_eq!(body_limit(&put, "/v1/networks/100/policy", 0), 0);
    }
}
