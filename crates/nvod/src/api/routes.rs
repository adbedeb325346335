//! The API's paths (docs/openapi.yaml is the reference) and their handlers: each takes the
//! control lock, calls one [`Control`] method and turns the result into an answer.

use std::net::IpAddr;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use nvo_api as api;

use super::error::{no_method, no_route, ApiFailure, Body, Params, MAX_BODY};
use super::Shared;

type Answer<T> = Result<T, ApiFailure>;
type Created<T> = Answer<(StatusCode, Json<T>)>;

/// Every path of the API.
pub fn router(control: Shared) -> Router {
    Router::new()
        .route("/v1/node", get(node))
        .route("/v1/cluster", get(cluster))
        .route("/v1/networks", get(networks).post(create_network))
        .route("/v1/networks/{vni}", get(network).delete(delete_network))
        .route("/v1/networks/{vni}/fdb", get(fdb).post(fdb_add))
        .route("/v1/networks/{vni}/fdb/flush", post(fdb_flush))
        .route(
            "/v1/networks/{vni}/fdb/{mac}",
            axum::routing::delete(fdb_delete),
        )
        .route("/v1/networks/{vni}/flood", get(flood).post(flood_add))
        .route(
            "/v1/networks/{vni}/flood/{ip}",
            axum::routing::delete(flood_delete),
        )
        .route("/v1/ports", get(ports).post(add_port))
        .route("/v1/ports/{name}", axum::routing::delete(delete_port))
        .route("/v1/counters", get(counters))
        .route("/v1/networks/{vni}/routes", get(routes).post(route_add))
        .route(
            "/v1/networks/{vni}/routes/{addr}/{len}",
            axum::routing::delete(route_delete),
        )
        .route("/v1/overlay", get(overlay).put(set_overlay))
        .route("/v1/overlay/nodes", get(overlay_nodes))
        .route(
            "/v1/overlay/nodes/{id}",
            get(overlay_node)
                .put(set_overlay_node)
                .delete(delete_overlay_node),
        )
        .route("/v1/overlay/routes/{app}", get(overlay_routes))
        .route(
            "/v1/overlay/routes/{app}/{dst}",
            get(overlay_route)
                .put(set_overlay_route)
                .delete(delete_overlay_route),
        )
        .route("/v1/overlay/probe", post(probe))
        .route("/v1/events", get(events))
        .route("/v1/capture", get(super::capture::capture))
        .route("/v1/monitor", get(monitor))
        .route("/v1/profiles", get(profiles).post(add_profile))
        .route("/v1/profiles/{name}", get(profile).delete(delete_profile))
        .route("/v1/profiles/{name}/keys", get(keys).post(bind_key))
        .route(
            "/v1/profiles/{name}/keys/{key}",
            axum::routing::delete(unbind_key),
        )
        .merge(super::bgp::routes(Router::new()))
        .merge(super::vport::routes(Router::new()))
        .merge(super::profiles::routes::<super::profiles::Qos>(
            Router::new(),
        ))
        .merge(super::profiles::routes::<super::profiles::Acl>(
            Router::new(),
        ))
        .merge(super::meters::routes(Router::new()))
        .merge(super::flows::routes(Router::new()))
        .merge(super::policy::routes(Router::new()))
        .fallback(no_route)
        .method_not_allowed_fallback(no_method)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(control)
}

async fn node(State(c): State<Shared>) -> Json<api::NodeInfo> {
    Json(c.lock().await.node())
}

async fn cluster(State(c): State<Shared>) -> Json<api::ClusterStatus> {
    Json(c.lock().await.cluster_status())
}

async fn networks(State(c): State<Shared>) -> Answer<Json<Vec<api::Network>>> {
    Ok(Json(c.lock().await.networks().await?))
}

async fn create_network(
    State(c): State<Shared>,
    Body(spec): Body<api::NetworkSpec>,
) -> Created<api::Network> {
    let network = c.lock().await.create_network(spec).await?;
    Ok((StatusCode::CREATED, Json(network)))
}

async fn network(
    State(c): State<Shared>,
    Params(vni): Params<String>,
) -> Answer<Json<api::Network>> {
    Ok(Json(c.lock().await.network(&vni).await?))
}

