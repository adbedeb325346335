//! The named profiles attached to ports and virtual ports — QoS (`/v1/qos`) and ACLs
//! (`/v1/acls`) — through one set of handlers (docs/openapi.yaml, docs/acl.md):
//!
//! ```text
//!  GET    /v1/{list}                          the profiles, with attachments and counters
//!  POST   /v1/{list}                          add one (201 and its view)
//!  DELETE /v1/{list}/{name}                   delete one (refused while attached)
//!  PUT    /v1/ports/{port}/{one}              attach {"profile": NAME} to a port
//!  DELETE /v1/ports/{port}/{one}              detach it
//!  PUT    /v1/ports/{port}/vports/{mac}/{one} the same for a shared port's virtual port
//!  DELETE /v1/ports/{port}/vports/{mac}/{one}
//!  PUT    /v1/ports/{port}/vlans/{vid}/{one}  the same for a trunk's VLAN circuit
//!  DELETE /v1/ports/{port}/vlans/{vid}/{one}
//! ```

use std::future::Future;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use nvo_api as api;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{ApiFailure, Body, Params};
use super::Shared;
use crate::control::{Control, Failure, Within};

type Answer<T> = Result<T, ApiFailure>;

/// A kind of profile: its paths and the control operations behind them.
pub(super) trait Profiles: Send + 'static {
    /// The collection's path segment (`/v1/{LIST}`).
    const LIST: &'static str;
    /// A port's attachment's path segment (`/v1/ports/{port}/{ONE}`).
    const ONE: &'static str;
    /// What `POST` takes.
    type Spec: DeserializeOwned + Send + 'static;
    /// What `GET` and `POST` show of a profile.
    type View: Serialize + Send + 'static;
    /// What `PUT` on an attachment takes.
    type Attach: DeserializeOwned + Send + 'static;

    fn list(c: &Control) -> impl Future<Output = Result<Vec<Self::View>, Failure>> + Send;
    fn add(
        c: &mut Control,
        spec: Self::Spec,
    ) -> impl Future<Output = Result<Self::View, Failure>> + Send;
    fn delete(c: &mut Control, name: &str) -> impl Future<Output = Result<(), Failure>> + Send;
    /// Attaches `profile` (`None`: detaches) to `port`, or to its virtual port or circuit.
    fn attach(
        c: &mut Control,
        port: &str,
        within: Within<'_>,
        profile: Option<&str>,
    ) -> impl Future<Output = Result<(), Failure>> + Send;
    /// The profile an attachment body names.
    fn named(a: &Self::Attach) -> &str;
}

/// QoS profiles.
pub(super) struct Qos;

impl Profiles for Qos {
    const LIST: &'static str = "qos";
    const ONE: &'static str = "qos";
    type Spec = api::QosSpec;
    type View = api::Qos;
    type Attach = api::QosAttach;

    fn list(c: &Control) -> impl Future<Output = Result<Vec<api::Qos>, Failure>> + Send {
        c.qos_list()
    }
    fn add(
        c: &mut Control,
        spec: api::QosSpec,
    ) -> impl Future<Output = Result<api::Qos, Failure>> + Send {
        c.qos_add(spec)
    }
    fn delete(c: &mut Control, name: &str) -> impl Future<Output = Result<(), Failure>> + Send {
        c.qos_delete(name)
    }
    fn attach(
        c: &mut Control,
        port: &str,
        within: Within<'_>,
        profile: Option<&str>,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        c.qos_attach(port, within, profile)
    }
    fn named(a: &api::QosAttach) -> &str {
        &a.profile
    }
}

/// ACL profiles.
pub(super) struct Acl;

impl Profiles for Acl {
    const LIST: &'static str = "acls";
    const ONE: &'static str = "acl";
    type Spec = api::AclSpec;
    type View = api::Acl;
    type Attach = api::AclAttach;

