//! `/v1/bgp` and `/v1/evpn/routes` (docs/openapi.yaml).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use nvo_api as api;

use super::error::{ApiFailure, Body};
use super::Shared;
use crate::control::Failure;

type Answer<T> = Result<T, ApiFailure>;

/// The BGP/EVPN paths, added to the API's router.
pub fn routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/v1/bgp", get(summary).put(set).delete(delete))
        .route("/v1/evpn/routes", get(evpn_routes))
}

async fn summary(State(c): State<Shared>) -> Answer<Json<api::BgpSummary>> {
    Ok(Json(c.lock().await.bgp_summary().await?))
}

async fn set(
    State(c): State<Shared>,
    Body(config): Body<api::BgpConfig>,
) -> Answer<Json<api::BgpSummary>> {
    Ok(Json(c.lock().await.bgp_set(config).await?))
}

async fn delete(State(c): State<Shared>) -> Answer<StatusCode> {
    c.lock().await.bgp_delete().await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn evpn_routes(
    State(c): State<Shared>,
    RawQuery(query): RawQuery,
) -> Answer<Json<Vec<api::EvpnRoute>>> {
    let (vni, route_type) = filters(query.as_deref().unwrap_or(""))?;
    Ok(Json(c.lock().await.evpn_routes(vni, route_type).await?))
}

/// `vni=N&type=T`, both optional; anything else is refused by name.
fn filters(query: &str) -> Result<(Option<u32>, Option<u8>), Failure> {
    let (mut vni, mut route_type) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "vni" => {
                vni = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|v| (1..=0x00ff_ffff).contains(v))
                        .ok_or_else(|| {
                            Failure::bad(format!(
                                "vni {value:?} is not a number from 1 to 16777215"
                            ))
                        })?,
                )
            }
            "type" => {
                route_type = Some(value.parse::<u8>().map_err(|_| {
                    Failure::bad(format!("type {value:?} is not a route type (2 or 3)"))
                })?)
            }
            other => {
                return Err(Failure::bad(format!(
                    "unknown query parameter {other:?}; use vni and type"
                )))
            }
        }
    }
    Ok((vni, route_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_refuse() {
        assert_eq!(filters("").unwrap(), (None, None));
        assert_eq!(filters("vni=100&type=2").unwrap(), (Some(100), Some(2)));
        assert!(filters("vni=0").unwrap_err().message.contains("\"0\""));
        assert!(filters("color=red")
            .unwrap_err()
            .message
            .contains("\"color\""));
        assert!(filters("type=x").unwrap_err().message.contains("\"x\""));
    }
}