async fn delete_network(
    State(c): State<Shared>,
    Params(vni): Params<String>,
) -> Answer<StatusCode> {
    c.lock().await.delete_network(&vni).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn ports(State(c): State<Shared>) -> Answer<Json<Vec<api::Port>>> {
    Ok(Json(c.lock().await.ports().await?))
}

async fn add_port(State(c): State<Shared>, Body(spec): Body<api::PortSpec>) -> Created<api::Port> {
    let port = c.lock().await.add_port(spec).await?;
    Ok((StatusCode::CREATED, Json(port)))
}

async fn delete_port(State(c): State<Shared>, Params(name): Params<String>) -> Answer<StatusCode> {
    c.lock().await.delete_port(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn fdb(
    State(c): State<Shared>,
    Params(vni): Params<String>,
) -> Answer<Json<Vec<api::FdbEntry>>> {
    Ok(Json(c.lock().await.fdb(&vni).await?))
}

async fn fdb_add(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(add): Body<api::FdbAdd>,
) -> Created<api::FdbEntry> {
    let entry = c.lock().await.fdb_add(&vni, add).await?;
    Ok((StatusCode::CREATED, Json(entry)))
}

async fn fdb_delete(
    State(c): State<Shared>,
    Params((vni, mac)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.fdb_delete(&vni, &mac).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn fdb_flush(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(request): Body<api::FlushRequest>,
) -> Answer<Json<api::FlushResult>> {
    Ok(Json(c.lock().await.fdb_flush(&vni, request).await?))
}

async fn flood(State(c): State<Shared>, Params(vni): Params<String>) -> Answer<Json<Vec<IpAddr>>> {
    Ok(Json(c.lock().await.flood(&vni)?))
}

async fn flood_add(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(add): Body<api::FloodAdd>,
) -> Created<Vec<IpAddr>> {
    let flood = c.lock().await.flood_add(&vni, add).await?;
    Ok((StatusCode::CREATED, Json(flood)))
}

async fn flood_delete(
    State(c): State<Shared>,
    Params((vni, ip)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.flood_delete(&vni, &ip).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn counters(State(c): State<Shared>) -> Answer<Json<api::Counters>> {
    Ok(Json(c.lock().await.counters().await?))
}

async fn profiles(State(c): State<Shared>) -> Json<Vec<api::ProfileInfo>> {
    Json(c.lock().await.profiles())
}

async fn profile(
    State(c): State<Shared>,
    Params(name): Params<String>,
) -> Answer<Json<api::ProfileInfo>> {
    Ok(Json(c.lock().await.profile(&name)?))
}

async fn add_profile(
    State(c): State<Shared>,
    Body(spec): Body<api::ProfileSpec>,
) -> Created<api::ProfileInfo> {
    let info = c.lock().await.add_profile(spec).await?;
    Ok((StatusCode::CREATED, Json(info)))
}

async fn delete_profile(
    State(c): State<Shared>,
    Params(name): Params<String>,
) -> Answer<StatusCode> {
    c.lock().await.delete_profile(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn keys(
    State(c): State<Shared>,
    Params(name): Params<String>,
) -> Answer<Json<Vec<api::KeyBinding>>> {
    Ok(Json(c.lock().await.keys(&name)?))
}

async fn bind_key(
    State(c): State<Shared>,
    Params(name): Params<String>,
    Body(binding): Body<api::KeyBinding>,
) -> Created<api::KeyBinding> {
    let bound = c.lock().await.bind_key(&name, binding).await?;
    Ok((StatusCode::CREATED, Json(bound)))
}

async fn unbind_key(
    State(c): State<Shared>,
    Params((name, key)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.unbind_key(&name, &key).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn routes(
    State(c): State<Shared>,
    Params(vni): Params<String>,
) -> Answer<Json<Vec<api::RouteSpec>>> {
    Ok(Json(c.lock().await.routes(&vni)?))
}

async fn route_add(
    State(c): State<Shared>,
    Params(vni): Params<String>,
    Body(route): Body<api::RouteSpec>,
) -> Created<api::RouteSpec> {
    let added = c.lock().await.route_add(&vni, route).await?;
    Ok((StatusCode::CREATED, Json(added)))
}

async fn route_delete(
    State(c): State<Shared>,
    Params((vni, addr, len)): Params<(String, String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.route_delete(&vni, &addr, &len).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn overlay(State(c): State<Shared>) -> Answer<Json<api::OverlayInfo>> {
    Ok(Json(c.lock().await.overlay().await?))
}

async fn set_overlay(
    State(c): State<Shared>,
    Body(info): Body<api::OverlayInfo>,
) -> Answer<Json<api::OverlayInfo>> {
    Ok(Json(c.lock().await.set_overlay(info).await?))
}

async fn overlay_nodes(State(c): State<Shared>) -> Json<Vec<api::OverlayNode>> {
    Json(c.lock().await.overlay_nodes())
}

async fn overlay_node(
    State(c): State<Shared>,
    Params(id): Params<String>,
) -> Answer<Json<api::OverlayNode>> {
    Ok(Json(c.lock().await.overlay_node(&id)?))
}

async fn set_overlay_node(
    State(c): State<Shared>,
    Params(id): Params<String>,
    Body(locators): Body<api::NodeLocators>,
) -> Answer<Json<api::OverlayNode>> {
    Ok(Json(c.lock().await.set_overlay_node(&id, locators).await?))
}

async fn delete_overlay_node(
    State(c): State<Shared>,
    Params(id): Params<String>,
) -> Answer<StatusCode> {
    c.lock().await.delete_overlay_node(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn overlay_routes(
    State(c): State<Shared>,
    Params(app): Params<String>,
) -> Answer<Json<Vec<api::OverlayRoute>>> {
    Ok(Json(c.lock().await.overlay_routes(&app)?))
}

async fn overlay_route(
    State(c): State<Shared>,
    Params((app, dst)): Params<(String, String)>,
) -> Answer<Json<api::OverlayRoute>> {
    Ok(Json(c.lock().await.overlay_route(&app, &dst)?))
}

async fn set_overlay_route(
    State(c): State<Shared>,
    Params((app, dst)): Params<(String, String)>,
    Body(hops): Body<api::RouteNextHops>,
) -> Answer<Json<api::OverlayRoute>> {
    Ok(Json(
        c.lock().await.set_overlay_route(&app, &dst, hops).await?,
    ))
}

async fn delete_overlay_route(
    State(c): State<Shared>,
    Params((app, dst)): Params<(String, String)>,
) -> Answer<StatusCode> {
    c.lock().await.delete_overlay_route(&app, &dst).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/events`: server-sent events, one per overlay change, `event: node|route|own` and
/// `data:` the change as JSON; a comment line every 15 s keeps idle connections open. A
/// listener that falls more than the backlog behind is told with an `event: lagged`.
async fn events(State(c): State<Shared>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let rx = c.lock().await.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let received = tokio::time::timeout(std::time::Duration::from_secs(15), rx.recv()).await;
        let Ok(received) = received else {
            return Some((Ok(": keep-alive\n\n".to_owned()), rx));
        };
        let chunk = match received {
            Ok(event) => {
                let data = serde_json::to_string(&event).unwrap_or_default();
                format!("event: {}\ndata: {data}\n\n", event.kind())
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                format!("event: lagged\ndata: {{\"missed\": {n}}}\n\n")
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    (
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

/// `GET /v1/monitor?network=&port=&reason=&type=`: server-sent events, one per datapath event
/// (docs/monitor.md), `event:` its type and `data:` it as JSON; a comment line every 15 s
/// keeps idle connections open. The listener has its own bounded queue: when it falls behind,
/// the events it lost are counted and told as a `lost` event.
async fn monitor(
    State(c): State<Shared>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Answer<axum::response::Response> {
    use axum::response::IntoResponse;
    let listener = c
        .lock()
        .await
        .monitor_subscribe(query.as_deref().unwrap_or(""))?;
    let stream = futures_util::stream::unfold(listener, |mut listener| async move {
        let next = tokio::time::timeout(std::time::Duration::from_secs(15), listener.next()).await;
        let chunk = match next {
            Err(_) => ": keep-alive\n\n".to_owned(),
            Ok(Some(ev)) => {
                let data = serde_json::to_string(&ev).unwrap_or_default();
                format!("event: {}\ndata: {data}\n\n", ev.kind.name())
            }
            Ok(None) => return None,
        };
        Some((Ok::<_, std::convert::Infallible>(chunk), listener))
    });
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response())
}

/// `POST /v1/overlay/probe`: starts the run, lets go of the control lock while the probes are
/// out (other API calls go on), then collects the replies.
async fn probe(
    State(c): State<Shared>,
    Body(req): Body<api::ProbeRequest>,
) -> Answer<Json<api::ProbeResult>> {
    let (id, wait) = c.lock().await.probe_start(&req).await?;
    tokio::time::sleep(wait).await;
    Ok(Json(c.lock().await.probe_result(&req, id).await?))
}