    fn list(c: &Control) -> impl Future<Output = Result<Vec<api::Acl>, Failure>> + Send {
        c.acl_list()
    }
    fn add(
        c: &mut Control,
        spec: api::AclSpec,
    ) -> impl Future<Output = Result<api::Acl, Failure>> + Send {
        c.acl_add(spec)
    }
    fn delete(c: &mut Control, name: &str) -> impl Future<Output = Result<(), Failure>> + Send {
        c.acl_delete(name)
    }
    fn attach(
        c: &mut Control,
        port: &str,
        within: Within<'_>,
        profile: Option<&str>,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        c.acl_attach(port, within, profile)
    }
    fn named(a: &api::AclAttach) -> &str {
        &a.profile
    }
}

/// `P`'s paths, added to the API's router.
pub(super) fn routes<P: Profiles>(router: Router<Shared>) -> Router<Shared> {
    router
        .route(&format!("/v1/{}", P::LIST), get(list::<P>).post(add::<P>))
        .route(&format!("/v1/{}/{{name}}", P::LIST), delete(remove::<P>))
        .route(
            &format!("/v1/ports/{{name}}/{}", P::ONE),
            put(attach::<P>).delete(detach::<P>),
        )
        .route(
            &format!("/v1/ports/{{name}}/vports/{{mac}}/{}", P::ONE),
            put(attach_vport::<P>).delete(detach_vport::<P>),
        )
        .route(
            &format!("/v1/ports/{{name}}/vlans/{{vid}}/{}", P::ONE),
            put(attach_vlan::<P>).delete(detach_vlan::<P>),
        )
}

async fn list<P: Profiles>(State(c): State<Shared>) -> Answer<Json<Vec<P::View>>> {
    Ok(Json(P::list(&*c.lock().await).await?))
}

async fn add<P: Profiles>(
    State(c): State<Shared>,
    Body(spec): Body<P::Spec>,
) -> Answer<(StatusCode, Json<P::View>)> {
    let view = P::add(&mut *c.lock().await, spec).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

async fn remove<P: Profiles>(
    State(c): State<Shared>,
    Params(name): Params<String>,
) -> Answer<StatusCode> {
    P::delete(&mut *c.lock().await, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach<P: Profiles>(
    State(c): State<Shared>,
    Params(port): Params<String>,
    Body(a): Body<P::Attach>,
) -> Answer<StatusCode> {
    P::attach(
        &mut *c.lock().await,
        &port,
        Within::Port,
        Some(P::named(&a)),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach<P: Profiles>(
    State(c): State<Shared>,
    Params(port): Params<String>,
) -> Answer<StatusCode> {
    P::attach(&mut *c.lock().await, &port, Within::Port, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach_vport<P: Profiles>(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
    Body(a): Body<P::Attach>,
) -> Answer<StatusCode> {
    P::attach(
        &mut *c.lock().await,
        &port,
        Within::Vport(&mac),
        Some(P::named(&a)),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach_vport<P: Profiles>(
    State(c): State<Shared>,
    Params((port, mac)): Params<(String, String)>,
) -> Answer<StatusCode> {
    P::attach(&mut *c.lock().await, &port, Within::Vport(&mac), None).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn attach_vlan<P: Profiles>(
    State(c): State<Shared>,
    Params((port, vid)): Params<(String, String)>,
    Body(a): Body<P::Attach>,
) -> Answer<StatusCode> {
    let within = Within::Vlan(vid_of(&vid)?);
    P::attach(&mut *c.lock().await, &port, within, Some(P::named(&a))).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn detach_vlan<P: Profiles>(
    State(c): State<Shared>,
    Params((port, vid)): Params<(String, String)>,
) -> Answer<StatusCode> {
    let within = Within::Vlan(vid_of(&vid)?);
    P::attach(&mut *c.lock().await, &port, within, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A VLAN ID from a path: 1 to 4094.
fn vid_of(text: &str) -> Result<u16, Failure> {
    text.parse::<u16>()
        .ok()
        .filter(|v| (1..=nvo_pipeline::vlan::MAX_VID).contains(v))
        .ok_or_else(|| Failure::bad(format!("vlan {text:?} is not a VLAN ID (1 to 4094)")))
}
